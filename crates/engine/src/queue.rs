//! The event queue: fixed event slots (one per CPU and event kind, one timer
//! per task), ordered by `(at, seq)`. A slot lives in one of four parts,
//! chosen by its number ([`Layout`]); `pop` takes the smallest of their minima.
//!
//! - The first `leaves` slots (the engine's per-CPU segment ends, nearly every
//!   event) live in a tournament tree: one key per slot, each internal node
//!   holding the entry with the smallest key below it. Moving a slot's key is a
//!   walk of log2(leaves) levels whose sibling loads are independent of each
//!   other and whose comparisons are branch-free.
//! - The `cold` slots (events that are rare and far ahead: the machine's
//!   background) live in a second tournament tree, so that they never sit in
//!   the heap's paths; the hot paths read only its root.
//! - A lane's slots (the ticks, the IPIs, the task timers: events of one kind,
//!   most of them scheduled in time order) live in a sorted ring buffer of
//!   keys when they can: an event later than the lane's last one is appended,
//!   the earliest is the first, and an event leaves from anywhere in O(1) (a
//!   hole the first and last entries skip; a full ring is compacted, or
//!   doubled when more than half of it is live). Appends and pops walk the
//!   ring in order, one cache line per four events. An event that would land
//!   before the lane's last one goes to the heap instead (the order stays
//!   exact).
//! - Every other slot, and lane slots that did not fit their lane, live in an
//!   indexed 4-ary min-heap of bare keys (16 bytes, the key names its slot),
//!   laid out so that a node's four children fill one 64-byte line: a
//!   sift-down level is one cache line.
//!
//! One sequence counter serves all parts, so the order is exactly that of one
//! heap.
//!
//! Rescheduling a slot moves its single entry instead of leaving a stale event
//! behind, so the queue never holds more than the live events and a CPU's
//! segment end can be moved (preemption, SMT speed change) in O(log n).
//!
//! `pop` leaves the popped entry in place until the next `pop`: most
//! handlers reschedule the slot they are handling (a CPU's next segment end),
//! which then replaces it with one tree walk or sift-down instead of a
//! removal plus an insertion. Every entry scheduled meanwhile is later than the root in
//! `(at, seq)` order (the clock never goes back, seq grows), so it never
//! displaces it; keys are unique, so the pop order is exactly that of a plain heap.

const NONE: u32 = u32::MAX;
/// `pos` of a slot whose event is in its lane: this bit and the index in the
/// lane's ring (heap positions are below `MAX_SLOTS`; a ring never reaches
/// 2^30 entries, so no lane position is `NONE`).
const IN_LANE: u32 = 1 << 31;
/// A ring entry whose event left (every key is above 0: its sequence number is).
const HOLE: u128 = 0;
/// Ring entries a lane starts with.
const RING_START: usize = 16;
/// Children per node: a 4-ary heap halves the depth of a binary one and keeps
/// siblings in one cache line.
const D: usize = 4;
/// Lanes a queue can have.
pub const MAX_LANES: usize = 3;

/// Bits of a key below the sequence number, holding the slot.
const SLOT_BITS: u32 = 24;
/// Slots a queue can have (the slot lives in the key's low bits).
pub const MAX_SLOTS: usize = 1 << SLOT_BITS;
/// Sequence numbers a queue can hand out (above the slot in the key's low word).
const MAX_SEQ: u64 = 1 << (64 - SLOT_BITS);
/// Tree levels below the root that `peek_next` reads for a tree slot (its
/// guess is exact on trees of up to 2^6 leaves; on a 1024-leaf one it skips
/// the 15 leaves nearest the popped one, and 4 of the 10 sibling loads).
const PEEK_LEVELS: u32 = 6;

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

/// Which slots go where: `0..leaves` to the tournament tree, `cold.0..cold.1`
/// to the cold tree, each lane's range `lo..hi` to that lane (`hi` may be
/// `u32::MAX`: slots added later by `ensure_slots` join the last lane), the
/// rest to the heap. Ranges must not overlap. Which part holds a slot never
/// changes the pop order, only the cost.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub leaves: u32,
    pub cold: (u32, u32),
    pub lanes: Vec<(u32, u32)>,
}

/// One lane's events, in key order: `ring[head..tail]` (indices modulo the
/// ring's power-of-two length), the first and last of them never a `HOLE`.
#[derive(Clone, Debug)]
struct Lane {
    /// The lane's slots are `lo..hi`.
    lo: u32,
    hi: u32,
    head: u32,
    tail: u32,
    /// Events in the lane.
    live: u32,
    /// The ring's length - 1.
    mask: u32,
    ring: Vec<u128>,
    /// The first event's key (`EMPTY` when the lane is empty): `pop` reads it here.
    head_key: u128,
    /// The last event's key (0, below every key, when the lane is empty): an
    /// event with a larger key is appended.
    tail_key: u128,
}

impl Lane {
    fn new(lo: u32, hi: u32) -> Lane {
        Lane { lo, hi, head: 0, tail: 0, live: 0, mask: RING_START as u32 - 1, ring: vec![HOLE; RING_START], head_key: EMPTY, tail_key: 0 }
    }

    #[inline(always)]
    fn holds(&self, slot: u32) -> bool {
        slot.wrapping_sub(self.lo) < self.hi - self.lo
    }
}

/// A tournament tree over a fixed range of slots, heap-numbered: node `cap +
/// i` holds leaf `i`'s key (`EMPTY` when it has no event); node `n < cap`
/// holds the smallest key below it (node 1 is the root; node 0 is unused). A
/// key names its slot, so a node is a key. Its two 64-bit halves live in two
/// arrays (`hi[n]`, the time, and `lo[n]`, the sequence number and slot),
/// so that a node is addressed by its number scaled by 8 (no shift or mask
/// per level of a walk).
#[derive(Clone, Debug)]
struct Tree {
    /// Width: the leaf count rounded up to a power of two.
    cap: usize,
    hi: Vec<u64>,
    lo: Vec<u64>,
    /// Leaves holding an event.
    len: usize,
}

impl Tree {
    fn new(leaves: usize) -> Tree {
        let cap = leaves.max(1).next_power_of_two();
        Tree { cap, hi: vec![u64::MAX; 2 * cap], lo: vec![u64::MAX; 2 * cap], len: 0 }
    }

    /// Node `n`'s key.
    #[inline(always)]
    fn node(&self, n: usize) -> u128 {
        ((self.hi[n] as u128) << 64) | self.lo[n] as u128
    }

