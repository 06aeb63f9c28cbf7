//! The simulator's error types, at the bottom of the crate so that every
//! layer can return them: a field of the scenario and what is wrong with
//! it ([`FieldError`], also [`SimError`] when building or running fails),
//! and the same found in a file ([`ScenarioError`]).

use std::fmt;

/// A field is wrong: its dotted path and the problem. Scenario validation,
/// building a simulation ([`SimError`]) and running a scenario for real
/// (`satcc-net`) all report this one type. [`FieldError::in_file`] makes
/// it a [`ScenarioError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// Dotted path of the field at fault, empty if the whole scenario.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// A scenario could not be built or run: the field at fault and why.
pub type SimError = FieldError;

impl FieldError {
    /// The problem `message` with `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same error with `prefix` in front of its path (the path of the
    /// table the erring field sits in).
    pub fn under(self, prefix: &str) -> FieldError {
        FieldError {
            field: join_path(prefix, &self.field),
            message: self.message,
        }
    }

    /// The error as found in `file`.
    pub fn in_file(self, file: &str) -> ScenarioError {
        ScenarioError {
            file: file.into(),
            field: self.field,
            message: self.message,
        }
    }
}

/// A scenario file could not be used. Displays as one line:
/// `FILE: FIELD: PROBLEM`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    /// The file (or `<string>`/`--set`).
    pub file: String,
    /// Dotted path of the field at fault, empty if the whole file.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.field, self.message)
        }
    }
}

/// Dotted path `a.b`; either side may be empty or `.` (serde_path_to_error's
/// name for the root), and then the other is the path.
pub(crate) fn join_path(a: &str, b: &str) -> String {
    match (a.is_empty() || a == ".", b.is_empty() || b == ".") {
        (true, _) => b.trim_start_matches('.').to_string(),
        (false, true) => a.to_string(),
        (false, false) => format!("{a}.{b}"),
    }
}
