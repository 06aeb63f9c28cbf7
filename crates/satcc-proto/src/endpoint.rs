//! The one interface every endpoint implements.
//!
//! A driver — the simulator today, the UDP runtime next — knows endpoints
//! only through [`Endpoint`] (the five sans-IO calls and a statistics view)
//! and [`Sender`] (the application side). It never names a protocol: it
//! hands each arriving [`Message`] to `handle_input`, wakes the endpoint
//! when `poll_timeout` says, puts on the wire what `poll_transmit` yields,
//! and learns what the application must know from typed [`Event`]s instead
//! of reading protocol internals.
//!
//! The shape follows quinn-proto's `Connection` (the driver polls; the
//! state machine never calls out) with one deliberate difference: messages
//! are typed values ([`Message`]), not byte buffers, so the simulator pays
//! nothing for encoding. A wire codec turns them into bytes where a real
//! network needs it.

use std::fmt;

use crate::messages::saratoga::{SaraData, SaraMetadata, SaraRequest, SaraStatus};
use crate::messages::tcp::{TcpAck, TcpData};
use crate::messages::tfrc::{TfrcData, TfrcFeedback};
use crate::messages::tfrcp::{TfrcpAck, TfrcpData};
use crate::time::{Duration, Instant};

/// Everything an endpoint of any protocol sends or receives.
///
/// A new protocol adds its message types here (defining them in
/// [`crate::messages`]); drivers carry the value without looking inside
/// (`Copy`, so a packet store holds it by value).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Message {
    /// TCP data segment, sender to receiver.
    TcpData(TcpData),
    /// TCP acknowledgement, receiver to sender.
    TcpAck(TcpAck),
    /// TFRC/CCID3 data packet.
    TfrcData(TfrcData),
    /// TFRC/CCID3 feedback packet.
    TfrcFeedback(TfrcFeedback),
    /// TFRCP data packet.
    TfrcpData(TfrcpData),
    /// TFRCP acknowledgement with its 8-bit vector.
    TfrcpAck(TfrcpAck),
    /// A plain datagram (constant-bit-rate traffic).
    Datagram {
        /// Datagram sequence number.
        seq: u64,
        /// Payload bytes.
        len: u32,
    },
    /// Saratoga REQUEST (draft-wood-tsvwg-saratoga-22 §4.2), requester to
    /// responder: the data receiver's side of a GET.
    SaraRequest(SaraRequest),
    /// Saratoga METADATA (§4.3), file sender to receiver.
    SaraMetadata(SaraMetadata),
    /// Saratoga DATA (§4.4), file sender to receiver; payload bytes are not
    /// carried (offset and length are).
    SaraData(SaraData),
    /// Saratoga STATUS (§4.5), file receiver to sender.
    SaraStatus(SaraStatus),
}

impl Message {
    /// True for messages travelling from a flow's receiver back to its
    /// sender (acknowledgements and feedback; for Saratoga, where the
    /// flow's receiver is the side that receives the file, STATUS and a
    /// GET's REQUEST).
    pub fn is_reverse(&self) -> bool {
        // Exhaustive on purpose: a new message type must say which way it
        // goes, or the driver hands ACKs to the receiver.
        match self {
            Message::TcpAck(_)
            | Message::TfrcFeedback(_)
            | Message::TfrcpAck(_)
            | Message::SaraStatus(_)
            | Message::SaraRequest(_) => true,
            Message::TcpData(_)
            | Message::TfrcData(_)
            | Message::TfrcpData(_)
            | Message::Datagram { .. }
            | Message::SaraMetadata(_)
            | Message::SaraData(_) => false,
        }
    }
}

/// A message an endpoint wants sent, with what the driver needs to put it
/// on a link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transmit {
    /// The message.
    pub message: Message,
    /// Payload bytes it carries; the driver adds the flow's header bytes.
    pub payload_len: u32,
    /// Low priority (TCP-Peach dummies and their echoes, low-priority CBR):
    /// a priority queue serves it last and drops it first.
    pub low_priority: bool,
    /// Probing overhead rather than data (TCP-Peach dummy segments): the
    /// driver counts it apart from the data a flow sent.
    pub overhead: bool,
}

/// What an endpoint tells the application and the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// `bytes` more payload bytes were cumulatively acknowledged (reliable
    /// senders); the sum over a sender's life is its acknowledged total.
    Acked(u64),
    /// Every byte the application offered has been acknowledged.
    AllAcked,
    /// A window-based sender reacted to a loss: it entered loss recovery,
    /// or a retransmission timeout fired (each backed-off timeout counts).
    /// Rate-based senders report loss through [`Stats::rate`] instead.
    LossEvent,
    /// A rate-based sender left slow start (RFC 5348 §4.3: the first
    /// feedback that reports a loss event).
    SlowStartExit,
}

/// A rate-based sender's state: allowed rate, reported receive rate and
/// loss event rate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateStats {
    /// Allowed sending rate, bits per second.
    pub x_bps: f64,
    /// Receive rate last reported by the receiver, bits per second (NaN
    /// where the protocol has none).
    pub x_recv_bps: f64,
    /// Loss event rate as the sender last learned it.
    pub p: f64,
}

/// TCP-Peach dummy-segment counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DummyStats {
    /// ACKs for dummy segments received.
    pub acks: u64,
    /// The receiver did not echo the dummy mark; the sender fell back.
    pub fallback: bool,
}

