//! The event queue: fixed event slots (one per CPU and event kind, one timer
//! per task), ordered by `(at, seq)`.
//!
//! The first `leaves` slots (the engine's per-CPU segment ends, nearly every
//! event) live in a tournament tree: one key per slot, each internal node
//! holding the entry with the smallest key below it. Moving a slot's key is a
//! walk of log2(leaves) levels whose sibling loads are independent of each
//! other and whose comparisons are branch-free. The other slots live in an
//! indexed 4-ary min-heap of bare keys (16 bytes, the key names its slot),
//! laid out so that a node's four children fill one 64-byte line: a
//! sift-down level is one cache line; `pop` takes the smaller of the two minima. One
//! sequence counter serves both, so the order is exactly that of one heap.
//!
//! Rescheduling a slot moves its single entry instead of leaving a stale event
//! behind, so the heap never holds more than the live events and a CPU's
//! segment end can be moved (preemption, SMT speed change) in O(log n).
//!
//! `pop` leaves the popped entry in place until the next `pop`: most
//! handlers reschedule the slot they are handling (a CPU's next segment end),
//! which then replaces it with one tree walk or sift-down instead of a
//! removal plus an insertion. Every entry scheduled meanwhile is later than the root in
//! `(at, seq)` order (the clock never goes back, seq grows), so it never
//! displaces it; keys are unique, so the pop order is exactly that of a plain heap.

const NONE: u32 = u32::MAX;
/// Children per node: a 4-ary heap halves the depth of a binary one and keeps
/// siblings in one cache line.
const D: usize = 4;

/// Bits of a key below the sequence number, holding the slot.
const SLOT_BITS: u32 = 24;
/// Slots a queue can have (the slot lives in the key's low bits).
pub const MAX_SLOTS: usize = 1 << SLOT_BITS;
/// Sequence numbers a queue can hand out (above the slot in the key's low word).
const MAX_SEQ: u64 = 1 << (64 - SLOT_BITS);

/// `(at << 64) | (seq << SLOT_BITS) | slot`: one integer comparison orders by
/// time, then scheduling order (sequence numbers are unique, so the slot bits
/// never decide), and the key names its slot.
#[inline]
fn make_key(at: u64, seq: u64, slot: u32) -> u128 {
    ((at as u128) << 64) | ((seq << SLOT_BITS) | slot as u64) as u128
}

#[inline]
fn key_slot(key: u128) -> u32 {
    (key as u64 & (MAX_SLOTS as u64 - 1)) as u32
}

#[inline]
fn key_at(key: u128) -> u64 {
    (key >> 64) as u64
}

/// One cache line of the heap: a node's `D` children (16-byte keys).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Line([u128; D]);

/// Heap position `i` lives at `HEAP_PAD + i` of the flat line array: the
/// root alone in line 0's last key, and the children of `i` (`D * i + 1 ..=
/// D * i + D`) together in line `i + 1`, so a sift-down level reads one
/// cache line.
const HEAP_PAD: usize = D - 1;

#[derive(Clone, Debug)]
pub struct EventQueue {
    /// The 4-ary heap of keys (a key names its slot), `hlen` of them, laid
    /// out as [`HEAP_PAD`] says.
    heap: Vec<Line>,
    hlen: usize,
    pos: Vec<u32>,
    seq: u64,
    /// The slot returned by the last `pop`, still queued (not yet removed).
    popped: Option<u32>,
    /// Slots below this index live in the tournament tree.
    leaves: u32,
    /// Tree width: `leaves` rounded up to a power of two.
    cap: usize,
    /// The tree, heap-numbered: node `cap + i` holds slot `i`'s key (`EMPTY`
    /// when it has no event); node `n < cap` holds the smallest key below it
    /// (node 1 is the root; node 0 is unused). A key names its slot, so a node
    /// is 16 bytes.
    tree: Vec<u128>,
    /// Tree slots holding an event.
    tlen: usize,
}

