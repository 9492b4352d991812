//! The cfs_rq timeline: the queued entities (all but `curr`) ordered by
//! vruntime, as the kernel's `tasks_timeline` rbtree orders them
//! (`__enqueue_entity()` / `__dequeue_entity()`, kernel/sched/fair.c, every
//! version), augmented with the minimum deadline of each subtree as v6.6+
//! augments it for EEVDF (`min_vruntime_cb`/`min_deadline_cb`, commit
//! 147f3efaa241 "sched/fair: Implement an EEVDF-like scheduling policy").
//!
//! Ties: an entity inserted later goes to the right of equal keys (the
//! rbtree's `entity_before()` is a strict less-than), so the order is
//! (vruntime, insertion sequence). The deadline minimum breaks ties the
//! same way: the first inserted wins.
//!
//! The tree is a treap with priorities drawn from a fixed hash of the
//! insertion sequence: deterministic, and O(log n) expected per operation,
//! where a flat list made waking n tasks onto one CPU cost O(n^2).
//! Keys are vruntimes relative to an anchor (the first vruntime inserted
//! into the empty tree), compared as signed differences as the kernel
//! compares them (`(s64)(a - b) < 0`), so wraparound is handled the same way.

use crate::sched::Ent;
use std::cell::Cell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const NIL: u32 = u32::MAX;

/// Up to this many nodes (the most entities the timeline has held at once),
/// an entity's node is found by scanning them; past it, through `Timeline::at`.
const SCAN_NODES: usize = 8;

/// The entity of a free node: a group slot no machine has (2^31 - 1).
#[inline]
fn free_mark() -> Ent {
    Ent::group(0x7fff_ffff)
}

/// A tree node: 40 bytes (a test checks it), so that a cfs_rq's few queued
/// entities share few cache lines. The sort keys are derived, not stored:
/// (vruntime - anchor as a signed value, `seq`) and the same with the
/// deadline; the treap priority is `mix(seq)`.
#[derive(Clone, Debug)]
struct Node {
    ent: Ent,
    /// Children; in a free node, `left` links the free list.
    left: u32,
    right: u32,
    /// The node with the smallest deadline key in this subtree.
    min_d: u32,
    vruntime: u64,
    deadline: u64,
    /// Insertion sequence: breaks ties of both keys, and seeds the priority.
    seq: u64,
}

/// The ordered set of queued entities of one cfs_rq.
type EntMap = HashMap<Ent, u32, BuildHasherDefault<EntHasher>>;

/// 64 bytes (a test checks it): a runqueue holds it with the rest of what an
/// enqueue touches in its first four lines (`crate::sched::Rq`).
#[derive(Clone)]
pub struct Timeline {
    nodes: Vec<Node>,
    anchor: u64,
    seq: u64,
    /// Entity -> node, once the timeline has used more than [`SCAN_NODES`]
    /// nodes (None before: the few nodes are scanned, lines the tree
    /// operation reads anyway, instead of the map's). Boxed: only busy
    /// runqueues have one. A hash map keeps its buckets when entries leave, so
    /// a timeline that has held n entities inserts and removes without
    /// allocating (a B-tree allocates a node whenever it splits or refills).
    /// Only looked up: no order depends on it.
    at: Option<Box<EntMap>>,
    root: u32,
    /// Head of the free nodes' list (linked through `Node::left`), last freed first.
    free: u32,
    len: u32,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline { nodes: Vec::new(), anchor: 0, seq: 0, at: None, root: NIL, free: NIL, len: 0 }
    }
}

/// Hash of an entity id (a `u32`): one multiply, fixed (deterministic).
#[derive(Default)]
struct EntHasher(u64);

