//! The results store shared by `satcc sweep --store DIR` and the Python
//! package (`satcc.sweep(..., store=DIR)`, `satcc.load(DIR)`).
//!
//! One JSON file per run, `DIR/<key>.json`, where the key is a 128-bit
//! FNV-1a hash of the scenario's canonical content with the run's seed in
//! it, and of satcc's version. A sweep looks a run up by its key before
//! running it, so an interrupted sweep run again computes only what is
//! missing, and a new satcc version never reuses an older one's results.
//! Files are written under a temporary name and renamed, so a killed sweep
//! never leaves a half-written result under a key. The format is specified
//! in `docs/python.md`.

use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use crate::partial::Partial;
use crate::report::Summary;

/// The version of the record format (the `format` field of a record).
pub const FORMAT: u64 = 1;

/// satcc's version, part of every key.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The scenario tree in canonical JSON: tables with their keys sorted, no
/// whitespace, TOML datetimes as strings. Comments, layout and key order of
/// the file do not matter; values do (`"16Mbps"` and `16000000` differ).
pub fn canonical_json(v: &toml::Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &toml::Value, out: &mut String) {
    match v {
        toml::Value::String(s) => out.push_str(&json_string(s)),
        toml::Value::Integer(i) => out.push_str(&i.to_string()),
        // serde_json writes the shortest text that reads back to the same
        // f64; NaN and infinities have no JSON number and go as strings.
        toml::Value::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => out.push_str(&n.to_string()),
            None => out.push_str(&json_string(&f.to_string())),
        },
        toml::Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        toml::Value::Datetime(d) => out.push_str(&json_string(&d.to_string())),
        toml::Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        toml::Value::Table(t) => {
            let mut keys: Vec<&String> = t.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(k));
                out.push(':');
                write_canonical(&t[k.as_str()], out);
            }
            out.push('}');
        }
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The tree as a JSON value (for a record's `scenario` and `params`).
pub fn to_json(v: &toml::Value) -> Json {
    serde_json::from_str(&canonical_json(v)).unwrap_or(Json::Null)
}

/// The tree with `seed` set to the run's seed: what a run of `tree` with
/// that seed simulates.
pub fn with_seed(tree: &toml::Value, seed: u64) -> toml::Value {
    let mut t = tree.clone();
    if let toml::Value::Table(m) = &mut t {
        // TOML integers are i64; a seed past i64::MAX keeps its bits.
        m.insert("seed".into(), toml::Value::Integer(seed as i64));
    }
    t
}

/// The key of a run of `tree` with `seed`: 32 hex digits.
pub fn key(tree: &toml::Value, seed: u64) -> String {
    let text = format!(
        "satcc {VERSION}\n{}",
        canonical_json(&with_seed(tree, seed))
    );
    // FNV-1a, 128 bits: stable across builds and platforms, no dependency;
    // the store guards against accidental reuse, not against an adversary.
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for b in text.bytes() {
        h ^= u128::from(b);
        h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    format!("{h:032x}")
}

/// The file of `key` in the store `dir`.
pub fn path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.json"))
}

/// One stored run: what `DIR/<key>.json` holds.
pub fn record(
    key: &str,
    tree: &toml::Value,
    seed: u64,
    params: &[(String, toml::Value)],
    summary: &Summary,
) -> Json {
    let mut s = summary.clone();
    // The wall time is not a function of scenario and seed (as in
    // summary.json).
    s.wall_s = None;
    let params: serde_json::Map<String, Json> = params
        .iter()
        .map(|(k, v)| (k.clone(), to_json(v)))
        .collect();
    serde_json::json!({
        "format": FORMAT,
        "satcc_version": VERSION,
        "key": key,
        "seed": seed,
        "params": params,
        "scenario": to_json(&with_seed(tree, seed)),
        "summary": serde_json::to_value(&s).unwrap_or(Json::Null),
    })
}

/// The summary stored under `key`, if there is a readable record of this
/// format and version there (anything else counts as missing and is
/// computed again).
pub fn get(dir: &Path, key: &str) -> Option<Json> {
    let text = std::fs::read_to_string(path(dir, key)).ok()?;
    let rec: Json = serde_json::from_str(&text).ok()?;
    let ok = rec.get("format").and_then(Json::as_u64) == Some(FORMAT)
        && rec.get("satcc_version").and_then(Json::as_str) == Some(VERSION)
        && rec.get("key").and_then(Json::as_str) == Some(key);
    if ok {
        rec.get("summary").cloned()
    } else {
        None
    }
}

/// Writes a record (from [`record`]) atomically: whole to a temporary file
/// in `dir` named after this process, then renamed to `DIR/<key>.json`.
pub fn put(dir: &Path, rec: &Json) -> std::io::Result<()> {
    let key = rec.get("key").and_then(Json::as_str).ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "record without a key")
    })?;
    std::fs::create_dir_all(dir)?;
    let text = serde_json::to_string_pretty(rec).map_err(std::io::Error::other)? + "\n";
    // The process id and a counter keep concurrent writers (threads or
    // processes) from sharing a temporary file.
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{key}.{}.{n}.partial", std::process::id()));
    crate::partial::write_with(Partial::with_partial(path(dir, key), tmp), |f| {
        std::io::Write::write_all(f, text.as_bytes())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> toml::Value {
        crate::scenario::parse_tree(text, "t").unwrap()
    }

    #[test]
    fn key_ignores_layout_and_order_but_not_values_or_seed() {
        let a = tree("duration = \"10s\"\n[topology]\nkind = \"x\"\nrate = 1\n");
        let b = tree("# a comment\nduration  =  \"10s\"\n\n[topology]\nrate = 1\nkind = \"x\"\n");
        assert_eq!(key(&a, 1), key(&b, 1));
        assert_ne!(key(&a, 1), key(&a, 2));
        let c = tree("duration = \"10s\"\n[topology]\nkind = \"x\"\nrate = 2\n");
        assert_ne!(key(&a, 1), key(&c, 1));
        // The file's own seed does not matter: the run's does.
        let d = tree("seed = 9\nduration = \"10s\"\n[topology]\nkind = \"x\"\nrate = 1\n");
        assert_eq!(key(&a, 3), key(&d, 3));
        assert_eq!(key(&a, 1).len(), 32);
    }

    #[test]
    fn canonical_json_sorts_and_escapes() {
        let t = tree("b = 1.5\na = \"q\\\"\"\n[c]\nz = [1, 2]\ny = true\n");
        assert_eq!(
            canonical_json(&t),
            r#"{"a":"q\"","b":1.5,"c":{"y":true,"z":[1,2]}}"#
        );
    }
}
