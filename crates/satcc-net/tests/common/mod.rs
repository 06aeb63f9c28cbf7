//! What the Saratoga test files share: one transfer at a time, fresh
//! directories, and a server running on a thread of its own.
#![allow(dead_code)] // each test file uses its own part

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use satcc_net::saratoga::{SaratogaServer, ServeConfig, ServerCounters, SessionReport};

/// Tests that time transfers run one at a time (2 cores shared).
static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the one-at-a-time lock (a failed test does not poison it).
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A fresh directory under the temp dir, named after the test file's
/// `prefix`, the test's `tag`, the process and the time.
pub fn tempdir(prefix: &str, tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "{prefix}-{tag}-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A Saratoga server on loopback, running until [`Running::stop`].
pub struct Running {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: JoinHandle<(ServerCounters, Vec<SessionReport>)>,
}

impl Running {
    /// Stops the server: its counters and the sessions it reported.
    pub fn stop(self) -> (ServerCounters, Vec<SessionReport>) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap()
    }
}

/// Starts a server with `cfg` on 127.0.0.1 (an ephemeral port).
pub fn serve(cfg: ServeConfig) -> Running {
    let mut srv = SaratogaServer::bind("127.0.0.1:0".parse().unwrap(), cfg).unwrap();
    let addr = srv.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let handle = std::thread::spawn(move || {
        let mut reports = Vec::new();
        srv.run(&st, &mut |r| reports.push(r.clone())).unwrap();
        (srv.counters(), reports)
    });
    Running { addr, stop, handle }
}