/// `s.min(e)` for tree keys, without a branch. The tree walk's comparisons
/// are unpredictable, and LLVM's x86 cmov converter turns plain selects
/// inside a loop back into a branch; inline cmovs keep the choice a data
/// dependency.
#[inline(always)]
fn min_key(s: u128, e: u128) -> u128 {
    #[cfg(target_arch = "x86_64")]
    {
        let (mut hi, mut lo) = ((e >> 64) as u64, e as u64);
        let shi = (s >> 64) as u64;
        // SAFETY: register-only arithmetic (cmp/sbb + cmov), no memory or stack access.
        unsafe {
            std::arch::asm!(
                // Carry set iff s < e (128-bit unsigned: low words, then high with borrow).
                "cmp {slo}, {lo}",
                "mov {t}, {shi}",
                "sbb {t}, {hi}",
                "cmovb {hi}, {shi}",
                "cmovb {lo}, {slo}",
                slo = in(reg) s as u64,
                shi = in(reg) shi,
                t = out(reg) _,
                hi = inout(reg) hi,
                lo = inout(reg) lo,
                options(pure, nomem, nostack),
            );
        }
        (hi as u128) << 64 | lo as u128
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        s.min(e)
    }
}

/// Key of a tree slot without an event (larger than every real key: `at` < u64::MAX).
const EMPTY: u128 = u128::MAX;

impl EventQueue {
    /// `slots` event slots, of which the first `leaves` go to the tournament tree.
    pub fn new(slots: usize, leaves: usize) -> Self {
        let cap = leaves.max(1).next_power_of_two();
        assert!(slots <= MAX_SLOTS, "event queue: {slots} slots (CPUs x 8 + tasks) is more than the {MAX_SLOTS} it can hold");
        let tree = vec![EMPTY; 2 * cap];
        EventQueue {
            heap: Vec::with_capacity((slots + HEAP_PAD).div_ceil(D)),
            hlen: 0,
            pos: vec![NONE; slots],
            seq: 0,
            popped: None,
            leaves: leaves as u32,
            cap,
            tree,
            tlen: 0,
        }
    }

    /// Make room for slots up to `slots` (a task created beyond the workload's
    /// specs: a spec forked twice, a kernel thread).
    pub fn ensure_slots(&mut self, slots: usize) {
        if self.pos.len() < slots {
            assert!(slots <= MAX_SLOTS, "event queue: {slots} slots (CPUs x 8 + tasks) is more than the {MAX_SLOTS} it can hold");
            self.pos.resize(slots, NONE);
        }
    }

    /// Set tree slot `leaf`'s key and replay its matches up to the root.
    #[inline]
    fn tree_set(&mut self, leaf: u32, key: u128) {
        let mut node = self.cap + leaf as usize;
        assert!(node < self.tree.len(), "event queue: tree slot {leaf} out of range");
        let tree = self.tree.as_mut_ptr();
        // SAFETY: `tree` has 2 * cap nodes and `node` < 2 * cap (checked
        // above); the walk only halves `node` and reads its sibling `node ^ 1`,
        // which differs in the lowest bit only, so every index stays below
        // 2 * cap (and above 0: the loop stops at the root, node 1). No other
        // reference to the tree lives meanwhile. (Unchecked: a bounds test per
        // level was a third of the walk's instructions.)
        unsafe {
            let old = *tree.add(node);
            // Only EMPTY has `at` = u64::MAX (a real event's is below it): the
            // high words tell.
            self.tlen = self.tlen + (key_at(key) != u64::MAX) as usize - (key_at(old) != u64::MAX) as usize;
            let mut e = key;
            *tree.add(node) = e;
            while node > 1 {
                // The sibling subtree's minimum does not depend on this update, so
                // the loads of all levels can overlap; only the compare chains.
                // Every key is unique except EMPTY, so ties need no rule.
                e = min_key(*tree.add(node ^ 1), e);
                node >>= 1;
                *tree.add(node) = e;
            }
        }
    }

    /// The key at heap position `i` (< `hlen`).
    #[inline(always)]
    fn hget(&self, i: usize) -> u128 {
        let j = i + HEAP_PAD;
        debug_assert!(i < self.hlen && j < self.heap.len() * D, "heap position {i} past the heap");
        // SAFETY: every caller passes a position below `hlen`, and the lines
        // hold at least `hlen + HEAP_PAD` keys (`hpush` adds a line before a
        // key would pass them, and lines are never dropped); a `Line` is `D`
        // u128 and nothing else (repr(C), 64 bytes), so the line array is a
        // flat array of keys. (Unchecked: the bounds tests were a fifth of
        // the sift loops' instructions.)
        unsafe { *(self.heap.as_ptr() as *const u128).add(j) }
    }

