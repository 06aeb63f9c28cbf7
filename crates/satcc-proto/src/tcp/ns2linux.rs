//! ns-2 2.35's `Agent/TCP/Linux` loss recovery ([`SackRecovery::Ns2Linux`]):
//! the scoreboard of `tcp/scoreboard1.{h,cc}` (`ScoreBoard1`, a FACK-style
//! board that also finds lost retransmissions) and the state the shim of
//! `tcp/tcp-linux.cc` keeps around it (`icsk_ca_state`, `recover_`,
//! `next_pkts_in_flight_`). The sender drives it
//! (`TcpSender::shim_ack`, `shim_timeout`, `shim_transmit`).
//!
//! Sequence numbers count segments, as in ns-2. ns-2 passes the board
//! `highest_ack_` (the last segment acknowledged); here `una` is the first
//! one not acknowledged (`highest_ack_ + 1`).
//!
//! [`SackRecovery::Ns2Linux`]: super::SackRecovery::Ns2Linux

/// `dupack_threshold` of `ScoreBoard1::UpdateScoreBoard()` (its default
/// argument, 3; tcp-linux.cc never passes another).
pub(crate) const SHIM_DUPTHRESH: u64 = 3;

/// `tcp_max_burst` of tcp-linux.cc `tcp_moderate_cwnd()` (Linux's
/// `tcp_max_burst()`, the reordering metric, 3).
pub(crate) const SHIM_MAX_BURST: u64 = 3;

/// `SKB_FLAG_*` of scoreboard1.h.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    /// `SKB_FLAG_INFLIGHT`: sent, neither SACKed nor deemed lost.
    InFlight,
    /// `SKB_FLAG_SACKED`.
    Sacked,
    /// `SKB_FLAG_LOST`: deemed lost (FACK rule or a timeout), not resent.
    Lost,
    /// `SKB_FLAG_RETRANSMITTED`: resent, in flight again.
    Retransmitted,
}

/// `ScoreBoardNode1`: segments `seq..=nxt` with one mark, or, when
/// retransmitted, segment `seq` alone with `nxt` = snd_nxt at the
/// retransmission and `rtx` its retransmission id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Node {
    mark: Mark,
    seq: u64,
    nxt: u64,
    rtx: i64,
}

impl Node {
    fn new(seq: u64, end: u64, mark: Mark) -> Self {
        Node {
            mark,
            seq,
            nxt: end,
            rtx: 0,
        }
    }
    /// `GetEnd()`.
    fn end(&self) -> u64 {
        if self.mark == Mark::Retransmitted {
            self.seq
        } else {
            self.nxt
        }
    }
    /// `GetLength()`.
    fn len(&self) -> u64 {
        if self.mark == Mark::Retransmitted {
            1
        } else {
            self.nxt + 1 - self.seq
        }
    }
    /// `SetFlag()`: a retransmitted node keeps one segment.
    fn set_mark(&mut self, m: Mark) {
        if self.mark == Mark::Retransmitted {
            self.nxt = self.seq;
        }
        self.mark = m;
    }
}

/// What `UpdateScoreBoard()` reports (its `FLAG_*` return value).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BoardNews {
    /// `FLAG_DATA_SACKED`: a segment was newly SACKed.
    pub sacked: bool,
    /// `FLAG_DATA_LOST`: a segment was newly deemed lost.
    pub lost: bool,
}

/// ns-2's `ScoreBoard1`.
#[derive(Clone, Debug)]
pub(crate) struct ShimBoard {
    nodes: Vec<Node>,
    /// `nxt_to_retrx_`, as the first segment of the node it points at
    /// (`None` = NULL): `GetNextRetran()` walks forward from there.
    nxt_to_retrx: Option<u64>,
    acked_rtx_id: i64,
    rtx_id: i64,
    /// `fack_`: the highest segment SACKed (0 when cleared).
    fack: u64,
    /// `fack_out_`: segments deemed lost and not resent.
    fack_out: u64,
    /// `sack_out_`: segments SACKed.
    sack_out: u64,
}

