//! The event queue: an indexed binary min-heap over fixed event slots (one per
//! CPU and event kind, one timer per task), ordered by `(at, seq)`.
//!
//! Rescheduling a slot moves its single entry instead of leaving a stale event
//! behind, so the heap never holds more than the live events and a CPU's
//! segment end can be moved (preemption, SMT speed change) in O(log n).
//!
//! `pop` leaves the popped entry at the root until the next `pop`: most
//! handlers reschedule the slot they are handling (a CPU's next segment end),
//! which then replaces the root with one sift-down instead of a removal plus
//! an insertion. Every entry scheduled meanwhile is later than the root in
//! `(at, seq)` order (the clock never goes back, seq grows), so it never
//! displaces it; keys are unique, so the pop order is exactly that of a plain heap.

const NONE: u32 = u32::MAX;
/// Children per node: a 4-ary heap halves the depth of a binary one and keeps
/// siblings in one cache line.
const D: usize = 4;

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// `(at << 64) | seq`: one integer comparison orders by time, then scheduling order.
    key: u128,
    slot: u32,
}

impl Entry {
    #[inline]
    fn before(&self, o: &Entry) -> bool {
        self.key < o.key
    }

    #[inline]
    fn at(&self) -> u64 {
        (self.key >> 64) as u64
    }
}

#[derive(Clone, Debug)]
pub struct EventQueue {
    heap: Vec<Entry>,
    pos: Vec<u32>,
    seq: u64,
    /// The slot returned by the last `pop`, still in the heap (not yet removed).
    popped: Option<u32>,
}

impl EventQueue {
    pub fn new(slots: usize) -> Self {
        EventQueue { heap: Vec::with_capacity(slots), pos: vec![NONE; slots], seq: 0, popped: None }
    }

    #[inline]
    fn place(&mut self, i: usize, e: Entry) {
        self.pos[e.slot as usize] = i as u32;
        self.heap[i] = e;
    }

    fn sift_up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / D;
            let p = self.heap[parent];
            if !e.before(&p) {
                break;
            }
            self.place(i, p);
            i = parent;
        }
        self.place(i, e);
    }

    fn sift_down(&mut self, mut i: usize) {
        let e = self.heap[i];
        let n = self.heap.len();
        loop {
            let first = D * i + 1;
            if first >= n {
                break;
            }
            let last = (first + D).min(n);
            // Branch-free minimum of the children (the comparisons are unpredictable).
            let mut c = first;
            let mut ck = self.heap[first].key;
            for k in first + 1..last {
                let kk = self.heap[k].key;
                let lt = kk < ck;
                c = if lt { k } else { c };
                ck = if lt { kk } else { ck };
            }
            if ck >= e.key {
                break;
            }
            let ce = self.heap[c];
            self.place(i, ce);
            i = c;
        }
        self.place(i, e);
    }

    /// Schedule `slot` at `at`, replacing its pending event if any. Ties are
    /// broken by scheduling order.
    pub fn schedule(&mut self, slot: u32, at: u64) {
        if self.popped == Some(slot) {
            self.popped = None; // the popped entry becomes the new event
        }
        self.seq += 1;
        let e = Entry { key: ((at as u128) << 64) | self.seq as u128, slot };
        let p = self.pos[slot as usize];
        if p == NONE {
            self.heap.push(e);
            let i = self.heap.len() - 1;
            self.pos[slot as usize] = i as u32;
            self.sift_up(i);
        } else {
            let p = p as usize;
            let old = self.heap[p];
            self.heap[p] = e;
            if e.before(&old) {
                self.sift_up(p);
            } else {
                self.sift_down(p);
            }
        }
    }

    /// Drop `slot`'s pending event, if any.
    pub fn cancel(&mut self, slot: u32) {
        if self.popped == Some(slot) {
            self.popped = None;
        }
        self.remove(slot);
    }

    fn remove(&mut self, slot: u32) {
        let p = self.pos[slot as usize];
        if p == NONE {
            return;
        }
        self.pos[slot as usize] = NONE;
        let last = self.heap.pop().unwrap();
        let p = p as usize;
        if p == self.heap.len() {
            return;
        }
        let removed_before = self.heap[p].before(&last);
        self.place(p, last);
        if removed_before {
            self.sift_down(p);
        } else {
            self.sift_up(p);
        }
    }

    /// Remove and return the earliest event: (slot, at).
    pub fn pop(&mut self) -> Option<(u32, u64)> {
        if let Some(s) = self.popped.take() {
            self.remove(s);
        }
        let top = *self.heap.first()?;
        self.popped = Some(top.slot);
        Some((top.slot, top.at()))
    }

    pub fn len(&self) -> usize {
        self.heap.len() - self.popped.is_some() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Pcg32;

    #[test]
    fn pops_in_time_then_schedule_order_with_moves_and_cancels() {
        let mut q = EventQueue::new(64);
        let mut r = Pcg32::new(9, 9);
        let mut live: Vec<Option<(u64, u64)>> = vec![None; 64];
        let mut seq = 0;
        for _ in 0..2000 {
            let slot = r.below(64);
            if r.below(5) == 0 {
                q.cancel(slot);
                live[slot as usize] = None;
            } else {
                let at = r.below(50) as u64;
                seq += 1;
                q.schedule(slot, at);
                live[slot as usize] = Some((at, seq));
            }
        }
        let mut want: Vec<(u64, u64, u32)> = live.iter().enumerate().filter_map(|(s, k)| k.map(|(a, sq)| (a, sq, s as u32))).collect();
        want.sort();
        let mut got = Vec::new();
        while let Some((slot, at)) = q.pop() {
            got.push((at, slot));
        }
        assert_eq!(got, want.iter().map(|&(a, _, s)| (a, s)).collect::<Vec<_>>());
    }
}