impl Hasher for EntHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u32(b as u32);
        }
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.0 = (self.0 ^ x as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

impl std::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// splitmix64: the treap priority of insertion number `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Timeline {
    /// Ask the CPU to fetch the first nodes (at most four cache lines): for
    /// a caller that has the timeline itself in the cache already. A hint only.
    #[inline]
    pub fn prefetch(&self) {
        crate::prefetch::range(self.nodes.as_ptr() as *const u8, (self.nodes.len() * std::mem::size_of::<Node>()).min(4 * 64));
    }

    fn new_root() -> u32 {
        NIL
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `e` is in the tree.
    pub fn contains(&self, e: Ent) -> bool {
        self.find(e).is_some()
    }

    /// The node of `e`, if it is in the tree.
    #[inline]
    fn find(&self, e: Ent) -> Option<u32> {
        if let Some(at) = &self.at {
            at.get(&e).copied()
        } else {
            self.nodes.iter().position(|x| x.ent == e).map(|i| i as u32)
        }
    }

    #[inline]
    fn rel(&self, v: u64) -> i64 {
        v.wrapping_sub(self.anchor) as i64
    }

    /// Node `n`'s timeline key: (vruntime - anchor as a signed value, insertion sequence).
    #[inline]
    fn key(&self, n: u32) -> (i64, u64) {
        let x = &self.nodes[n as usize];
        (self.rel(x.vruntime), x.seq)
    }

    /// Node `n`'s deadline key: (deadline - anchor as a signed value, insertion sequence).
    #[inline]
    fn dkey(&self, n: u32) -> (i64, u64) {
        let x = &self.nodes[n as usize];
        (self.rel(x.deadline), x.seq)
    }

    fn pull(&mut self, n: u32) {
        let (l, r) = (self.nodes[n as usize].left, self.nodes[n as usize].right);
        let mut m = n;
        for c in [l, r] {
            if c != NIL {
                let cm = self.nodes[c as usize].min_d;
                if self.dkey(cm) < self.dkey(m) {
                    m = cm;
                }
            }
        }
        self.nodes[n as usize].min_d = m;
    }

    /// Split `t` into (keys < k, keys >= k).
    fn split(&mut self, t: u32, k: (i64, u64), steps: &Cell<u64>) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        steps.set(steps.get() + 1);
        if self.key(t) < k {
            let (a, b) = self.split(self.nodes[t as usize].right, k, steps);
            self.nodes[t as usize].right = a;
            self.pull(t);
            (t, b)
        } else {
            let (a, b) = self.split(self.nodes[t as usize].left, k, steps);
            self.nodes[t as usize].left = b;
            self.pull(t);
            (a, t)
        }
    }

    /// Join `a` and `b` where every key of `a` is below every key of `b`.
    fn merge(&mut self, a: u32, b: u32, steps: &Cell<u64>) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        steps.set(steps.get() + 1);
        if mix(self.nodes[a as usize].seq) > mix(self.nodes[b as usize].seq) {
            let r = self.merge(self.nodes[a as usize].right, b, steps);
            self.nodes[a as usize].right = r;
            self.pull(a);
            a
        } else {
            let l = self.merge(a, self.nodes[b as usize].left, steps);
            self.nodes[b as usize].left = l;
            self.pull(b);
            b
        }
    }

    /// `__enqueue_entity()`: insert `e` with its current vruntime and deadline
    /// (neither may change while it is in the tree).
    pub fn insert(&mut self, e: Ent, vruntime: u64, deadline: u64, steps: &Cell<u64>) {
        debug_assert!(!self.contains(e), "{e:?} inserted twice");
        if self.len == 0 {
            self.root = Self::new_root();
            self.anchor = vruntime;
        }
        self.seq += 1;
        let node = Node { ent: e, left: NIL, right: NIL, min_d: NIL, vruntime, deadline, seq: self.seq };
        let n = if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i as usize].left;
            self.nodes[i as usize] = node;
            i
        } else {
            self.nodes.push(node);
            if self.nodes.len() == SCAN_NODES + 1 {
                // Past the scanned size (no node is free): index them all.
                self.at = Some(Box::new(self.nodes.iter().enumerate().map(|(i, x)| (x.ent, i as u32)).collect()));
            }
            (self.nodes.len() - 1) as u32
        };
        self.nodes[n as usize].min_d = n;
        if let Some(at) = &mut self.at {
            at.insert(e, n);
        }
        if self.len == 0 {
            // Into an empty tree (a CPU's first waiting entity, most enqueues
            // on a lightly loaded machine): `n` alone is the root, as the
            // split and merges below would leave it, in no steps.
            self.root = n;
            self.len = 1;
            return;
        }
        let k = self.key(n);
        let (a, b) = self.split(self.root, k, steps);
        let a = self.merge(a, n, steps);
        self.root = self.merge(a, b, steps);
        self.len += 1;
    }

    /// `__dequeue_entity()`: remove `e`; false if it was not in the tree.
    pub fn remove(&mut self, e: Ent, steps: &Cell<u64>) -> bool {
        let Some(n) = self.find(e) else {
            return false;
        };
        if let Some(at) = &mut self.at {
            at.remove(&e);
        }
        if self.len == 1 {
            // The only node (the root, without children): the tree empties.
            // The split and the cut below would each visit it once.
            debug_assert!(self.root == n && self.nodes[n as usize].left == NIL && self.nodes[n as usize].right == NIL);
            steps.set(steps.get() + 2);
            self.root = NIL;
        } else {
            let k = self.key(n);
            let (a, b) = self.split(self.root, k, steps);
            // `n` is the smallest key of `b`: cut it off the left spine.
            let b = self.drop_leftmost(b, n, steps);
            self.root = self.merge(a, b, steps);
        }
        self.nodes[n as usize].ent = free_mark();
        self.nodes[n as usize].left = self.free;
        self.free = n;
        self.len -= 1;
        true
    }

    fn drop_leftmost(&mut self, t: u32, n: u32, steps: &Cell<u64>) -> u32 {
        steps.set(steps.get() + 1);
        if t == n {
            return self.nodes[n as usize].right;
        }
        let l = self.drop_leftmost(self.nodes[t as usize].left, n, steps);
        self.nodes[t as usize].left = l;
        self.pull(t);
        t
    }

    /// `__pick_first_entity()`: the leftmost entity and its vruntime.
    pub fn first(&self, steps: &Cell<u64>) -> Option<(Ent, u64)> {
        let mut t = self.root;
        if self.len == 0 {
            return None;
        }
        loop {
            steps.set(steps.get() + 1);
            let l = self.nodes[t as usize].left;
            if l == NIL {
                let x = &self.nodes[t as usize];
                return Some((x.ent, x.vruntime));
            }
            t = l;
        }
    }

    /// The two leftmost entities (and vruntimes), in order.
    pub fn first_two(&self, steps: &Cell<u64>) -> [Option<(Ent, u64)>; 2] {
        // In-order walk stopped after two: the leftmost node, then the
        // leftmost of its right subtree or else its parent (no stack needed).
        let mut out = [None, None];
        if self.len == 0 {
            return out;
        }
        let (mut parent, mut x) = (NIL, self.root);
        let mut n = 0;
        loop {
            n += 1;
            let l = self.nodes[x as usize].left;
            if l == NIL {
                break;
            }
            (parent, x) = (x, l);
        }
        let nd = &self.nodes[x as usize];
        out[0] = Some((nd.ent, nd.vruntime));
        let mut y = nd.right;
        if y != NIL {
            loop {
                n += 1;
                let l = self.nodes[y as usize].left;
                if l == NIL {
                    break;
                }
                y = l;
            }
        } else {
            y = parent;
        }
        if y != NIL {
            let nd = &self.nodes[y as usize];
            out[1] = Some((nd.ent, nd.vruntime));
        }
        steps.set(steps.get() + n);
        out
    }

    /// The eligible entity with the earliest deadline (first inserted wins
    /// ties), where eligibility is monotone in vruntime (`vruntime_eligible()`
    /// holds for a prefix of the timeline): the v6.6+ `__pick_eevdf()` walk
    /// down the augmented tree.
    pub fn pick_eligible_earliest(&self, eligible: impl Fn(u64) -> bool, steps: &Cell<u64>) -> Option<Ent> {
        let mut best: Option<u32> = None;
        let better = |a: u32, b: Option<u32>| b.is_none_or(|b| self.dkey(a) < self.dkey(b));
        let mut t = if self.len == 0 { NIL } else { self.root };
        while t != NIL {
            steps.set(steps.get() + 1);
            let nd = &self.nodes[t as usize];
            if eligible(nd.vruntime) {
                if nd.left != NIL {
                    let m = self.nodes[nd.left as usize].min_d;
                    if better(m, best) {
                        best = Some(m);
                    }
                }
                if better(t, best) {
                    best = Some(t);
                }
                t = nd.right;
            } else {
                t = nd.left;
            }
        }
        best.map(|b| self.nodes[b as usize].ent)
    }

    /// The entities in timeline order.
    pub fn iter(&self) -> impl Iterator<Item = Ent> + '_ {
        let mut stack: Vec<u32> = Vec::new();
        let mut t = if self.len == 0 { NIL } else { self.root };
        std::iter::from_fn(move || {
            while t != NIL {
                stack.push(t);
                t = self.nodes[t as usize].left;
            }
            let x = stack.pop()?;
            t = self.nodes[x as usize].right;
            Some(self.nodes[x as usize].ent)
        })
    }

    /// The entities in no particular order, without allocating (for sums:
    /// [`Self::iter`] keeps a stack for the in-order walk).
    pub fn iter_unordered(&self) -> impl Iterator<Item = Ent> + '_ {
        // The map's keys, or before it exists the live nodes'.
        let scanned = if self.at.is_some() { 0 } else { self.nodes.len() };
        let mapped = self.at.iter().flat_map(|at| at.keys().copied());
        mapped.chain(self.nodes[..scanned].iter().map(|x| x.ent).filter(|&e| e != free_mark()))
    }

    /// The entities in insertion order (debug cross-checks).
    pub fn iter_insertion_order(&self) -> impl Iterator<Item = Ent> + '_ {
        let mut v: Vec<(u64, Ent)> = self.nodes.iter().filter(|x| x.ent != free_mark()).map(|x| (x.seq, x.ent)).collect();
        v.sort_unstable();
        v.into_iter().map(|x| x.1)
    }

    /// The vruntime and deadline `e` was inserted with (consistency checks).
    pub fn stored(&self, e: Ent) -> Option<(u64, u64)> {
        self.find(e).map(|n| (self.nodes[n as usize].vruntime, self.nodes[n as usize].deadline))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::TaskId;

    // A node stays 40 bytes and the timeline's inline part 64 (the layout
    // cannot grow back unnoticed: see `Node`).
    #[test]
    fn timeline_layout_is_compact() {
        assert_eq!(std::mem::size_of::<Node>(), 40);
        assert_eq!(std::mem::size_of::<Timeline>(), 64);
    }

    fn vdiff(a: u64, b: u64) -> i64 {
        a.wrapping_sub(b) as i64
    }

    /// The tree against the flat insertion-ordered list it replaced, over a
    /// seeded random sequence of inserts, removes, leftmost and picks, with
    /// vruntimes straddling the u64 wrap and many equal keys and deadlines.
    #[test]
    fn timeline_matches_a_flat_list() {
        check_against_flat_list(usize::MAX);
    }

    // The same while the timeline never holds more than it scans (no map).
    #[test]
    fn small_timeline_matches_a_flat_list() {
        check_against_flat_list(SCAN_NODES);
    }

    /// Random inserts (while fewer than `cap` are queued), removes, leftmost
    /// and picks, checked against a flat list.
    fn check_against_flat_list(cap: usize) {
        let steps = Cell::new(0);
        let mut t = Timeline::default();
        let mut flat: Vec<(Ent, u64, u64)> = Vec::new();
        let mut s = 12345u64;
        let mut rnd = |m: u64| {
            s = mix(s);
            s % m
        };
        let base = u64::MAX - 5000;
        for step in 0..20000u32 {
            let op = rnd(10);
            if (op < 5 || flat.is_empty()) && flat.len() < cap {
                let e = Ent::task(TaskId(step));
                let v = base.wrapping_add(rnd(200) * 50);
                let d = v.wrapping_add(rnd(4) * 1000);
                t.insert(e, v, d, &steps);
                flat.push((e, v, d));
            } else if op < 8 {
                let i = rnd(flat.len() as u64) as usize;
                let (e, _, _) = flat.remove(i);
                assert!(t.remove(e, &steps));
                assert!(!t.remove(e, &steps));
            }
            assert_eq!(t.len(), flat.len());
            // The map exists past the scanned size, and then indexes every queued entity.
            assert_eq!(t.at.as_ref().map(|at| at.len()), (t.nodes.len() > SCAN_NODES).then_some(flat.len()));
            let mut unordered: Vec<Ent> = t.iter_unordered().collect();
            unordered.sort_unstable();
            let mut want: Vec<Ent> = flat.iter().map(|x| x.0).collect();
            want.sort_unstable();
            assert_eq!(unordered, want);
            // leftmost: the first minimum in insertion order.
            let mut order: Vec<(Ent, u64)> = flat.iter().map(|&(e, v, _)| (e, v)).collect();
            order.sort_by(|a, b| vdiff(a.1, b.1).cmp(&0));
            let two = t.first_two(&steps);
            assert_eq!(two[0], order.first().copied());
            assert_eq!(two[1], order.get(1).copied());
            assert_eq!(t.first(&steps), order.first().copied());
            // pick: eligible = vruntime at most a random cut.
            let cut = base.wrapping_add(rnd(220) * 50);
            let want = flat.iter().filter(|x| vdiff(x.1, cut) <= 0).fold(None::<(Ent, u64)>, |b, x| {
                if b.is_none_or(|(_, d)| vdiff(x.2, d) < 0) {
                    Some((x.0, x.2))
                } else {
                    b
                }
            });
            assert_eq!(t.pick_eligible_earliest(|v| vdiff(v, cut) <= 0, &steps), want.map(|w| w.0));
            if step % 1000 == 0 {
                assert_eq!(t.iter().collect::<Vec<_>>(), order.iter().map(|x| x.0).collect::<Vec<_>>());
            }
        }
    }
}
