//! The link emulator.