/// One view of an endpoint's statistics, the same type for every
/// protocol. A field that does not apply is `None` (or zero for counters).
///
/// Counters add up over successive connections of a flow
/// ([`Stats::accumulate`]); state (`cwnd`, `srtt`, `rate`) is the current
/// connection's.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    /// Window-based senders: congestion window in segments.
    pub cwnd: Option<f64>,
    /// Smoothed RTT, once measured.
    pub srtt: Option<Duration>,
    /// Rate-based senders: rate and loss state.
    pub rate: Option<RateStats>,
    /// Reliable senders: payload bytes cumulatively acknowledged.
    pub acked_bytes: u64,
    /// Retransmitted segments.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// RTT samples taken (0 for protocols that keep only an estimate).
    pub rtt_samples: u64,
    /// Sum of the RTT samples.
    pub sum_rtt: Duration,
    /// TCP-Peach senders: dummy-segment counters.
    pub dummy: Option<DummyStats>,
    /// Receivers: payload bytes delivered to the application.
    pub delivered_bytes: u64,
    /// Rate-based receivers: feedback packets sent.
    pub feedback_sent: Option<u64>,
    /// Rate-based receivers: the current loss event rate.
    pub loss_event_rate: Option<f64>,
    /// Messages dropped because they were not for this endpoint's protocol
    /// or direction.
    pub foreign: u64,
}

impl Stats {
    /// Adds the counters of a closed connection to `self` (the running
    /// totals of a flow); state fields are left alone. Use one running
    /// total per side: sender and receiver counters do not mix.
    pub fn accumulate(&mut self, closed: &Stats) {
        self.acked_bytes += closed.acked_bytes;
        self.retransmits += closed.retransmits;
        self.timeouts += closed.timeouts;
        self.rtt_samples += closed.rtt_samples;
        self.sum_rtt += closed.sum_rtt;
        self.delivered_bytes += closed.delivered_bytes;
        self.foreign += closed.foreign;
        if let Some(n) = closed.feedback_sent {
            *self.feedback_sent.get_or_insert(0) += n;
        }
        if let Some(d) = closed.dummy {
            let mine = self.dummy.get_or_insert_with(DummyStats::default);
            mine.acks += d.acks;
            mine.fallback |= d.fallback;
        }
    }

    /// Mean RTT: over the samples when the protocol counts them, else its
    /// current estimate.
    pub fn mean_rtt_s(&self) -> Option<f64> {
        if self.rtt_samples > 0 {
            Some(self.sum_rtt.as_secs_f64() / self.rtt_samples as f64)
        } else {
            self.srtt.map(|d| d.as_secs_f64())
        }
    }
}

/// A sans-IO endpoint: a sender or a receiver of any protocol.
///
/// The driver's contract: after `handle_input` or `handle_timeout`, drain
/// `poll_transmit` and `poll_event` until they answer `None`, then ask
/// `poll_timeout` and wake the endpoint then (a wake-up may come early: an
/// endpoint checks what is due). Input of another protocol or direction is
/// ignored and counted in [`Stats::foreign`], never a panic.
///
/// Endpoints are `Send`: plain data, so a runtime may move one to the
/// thread that owns its socket.
pub trait Endpoint: fmt::Debug + Send {
    /// A message arrived.
    fn handle_input(&mut self, now: Instant, message: &Message);
    /// The time [`Endpoint::poll_timeout`] asked for has come.
    fn handle_timeout(&mut self, now: Instant);
    /// The next message to send now, if any (paced senders answer `None`
    /// until their next send time).
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit>;
    /// When the endpoint next needs to be woken.
    fn poll_timeout(&self) -> Option<Instant>;
    /// The next thing the application or driver should learn.
    fn poll_event(&mut self) -> Option<Event> {
        None
    }
    /// The statistics view.
    fn stats(&self) -> Stats;
    /// Rate-based senders: [`Stats::rate`] alone. A driver that follows
    /// the rate after every event (the simulator's loss-recovery metric)
    /// asks this instead of building the whole view; an endpoint that
    /// overrides it returns the same values as `stats().rate`.
    fn rate(&self) -> Option<RateStats> {
        self.stats().rate
    }
}

/// The application side of a sending endpoint.
pub trait Sender: Endpoint {
    /// The application offers `bytes` more bytes (a file, a burst).
    fn offer(&mut self, now: Instant, bytes: u64);
    /// Bulk transfer: there is always more to send.
    fn set_unlimited(&mut self, now: Instant);
    /// ON/OFF sources: a source that generates its own traffic (constant
    /// bit rate) stops (`true`) or resumes; others ignore it and send what
    /// they were offered.
    fn set_paused(&mut self, _now: Instant, _paused: bool) {}
    /// The application closes: send nothing new from now on (a reliable
    /// sender still delivers what it already sent, and reports
    /// [`Event::AllAcked`] when that is done). Every sender implements it:
    /// a runtime relies on it to stop a flow.
    fn close(&mut self, now: Instant);
}

/// A boxed receiver, the type drivers hold.
pub type BoxedEndpoint = Box<dyn Endpoint>;
/// A boxed sender, the type drivers hold.
pub type BoxedSender = Box<dyn Sender>;