    /// Set heap position `i` (< `hlen`) to `key`.
    #[inline(always)]
    fn hset(&mut self, i: usize, key: u128) {
        let j = i + HEAP_PAD;
        debug_assert!(i < self.hlen && j < self.heap.len() * D, "heap position {i} past the heap");
        // SAFETY: as in `hget`; `&mut self` is the only access to the lines.
        unsafe { *(self.heap.as_mut_ptr() as *mut u128).add(j) = key }
    }

    /// The earliest key of the heap, if any.
    #[inline]
    fn hfirst(&self) -> Option<u128> {
        (self.hlen > 0).then(|| self.heap[0].0[HEAP_PAD])
    }

    fn hpush(&mut self, key: u128) -> usize {
        let i = self.hlen;
        let j = i + HEAP_PAD;
        if j / D >= self.heap.len() {
            self.heap.push(Line([EMPTY; D]));
        }
        self.hlen += 1;
        self.hset(i, key);
        i
    }

    fn hpop(&mut self) -> Option<u128> {
        if self.hlen == 0 {
            return None;
        }
        self.hlen -= 1;
        let j = self.hlen + HEAP_PAD;
        Some(self.heap[j / D].0[j % D])
    }

    #[inline(always)]
    fn place(&mut self, i: usize, key: u128) {
        let slot = key_slot(key) as usize;
        debug_assert!(slot < self.pos.len());
        // SAFETY: a key enters the heap only through `schedule`, which
        // indexes `pos` with its slot first (checked), and `pos` never shrinks.
        unsafe { *self.pos.get_unchecked_mut(slot) = i as u32 };
        self.hset(i, key);
    }

    fn sift_up(&mut self, mut i: usize) {
        let e = self.hget(i);
        while i > 0 {
            let parent = (i - 1) / D;
            let p = self.hget(parent);
            if e >= p {
                break;
            }
            self.place(i, p);
            i = parent;
        }
        self.place(i, e);
    }

