//! The event queue: a binary heap ordered by (time, insertion sequence), so
//! events at the same nanosecond run in the order they were scheduled and a
//! run is reproducible to the bit.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use satcc_proto::Instant;

/// What happens at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A link finished serialising a packet and may start the next.
    LinkFree(u32),
    /// The packet at the head of a link's pipe reaches the far end. A
    /// link's arrivals are in FIFO order (constant delay, serialised
    /// transmissions), so only the head of each pipe is in the heap: the
    /// heap holds one event per busy link instead of one per packet on a
    /// wire.
    Arrive(u32),
    /// An endpoint's timer (lazy: the endpoint checks what is due).
    Wake(u32),
    /// An application action of a flow.
    App {
        /// Flow instance.
        flow: u32,
        /// Which action.
        action: AppAction,
    },
    /// Take a time-series sample.
    Sample,
    /// Snapshot counters at `record.measure_from`.
    MeasureStart,
}

/// Application actions scheduled in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppAction {
    /// The flow starts.
    Start,
    /// The flow stops.
    Stop,
    /// An ON/OFF source switches ON.
    On,
    /// An ON/OFF source switches OFF.
    Off,
    /// A file arrives (Poisson files) or the next sequential file starts.
    File,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: u64,
    seq: u64,
    ev: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// The pending events of a run.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
    processed: u64,
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }
    /// Schedules `ev` at `at`.
    pub fn push(&mut self, at: Instant, ev: Event) {
        self.seq += 1;
        self.heap.push(Entry {
            time: at.as_nanos(),
            seq: self.seq,
            ev,
        });
    }
    /// The next event if it is due no later than `until`.
    pub fn pop_until(&mut self, until: Instant) -> Option<(Instant, Event)> {
        if self.heap.peek()?.time > until.as_nanos() {
            return None;
        }
        let e = self.heap.pop()?;
        self.processed += 1;
        Some((Instant(e.time), e.ev))
    }
    /// Events handed out so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }
    /// Events still pending.
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    /// No events pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_break_by_insertion_order() {
        let mut q = EventQueue::new();
        q.push(Instant(5), Event::Wake(1));
        q.push(Instant(3), Event::Wake(2));
        q.push(Instant(5), Event::Wake(3));
        q.push(Instant(3), Event::Wake(4));
        let order: Vec<Event> =
            std::iter::from_fn(|| q.pop_until(Instant::MAX).map(|(_, e)| e)).collect();
        assert_eq!(
            order,
            vec![
                Event::Wake(2),
                Event::Wake(4),
                Event::Wake(1),
                Event::Wake(3)
            ]
        );
        assert_eq!(q.processed(), 4);
    }

    #[test]
    fn pop_until_respects_the_horizon() {
        let mut q = EventQueue::new();
        q.push(Instant(10), Event::Sample);
        assert!(q.pop_until(Instant(9)).is_none());
        assert!(q.pop_until(Instant(10)).is_some());
    }
}
