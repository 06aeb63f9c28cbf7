//! What a run is asked for and what it produces, beside the simulator that
//! takes the one and makes the other.

use std::path::PathBuf;

use crate::report::series::Series;
use crate::report::Summary;

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Record time series.
    pub series: bool,
    /// Links to capture to pcap, by name.
    pub pcap_links: Vec<String>,
    /// Where pcap files go (`LINK.pcap`); default the current directory.
    pub pcap_dir: Option<PathBuf>,
    /// Encode every packet to its wire bytes and decode it back on every
    /// link it enters (links without a router hook), to check that the
    /// wire codecs carry what the protocols use: the results must not
    /// change.
    pub wire_round_trip: bool,
    /// The caller writes the time series out as the run goes and then
    /// releases what it wrote ([`crate::Sim::release_written_series`]):
    /// room for the whole run is reserved only for the columns a goodput
    /// plot keeps (reserving the others, to give it back before the
    /// first sample, still touched a page of each: 14 MB at 512 flows).
    pub series_streamed: bool,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The summary.
    pub summary: Summary,
    /// Time series, if asked for.
    pub series: Option<Series>,
    /// Links whose pcap file could not be written completely, with why.
    pub capture_errors: Vec<String>,
}