impl Default for ShimBoard {
    fn default() -> Self {
        ShimBoard {
            nodes: Vec::new(),
            nxt_to_retrx: None,
            acked_rtx_id: -1,
            rtx_id: 0,
            fack: 0,
            fack_out: 0,
            sack_out: 0,
        }
    }
}

impl ShimBoard {
    /// `IsEmpty()`.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// `ClearScoreBoard()`.
    pub fn clear(&mut self) {
        *self = ShimBoard::default();
    }

    /// `packets_in_flight(snd_una, snd_nxt)` = snd_nxt − snd_una −
    /// fack_out − sack_out (never negative here).
    pub fn in_flight(&self, una: u64, snd_nxt: u64) -> u64 {
        (snd_nxt.saturating_sub(una)).saturating_sub(self.fack_out + self.sack_out)
    }

    /// Segments SACKed.
    #[cfg(test)]
    pub fn sack_out(&self) -> u64 {
        self.sack_out
    }

    /// Segments deemed lost and not yet resent.
    #[cfg(test)]
    pub fn fack_out(&self) -> u64 {
        self.fack_out
    }

    /// The mark of segment `seq`, if the board holds it (tests).
    #[cfg(test)]
    pub fn mark(&self, seq: u64) -> Option<Mark> {
        self.nodes
            .iter()
            .find(|n| n.seq <= seq && seq <= n.end())
            .map(|n| n.mark)
    }

    /// Split node `i` at `seq` (`Split()`): node `i` keeps `seq..`'s
    /// predecessors, a new node after it holds `seq..=end`.
    fn split(&mut self, i: usize, seq: u64) {
        let n = self.nodes[i];
        self.nodes[i].nxt = seq - 1;
        self.nodes.insert(i + 1, Node::new(seq, n.nxt, n.mark));
    }

    /// `Mergable()` of node `i` with its successor.
    fn mergable(&self, i: usize) -> bool {
        self.nodes
            .get(i + 1)
            .is_some_and(|next| next.mark != Mark::Retransmitted && next.mark == self.nodes[i].mark)
    }

    /// `Merge()` of node `i` with its successor.
    fn merge(&mut self, i: usize) {
        let next = self.nodes.remove(i + 1);
        self.nodes[i].nxt = next.nxt;
    }

    /// `CleanRtxQueue()`: forget what the cumulative ACK covers; true if
    /// a retransmission with a higher id than any before was acknowledged.
    fn clean(&mut self, una: u64) -> bool {
        let mut changed = false;
        let mut removed = 0;
        while let Some(h) = self.nodes.get(removed).copied() {
            // ShouldClean(): untouched if the ACK is below the node.
            if una <= h.seq {
                break;
            }
            let whole = h.mark == Mark::Retransmitted || una > h.nxt;
            let n = if whole { h.len() } else { una - h.seq };
            match h.mark {
                Mark::Sacked => self.sack_out = self.sack_out.saturating_sub(n),
                Mark::Lost => self.fack_out = self.fack_out.saturating_sub(n),
                _ => {}
            }
            if whole {
                if h.mark == Mark::Retransmitted && h.rtx > self.acked_rtx_id {
                    changed = true;
                    self.acked_rtx_id = h.rtx;
                }
                removed += 1;
            } else {
                self.nodes[removed].seq = una;
                break;
            }
        }
        self.nodes.drain(..removed);
        // `if (tmp == nxt_to_retrx_) nxt_to_retrx_ = head_`: a pointer
        // below the new head now means the head (see `next_retran`).
        changed
    }

