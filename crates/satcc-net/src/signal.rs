//! The process's one handler for SIGINT and SIGTERM: instead of killing
//! the process, a signal sets a flag (and records which signal it was)
//! that the program's loop checks, so that it can stop cleanly: remove
//! its temporary files, print its summary, finish a capture. SIGKILL
//! cannot be caught: a killed Saratoga receiver leaves `.NAME.partial`,
//! never a file under the final name.
//!
//! Installed with `sigaction` and `SA_RESTART` (system calls interrupted
//! by the signal resume), which is what `signal(2)` gives on Linux.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Set by SIGINT or SIGTERM once [`catch_interrupts`] has run.
static STOP: AtomicBool = AtomicBool::new(false);

/// The signal caught last, 0 for none.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// What a second SIGINT or SIGTERM does, after one was caught.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repeat {
    /// Caught like the first: the process keeps stopping cleanly (a
    /// server or client removing its temporary files, the emulator
    /// printing its summary).
    Catch,
    /// Kills the process at once (the default action is restored after
    /// the first signal: `SA_RESETHAND`), for a user who does not want
    /// to wait for the clean stop.
    Kill,
}

#[cfg(unix)]
extern "C" fn on_signal(sig: libc::c_int) {
    // Async-signal-safe: atomic stores only.
    CAUGHT.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM set the returned flag (and [`caught`])
/// instead of killing the process; `repeat` says what a second one does.
pub fn catch_interrupts(repeat: Repeat) -> &'static AtomicBool {
    #[cfg(unix)]
    // SAFETY: `sigaction` is given a zeroed (valid) struct whose handler
    // is an `extern "C"` function that only stores to atomics, and a null
    // pointer for the old action, which it accepts.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = libc::SA_RESTART;
        if repeat == Repeat::Kill {
            sa.sa_flags |= libc::SA_RESETHAND;
        }
        for sig in [libc::SIGINT, libc::SIGTERM] {
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    #[cfg(not(unix))]
    let _ = repeat;
    &STOP
}

/// [`catch_interrupts`] with [`Repeat::Catch`]: every SIGINT or SIGTERM
/// sets the returned flag. A Saratoga server or client interrupted by
/// Ctrl-C then stops its loop and removes (or keeps for resuming) its
/// temporary files.
pub fn stop_on_signals() -> &'static AtomicBool {
    catch_interrupts(Repeat::Catch)
}

/// The signal caught (the last one, if several), if one was.
pub fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}
