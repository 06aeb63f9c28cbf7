//! CBR's options: constant bit rate over UDP.

use serde::de;
use serde::Deserialize;

use super::{keys_of, FamilyOptions, Protocol};
use crate::scenario::{nested, nested_error, AppSpec, FieldError, Rate};

/// Options of a CBR flow.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CbrOptions {
    /// Sending rate (while ON, with app kind `onoff`).
    pub rate: Rate,
    /// Payload bytes per datagram (default `mss`).
    #[serde(default)]
    pub packet_size: Option<u32>,
    /// Mark every datagram low priority (a priority queue serves it only
    /// when no other packet waits), e.g. to flood a link with traffic that
    /// must not displace anybody's data.
    #[serde(default)]
    pub low_priority: bool,
}

impl FamilyOptions for CbrOptions {
    // IPv4 + UDP.
    const HEADER_BYTES: u32 = 28;

    fn keys(_p: Protocol) -> Vec<&'static str> {
        keys_of::<CbrOptions>().to_vec()
    }

    fn refusal(_key: &str, _p: Protocol) -> Option<&'static str> {
        None
    }

    fn requires_rate(_p: Protocol) -> bool {
        true
    }

    fn read<E: de::Error>(_p: Protocol, t: toml::Table) -> Result<Self, E> {
        // Said here rather than as serde's "missing field `rate`", which
        // would not name the protocol.
        if !t.contains_key("rate") {
            return Err(nested_error("rate", "required for protocol \"cbr\""));
        }
        nested(t)
    }

    fn fits(&self, _p: Protocol) -> bool {
        true
    }

    fn rate(&self) -> Option<Rate> {
        Some(self.rate)
    }

    fn validate(&self, app: &AppSpec) -> Result<(), FieldError> {
        if matches!(app, AppSpec::Files { .. }) {
            return Err(FieldError::new(
                "app",
                "files run over TCP and Saratoga flows only",
            ));
        }
        Ok(())
    }
}