    /// `UpdateScoreBoard(highest_ack_, tcph)` with `una` = highest_ack_ + 1
    /// and the ACK's SACK blocks (`start..end`, end exclusive, as ns-2's
    /// `sa_left`/`sa_right`). Called by the shim when the ACK carries SACK
    /// blocks or the board is not empty.
    pub fn update(&mut self, una: u64, blocks: &[(u64, u64)]) -> BoardNews {
        let mut news = BoardNews::default();
        let mut thorough = self.clean(una);
        if self.nodes.is_empty() {
            self.clear();
            thorough = false;
        }
        if !thorough && blocks.is_empty() {
            return news;
        }
        // "we filter D-SACK and sort the SACKs": sack_left >= last_ack,
        // i.e. left >= una - 1, kept in increasing order of left.
        let mut sa: Vec<(u64, u64)> = blocks
            .iter()
            .copied()
            .filter(|&(l, r)| l + 1 >= una && r > l)
            .collect();
        sa.sort_by_key(|b| b.0);
        if !thorough && sa.is_empty() {
            return news;
        }
        if let Some(&(_, right)) = sa.last() {
            // "advance fack_": the right edge of the last block sorted.
            if self.fack < right - 1 {
                self.fack = right - 1;
                thorough = true;
            }
        }
        if self.nodes.is_empty() {
            if self.fack < una {
                // Only SACK blocks at or below the cumulative ACK: ns-2
                // would build a node of negative length; nothing to mark.
                return news;
            }
            // "initially, create a block from snd_una to facked".
            self.nodes.push(Node::new(una, self.fack, Mark::InFlight));
        }
        self.nxt_to_retrx = None;
        let lost_threshold = self.fack as i64 - (SHIM_DUPTHRESH as i64 + 1);
        let mut now = 0usize;
        let mut prev: Option<usize> = None;
        let mut si = 0usize;
        while now < self.nodes.len() && (si < sa.len() || thorough) {
            if self.nodes[now].mark != Mark::Sacked {
                while si < sa.len() && sa[si].1 <= self.nodes[now].seq {
                    si += 1;
                }
                if si < sa.len() && sa[si].0 <= self.nodes[now].end() {
                    // This SACK block and node `now` intersect.
                    if sa[si].0 > self.nodes[now].seq {
                        // The first part of `now` is not SACKed.
                        self.split(now, sa[si].0);
                    } else {
                        if sa[si].1 <= self.nodes[now].end() {
                            // Partially SACKed.
                            self.split(now, sa[si].1);
                        }
                        let n = self.nodes[now];
                        match n.mark {
                            Mark::Lost => self.fack_out = self.fack_out.saturating_sub(n.len()),
                            Mark::Retransmitted => {
                                self.acked_rtx_id = n.rtx;
                                thorough = true;
                            }
                            _ => {}
                        }
                        self.sack_out += n.len();
                        news.sacked = true;
                        self.nodes[now].set_mark(Mark::Sacked);
                    }
                }
                if si >= sa.len() || sa[si].0 > self.nodes[now].end() {
                    let n = self.nodes[now];
                    match n.mark {
                        Mark::Retransmitted => {
                            // "check if it is lost again": a segment sent
                            // after the retransmission was SACKed, or a
                            // retransmission DupThresh + 1 later arrived.
                            if n.nxt <= self.fack
                                || n.rtx + SHIM_DUPTHRESH as i64 + 1 < self.acked_rtx_id
                            {
                                self.nodes[now].set_mark(Mark::Lost);
                                self.fack_out += 1;
                                news.lost = true;
                                self.nxt_to_retrx.get_or_insert(n.seq);
                            }
                        }
                        Mark::InFlight => {
                            // FACK: lost when more than DupThresh segments
                            // lie between it and the highest SACKed one.
                            if (n.seq as i64) <= lost_threshold {
                                if lost_threshold < n.end() as i64 {
                                    self.split(now, lost_threshold as u64 + 1);
                                }
                                self.nodes[now].set_mark(Mark::Lost);
                                self.fack_out += self.nodes[now].len();
                                news.lost = true;
                                self.nxt_to_retrx.get_or_insert(n.seq);
                            }
                        }
                        Mark::Lost => {
                            self.nxt_to_retrx.get_or_insert(n.seq);
                        }
                        Mark::Sacked => {}
                    }
                }
            }
            match prev {
                Some(p) if self.mergable(p) => self.merge(p),
                _ => prev = Some(now),
            }
            let p = prev.expect("set above");
            if p + 1 == self.nodes.len() && self.nodes[p].end() < self.fack {
                // "extend the scoreboard" up to fack_.
                let start = self.nodes[p].end() + 1;
                self.nodes.push(Node::new(start, self.fack, Mark::InFlight));
            }
            now = p + 1;
        }
        news
    }