    /// Node `n`'s key, unchecked.
    ///
    /// # Safety
    /// `n` < 2 * cap.
    #[inline(always)]
    unsafe fn node_unchecked(&self, n: usize) -> u128 {
        unsafe { ((*self.hi.get_unchecked(n) as u128) << 64) | *self.lo.get_unchecked(n) as u128 }
    }

    /// The smallest key (`EMPTY` if none).
    #[inline(always)]
    fn min(&self) -> u128 {
        // SAFETY: both arrays have 2 * cap >= 2 entries.
        unsafe { self.node_unchecked(1) }
    }

    #[inline(always)]
    fn get(&self, leaf: usize) -> u128 {
        self.node(self.cap + leaf)
    }

    /// The smallest key of the leaves other than `leaf`, as far as the
    /// `levels` levels below the root tell: the minima of the sibling
    /// subtrees along its path from the root's children down, `levels` of
    /// them (`EMPTY` if none). Exact when the tree is at most `levels` deep;
    /// in a deeper one the leaves that share `leaf`'s ancestor `levels`
    /// below the root (a block of `cap >> levels`) are not looked at. Those
    /// top nodes are few and stay cached; the deep siblings are a cache
    /// line each, rarely cached on a wide tree, and rarely hold the answer.
    #[inline]
    fn min_but_near_root(&self, leaf: usize, levels: u32) -> u128 {
        let node = self.cap + leaf;
        assert!(node < self.hi.len(), "event queue: tree slot {leaf} out of range");
        let depth = self.cap.trailing_zeros();
        // The walk goes up from the leaf's ancestor `stop` levels above it
        // (the minimum does not depend on the order): one shift per level.
        let mut a = node >> depth.saturating_sub(levels);
        let mut m = EMPTY;
        // SAFETY (both loops): `node` < 2 * cap (checked above); `a` is an
        // ancestor of it (or itself), at least 2 inside the loop, and its
        // sibling `a ^ 1` differs in the lowest bit only, so both are in range.
        if depth >= PEEK_LEVELS && levels == PEEK_LEVELS {
            // `peek_next`'s walk on a deep tree: a fixed number of levels,
            // unrolled (no loop test; `a` >= 2^PEEK_LEVELS at the start).
            m = unsafe { self.node_unchecked(a ^ 1) };
            a >>= 1;
            for _ in 1..PEEK_LEVELS {
                m = min_key(unsafe { self.node_unchecked(a ^ 1) }, m);
                a >>= 1;
            }
            return m;
        }
        while a > 1 {
            m = min_key(unsafe { self.node_unchecked(a ^ 1) }, m);
            a >>= 1;
        }
        m
    }

    /// `set(leaf, key)` when no other leaf holds an event (`len` is 0, or
    /// 1 and that is `leaf`'s): every node on the path becomes `key`
    /// (`EMPTY` too), stored without the siblings' matches. A tree with one
    /// busy CPU (strict ping-pong) sets and clears its leaves this way.
    #[inline(always)]
    fn set_alone(&mut self, leaf: usize, key: u128) {
        let node = self.cap + leaf;
        assert!(node < self.hi.len() && node < self.lo.len(), "event queue: tree slot {leaf} out of range");
        debug_assert!(self.len == 0 || (self.len == 1 && self.get(leaf) != EMPTY));
        self.len = (key_at(key) != u64::MAX) as usize;
        let (ehi, elo) = ((key >> 64) as u64, key as u64);
        let mut i = node;
        // (Checked indices: `i` only halves from `node`, which is in range.)
        while i >= 1 {
            self.hi[i] = ehi;
            self.lo[i] = elo;
            i >>= 1;
        }
    }

    /// Set leaf `leaf`'s key and replay its matches up to the root.
    #[inline(always)]
    fn set(&mut self, leaf: usize, key: u128) {
        let node = self.cap + leaf;
        assert!(node < self.hi.len() && node < self.lo.len(), "event queue: tree slot {leaf} out of range");
        let hi = self.hi.as_mut_ptr();
        let lo = self.lo.as_mut_ptr();
        // SAFETY: `hi` and `lo` have 2 * cap entries and `node` < 2 * cap
        // (checked above); the walk only halves `node` and reads its sibling
        // `node ^ 1`, which differs in the lowest bit only, so every index
        // stays below 2 * cap (and above 0: the walk stops at the root, node
        // 1). No other reference to the tree lives meanwhile. (Unchecked: a
        // bounds test per level was a third of the walk's instructions.)
        unsafe {
            // Only EMPTY has `at` = u64::MAX (a real event's is below it): the
            // high words tell.
            let old_hi = *hi.add(node);
            self.len = self.len + (key_at(key) != u64::MAX) as usize - (old_hi != u64::MAX) as usize;
            let (mut ehi, mut elo) = ((key >> 64) as u64, key as u64);
            *hi.add(node) = ehi;
            *lo.add(node) = elo;
            // One level up. The sibling subtree's minimum does not depend on
            // this update, so the loads of all levels can overlap; only the
            // compare chains. Every key is unique except EMPTY, so ties need
            // no rule.
            let mut up = |i: &mut usize| level_up(hi, lo, i, &mut ehi, &mut elo);
            let mut i = node;
            // The leaf is `log2(cap)` levels below the root: an odd level
            // first, then two per turn (one loop test per two levels).
            if self.cap.trailing_zeros() & 1 == 1 {
                up(&mut i);
            }
            while i >= 2 {
                up(&mut i);
                up(&mut i);
            }
            debug_assert_eq!(i, 1);
        }
    }
}

