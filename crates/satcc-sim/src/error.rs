//! Link error models (STUB: API only; implementation pending).

use satcc_proto::rng::Rng;

use crate::scenario::ErrorSpec;

/// A link direction's error model.
#[derive(Clone, Debug)]
pub struct ErrorModel {
    spec: ErrorSpec,
}

impl ErrorModel {
    /// The model a scenario asks for.
    pub fn new(spec: &ErrorSpec) -> Self {
        ErrorModel { spec: spec.clone() }
    }
    /// Whether a packet of `size_bytes` is corrupted (and so lost).
    pub fn lose(&mut self, _size_bytes: u32, _rng: &mut Rng) -> bool {
        let _ = &self.spec;
        false
    }
}
