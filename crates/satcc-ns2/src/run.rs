//! Running `ns` on a script.

use std::io::Write as _;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use satcc_sim::scenario::Scenario;

use crate::error::Ns2Error;
use crate::export::{export, Ns2Script};
use crate::results::Ns2Result;

/// Whether the `ns` binary can be run.
pub fn ns_available() -> bool {
    Command::new("ns").arg("-version").output().is_ok()
}

/// Exports the scenario, runs `ns` on the script and parses what it
/// prints. Returns the result and the wall-clock seconds `ns` took.
pub fn run_ns2(sc: &Scenario) -> Result<(Ns2Result, f64), Ns2Error> {
    export(sc)?.run()
}

impl Ns2Script {
    /// Writes the script to a temporary file, runs `ns` on it and parses
    /// what it prints. Returns the result and the wall-clock seconds `ns`
    /// took.
    pub fn run(&self) -> Result<(Ns2Result, f64), Ns2Error> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir();
        let k = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("satcc-ns2-{}-{k}.tcl", std::process::id()));
        let io = |source| Ns2Error::Io {
            context: format!("cannot write {}", path.display()),
            source,
        };
        std::fs::File::create(&path)
            .map_err(io)?
            .write_all(self.tcl.as_bytes())
            .map_err(io)?;
        let t0 = Instant::now();
        let out = Command::new("ns").arg(&path).current_dir(&dir).output();
        let wall = t0.elapsed().as_secs_f64();
        let _ = std::fs::remove_file(&path);
        let out = out.map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Ns2Error::NsNotFound,
            _ => Ns2Error::Io {
                context: "cannot run ns".into(),
                source: e,
            },
        })?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if !out.status.success() && !stdout.contains("\nEND ") {
            return Err(Ns2Error::NsFailed {
                status: out.status,
                stderr,
            });
        }
        let r = self.parse_output(&stdout).map_err(|e| match e {
            // What ns said on stderr usually explains the bad output.
            e @ Ns2Error::Parse { .. } if !stderr.is_empty() => Ns2Error::Parse {
                line: String::new(),
                reason: format!("{e}; ns stderr: {stderr}"),
            },
            e => e,
        })?;
        Ok((r, wall))
    }
}
