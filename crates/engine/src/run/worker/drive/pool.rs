//! The pool driver: which of a pool's connections may take requests now.
//!
//! Pool shapes hold their connections for the whole run. A connection is free when
//! it can take requests (an idle HTTP/1.1 connection, an HTTP/2 one with streams to
//! spare, one whose reconnect back-off is over), busy while its batch is answered,
//! and held while a script's delay before its next batch runs. This type keeps the
//! free list (each slot on it once, the last freed taken first, so a few warm
//! connections do the work of a run that needs few) and the delays, soonest first;
//! the worker asks it which slot to fill and tells it when one frees.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

pub(crate) struct Pool {
    /// Slots that can take requests; the last is taken first.
    free: Vec<usize>,
    /// Whether each slot is on `free`.
    listed: Vec<bool>,
    /// Slots waiting out a script's delay before their next batch, soonest first.
    delayed: BinaryHeap<Reverse<(Instant, usize)>>,
}

impl Pool {
    /// A pool of `slots` connections, all free, slot 0 taken first.
    pub fn new(slots: usize) -> Pool {
        Pool {
            free: (0..slots).rev().collect(),
            listed: vec![true; slots],
            delayed: BinaryHeap::new(),
        }
    }

    /// The slot to fill next, if one is free (it stays free until [`Pool::take`]).
    #[inline]
    pub fn next_free(&self) -> Option<usize> {
        self.free.last().copied()
    }

    /// The slot [`Pool::next_free`] named is busy now.
    #[inline]
    pub fn take(&mut self) {
        if let Some(slot) = self.free.pop() {
            self.listed[slot] = false;
        }
    }

    /// `slot` can take requests (again); a slot already free stays listed once.
    #[inline]
    pub fn free(&mut self, slot: usize) {
        if !self.listed[slot] {
            self.listed[slot] = true;
            self.free.push(slot);
        }
    }

    /// Slots free now.
    pub fn free_count(&self) -> usize {
        self.free.len()
    }

    /// Every free slot is held: the script delays each connection's first batch too.
    pub fn hold_all(&mut self) -> Vec<usize> {
        for &slot in &self.free {
            self.listed[slot] = false;
        }
        std::mem::take(&mut self.free)
    }

    /// `slot` waits until `until` before its next batch.
    pub fn delay(&mut self, slot: usize, until: Instant) {
        self.delayed.push(Reverse((until, slot)));
    }

    /// When the soonest delay ends, if one runs.
    pub fn next_release(&self) -> Option<Instant> {
        self.delayed.peek().map(|Reverse((t, _))| *t)
    }

    /// Slots whose delay is over by `now` are free again.
    pub fn release(&mut self, now: Instant) {
        while let Some(&Reverse((t, slot))) = self.delayed.peek() {
            if t > now {
                break;
            }
            self.delayed.pop();
            self.free(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_last_freed_slot_is_filled_first_and_listed_once() {
        let mut p = Pool::new(3);
        assert_eq!(p.free_count(), 3);
        assert_eq!(p.next_free(), Some(0));
        // Naming a slot does not take it.
        assert_eq!(p.next_free(), Some(0));
        p.take();
        p.take();
        assert_eq!(p.next_free(), Some(2));
        // Freed twice (a stream ended, then its batch), listed once.
        p.free(0);
        p.free(0);
        assert_eq!(p.free_count(), 2);
        assert_eq!(p.next_free(), Some(0));
        p.take();
        p.take();
        assert_eq!(p.next_free(), None);
        p.take();
        assert_eq!(p.free_count(), 0);
    }

    #[test]
    fn delayed_slots_come_back_in_the_order_their_delays_end() {
        let t0 = Instant::now();
        let ms = Duration::from_millis(1);
        let mut p = Pool::new(3);
        assert_eq!(p.hold_all(), vec![2, 1, 0]);
        assert_eq!(p.next_free(), None);
        p.delay(0, t0 + 5 * ms);
        p.delay(1, t0 + 2 * ms);
        p.delay(2, t0 + 9 * ms);
        assert_eq!(p.next_release(), Some(t0 + 2 * ms));
        p.release(t0 + ms);
        assert_eq!(p.next_free(), None);
        p.release(t0 + 5 * ms);
        assert_eq!(p.free_count(), 2);
        assert_eq!(p.next_free(), Some(0));
        assert_eq!(p.next_release(), Some(t0 + 9 * ms));
        p.release(t0 + 9 * ms);
        assert_eq!(p.next_free(), Some(2));
        assert_eq!(p.next_release(), None);
    }
}