    /// `MarkLoss(snd_una, snd_nxt)` at a timeout: every segment not SACKed
    /// in `una..snd_nxt` is lost; retransmission ids start over.
    pub fn mark_loss(&mut self, una: u64, snd_nxt: u64) {
        self.nxt_to_retrx = None;
        let mut i = 0usize;
        let mut last_lost = false;
        while i < self.nodes.len() {
            if self.nodes[i].mark != Mark::Sacked {
                if self.nodes[i].mark != Mark::Lost {
                    // `GetEnd() - GetStart() + 1`: 1 for a retransmission.
                    self.fack_out += self.nodes[i].end() - self.nodes[i].seq + 1;
                }
                self.nodes[i].set_mark(Mark::Lost);
                if last_lost {
                    self.merge(i - 1);
                    i -= 1;
                } else {
                    self.nxt_to_retrx.get_or_insert(self.nodes[i].seq);
                }
                last_lost = true;
            } else {
                last_lost = false;
            }
            if i + 1 == self.nodes.len() && self.nodes[i].end() + 1 < snd_nxt {
                // "all the packets that we sent have lost".
                let start = self.nodes[i].end() + 1;
                self.nodes
                    .push(Node::new(start, snd_nxt - 1, Mark::InFlight));
            }
            i += 1;
        }
        if self.nodes.is_empty() && una < snd_nxt {
            self.nodes.push(Node::new(una, snd_nxt - 1, Mark::Lost));
            self.nxt_to_retrx = Some(una);
            self.fack_out += snd_nxt - una;
        }
        self.rtx_id = 0;
        self.acked_rtx_id = -1;
    }

    /// `GetNextRetran()`: the first segment of the first lost node at or
    /// after `nxt_to_retrx_`.
    pub fn next_retran(&mut self) -> Option<u64> {
        let from = self.nxt_to_retrx?;
        let i = self.nodes.iter().position(|n| n.end() >= from)?;
        let j = i + self.nodes[i..].iter().position(|n| n.mark == Mark::Lost)?;
        self.nxt_to_retrx = Some(self.nodes[j].seq);
        Some(self.nodes[j].seq)
    }

    /// `MarkRetran(retran_seqno, snd_nxt)`: `seq`, the segment
    /// [`Self::next_retran`] returned, is resent while `snd_nxt` is the
    /// next new segment.
    pub fn mark_retran(&mut self, seq: u64, snd_nxt: u64) {
        let Some(i) = self
            .nodes
            .iter()
            .position(|n| n.seq == seq && n.mark == Mark::Lost)
        else {
            return;
        };
        self.fack_out = self.fack_out.saturating_sub(1);
        if self.nodes[i].nxt > seq {
            self.split(i, seq + 1);
        }
        let n = &mut self.nodes[i];
        n.mark = Mark::Retransmitted;
        n.nxt = snd_nxt;
        n.rtx = self.rtx_id;
        self.rtx_id += 1;
    }
}

/// `icsk_ca_state` as the shim uses it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum CaState {
    /// `TCP_CA_Open`.
    #[default]
    Open,
    /// `TCP_CA_Recovery`: entered on `FLAG_DATA_LOST`.
    Recovery,
    /// `TCP_CA_Loss`: after a timeout (`enter_loss()`).
    Loss,
}

/// The shim's own state beside the board.
#[derive(Clone, Debug, Default)]
pub(crate) struct Shim {
    pub board: ShimBoard,
    pub ca: CaState,
    /// `recover_` as one past `maxseq_`: the state ends once the
    /// cumulative ACK reaches it (`highest_ack_ >= recover_`).
    pub recover: u64,
    /// `next_pkts_in_flight_`: the rate-halving allowance.
    pub npif: u64,
    /// `rtt_active_` / `rtt_seq_` (tcp.cc output()): the segment whose
    /// acknowledgment ends the timer's backoff.
    pub rtt_active: bool,
    pub rtt_seq: Option<u64>,
}
