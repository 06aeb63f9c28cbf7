//! `satcc bench`: the reference scenario, timed.

use std::process::ExitCode;

use clap::Args;

/// Options of `satcc bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Print JSON only.
    #[arg(long)]
    pub json: bool,
}

/// Runs the benchmark.
pub fn bench(_a: BenchArgs) -> ExitCode {
    ExitCode::SUCCESS
}
