//! flows.csv and links.csv are RFC 4180 CSV: names holding `,` or `"`
//! come back intact through an independent reader (Python's `csv`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Rows of each file as Python's `csv.reader` reads them.
fn python_csv(dir: &Path, files: &[&str]) -> Vec<Vec<Vec<String>>> {
    let script = "import csv, json, sys\n\
                  print(json.dumps([list(csv.reader(open(f, newline='', encoding='utf-8')))\n\
                  for f in sys.argv[1:]]))";
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(files.iter().map(|f| dir.join(f)))
        .output()
        .expect("python3 must be installed to check the CSV output");
    assert!(
        out.status.success(),
        "python3: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON from python")
}

#[test]
fn names_with_commas_and_quotes_round_trip() {
    let dir = std::env::temp_dir().join(format!("satcc-csv-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // Graph topology: link names are the user's too.
    let out = Command::new(env!("CARGO_BIN_EXE_satcc"))
        .current_dir(repo_root())
        .args(["run", "scenarios/peach-hetero.toml", "-q", "--out"])
        .arg(&dir)
        .args([
            "--set",
            "duration=12s",
            "--set",
            r#"flows.0.name=a,"b"#,
            "--set",
            r#"topology.links.2.name=bn,"x"#,
            "--set",
            r#"record.links=["bn,\"x", "egress"]"#,
        ])
        .output()
        .expect("run satcc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = python_csv(&dir, &["flows.csv", "links.csv"]);
    let (flows, links) = (&files[0], &files[1]);

    assert_eq!(flows[0][2], "name");
    assert!(flows.len() > 10, "{} rows", flows.len());
    let mut renamed = 0;
    for row in flows {
        assert_eq!(row.len(), 11, "{row:?}");
    }
    for row in &flows[1..] {
        // Series label each flow NAME#ID; flows 0..5 are the first line's.
        let id: usize = row[1].parse().unwrap();
        if id < 5 {
            assert_eq!(row[2], format!("a,\"b#{id}"));
            renamed += 1;
        } else {
            assert_eq!(row[2], format!("terrestrial#{id}"));
        }
        assert_eq!(row[3], if id < 5 { "peach-sack" } else { "sack" });
    }
    assert!(renamed > 0);

    assert_eq!(links[0][1], "link");
    let names: std::collections::BTreeSet<&str> =
        links[1..].iter().map(|r| r[1].as_str()).collect();
    assert_eq!(names, ["bn,\"x", "egress"].into_iter().collect());
    for row in links {
        assert_eq!(row.len(), 11, "{row:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
