//! `satcc sweep --store DIR`: one record per run, reused on the next sweep,
//! a deleted record computed again; the output does not depend on where a
//! summary came from.

use std::path::PathBuf;
use std::process::{Command, Output};

fn sweep(store: &std::path::Path, extra: &[&str]) -> Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut args = vec![
        "sweep".to_string(),
        root.join("scenarios/quickstart.toml").display().to_string(),
        "--set".into(),
        "duration=5s".into(),
        "--vary".into(),
        "flows.0.count=1,2".into(),
        "--seeds".into(),
        "2".into(),
        "--store".into(),
        store.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = Command::new(env!("CARGO_BIN_EXE_satcc"))
        .args(&args)
        .output()
        .expect("run satcc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn records(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("store dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

#[test]
fn store_is_reused_and_refilled() {
    let dir = std::env::temp_dir().join(format!("satcc-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = sweep(&dir, &["--json"]);
    assert!(String::from_utf8_lossy(&first.stderr).contains("4 run(s) computed, 0 taken"));
    let recs = records(&dir);
    assert_eq!(recs.len(), 4);
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&recs[0]).expect("read")).expect("json");
    assert_eq!(rec["format"], 1);
    assert!(rec["params"]["flows.0.count"].is_u64());
    assert!(rec["summary"]["flows"].is_array());
    assert!(rec["summary"].get("wall_s").is_none());

    let second = sweep(&dir, &["--json"]);
    assert!(String::from_utf8_lossy(&second.stderr).contains("0 run(s) computed, 4 taken"));
    // Summaries from the store print as the computed ones did (wall_s
    // aside: the store does not keep it).
    let strip = |o: &Output| {
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        for p in v.as_array_mut().expect("points") {
            for r in p["runs"].as_array_mut().expect("runs") {
                r.as_object_mut().expect("summary").remove("wall_s");
            }
        }
        v
    };
    assert_eq!(strip(&first), strip(&second));

    std::fs::remove_file(&recs[1]).expect("remove");
    let third = sweep(&dir, &[]);
    assert!(String::from_utf8_lossy(&third.stderr).contains("1 run(s) computed, 3 taken"));
    assert_eq!(records(&dir), recs);
    let _ = std::fs::remove_dir_all(&dir);
}