#[derive(Clone, Debug)]
pub struct EventQueue {
    seq: u64,
    /// The slot returned by the last `pop`, still queued (not yet removed).
    popped: Option<u32>,
    /// Slots below this index live in `tree`.
    leaves: u32,
    /// Slots `cold_lo..cold_lo + cold_n` live in `cold`.
    cold_lo: u32,
    cold_n: u32,
    tree: Tree,
    cold: Tree,
    lanes: [Lane; MAX_LANES],
    /// Events in lanes.
    llen: usize,
    /// The earliest key outside `tree` (heap, cold tree, lanes; `EMPTY` if
    /// none), kept current by every change there so that `pop` and
    /// `pop_if_next` compare two keys (`note`).
    omin: u128,
    /// A lower bound on every key a later `pop` can return, except slot
    /// `hz_slot`'s (`NONE`: no slot yet): set to the exact minimum of the
    /// other slots' keys by `schedule_pop_if_next` when it needs it, and
    /// lowered by every key scheduled since (removals only raise the true
    /// minimum), so that the next in-place checks for the same slot are one
    /// comparison instead of a tree walk.
    hz: u128,
    hz_slot: u32,
    /// The 4-ary heap of keys (a key names its slot), `hlen` of them, laid
    /// out as [`HEAP_PAD`] says. While it is empty its root position holds
    /// `EMPTY`, so that `pop` reads its minimum without a test.
    heap: Vec<Line>,
    hlen: usize,
    /// Per slot: its heap position, `IN_LANE` and its ring index, or `NONE`
    /// (no event, or a tree slot).
    pos: Vec<u32>,
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

/// One level of [`Tree::set`]'s walk: the key `(ehi, elo)` of node `i`
/// meets its sibling's; the smaller one goes to the parent, which `i`
/// becomes. On x86-64 in eleven instructions: the sibling's halves loaded,
/// compared as one 128-bit key (cmp/sbb), the high half taken by a cmov
/// from memory (no copy of it to keep for the cmov), the parent stored.
///
/// # Safety
/// `hi` and `lo` point to arrays of more than `i | 1` entries, `i` >= 2.
#[inline(always)]
unsafe fn level_up(hi: *mut u64, lo: *mut u64, i: &mut usize, ehi: &mut u64, elo: &mut u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's: `i ^ 1` and `i >> 1` are below `i | 1`; the
    // block reads and writes those two entries of each array only.
    unsafe {
        std::arch::asm!(
            "mov {s}, {i}",
            "xor {s}, 1",
            "mov {slo}, qword ptr [{lob} + 8*{s}]",
            "mov {t}, qword ptr [{hib} + 8*{s}]",
            // Carry set iff the sibling's key is below (128-bit unsigned:
            // low words, then high with borrow).
            "cmp {slo}, {lo}",
            "sbb {t}, {hi}",
            "cmovb {hi}, qword ptr [{hib} + 8*{s}]",
            "cmovb {lo}, {slo}",
            "shr {i}, 1",
            "mov qword ptr [{hib} + 8*{i}], {hi}",
            "mov qword ptr [{lob} + 8*{i}], {lo}",
            hib = in(reg) hi,
            lob = in(reg) lo,
            i = inout(reg) *i,
            hi = inout(reg) *ehi,
            lo = inout(reg) *elo,
            s = out(reg) _,
            slo = out(reg) _,
            t = out(reg) _,
            options(nostack),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    unsafe {
        let s = *i ^ 1;
        (*ehi, *elo) = min_halves(*hi.add(s), *lo.add(s), *ehi, *elo);
        *i >>= 1;
        *hi.add(*i) = *ehi;
        *lo.add(*i) = *elo;
    }
}

/// [`min_key`] of two keys given as their halves (`(shi, slo)`, `(hi, lo)`):
/// the smaller one's halves ([`level_up`] off x86-64).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn min_halves(shi: u64, slo: u64, hi: u64, lo: u64) -> (u64, u64) {
    let m = ((shi as u128) << 64 | slo as u128).min((hi as u128) << 64 | lo as u128);
    ((m >> 64) as u64, m as u64)
}

/// Key of a tree slot without an event (larger than every real key: `at` < u64::MAX).
const EMPTY: u128 = u128::MAX;

impl EventQueue {
    /// `slots` event slots, of which the first `leaves` go to the tournament
    /// tree and the others to the heap.
    pub fn new(slots: usize, leaves: usize) -> Self {
        Self::with_layout(slots, &Layout { leaves: leaves as u32, ..Default::default() })
    }

    /// `slots` event slots, split between the parts as `layout` says.
    pub fn with_layout(slots: usize, layout: &Layout) -> Self {
        assert!(slots <= MAX_SLOTS, "event queue: {slots} slots (CPUs x 9 + tasks) is more than the {MAX_SLOTS} it can hold");
        assert!(layout.lanes.len() <= MAX_LANES, "event queue: at most {MAX_LANES} lanes");
        let (cold_lo, cold_hi) = layout.cold;
        assert!(cold_lo <= cold_hi);
        let lanes = std::array::from_fn(|l| {
            let (lo, hi) = layout.lanes.get(l).copied().unwrap_or((0, 0));
            assert!(lo <= hi);
            Lane::new(lo, hi)
        });
        let mut heap = Vec::with_capacity((slots + HEAP_PAD).div_ceil(D));
        heap.push(Line([EMPTY; D]));
        let mut q = EventQueue {
            seq: 0,
            popped: None,
            leaves: layout.leaves,
            cold_lo,
            cold_n: cold_hi - cold_lo,
            tree: Tree::new(layout.leaves as usize),
            cold: Tree::new((cold_hi - cold_lo) as usize),
            lanes,
            llen: 0,
            omin: EMPTY,
            hz: HOLE,
            hz_slot: NONE,
            heap,
            hlen: 0,
            pos: Vec::new(),
        };
        q.ensure_slots(slots);
        q
    }

    /// Make room for slots up to `slots` (a task created beyond the workload's
    /// specs: a spec forked twice, a kernel thread).
    pub fn ensure_slots(&mut self, slots: usize) {
        if self.pos.len() < slots {
            assert!(slots <= MAX_SLOTS, "event queue: {slots} slots (CPUs x 9 + tasks) is more than the {MAX_SLOTS} it can hold");
            self.pos.resize(slots, NONE);
        }
    }

    /// The lane holding `slot`'s range, if any.
    #[inline(always)]
    fn lane_of(&self, slot: u32) -> Option<usize> {
        (0..MAX_LANES).find(|&l| self.lanes[l].holds(slot))
    }

    /// Append `slot`'s event (`key`, later than the lane's last) to lane `l`.
    #[inline]
    fn lane_push(&mut self, l: usize, slot: u32, key: u128) {
        debug_assert!(key > self.lanes[l].tail_key);
        if self.lanes[l].tail.wrapping_sub(self.lanes[l].head) > self.lanes[l].mask {
            self.lane_repack(l);
        }
        let lane = &mut self.lanes[l];
        let i = lane.tail & lane.mask;
        // SAFETY: `i` <= `mask` = the ring's length - 1.
        unsafe { *lane.ring.get_unchecked_mut(i as usize) = key };
        lane.tail = lane.tail.wrapping_add(1);
        lane.tail_key = key;
        if lane.live == 0 {
            lane.head_key = key;
        }
        lane.live += 1;
        self.llen += 1;
        self.pos[slot as usize] = IN_LANE | i;
    }

    /// Take the event at ring index `i` out of lane `l`: its key.
    #[inline]
    fn lane_take(&mut self, l: usize, i: u32) -> u128 {
        let lane = &mut self.lanes[l];
        let m = lane.mask;
        let key = std::mem::replace(&mut lane.ring[i as usize], HOLE);
        debug_assert!(i <= m && key != HOLE);
        lane.live -= 1;
        self.llen -= 1;
        if lane.live == 0 {
            lane.head = lane.tail;
            lane.head_key = EMPTY;
            lane.tail_key = 0;
        } else if i == lane.head & m {
            // The first and last entries are events, so these walks stop.
            let mut h = lane.head.wrapping_add(1);
            while lane.ring[(h & m) as usize] == HOLE {
                h = h.wrapping_add(1);
            }
            lane.head = h;
            lane.head_key = lane.ring[(h & m) as usize];
        } else if i == lane.tail.wrapping_sub(1) & m {
            let mut t = lane.tail.wrapping_sub(1);
            while lane.ring[(t.wrapping_sub(1) & m) as usize] == HOLE {
                t = t.wrapping_sub(1);
            }
            lane.tail = t;
            lane.tail_key = lane.ring[(t.wrapping_sub(1) & m) as usize];
        }
        key
    }

    /// Lane `l`'s ring is full: squeeze its holes out in place, or move its
    /// events to a ring twice as long when more than half of it is live (so
    /// a repack comes at most once per half a ring of appends), and re-point
    /// their slots.
    #[cold]
    #[inline(never)]
    fn lane_repack(&mut self, l: usize) {
        let lane = &mut self.lanes[l];
        let len = lane.ring.len();
        let m = lane.mask;
        let grow = 2 * lane.live as usize > len;
        assert!(!grow || 2 * len < 1 << 30, "event queue: a lane of 2^30 events");
        let src = if grow { std::mem::replace(&mut lane.ring, vec![HOLE; 2 * len]) } else { Vec::new() };
        // In place the events keep the head, and each moves back to an index
        // its read has passed; a grown ring starts at 0.
        let (start, m_new) = if grow { (0, 2 * len as u32 - 1) } else { (lane.head, m) };
        let mut w = start;
        let mut r = lane.head;
        while r != lane.tail {
            let k = if grow { src[(r & m) as usize] } else { lane.ring[(r & m) as usize] };
            if k != HOLE {
                lane.ring[(w & m_new) as usize] = k;
                self.pos[key_slot(k) as usize] = IN_LANE | (w & m_new);
                w = w.wrapping_add(1);
            }
            r = r.wrapping_add(1);
        }
        lane.mask = m_new;
        lane.head = start;
        lane.tail = w;
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

    /// The earliest key of the heap (`EMPTY` when it is empty).
    #[inline(always)]
    fn hfirst(&self) -> u128 {
        self.heap[0].0[HEAP_PAD]
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

    /// Drop the last heap position and return its key (the heap is not empty).
    fn hpop(&mut self) -> u128 {
        debug_assert!(self.hlen > 0);
        self.hlen -= 1;
        let j = self.hlen + HEAP_PAD;
        let k = self.heap[j / D].0[j % D];
        if self.hlen == 0 {
            self.heap[0].0[HEAP_PAD] = EMPTY;
        }
        k
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

    /// Take the key at heap position `p` (its slot's `pos` already cleared or reset).
    fn heap_remove(&mut self, p: usize) {
        let last = self.hpop();
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

    /// The key of a new event of `slot` at `at` (ties broken by scheduling
    /// order), with the bookkeeping every schedule does first: a popped
    /// entry of `slot` becomes the new event, and `hz` stays a lower bound.
    #[inline(always)]
    fn new_key(&mut self, slot: u32, at: u64) -> u128 {
        if self.popped == Some(slot) {
            self.popped = None;
        }
        self.seq += 1;
        assert!(self.seq < MAX_SEQ, "event queue: more than 2^40 events scheduled in one run");
        let key = make_key(at, self.seq, slot);
        self.lower_hz(key);
        key
    }

    /// Schedule `slot` at `at`, replacing its pending event if any. Ties are
    /// broken by scheduling order.
    pub fn schedule(&mut self, slot: u32, at: u64) {
        let key = self.new_key(slot, at);
        if slot < self.leaves {
            self.tree.set(slot as usize, key);
            return;
        }
        let c = slot.wrapping_sub(self.cold_lo);
        if c < self.cold_n {
            let old = self.cold.get(c as usize);
            self.cold.set(c as usize, key);
            self.note(old, key);
            return;
        }
        let mut p = self.pos[slot as usize];
        // The slot's previous key (`HOLE` if none).
        let mut old = HOLE;
        if let Some(l) = self.lane_of(slot) {
            if p != NONE && p & IN_LANE != 0 {
                old = self.lane_take(l, p & !IN_LANE);
                p = NONE;
            }
            if key > self.lanes[l].tail_key {
                self.lane_push(l, slot, key);
                if p != NONE {
                    old = self.hget(p as usize);
                    self.heap_remove(p as usize);
                }
                self.note(old, key);
                return;
            }
        }
        if p == NONE {
            let i = self.hpush(key);
            self.pos[slot as usize] = i as u32;
            self.sift_up(i);
        } else {
            let p = p as usize;
            old = self.hget(p);
            self.hset(p, key);
            if key < old {
                self.sift_up(p);
            } else {
                self.sift_down(p);
            }
        }
        self.note(old, key);
    }

    /// `schedule(slot, at)` for a caller that knows the slot is a tree slot
    /// (the engine's segment ends): the tree walk alone, inlined. Any other
    /// slot takes `schedule`.
    #[inline]
    pub fn schedule_leaf(&mut self, slot: u32, at: u64) {
        if slot >= self.leaves {
            return self.schedule(slot, at);
        }
        let key = self.new_key(slot, at);
        if self.tree.len == 0 {
            self.tree.set_alone(slot as usize, key);
        } else {
            self.tree.set(slot as usize, key);
        }
    }

    /// A key was scheduled: `hz` stays a lower bound.
    #[inline(always)]
    fn lower_hz(&mut self, key: u128) {
        if key < self.hz {
            self.hz = key;
        }
    }

    /// `schedule(slot, at)` for a caller that knows the slot belongs to lane
    /// `l` (the engine's ticks, IPIs, timers): the usual case, a slot with no
    /// pending event whose new one is later than the lane's last, is an
    /// inlined append; anything else (the slot has an event, the new one is
    /// out of order, the slot is not the lane's) takes `schedule`. The same
    /// queue either way.
    #[inline]
    pub fn schedule_lane(&mut self, l: usize, slot: u32, at: u64) {
        let lane = &self.lanes[l];
        if !lane.holds(slot) || self.pos[slot as usize] != NONE {
            return self.schedule(slot, at);
        }
        // No event, so it is not the popped one either (a popped entry stays in place).
        debug_assert!(self.popped != Some(slot));
        let seq = self.seq + 1;
        assert!(seq < MAX_SEQ, "event queue: more than 2^40 events scheduled in one run");
        let key = make_key(at, seq, slot);
        if key <= lane.tail_key {
            return self.schedule(slot, at);
        }
        self.seq = seq;
        self.lower_hz(key);
        self.lane_push(l, slot, key);
        // `note(HOLE, key)`: nothing left, `key` came in (`omin` is never `HOLE`).
        self.omin = min_key(key, self.omin);
    }

    /// `cancel(slot)` for a tree slot (any other slot takes `cancel`), inlined.
    #[inline]
    pub fn cancel_leaf(&mut self, slot: u32) {
        if slot >= self.leaves {
            return self.cancel(slot);
        }
        if self.popped == Some(slot) {
            self.popped = None;
        }
        if self.tree.get(slot as usize) != EMPTY {
            if self.tree.len == 1 {
                self.tree.set_alone(slot as usize, EMPTY);
            } else {
                self.tree.set(slot as usize, EMPTY);
            }
        }
    }

    /// `cancel(slot)` for a slot of lane `l`: a slot without an event, or
    /// with one in the lane, is handled inline; anything else takes `cancel`.
    #[inline]
    pub fn cancel_lane(&mut self, l: usize, slot: u32) {
        if !self.lanes[l].holds(slot) {
            return self.cancel(slot);
        }
        let p = self.pos[slot as usize];
        if p == NONE {
            // (A popped entry stays in place: a slot without one is not popped.)
            debug_assert!(self.popped != Some(slot));
            return;
        }
        if p & IN_LANE == 0 {
            return self.cancel(slot);
        }
        if self.popped == Some(slot) {
            self.popped = None;
        }
        self.pos[slot as usize] = NONE;
        let old = self.lane_take(l, p & !IN_LANE);
        self.note(old, EMPTY);
    }

    /// Keep `omin` current after a change outside the tournament tree that
    /// took out `old` (`HOLE` if nothing) and put in `key` (`EMPTY` if
    /// nothing): only when `old` was the earliest must the parts' minima be
    /// compared again (keys are unique, so `old == omin` says it was).
    #[inline(always)]
    fn note(&mut self, old: u128, key: u128) {
        if old == self.omin {
            self.omin = self.others_first();
        } else {
            self.omin = min_key(key, self.omin);
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
            if self.tree.get(slot as usize) != EMPTY {
                self.tree.set(slot as usize, EMPTY);
            }
            return;
        }
        let c = slot.wrapping_sub(self.cold_lo);
        if c < self.cold_n {
            let old = self.cold.get(c as usize);
            if old != EMPTY {
                self.cold.set(c as usize, EMPTY);
                self.note(old, EMPTY);
            }
            return;
        }
        let p = self.pos[slot as usize];
        if p == NONE {
            return;
        }
        self.pos[slot as usize] = NONE;
        let old = if p & IN_LANE != 0 {
            let l = self.lane_of(slot).expect("a slot in a lane has a lane");
            self.lane_take(l, p & !IN_LANE)
        } else {
            let old = self.hget(p as usize);
            self.heap_remove(p as usize);
            old
        };
        self.note(old, EMPTY);
    }

    /// The earliest key outside the tournament tree (`EMPTY` if none).
    #[inline(always)]
    fn others_first(&self) -> u128 {
        let mut m = min_key(self.hfirst(), self.cold.min());
        for lane in &self.lanes {
            m = min_key(lane.head_key, m);
        }
        m
    }

    /// Pop tree slot `slot`'s event if it is the earliest pending one (what
    /// `pop` would return next) and no popped entry is still in place: its
    /// time. For the handler that has just rescheduled the slot it handles
    /// (which replaced the popped entry), so that an event that comes first
    /// anyway skips the return to the event loop. Costs a few comparisons when
    /// it does not apply; None (and nothing changed) then.
    #[inline]
    pub fn pop_if_next(&mut self, slot: u32) -> Option<u64> {
        if self.popped.is_some() || slot >= self.leaves {
            return None;
        }
        let t = self.tree.min();
        if t == EMPTY || key_slot(t) != slot || self.omin < t {
            return None;
        }
        self.popped = Some(slot);
        Some(key_at(t))
    }

    /// `schedule(slot, at)`, then `pop_if_next(slot)`: whether the slot's
    /// new event was popped at once. When `slot` is a tree slot whose popped
    /// entry is still in place (the handler of its event rescheduling it)
    /// and the new event comes before every other pending one, the sequence
    /// number is spent and the slot stays popped, without the tree walk: the
    /// stale key left at its leaf and path is the popped entry's, as after
    /// any `pop` smaller than every other key, and replaced or removed by
    /// the slot's next `schedule` or `cancel` or the next `pop`. That check
    /// is one comparison with `hz` when it holds a bound for this slot that
    /// the key is below, else one sibling load per tree level (the other
    /// leaves' exact minimum, kept in `hz` for the next check).
    #[inline]
    pub fn schedule_pop_if_next(&mut self, slot: u32, at: u64) -> bool {
        if self.popped != Some(slot) || slot >= self.leaves {
            self.schedule(slot, at);
            return self.pop_if_next(slot).is_some();
        }
        let seq = self.seq + 1;
        assert!(seq < MAX_SEQ, "event queue: more than 2^40 events scheduled in one run");
        let key = make_key(at, seq, slot);
        // Below every other slot's key: `hz` if it is this slot's bound and
        // low enough, else their exact minimum (which becomes the bound).
        // The new key is popped at once, so it does not lower `hz`.
        if self.hz_slot == slot && key < self.hz {
            debug_assert!(key < min_key(self.tree.min_but_near_root(slot as usize, u32::MAX), self.omin));
            self.seq = seq;
            return true;
        }
        // The popped entry is still at `slot`'s leaf: a tree of one event
        // holds no other (no walk; strict ping-pong keeps one CPU busy).
        let tree_others = if self.tree.len == 1 { EMPTY } else { self.tree.min_but_near_root(slot as usize, u32::MAX) };
        debug_assert_eq!(tree_others, self.tree.min_but_near_root(slot as usize, u32::MAX));
        let others = min_key(tree_others, self.omin);
        self.hz = others;
        self.hz_slot = slot;
        if key < others {
            self.seq = seq;
            return true;
        }
        // Another event comes first: `pop_if_next` would refuse.
        self.schedule(slot, at);
        false
    }

    /// A guess at the slot whose event `pop` returns after the one it
    /// returned last, for the caller to prefetch that event's state while it
    /// handles this one: the smallest key but the popped entry's, where the
    /// part holding the popped entry offers its next key only when that is
    /// cheap to find (the tree: its path's siblings in the top
    /// [`PEEK_LEVELS`] levels, `Tree::min_but_near_root`; a lane: the ring entry
    /// after the head; the heap: the root's children; the cold tree: none).
    /// Events the handler schedules meanwhile may come first. Changes nothing.
    #[inline]
    pub fn peek_next(&self) -> Option<u32> {
        let p = self.popped?;
        let k = if p < self.leaves {
            min_key(self.tree.min_but_near_root(p as usize, PEEK_LEVELS), self.omin)
        } else {
            let mut m = self.tree.min();
            if p.wrapping_sub(self.cold_lo) >= self.cold_n {
                m = min_key(self.cold.min(), m);
            }
            let pos = self.pos.get(p as usize).copied().unwrap_or(NONE);
            for lane in &self.lanes {
                if pos & IN_LANE != 0 && lane.holds(p) {
                    // The entry after the head (holes skipped, a few at most).
                    let mut i = lane.head.wrapping_add(1);
                    for _ in 0..4 {
                        if i == lane.tail {
                            break;
                        }
                        let key = lane.ring[(i & lane.mask) as usize];
                        if key != HOLE {
                            m = min_key(key, m);
                            break;
                        }
                        i = i.wrapping_add(1);
                    }
                } else {
                    m = min_key(lane.head_key, m);
                }
            }
            if pos == 0 {
                // The heap's root: its successor is among the root's children.
                for i in 1..=D.min(self.hlen.saturating_sub(1)) {
                    m = min_key(self.hget(i), m);
                }
            } else {
                m = min_key(self.hfirst(), m);
            }
            m
        };
        (k != EMPTY).then(|| key_slot(k))
    }

    /// Remove and return the earliest event: (slot, at).
    pub fn pop(&mut self) -> Option<(u32, u64)> {
        if let Some(s) = self.popped.take() {
            self.remove(s);
        }
        let top = min_key(self.tree.min(), self.omin);
        if top == EMPTY {
            return None;
        }
        let slot = key_slot(top);
        self.popped = Some(slot);
        Some((slot, key_at(top)))
    }

    pub fn len(&self) -> usize {
        self.hlen + self.tree.len + self.cold.len + self.llen - self.popped.is_some() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Pcg32;

    /// Queues of `slots` slots split every way the engine's can be: heap
    /// only, tree and heap, and with a cold tree and lanes (one open-ended,
    /// as the engine's timer lane), with `leaves` tree slots.
    fn queues(slots: u32, leaves: u32) -> Vec<(String, EventQueue)> {
        let third = (slots - leaves) / 3;
        let a = leaves + third;
        let b = a + third;
        if third < 3 {
            return vec![(String::from("tree"), EventQueue::new(slots as usize, leaves as usize))];
        }
        let layouts = [
            Layout { leaves, ..Default::default() },
            Layout { leaves, cold: (a, b), lanes: vec![(leaves, a - 1), (b, u32::MAX)] },
            Layout { leaves, cold: (b, slots), lanes: vec![(leaves, leaves + 2), (leaves + 2, a), (a, b)] },
            Layout { leaves, cold: (leaves, slots), lanes: vec![] },
            Layout { leaves, cold: (0, 0), lanes: vec![(leaves, slots)] },
        ];
        layouts.iter().map(|l| (format!("{l:?}"), EventQueue::with_layout(slots as usize, l))).collect()
    }

    // peek_next() names the event the next pop returns when the popped one
    // left the tournament tree or the heap's root, or a lane whose next entry
    // is no hole (no cancels here: none is), and guesses nothing for an
    // empty queue; from the cold tree it may guess wrong (a hint only).
    #[test]
    fn peek_next_names_the_next_pop() {
        for (name, mut q) in [0, 1, 5, 20, 64].into_iter().flat_map(|leaves| queues(64, leaves)) {
            let mut r = Pcg32::new(7, 3);
            for slot in 0..64 {
                if r.below(4) != 0 {
                    q.schedule(slot, r.below(30) as u64);
                }
            }
            let (mut checked, mut last) = (0, None);
            while let Some((slot, _)) = q.pop() {
                if let Some(guess) = last {
                    assert_eq!(guess, slot, "{name}");
                    checked += 1;
                }
                let cold = slot.wrapping_sub(q.cold_lo) < q.cold_n;
                last = if cold { None } else { q.peek_next() };
                if !cold && q.is_empty() {
                    assert_eq!(last, None, "{name}: nothing after the last event");
                }
            }
            assert!(checked > 0 || q.cold_n == 64, "{name}");
        }
    }

    // On a tree deeper than PEEK_LEVELS, peek_next() names the next pop
    // whenever that is outside the popped slot's block of nearest leaves
    // (the leaves its bounded walk skips), and a slot of that block, or
    // another part's, otherwise: never the popped slot itself.
    #[test]
    fn peek_next_on_a_wide_tree_misses_only_the_nearest_leaves() {
        let n = 1024u32;
        let block = (n as usize).next_power_of_two() >> PEEK_LEVELS;
        let mut q = EventQueue::with_layout(n as usize + 8, &Layout { leaves: n, cold: (0, 0), lanes: vec![(n, n + 8)] });
        let mut r = Pcg32::new(21, 5);
        for slot in 0..n {
            if r.below(8) != 0 {
                q.schedule(slot, r.below(100_000) as u64);
            }
        }
        let (mut exact, mut near) = (0, 0);
        for _ in 0..3000 {
            let Some((p, now)) = q.pop() else { break };
            if p >= n {
                // A lane's event (peek_next_names_the_next_pop covers those).
                continue;
            }
            // The true next event: the smallest key but the popped one's.
            let mut want = q.omin;
            for leaf in 0..n as usize {
                if leaf != p as usize {
                    want = want.min(q.tree.get(leaf));
                }
            }
            let guess = q.peek_next();
            assert_ne!(guess, Some(p), "never the popped slot");
            let want_slot = (want != EMPTY).then(|| key_slot(want));
            match want_slot {
                Some(w) if w < n && w as usize / block == p as usize / block => {
                    near += 1;
                    if guess != Some(w) {
                        assert!(guess.is_some_and(|g| g >= n || g as usize / block != p as usize / block));
                    }
                }
                _ => {
                    assert_eq!(guess, want_slot, "next pop outside the skipped block");
                    exact += 1;
                }
            }
            // Reschedule the popped slot (as a handler does) or let it go.
            if r.below(4) != 0 {
                q.schedule(p, now + r.below(100_000) as u64);
            }
            if r.below(16) == 0 {
                q.schedule(n + r.below(8), now + r.below(50_000) as u64);
            }
        }
        assert!(exact > 2000 && near > 0, "{exact} exact, {near} in the skipped block");
    }

    #[test]
    fn pops_in_time_then_schedule_order_with_moves_and_cancels() {
        // Heap only, tree only, and mixed slot splits (odd tree widths included).
        for (name, mut q) in [0, 1, 5, 20, 64].into_iter().flat_map(|leaves| queues(64, leaves)) {
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
                assert_eq!(q.omin, q.others_first(), "{name}");
                got.push((at, slot));
            }
            assert_eq!(got, want.iter().map(|&(a, _, s)| (a, s)).collect::<Vec<_>>(), "{name}");
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

    /// A reference queue with `leaves` tree slots, and `b` (a queue under
    /// test), both given the same 40 random first events from a generator
    /// seeded with `seed`, which is returned for the rest of the test.
    fn reference_and_filled(leaves: u32, b: &mut EventQueue, seed: u64) -> (EventQueue, Pcg32) {
        let mut a = EventQueue::new(40, leaves as usize);
        let mut r = Pcg32::new(seed, leaves as u64);
        for s in 0..40 {
            let at = r.below(20) as u64;
            a.schedule(s, at);
            b.schedule(s, at);
        }
        (a, r)
    }

    /// `pop_if_next` pops exactly what `pop` would when that is the given
    /// tree slot, and nothing otherwise: a queue using it after each
    /// reschedule pops in the same order as one that never does.
    #[test]
    fn pop_if_next_is_pop_when_the_slot_comes_first() {
        for (leaves, name, mut b) in [1, 6, 16, 40].into_iter().flat_map(|l| queues(40, l).into_iter().map(move |(n, q)| (l, n, q))) {
            let (mut a, mut r) = reference_and_filled(leaves, &mut b, 11);
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
                            assert_eq!(want, Some((slot, got)), "took an event that is not next ({name})");
                            taken += 1;
                        }
                        None => {
                            // Only tree slots (segment ends) are taken.
                            assert!(slot >= leaves || want.map(|w| w.0) != Some(slot), "refused the next event ({name})");
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
                    assert_eq!(next, b.pop(), "{name}");
                }
                assert_eq!(a.len(), b.len());
                cur = next;
                if taken + refused > 5000 {
                    break;
                }
            }
            assert!(taken > 50 && refused > 50, "both outcomes exercised: {taken} taken, {refused} refused ({name})");
        }
    }

    /// `schedule_pop_if_next` does what `schedule` then `pop_if_next` does,
    /// its in-place path included (a slot re-popped many times over): queues
    /// using each way pop in the same order and spend the same sequence
    /// numbers, with other slots scheduled in between.
    #[test]
    fn schedule_pop_if_next_is_schedule_then_pop_if_next() {
        for (leaves, name, mut b) in [1, 6, 16, 40].into_iter().flat_map(|l| queues(40, l).into_iter().map(move |(n, q)| (l, n, q))) {
            let (mut a, mut r) = reference_and_filled(leaves, &mut b, 13);
            let (mut taken, mut refused) = (0, 0);
            let mut cur = a.pop();
            assert_eq!(cur, b.pop());
            while let Some((slot, now)) = cur {
                let mut now = now;
                // Reschedule the popped slot and take it in place as long as it comes first.
                while r.below(4) > 0 {
                    let at = now + r.below(4) as u64;
                    a.schedule(slot, at);
                    let want = a.pop_if_next(slot);
                    let got = b.schedule_pop_if_next(slot, at);
                    assert_eq!(got, want.is_some(), "{name}");
                    assert_eq!((a.seq, a.len()), (b.seq, b.len()), "{name}");
                    if !got {
                        refused += (slot < leaves) as u32;
                        break;
                    }
                    assert_eq!(want, Some(at));
                    taken += 1;
                    now = at;
                }
                if r.below(2) == 0 {
                    // Another slot: no popped entry of its own in place.
                    let other = r.below(40);
                    let at = now + r.below(30) as u64;
                    a.schedule(other, at);
                    let want = a.pop_if_next(other);
                    assert_eq!(b.schedule_pop_if_next(other, at), want.is_some(), "{name}");
                } else if r.below(4) == 0 {
                    // A removal (only raises the others' minimum: `hz` stays
                    // a bound), the slot's event back later.
                    let other = r.below(40);
                    if Some(other) != a.popped {
                        a.cancel(other);
                        b.cancel(other);
                        assert_eq!(a.len(), b.len());
                        let at = now + 30 + r.below(30) as u64;
                        a.schedule(other, at);
                        b.schedule(other, at);
                    }
                }
                cur = a.pop();
                assert_eq!(cur, b.pop(), "{name}");
                assert_eq!(a.len(), b.len());
                if taken + refused > 5000 {
                    break;
                }
            }
            // (With one tree slot of 40 the slot is rarely popped.)
            assert!(leaves < 6 || taken > 50 && refused > 50, "both outcomes exercised: {taken} taken, {refused} refused ({name})");
        }
    }

    /// A simulation-shaped workload: each pop may reschedule the popped slot
    /// (or not), schedule and cancel others at or after the current time; the
    /// pop order must match a sorted-set model exactly, ties included.
    #[test]
    fn interleaved_pops_match_a_sorted_model() {
        for (leaves, name, mut q) in [0, 3, 16, 40].into_iter().flat_map(|l| queues(40, l).into_iter().map(move |(n, q)| (l, n, q))) {
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
                assert_eq!((first.0, first.2), (at, slot), "{name}");
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
                assert_eq!(q.omin, q.others_first(), "{name}");
                let tree_ok = (1..q.tree.cap).all(|n| q.tree.node(n) == q.tree.node(2 * n).min(q.tree.node(2 * n + 1)));
                assert!(tree_ok, "every tree node holds its children's minimum ({name})");
            }
        }
    }

    /// A lane takes the events later than its last one and leaves the others
    /// to the heap; either way the pop order is the keys' order, and a slot
    /// moves between the lane and the heap as its events do.
    /// The part-specific entry points (`schedule_leaf`, `schedule_lane`,
    /// `cancel_leaf`, `cancel_lane`) give the queue `schedule` and `cancel`
    /// give, whatever part the slot is really in (a wrong guess falls back).
    #[test]
    fn part_entry_points_are_schedule_and_cancel() {
        for leaves in [0, 3, 16] {
            for ((name, mut a), (_, mut b)) in queues(40, leaves).into_iter().zip(queues(40, leaves)) {
                let mut r = Pcg32::new(11, leaves as u64);
                let nl = b.lanes.iter().filter(|l| l.hi > l.lo).count().max(1);
                // The lane a caller names: the slot's own one mostly, any lane sometimes.
                let lane_for = |b: &EventQueue, r: &mut Pcg32, slot: u32| {
                    if r.below(4) == 0 {
                        return r.below(MAX_LANES as u32) as usize;
                    }
                    b.lane_of(slot).unwrap_or(r.below(nl as u32) as usize)
                };
                for s in (0..40).step_by(5) {
                    let at = r.below(20) as u64;
                    a.schedule(s, at);
                    b.schedule(s, at);
                }
                let mut now = 0;
                for i in 0..20000 {
                    let slot = r.below(40);
                    match r.below(5) {
                        0 | 1 => {
                            // Mostly later than everything (lane appends), some out of order.
                            let at = now + if r.below(4) == 0 { r.below(3) as u64 } else { 20 + r.below(30) as u64 };
                            a.schedule(slot, at);
                            if slot < leaves && r.below(4) != 0 {
                                b.schedule_leaf(slot, at);
                            } else {
                                let l = lane_for(&b, &mut r, slot);
                                b.schedule_lane(l, slot, at);
                            }
                        }
                        2 => {
                            a.cancel(slot);
                            if slot < leaves && r.below(4) != 0 {
                                b.cancel_leaf(slot);
                            } else {
                                let l = lane_for(&b, &mut r, slot);
                                b.cancel_lane(l, slot);
                            }
                        }
                        _ => {
                            let (x, y) = (a.pop(), b.pop());
                            assert_eq!(x, y, "{name}, step {i}");
                            if let Some((_, at)) = x {
                                now = at;
                                // Rescheduling the popped slot (its entry still in place).
                                if r.below(2) == 0 {
                                    let at = now + r.below(40) as u64;
                                    let s = x.unwrap().0;
                                    a.schedule(s, at);
                                    if s < leaves {
                                        b.schedule_leaf(s, at);
                                    } else {
                                        let l = lane_for(&b, &mut r, s);
                                        b.schedule_lane(l, s, at);
                                    }
                                }
                            }
                        }
                    }
                    assert_eq!(a.len(), b.len(), "{name}, step {i}");
                    assert_eq!(b.omin, b.others_first(), "{name}, step {i}");
                }
                while let Some(x) = a.pop() {
                    assert_eq!(Some(x), b.pop(), "{name}");
                }
                assert_eq!(b.pop(), None, "{name}");
            }
        }
    }

    #[test]
    fn lane_events_out_of_order_go_to_the_heap() {
        let mut q = EventQueue::with_layout(8, &Layout { leaves: 2, cold: (6, 8), lanes: vec![(2, 6)] });
        q.schedule(2, 10);
        q.schedule(3, 20);
        assert_eq!((q.llen, q.hlen), (2, 0));
        q.schedule(4, 15); // before the lane's last: heap
        assert_eq!((q.llen, q.hlen), (2, 1));
        q.schedule(4, 30); // now after it: back to the lane
        assert_eq!((q.llen, q.hlen), (3, 0));
        q.schedule(3, 5); // the middle one moves before the head: heap
        assert_eq!((q.llen, q.hlen), (2, 1));
        q.schedule(7, 1); // cold
        q.schedule(0, 12); // tree
        assert_eq!(q.len(), 5);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(7, 1), (3, 5), (2, 10), (0, 12), (4, 30)]);
        assert!(q.is_empty());
        assert_eq!((q.llen, q.hlen, q.lanes[0].live, q.lanes[0].head_key, q.lanes[0].tail_key, q.hfirst()), (0, 0, 0, EMPTY, 0, EMPTY));
    }

    /// A lane's ring fills with holes (events moved or cancelled from its
    /// middle) and is squeezed in place when at most half of it is live, or
    /// doubled when more is: the pop order and the slots' positions survive
    /// both, and the ring stays below four times its peak of live events.
    #[test]
    fn lane_rings_repack_and_grow_keeping_order() {
        let n = 200u32;
        let mut q = EventQueue::with_layout(n as usize, &Layout { leaves: 0, cold: (0, 0), lanes: vec![(0, n)] });
        let mut model: std::collections::BTreeMap<u32, (u64, u64)> = Default::default();
        let mut seq = 0;
        let mut at = 0;
        let mut r = Pcg32::new(3, 4);
        let mut peak = 0;
        for round in 0..40 {
            // Appends in time order, then cancels and moves from the middle.
            for _ in 0..30 {
                let slot = r.below(n);
                at += 1 + r.below(3) as u64;
                seq += 1;
                q.schedule(slot, at);
                model.insert(slot, (at, seq));
                peak = peak.max(model.len());
            }
            for _ in 0..20 {
                let slot = r.below(n);
                q.cancel(slot);
                model.remove(&slot);
            }
            assert_eq!(q.hlen, 0, "every event was later than the lane's last (round {round})");
            assert_eq!((q.len(), q.lanes[0].live as usize), (model.len(), model.len()));
            assert!(q.lanes[0].ring.len() < (4 * peak).max(RING_START), "ring {} for at most {peak} events", q.lanes[0].ring.len());
        }
        let mut want: Vec<(u64, u64, u32)> = model.iter().map(|(&s, &(a, sq))| (a, sq, s)).collect();
        want.sort();
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(got, want.iter().map(|&(a, _, s)| (s, a)).collect::<Vec<_>>());
    }
}
