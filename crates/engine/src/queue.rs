//! The event queue: an indexed binary min-heap over fixed event slots (one per
//! CPU and event kind, one timer per task), ordered by `(at, seq)`.
//!
//! Rescheduling a slot moves its single entry instead of leaving a stale event
//! behind, so the heap never holds more than the live events and a CPU's
//! segment end can be moved (preemption, SMT speed change) in O(log n).

const NONE: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct EventQueue {
    heap: Vec<u32>,
    pos: Vec<u32>,
    key: Vec<(u64, u64)>,
    seq: u64,
}

impl EventQueue {
    pub fn new(slots: usize) -> Self {
        EventQueue { heap: Vec::with_capacity(slots), pos: vec![NONE; slots], key: vec![(0, 0); slots], seq: 0 }
    }

    #[inline]
    fn less(&self, a: u32, b: u32) -> bool {
        self.key[a as usize] < self.key[b as usize]
    }

    #[inline]
    fn place(&mut self, i: usize, slot: u32) {
        self.heap[i] = slot;
        self.pos[slot as usize] = i as u32;
    }

    fn sift_up(&mut self, mut i: usize) {
        let slot = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heap[parent];
            if !self.less(slot, p) {
                break;
            }
            self.place(i, p);
            i = parent;
        }
        self.place(i, slot);
    }

    fn sift_down(&mut self, mut i: usize) {
        let slot = self.heap[i];
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.less(self.heap[r], self.heap[l]) { r } else { l };
            if !self.less(self.heap[c], slot) {
                break;
            }
            let cs = self.heap[c];
            self.place(i, cs);
            i = c;
        }
        self.place(i, slot);
    }

    /// Schedule `slot` at `at`, replacing its pending event if any. Ties are
    /// broken by scheduling order.
    pub fn schedule(&mut self, slot: u32, at: u64) {
        self.seq += 1;
        self.key[slot as usize] = (at, self.seq);
        let p = self.pos[slot as usize];
        if p == NONE {
            self.heap.push(slot);
            let i = self.heap.len() - 1;
            self.pos[slot as usize] = i as u32;
            self.sift_up(i);
        } else {
            // The new key (later seq) is never smaller at equal time: sift both ways.
            self.sift_up(p as usize);
            let p = self.pos[slot as usize] as usize;
            self.sift_down(p);
        }
    }

    /// Drop `slot`'s pending event, if any.
    pub fn cancel(&mut self, slot: u32) {
        let p = self.pos[slot as usize];
        if p == NONE {
            return;
        }
        self.pos[slot as usize] = NONE;
        let last = self.heap.pop().unwrap();
        if p as usize == self.heap.len() {
            return;
        }
        self.place(p as usize, last);
        self.sift_up(p as usize);
        let q = self.pos[last as usize] as usize;
        self.sift_down(q);
    }

    /// Remove and return the earliest event: (slot, at).
    pub fn pop(&mut self) -> Option<(u32, u64)> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().unwrap();
        self.pos[top as usize] = NONE;
        if !self.heap.is_empty() {
            self.place(0, last);
            self.sift_down(0);
        }
        Some((top, self.key[top as usize].0))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