    fn sift_down(&mut self, mut i: usize) {
        let e = self.hget(i);
        let n = self.hlen;
        loop {
            let first = D * i + 1;
            if first >= n {
                break;
            }
            // The children are line `i + 1`; the keys past the heap's end are
            // not read (stale ones may sit there).
            debug_assert!(i + 1 < self.heap.len());
            // SAFETY: `first` < `hlen`, so line `i + 1` (keys `D * (i + 1)`
            // = `first + HEAP_PAD` on) holds a heap key: it exists (`hget`).
            let line = unsafe { &self.heap.get_unchecked(i + 1).0 };
            let last = (n - first).min(D);
            // Branch-free minimum of the children (the comparisons are unpredictable).
            let mut c = 0;
            let mut ck = line[0];
            for (k, &kk) in line.iter().enumerate().skip(1) {
                if k < last {
                    let lt = kk < ck;
                    c = if lt { k } else { c };
                    ck = if lt { kk } else { ck };
                }
            }
            if ck >= e {
                break;
            }
            self.place(i, ck);
            i = first + c;
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
        assert!(self.seq < MAX_SEQ, "event queue: more than 2^40 events scheduled in one run");
        let key = make_key(at, self.seq, slot);
        if slot < self.leaves {
            self.tree_set(slot, key);
            return;
        }
        let p = self.pos[slot as usize];
        if p == NONE {
            let i = self.hpush(key);
            self.pos[slot as usize] = i as u32;
            self.sift_up(i);
        } else {
            let p = p as usize;
            let old = self.hget(p);
            self.hset(p, key);
            if key < old {
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
        if slot < self.leaves {
            if self.tree[self.cap + slot as usize] != EMPTY {
                self.tree_set(slot, EMPTY);
            }
            return;
        }
        let p = self.pos[slot as usize];
        if p == NONE {
            return;
        }
        self.pos[slot as usize] = NONE;
        let last = self.hpop().expect("a slot with a heap position has a heap entry");
        let p = p as usize;
        if p == self.hlen {
            return;
        }
        let removed_before = self.hget(p) < last;
        self.place(p, last);
        if removed_before {
            self.sift_down(p);
        } else {
            self.sift_up(p);
        }
    }

    /// Pop tree slot `slot`'s event if it is the earliest pending one (what
    /// `pop` would return next) and no popped entry is still in place: its
    /// time. For the handler that has just rescheduled the slot it handles
    /// (which replaced the popped entry), so that an event that comes first
    /// anyway skips the return to the event loop. Costs two comparisons when
    /// it does not apply; None (and nothing changed) then.
    #[inline]
    pub fn pop_if_next(&mut self, slot: u32) -> Option<u64> {
        if self.popped.is_some() || slot >= self.leaves {
            return None;
        }
        let t = self.tree[1];
        if t == EMPTY || key_slot(t) != slot || self.hfirst().is_some_and(|k| k < t) {
            return None;
        }
        self.popped = Some(slot);
        Some((t >> 64) as u64)
    }

    /// Remove and return the earliest event: (slot, at).
    pub fn pop(&mut self) -> Option<(u32, u64)> {
        if let Some(s) = self.popped.take() {
            self.remove(s);
        }
        let t = self.tree[1];
        let top = match self.hfirst() {
            Some(k) if k < t => k,
            _ if t != EMPTY => t,
            _ => return None,
        };
        let slot = key_slot(top);
        self.popped = Some(slot);
        Some((slot, key_at(top)))
    }

    pub fn len(&self) -> usize {
        self.hlen + self.tlen - self.popped.is_some() as usize
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
        // Heap only, tree only, and mixed slot splits (odd tree widths included).
        for leaves in [0, 1, 5, 20, 64] {
            let mut q = EventQueue::new(64, leaves);
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
            assert_eq!(q.len(), want.len());
            let mut got = Vec::new();
            while let Some((slot, at)) = q.pop() {
                got.push((at, slot));
            }
            assert_eq!(got, want.iter().map(|&(a, _, s)| (a, s)).collect::<Vec<_>>(), "leaves={leaves}");
        }
    }

    /// A slot's key must never be compared against a slot outside its
    /// subtree: slot 0 holding the earliest key must not shadow a later slot.
    #[test]
    fn tree_nodes_only_name_their_own_slots() {
        let mut q = EventQueue::new(16, 12);
        q.schedule(0, 5);
        q.schedule(6, 5);
        q.schedule(12, 9);
        assert_eq!(q.pop(), Some((0, 5)));
        assert_eq!(q.pop(), Some((6, 5)));
        assert_eq!(q.pop(), Some((12, 9)));
        assert_eq!(q.pop(), None);
    }

    /// Keys name their slot and order by time, then scheduling order, never by
    /// slot: a later-scheduled lower slot at the same time pops second.
    #[test]
    fn keys_order_by_time_then_sequence_and_name_their_slot() {
        let k = make_key(7, 3, (MAX_SLOTS - 1) as u32);
        assert_eq!((key_slot(k), (k >> 64) as u64), ((MAX_SLOTS - 1) as u32, 7));
        assert!(make_key(7, 3, 9) < make_key(7, 4, 0) && make_key(7, 4, 0) < make_key(8, 1, 0));
        for leaves in [0, 8] {
            let mut q = EventQueue::new(8, leaves);
            q.schedule(5, 10);
            q.schedule(3, 10);
            q.schedule(7, 9);
            assert_eq!((q.pop(), q.pop(), q.pop(), q.pop()), (Some((7, 9)), Some((5, 10)), Some((3, 10)), None), "leaves={leaves}");
        }
    }

    /// `pop_if_next` pops exactly what `pop` would when that is the given
    /// tree slot, and nothing otherwise: a queue using it after each
    /// reschedule pops in the same order as one that never does.
    #[test]
    fn pop_if_next_is_pop_when_the_slot_comes_first() {
        for leaves in [1, 6, 16, 40] {
            let (mut a, mut b) = (EventQueue::new(40, leaves), EventQueue::new(40, leaves));
            let mut r = Pcg32::new(11, leaves as u64);
            for s in 0..40 {
                let at = r.below(20) as u64;
                a.schedule(s, at);
                b.schedule(s, at);
            }
            let (mut taken, mut refused) = (0, 0);
            let mut cur = a.pop();
            assert_eq!(cur, b.pop());
            while let Some((slot, now)) = cur {
                let mut next = None;
                if r.below(3) > 0 {
                    let at = now + r.below(4) as u64;
                    a.schedule(slot, at);
                    b.schedule(slot, at);
                    let want = a.pop();
                    match b.pop_if_next(slot) {
                        Some(got) => {
                            assert_eq!(want, Some((slot, got)), "took an event that is not next (leaves={leaves})");
                            taken += 1;
                        }
                        None => {
                            // Only tree slots (segment ends) are taken.
                            assert!(slot >= leaves as u32 || want.map(|w| w.0) != Some(slot), "refused the next event (leaves={leaves})");
                            refused += 1;
                            assert_eq!(want, b.pop());
                        }
                    }
                    next = want;
                } else {
                    // Another slot is scheduled; the popped entry still in place blocks taking.
                    let other = r.below(40);
                    let at = now + r.below(30) as u64;
                    a.schedule(other, at);
                    b.schedule(other, at);
                    if other != slot {
                        assert_eq!(b.pop_if_next(other), None, "only with no popped entry in place");
                    }
                }
                if next.is_none() {
                    next = a.pop();
                    assert_eq!(next, b.pop(), "leaves={leaves}");
                }
                assert_eq!(a.len(), b.len());
                cur = next;
                if taken + refused > 5000 {
                    break;
                }
            }
            assert!(taken > 50 && refused > 50, "both outcomes exercised: {taken} taken, {refused} refused (leaves={leaves})");
        }
    }

    /// A simulation-shaped workload: each pop may reschedule the popped slot
    /// (or not), schedule and cancel others at or after the current time; the
    /// pop order must match a sorted-set model exactly, ties included.
    #[test]
    fn interleaved_pops_match_a_sorted_model() {
        for leaves in [0, 3, 16, 40] {
            let mut q = EventQueue::new(40, leaves);
            let mut model: std::collections::BTreeSet<(u64, u64, u32)> = Default::default();
            let mut key: Vec<Option<(u64, u64)>> = vec![None; 40];
            let mut r = Pcg32::new(5, leaves as u64);
            let mut seq = 0u64;
            let mut last = 0u64;
            let mut sched =
                |q: &mut EventQueue, model: &mut std::collections::BTreeSet<_>, key: &mut Vec<Option<(u64, u64)>>, slot: u32, at: u64| {
                    seq += 1;
                    if let Some((a, s)) = key[slot as usize].take() {
                        model.remove(&(a, s, slot));
                    }
                    q.schedule(slot, at);
                    model.insert((at, seq, slot));
                    key[slot as usize] = Some((at, seq));
                };
            // Sparse start: most slots (and tree subtrees) hold no event yet.
            for s in (0..40).step_by(7) {
                sched(&mut q, &mut model, &mut key, s, r.below(20) as u64);
            }
            for _ in 0..20000 {
                let Some((slot, at)) = q.pop() else { break };
                let first = *model.iter().next().expect("model has the popped event");
                assert_eq!((first.0, first.2), (at, slot), "leaves={leaves}");
                model.remove(&first);
                key[slot as usize] = None;
                assert!(at >= last, "time never goes back");
                last = at;
                let now = at;
                match r.below(4) {
                    0 => {}
                    1 => {
                        let other = r.below(40);
                        if let Some((a, s)) = key[other as usize].take() {
                            model.remove(&(a, s, other));
                        }
                        q.cancel(other);
                    }
                    _ => sched(&mut q, &mut model, &mut key, slot, now + r.below(3) as u64),
                }
                if r.below(2) == 0 {
                    let other = r.below(40);
                    sched(&mut q, &mut model, &mut key, other, now + r.below(30) as u64);
                }
                assert_eq!(q.len(), model.len());
            }
        }
    }
}
