//! The one error type of the crate.

use std::process::ExitStatus;

/// What can go wrong exporting a scenario to ns-2, running it or reading
/// what it printed.
#[derive(Debug, thiserror::Error)]
pub enum Ns2Error {
    /// The scenario uses something the export cannot express in ns-2 2.35.
    /// `field` is the scenario field (`topology.bottleneck.queue`,
    /// `flows[1].app`, ...).
    #[error("{field}: {reason}")]
    Unsupported {
        /// The scenario field.
        field: String,
        /// Why ns-2 cannot reproduce it.
        reason: String,
    },
    /// A flow's endpoints have no route between them (the export needs the
    /// base RTT).
    #[error("{field}: no route between the flow's endpoints")]
    NoRoute {
        /// The flow's field (`flows[0].dst`).
        field: String,
    },
    /// There is no `ns` binary to run.
    #[error("cannot run ns-2 (no `ns` on PATH); install it with `apt-get install -y ns2`")]
    NsNotFound,
    /// `ns` ended with an error before the script printed its results.
    #[error("ns exited with {status}: {stderr}")]
    NsFailed {
        /// How `ns` exited.
        status: ExitStatus,
        /// What it printed on stderr (trimmed).
        stderr: String,
    },
    /// What the script printed could not be read.
    #[error("{reason}{}", if line.is_empty() { String::new() } else { format!(" in '{line}'") })]
    Parse {
        /// The output line at fault (empty when the fault is a missing line).
        line: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Writing the script or starting `ns` failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done (`cannot write /tmp/x.tcl`).
        context: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl Ns2Error {
    /// A problem with the scenario (the user's to fix: exit code 2 in the
    /// CLI) rather than with ns-2 or the machine.
    pub fn is_scenario_error(&self) -> bool {
        matches!(
            self,
            Ns2Error::Unsupported { .. } | Ns2Error::NoRoute { .. }
        )
    }

    /// The scenario field a scenario error names.
    pub fn field(&self) -> Option<&str> {
        match self {
            Ns2Error::Unsupported { field, .. } | Ns2Error::NoRoute { field } => Some(field),
            _ => None,
        }
    }

    pub(crate) fn unsupported(field: impl Into<String>, reason: impl Into<String>) -> Ns2Error {
        Ns2Error::Unsupported {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn parse(line: &str, reason: impl Into<String>) -> Ns2Error {
        Ns2Error::Parse {
            line: line.to_string(),
            reason: reason.into(),
        }
    }
}
