//! A simulator index for `update_sd_lb_stats()` over a wide domain of
//! single-CPU groups (a flat LLC of hundreds of CPUs): what the group walk
//! gathers, kept up to date CPU by CPU instead of read from every runqueue on
//! every pass.
//!
//! The kernel's walk (`update_sg_lb_stats()` per group, `update_sd_pick_busiest()`)
//! reads every runqueue of the domain; on a 1024-CPU LLC every newly idle
//! balance reads 1024 runqueues. The result depends only on each runqueue's
//! root cfs_rq counts and averages, which change only where a runqueue is
//! written. [`crate::sched::Rqs`] marks the CPUs written; a pass refreshes
//! those CPUs' leaves in a tournament tree ordered by the walk's own order
//! (busier first, then the earlier group), and reads the sums and the busiest
//! candidate off the tree: the same `LbWalk` as the walk, at the cost of the
//! CPUs written since the last pass (times the tree's height). The hardware
//! is still charged for every CPU the kernel reads (`LbWalk::examined`).
//!
//! The same trees answer `find_idlest_group()` over such a domain (fork and
//! exec placement, `Kernel::idlest_singleton_walk`): a second tournament per
//! tree keeps each CPU's `Kernel::idlest_key`, refreshed for the CPUs whose
//! balancing leaf was refreshed since the last placement, so that a fork
//! costs the CPUs written since the last one instead of the whole domain.

use super::balance::{CpuLb, LbRead, LbWalk, SgStats};
use crate::core::Kernel;
use schedlab_topology::CpuId;

/// Domains of single-CPU groups at least this wide get an index; narrower
/// ones are walked (a walk of a few dozen runqueues is as cheap).
pub(crate) const LB_INDEX_MIN_GROUPS: usize = 64;

/// Domains of multi-CPU groups spanning at least this many CPUs keep their
/// groups' sums ([`GroupCache`]); narrower ones are walked.
pub(crate) const LB_CACHE_MIN_SPAN: u32 = 16;

/// No position / no tree.
const NONE: u32 = u32::MAX;

/// The busiest-candidate key of a one-CPU group in `update_sd_pick_busiest()`
/// order (see `Kernel::lb_singleton_walk`): group type, then the load
/// (overloaded, fully busy) or the number of tasks (has spare); 0 for a CPU
/// with no task (never a candidate).
#[inline(always)]
pub(crate) fn singleton_key(pct: u64, x: &CpuLb) -> u128 {
    // group_classify() of a one-CPU group (capacity 1024, weight 1).
    let over = (x.nr > 1) & ((102_400 < x.util * pct) | (1024 * pct < x.runnable * 100));
    let spare = (x.nr < 1) | ((1024 * pct >= x.runnable * 100) & (102_400 > x.util * pct));
    let t: u128 = if over {
        2
    } else if spare {
        0
    } else {
        1
    };
    let metric = if t == 0 { x.nr as u64 } else { x.load };
    let key = (t << 64) | metric as u128;
    if x.nr > 0 {
        key
    } else {
        0
    }
}

/// One domain's index (`update_sd_lb_stats()` of a domain whose groups are
/// single CPUs).
#[derive(Clone, Debug)]
struct LbTree {
    /// The domain (`SchedDomains::domains` index).
    dom: u32,
    /// The domain's imbalance_pct, which group_classify() reads.
    pct: u64,
    /// Leaves (a power of two, at least `cpus.len()`).
    size: usize,
    /// Tournament of ranks ([`rank`]: the candidate key, then the lower
    /// position): node `i` (1-based heap order, leaves at `size..`) holds
    /// the highest rank of its subtree, the walk's choice among its groups
    /// (it keeps the first of equal groups). A rank names its position, so
    /// a match is one comparison of two adjacent nodes, no load through an
    /// index.
    node: Vec<u128>,
    /// Sum of the leaves' loads and count of their `nr > 1` ([`At`]).
    total_load: u64,
    nr_over: u32,
    /// Tournament of placement ranks ([`idle_rank`]), the same shape as
    /// `node`: node `i` holds the lowest rank of its subtree, the
    /// find_idlest_group() choice among its groups (`u128::MAX`: no CPU).
    idle: Vec<u128>,
}

/// The tournament rank of candidate key `key` ([`singleton_key`], below
/// 2^66) at position `pos`: the key, then the lower position (the low 32
/// bits hold `!pos`), so that ranks are unique and the highest is the
/// walk's busiest candidate.
#[inline(always)]
fn rank(key: u128, pos: usize) -> u128 {
    debug_assert!(key < 1 << 96 && pos <= u32::MAX as usize);
    (key << 32) | !(pos as u32) as u128
}

/// The position a rank names.
#[inline(always)]
fn rank_pos(r: u128) -> u32 {
    !(r as u32)
}

/// The placement rank of `Kernel::idlest_key` `key` (below 2^66) at
/// position `pos`: the key, then the position, so that ranks are unique
/// and the lowest is the first of the idlest groups, as the walk keeps it.
#[inline(always)]
pub(crate) fn idle_rank(key: u128, pos: u32) -> u128 {
    debug_assert!(key < 1 << 96);
    (key << 32) | pos as u128
}

/// The position a placement rank names.
#[inline(always)]
pub(crate) fn idle_rank_pos(r: u128) -> u32 {
    r as u32
}

/// Put rank `r` at leaf `i` of a tournament (`nodes[1]` the root, node `j`'s
/// children `2j` and `2j + 1`) and replay its matches up to the root, each
/// won by `win` (`u128::max` for the balancing tree, `u128::min` for the
/// placement one).
#[inline(always)]
fn replay(nodes: &mut [u128], mut i: usize, r: u128, win: impl Fn(u128, u128) -> u128) {
    if nodes[i] == r {
        return;
    }
    nodes[i] = r;
    while i > 1 {
        // Ranks are unique: a parent whose match gives what it holds
        // keeps every ancestor as it is.
        let b = win(nodes[i], nodes[i ^ 1]);
        i /= 2;
        if nodes[i] == b {
            break;
        }
        nodes[i] = b;
    }
}

/// Per CPU: the tree and position of its leaf (`tree` [`NO_TREE`] when no
/// tree holds it) and what the leaf adds to the tree's sums (the load and
/// `nr > 1`), in one 16-byte entry: a refresh reads one line for all of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct At {
    load: u64,
    pos: u32,
    tree: u16,
    over: bool,
}

/// [`At::tree`] of a CPU no tree holds.
const NO_TREE: u16 = u16::MAX;

impl At {
    const NONE: At = At { load: 0, pos: NONE, tree: NO_TREE, over: false };
}

impl LbTree {
    /// Set the leaf `at` (of this tree) to candidate key `key`, load `load`
    /// and `nr > 1` `over`, and replay its matches up to the root.
    fn set(&mut self, at: &mut At, key: u128, load: u64, over: bool) {
        self.total_load = self.total_load - at.load + load;
        self.nr_over = self.nr_over - at.over as u32 + over as u32;
        at.load = load;
        at.over = over;
        let pos = at.pos as usize;
        replay(&mut self.node, self.size + pos, rank(key, pos), u128::max);
    }

    /// Set position `pos`'s placement rank and replay its matches up to the root.
    fn idle_set(&mut self, pos: usize, r: u128) {
        replay(&mut self.idle, self.size + pos, r, u128::min);
    }

    /// The lowest placement rank of the positions other than `a` and `b`
    /// (`NONE`: no exclusion; `u128::MAX` if no position is left): the
    /// lowest of the siblings along each excluded position's path to the
    /// root that do not hold the other one.
    fn idle_best_except(&self, a: u32, b: u32) -> u128 {
        if a == NONE && b == NONE {
            return self.idle[1];
        }
        // Is node `s` the leaf of `y`, or an ancestor of it?
        let size = self.size;
        let holds = |s: usize, y: u32| {
            if y == NONE {
                return false;
            }
            let leaf = size + y as usize;
            let shift = s.leading_zeros() - leaf.leading_zeros();
            leaf >> shift == s
        };
        let mut best = u128::MAX;
        for (x, y) in [(a, b), (b, a)] {
            if x == NONE {
                continue;
            }
            let mut i = size + x as usize;
            while i > 1 {
                let s = i ^ 1;
                if !holds(s, y) {
                    best = best.min(self.idle[s]);
                }
                i /= 2;
            }
        }
        best
    }

    /// The best position other than `skip` (`NONE`: no exclusion), if its key
    /// is a candidate's: the best of the siblings along `skip`'s path to the root.
    fn best_except(&self, skip: u32) -> Option<u32> {
        let b = if skip == NONE {
            self.node[1]
        } else {
            let mut i = self.size + skip as usize;
            let mut b = 0;
            while i > 1 {
                b = self.node[i ^ 1].max(b);
                i /= 2;
            }
            b
        };
        // (Padding positions, past the domain's CPUs, hold key 0.)
        (b >> 32 > 0).then(|| rank_pos(b))
    }
}

/// What `update_sg_lb_stats()` sums of one CPU, as of its last refresh: the
/// runqueue's part of [`Kernel::lb_cpu`] and the time-independent part of
/// idle_cpu().
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct CpuSnap {
    load: u64,
    util: u64,
    runnable: u64,
    nr: u32,
    /// No task and no pending wakeup: idle whatever the time.
    idle: bool,
    /// No task but a pending wakeup: idle while the wakeup is not yet seen
    /// (`ttwu_pending_seen()`, time-dependent: decided at the pass).
    pend: bool,
}

/// Sums of [`CpuSnap`] over one group.
#[derive(Clone, Copy, Debug, Default)]
struct GroupSums {
    load: u64,
    util: u64,
    runnable: u64,
    nr: u32,
    /// CPUs with more than one task.
    over: u32,
    idle: u32,
    pend: u32,
}

impl GroupSums {
    #[inline]
    fn add(&mut self, x: &CpuSnap) {
        self.load += x.load;
        self.util += x.util;
        self.runnable += x.runnable;
        self.nr += x.nr;
        self.over += (x.nr > 1) as u32;
        self.idle += x.idle as u32;
        self.pend += x.pend as u32;
    }
    #[inline]
    fn sub(&mut self, x: &CpuSnap) {
        self.load -= x.load;
        self.util -= x.util;
        self.runnable -= x.runnable;
        self.nr -= x.nr;
        self.over -= (x.nr > 1) as u32;
        self.idle -= x.idle as u32;
        self.pend -= x.pend as u32;
    }
}

/// One domain's group sums (`update_sg_lb_stats()` of a wide domain whose
/// groups are several CPUs each and do not overlap): a pass reads one sum per
/// group instead of every runqueue.
#[derive(Clone, Debug)]
struct GroupCache {
    dom: u32,
    /// Its groups' sums are `LbIndex::sums[base..base + groups]`.
    base: u32,
    /// Each group's CPU count (group_weight).
    weight: Vec<u32>,
}

/// The indexes of a kernel's wide single-CPU-group domains.
#[derive(Clone, Debug, Default)]
pub(crate) struct LbIndex {
    trees: Vec<LbTree>,
    /// Per CPU: its leaf ([`At`]). A CPU is in at most one tree: its lowest
    /// domain's (the only one whose groups are its single CPUs).
    at: Vec<At>,
    /// Balance passes answered from the index.
    pub(crate) passes: u64,
    /// The profile reads the leaves and snapshots were computed with (None: not yet).
    rd: Option<LbRead>,
    /// Wide multi-CPU-group domains' sums (every cache's groups, one cache
    /// after the other), and per CPU its last snapshot and the sums holding
    /// it (their indexes `memb[memb_off[c]..memb_off[c + 1]]`).
    caches: Vec<GroupCache>,
    sums: Vec<GroupSums>,
    snap: Vec<CpuSnap>,
    /// The CPUs whose snapshot has `pend` (a pass counts, in a group with
    /// such CPUs, those whose wakeup it does not see yet: it visits these
    /// CPUs of the group, not all of them).
    pend: crate::cpumask::CpuMask,
    memb: Vec<u32>,
    memb_off: Vec<u32>,
    /// One bit per CPU: its balancing leaf was refreshed since its
    /// placement rank was (`Kernel::idlest_index_sync`).
    idle_stale: Vec<u64>,
    /// The UTIL_EST setting the placement ranks were computed with.
    idle_util_est: Option<bool>,
    /// find_idlest_cpu() passes that brought the placement ranks up to date.
    pub(crate) placements: u64,
}

impl LbIndex {
    /// An index for every domain of single-CPU groups at least
    /// [`LB_INDEX_MIN_GROUPS`] wide; the leaves are filled by the first
    /// [`Kernel::lb_index_walk`] (every runqueue starts marked written).
    pub(crate) fn new(sd: &crate::topology::SchedDomains) -> LbIndex {
        let mut ix = LbIndex { at: vec![At::NONE; sd.nr_cpus], idle_stale: vec![u64::MAX; sd.nr_cpus.div_ceil(64)], ..Default::default() };
        let mut memb: Vec<Vec<u32>> = vec![Vec::new(); sd.nr_cpus];
        for (id, d) in sd.domains.iter().enumerate() {
            let sizes: usize = (0..d.groups.len()).map(|g| d.group_cpus(g).len()).sum();
            if d.singleton_groups() || d.span_weight < LB_CACHE_MIN_SPAN || sizes != d.span_weight as usize {
                continue; // single CPUs (the tree's), narrow, or overlapping groups
            }
            for g in 0..d.groups.len() {
                for c in d.group_cpus(g) {
                    memb[c.idx()].push(ix.sums.len() as u32 + g as u32);
                }
            }
            let weight = (0..d.groups.len()).map(|g| d.group_cpus(g).len() as u32).collect();
            ix.caches.push(GroupCache { dom: id as u32, base: ix.sums.len() as u32, weight });
            ix.sums.resize(ix.sums.len() + d.groups.len(), GroupSums::default());
        }
        if !ix.caches.is_empty() {
            ix.snap = vec![CpuSnap::default(); sd.nr_cpus];
            ix.pend = crate::cpumask::CpuMask::new(sd.nr_cpus);
            ix.memb_off.push(0);
            for m in memb {
                ix.memb.extend(m);
                ix.memb_off.push(ix.memb.len() as u32);
            }
        }
        for (id, d) in sd.domains.iter().enumerate() {
            if !d.singleton_groups() || d.groups.len() < LB_INDEX_MIN_GROUPS {
                continue;
            }
            let cpus: Vec<CpuId> = d.group_cpus_from(0).to_vec();
            let size = cpus.len().next_power_of_two();
            let t = u16::try_from(ix.trees.len()).ok().filter(|&t| t != NO_TREE).expect("fewer balancing trees than NO_TREE");
            for (p, c) in cpus.iter().enumerate() {
                ix.at[c.idx()] = At { pos: p as u32, tree: t, ..At::NONE };
            }
            let mut node = vec![0; 2 * size];
            for p in 0..size {
                node[size + p] = rank(0, p);
            }
            for i in (1..size).rev() {
                node[i] = node[2 * i].max(node[2 * i + 1]);
            }
            let tree = LbTree {
                dom: id as u32,
                pct: d.imbalance_pct as u64,
                size,
                node,
                total_load: 0,
                nr_over: 0,
                idle: vec![u128::MAX; 2 * size],
            };
            ix.trees.push(tree);
        }
        ix
    }

    /// Some domain has a tree or group sums (the runqueue write marks are read).
    pub(crate) fn used(&self) -> bool {
        !self.trees.is_empty() || !self.caches.is_empty()
    }

    /// The tree of domain `dom`, if it has one.
    pub(crate) fn tree_of(&self, dom: u32) -> Option<usize> {
        self.trees.iter().position(|t| t.dom == dom)
    }

    /// The group cache of domain `dom`, if it has one.
    fn cache_of(&self, dom: u32) -> Option<usize> {
        self.caches.iter().position(|k| k.dom == dom)
    }

    /// Replace CPU `c`'s snapshot in every group sum holding it.
    #[inline]
    fn apply(&mut self, c: usize, new: CpuSnap) {
        if self.caches.is_empty() {
            return;
        }
        let old = self.snap[c];
        if old == new {
            return;
        }
        for &i in &self.memb[self.memb_off[c] as usize..self.memb_off[c + 1] as usize] {
            let s = &mut self.sums[i as usize];
            s.sub(&old);
            s.add(&new);
        }
        if old.pend != new.pend {
            if new.pend {
                self.pend.set(CpuId(c as u16));
            } else {
                self.pend.clear(CpuId(c as u16));
            }
        }
        self.snap[c] = new;
    }
}

/// CPU `c`'s [`CpuSnap`].
#[inline]
fn snap_of(rq: &crate::sched::Rq, x: &CpuLb) -> CpuSnap {
    let no_task = rq.curr.is_none() & (rq.cfs.h_nr_running == 0);
    CpuSnap {
        load: x.load,
        util: x.util,
        runnable: x.runnable,
        nr: x.nr,
        idle: no_task & (rq.ttwu_pending == 0),
        pend: no_task & (rq.ttwu_pending > 0),
    }
}

impl Kernel {
    /// Refresh the tree leaves and group sums of every runqueue written
    /// since the last refresh (of every runqueue when the profile reads changed).
    fn lb_index_sync(&mut self, ix: &mut LbIndex, rd: LbRead) {
        if ix.rd != Some(rd) {
            ix.rd = Some(rd);
            for c in 0..self.rqs.len() {
                Self::lb_index_refresh(ix, rd, c, &self.rqs[c]);
            }
        }
        self.rqs.take_dirty(|c, rq| Self::lb_index_refresh(ix, rd, c, rq));
    }

    #[inline]
    fn lb_index_refresh(ix: &mut LbIndex, rd: LbRead, c: usize, rq: &crate::sched::Rq) {
        let x = Self::lb_cpu_of(rq, rd);
        let at = &mut ix.at[c];
        if at.tree != NO_TREE {
            let tree = &mut ix.trees[at.tree as usize];
            tree.set(at, singleton_key(tree.pct, &x), x.load, x.nr > 1);
            ix.idle_stale[c >> 6] |= 1 << (c & 63);
        }
        ix.apply(c, snap_of(rq, &x));
    }

    /// `update_sd_lb_stats()`'s walk of domain `dom` (single-CPU groups) from
    /// its index, if it has one: the local and busiest groups' statistics,
    /// the total load and `sg_overloaded`, as [`Kernel::lb_singleton_walk`]
    /// gathers them.
    pub(crate) fn lb_index_walk(
        &mut self,
        dom: u32,
        rd: LbRead,
        local_gi: Option<usize>,
        env_dst: CpuId,
    ) -> Option<super::balance::LbWalk> {
        self.with_lb_index(|k, ix| {
            let t = ix.tree_of(dom)?;
            k.lb_index_sync(ix, rd);
            ix.passes += 1;
            let sd = &k.sd.domains[dom as usize];
            let tree = &ix.trees[t];
            let best = tree.best_except(local_gi.map_or(NONE, |g| g as u32)).map(|p| p as usize);
            Some(k.lb_singleton_result(rd, sd, tree.pct, local_gi, best, tree.total_load, tree.nr_over > 0, env_dst))
        })
    }

    /// Bring the placement ranks up to date before a find_idlest_cpu()
    /// pass, if some domain has a tree: the balancing leaves first (the
    /// runqueues written since the last pass), then the ranks of the CPUs
    /// whose leaf changed since the last placement. Returns whether the
    /// ranks are current (the pass may read them until the next runqueue write).
    pub(crate) fn idlest_index_sync(&mut self) -> bool {
        if self.lb_index.as_deref().is_none_or(|ix| ix.trees.is_empty()) {
            return false;
        }
        let rd = self.lb_read();
        let util_est = self.feats.has(crate::features::SchedFeat::UTIL_EST);
        self.with_lb_index(|k, ix| {
            k.lb_index_sync(ix, rd);
            ix.placements += 1;
            if ix.idle_util_est != Some(util_est) {
                ix.idle_util_est = Some(util_est);
                ix.idle_stale.iter_mut().for_each(|w| *w = u64::MAX);
            }
            for w in 0..ix.idle_stale.len() {
                let mut bits = std::mem::take(&mut ix.idle_stale[w]);
                while bits != 0 {
                    let c = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let Some(&At { tree: t, pos: p, .. }) = ix.at.get(c) else { continue };
                    if t == NO_TREE {
                        continue;
                    }
                    let tree = &mut ix.trees[t as usize];
                    let key = k.idlest_key(tree.pct, util_est, CpuId(c as u16), None);
                    tree.idle_set(p as usize, idle_rank(key, p));
                }
            }
            Some(())
        })
        .is_some()
    }

    /// `find_idlest_group()`'s choice over domain `dom` (single-CPU groups)
    /// from its placement ranks, if it has a tree: the positions of the
    /// local group (`this_cpu`'s, if in the domain) and of the idlest other
    /// group, as `Kernel::idlest_singleton_walk`'s pass finds them. The
    /// ranks must be current (`Kernel::idlest_index_sync`). The task's own
    /// CPU, where it is queued (exec), is ranked here without the task.
    pub(crate) fn idlest_index_pick(
        &self,
        dom: u32,
        task: &crate::sched::Task,
        this_cpu: CpuId,
        util_est: bool,
    ) -> Option<(Option<usize>, Option<usize>)> {
        let ix = self.lb_index.as_deref()?;
        let t = ix.tree_of(dom)?;
        let tree = &ix.trees[t];
        let pos_in_tree = |c: CpuId| ix.at.get(c.idx()).filter(|a| a.tree as usize == t).map(|a| a.pos);
        let local = pos_in_tree(this_cpu);
        let own = if task.se.on_rq { pos_in_tree(task.cpu).filter(|&p| Some(p) != local) } else { None };
        let mut best = tree.idle_best_except(local.unwrap_or(NONE), own.unwrap_or(NONE));
        if let Some(p) = own {
            best = best.min(idle_rank(self.idlest_key(tree.pct, util_est, task.cpu, Some(task)), p));
        }
        let best = (best != u128::MAX).then(|| idle_rank_pos(best) as usize);
        Some((local.map(|p| p as usize), best))
    }

    /// Run `f` with the index taken out of the kernel (a pass reads the
    /// runqueues while it updates the index) and put it back whatever `f`
    /// returns.
    fn with_lb_index<R>(&mut self, f: impl FnOnce(&mut Self, &mut LbIndex) -> Option<R>) -> Option<R> {
        let mut ix = self.lb_index.take().expect("the balancing index is in place outside a pass");
        let r = f(self, &mut ix);
        self.lb_index = Some(ix);
        r
    }

    /// `update_sd_lb_stats()`'s walk of domain `dom` (groups of several CPUs)
    /// from its group sums, if it has them: the same [`LbWalk`] as
    /// `lb_group_walk`. idle_cpus adds, per group, the CPUs whose pending
    /// wakeup this CPU does not see yet (read only in a group that has such
    /// a CPU) and the balancing CPU itself when newly idle (lb_cpu()'s `idle`).
    pub(crate) fn lb_cache_walk(&mut self, dom: u32, rd: LbRead, pct: u64, local_gi: Option<usize>, env_dst: CpuId) -> Option<LbWalk> {
        self.with_lb_index(|kn, ix| {
            let k = ix.cache_of(dom)?;
            kn.lb_index_sync(ix, rd);
            ix.passes += 1;
            let sd = &kn.sd.domains[dom as usize];
            // lb_cpu()'s second idle term: the balancing CPU, with no current
            // task and no (counted) task, is idle even when idle_cpu() says not.
            let dst_rq = &kn.rqs[env_dst.idx()];
            let dst_x = Self::lb_cpu_of(dst_rq, rd);
            let dst_no_task = dst_rq.curr.is_none() & (dst_rq.cfs.h_nr_running == 0);
            let dst_idle_cpu = dst_no_task && !kn.ttwu_pending_seen(dst_rq);
            let dst_extra = !dst_idle_cpu && dst_rq.curr.is_none() && dst_x.nr == 0;
            let cache = &ix.caches[k];
            let w = Self::lb_group_pick(sd.groups.len(), pct, local_gi, |gi, examined, overloaded| {
                let weight = cache.weight[gi];
                let sm = &ix.sums[cache.base as usize + gi];
                let mut idle = sm.idle;
                if sm.pend > 0 {
                    sd.groups[gi].for_each_and(&ix.pend, |c| idle += !kn.ttwu_pending_seen(&kn.rqs[c.idx()]) as u32);
                }
                if dst_extra && Some(gi) == local_gi {
                    idle += 1;
                }
                *examined += weight as u64;
                *overloaded |= sm.over > 0;
                SgStats {
                    group_load: sm.load,
                    group_util: sm.util,
                    group_runnable: sm.runnable,
                    sum_nr_running: sm.nr,
                    idle_cpus: idle,
                    group_weight: weight,
                    group_capacity: 1024 * weight as u64,
                    avg_load: 0,
                    overloaded_cpu: sm.over > 0,
                }
            });
            Some(w)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{SwitchReason, TaskParams, WakeFlags};
    use crate::profile::profile;
    use schedlab_topology::{CpuInfo, CpuTopology};

    use crate::test_topology::flat;

    // The tree's busiest candidate is the walk's: highest key, then the first
    // position; the excluded position never wins; no candidate without a key.
    #[test]
    fn tree_picks_the_first_best_candidate_except_the_local_one() {
        let k = Kernel::new(&flat(100), profile("v6.12").unwrap());
        let mut ix = LbIndex::new(&k.sd);
        assert_eq!((ix.trees.len(), ix.caches.len()), (1, 0));
        assert_eq!(((ix.at[0].tree, ix.at[0].pos), (ix.at[99].tree, ix.at[99].pos)), ((0, 0), (0, 99)));
        let (t, at) = (&mut ix.trees[0], &mut ix.at);
        assert_eq!(t.size, 128);
        assert_eq!(t.best_except(NONE), None, "no CPU runs a task");
        t.set(&mut at[7], 5, 10, false);
        t.set(&mut at[60], 5, 20, true);
        t.set(&mut at[99], 3, 30, true);
        assert_eq!((t.total_load, t.nr_over), (60, 2));
        assert_eq!(t.best_except(NONE), Some(7), "equal keys: the first");
        assert_eq!(t.best_except(7), Some(60));
        assert_eq!(t.best_except(60), Some(7));
        t.set(&mut at[7], 0, 0, false);
        assert_eq!(t.best_except(60), Some(99));
        t.set(&mut at[99], 9, 30, false);
        assert_eq!((t.best_except(NONE), t.best_except(99)), (Some(99), Some(60)));
        assert_eq!((t.total_load, t.nr_over), (50, 1));
    }

    // The placement tournament's lowest rank without one or two positions
    // is the lowest of the others (brute force over random ranks, every pair
    // of exclusions on a small tree, padding positions never chosen).
    #[test]
    fn placement_tree_finds_the_lowest_rank_but_two() {
        let k = Kernel::new(&flat(100), profile("v6.12").unwrap());
        let mut ix = LbIndex::new(&k.sd);
        let t = &mut ix.trees[0];
        assert_eq!(t.idle_best_except(NONE, NONE), u128::MAX, "no rank yet");
        let mut next = crate::test_topology::xorshift(0x5eed);
        let mut ranks = vec![u128::MAX; 128];
        for round in 0..20 {
            for _ in 0..40 {
                let p = next(100) as u32;
                // Few distinct keys: ties are decided by the position.
                let r = idle_rank(next(4) as u128, p);
                ranks[p as usize] = r;
                t.idle_set(p as usize, r);
            }
            for a in (0..128).step_by(if round == 0 { 1 } else { 7 }).chain([NONE]) {
                for b in (0..128).step_by(if round == 0 { 1 } else { 11 }).chain([NONE]) {
                    let want = (0..128u32).filter(|&q| q != a && q != b).map(|q| ranks[q as usize]).min().unwrap();
                    assert_eq!(t.idle_best_except(a, b), want, "round {round} without {a} and {b}");
                }
            }
        }
        assert_eq!(idle_rank_pos(t.idle_best_except(NONE, NONE)), (0..100).min_by_key(|&q| ranks[q]).unwrap() as u32);
    }

    // Forks (find_idlest_cpu() over the flat LLC's placement ranks) between
    // the blocks, wakeups and ticks of a random run, from random CPUs:
    // every placement from the index is checked against the pass over every
    // CPU (`lb_index_check`), and the index answers them all.
    #[test]
    fn placement_index_equals_the_pass_between_forks() {
        for kernel in ["v6.12", "v6.6", "v5.13"] {
            let mut k = Kernel::new(&flat(128), profile(kernel).unwrap());
            assert!(k.lb_index_check);
            let mut next = crate::test_topology::xorshift(0x0dd5_eed5);
            let mut churn = crate::test_topology::Churn::new(128, 5, 3);
            let mut now = 0u64;
            let mut forks = 0;
            for i in 0..3000u32 {
                now += next(30_000);
                if i % 5 == 0 && forks < 400 {
                    let c = CpuId(next(128) as u16);
                    let parent = k.rqs[c.idx()].curr;
                    let p = k.sched_fork(&TaskParams { nice: (i % 3) as i8, ..Default::default() }, parent, c, now);
                    k.wake_up_new_task(p, c, now, &mut churn.fx);
                    forks += 1;
                } else {
                    churn.step(&mut k, &mut next, now, |k, p, c, fx| k.try_to_wake_up(p, c, k.rqs[c.idx()].curr, WakeFlags::TTWU, now, fx));
                }
            }
            assert_eq!(k.lb_index.as_deref().unwrap().placements, forks, "{kernel}: every fork placed from the index");
        }
    }

    /// 128 CPUs, two threads per core, two LLCs of 64 in one node: the LLC
    /// domains' groups are cores, the node's are LLCs (three caches).
    fn smt_two_llcs() -> CpuTopology {
        let cpus = (0..128u32).map(|c| CpuInfo { core: c / 2, cluster: c / 64, llc: c / 64, node: 0, package: 0 }).collect();
        CpuTopology::new(cpus, vec![vec![10]]).unwrap()
    }

    /// 128 CPUs, two threads per core, eight LLCs of 16 in one node (zen3's
    /// LLC): the 16-CPU LLC domains' groups are cores, the node's are LLCs
    /// (nine caches).
    fn smt_eight_llcs() -> CpuTopology {
        let cpus = (0..128u32).map(|c| CpuInfo { core: c / 2, cluster: c / 16, llc: c / 16, node: 0, package: 0 }).collect();
        CpuTopology::new(cpus, vec![vec![10]]).unwrap()
    }

    // A random run of forks, blocks, wakeups (queued ones included), ticks
    // and preemptions on a flat 128-CPU LLC (the tree) and on two or eight
    // SMT LLCs (the group sums): every balance pass of an indexed domain is checked
    // against the full walk (`lb_index_check`, on in tests), for each form
    // of the v5.5+ balancer (v6.12 also with delayed tasks left out of the
    // counts). Queued wakeups stay pending a while, seen by other CPUs only
    // after a visibility window.
    #[test]
    fn index_walk_equals_the_full_walk_on_a_busy_flat_llc() {
        for (topo, kernel, parts) in ["v6.12", "v6.12+delayed-accounting", "v6.6", "v6.0", "v5.13", "v5.11"]
            .into_iter()
            .flat_map(|v| [(flat(128), v, (1, 0)), (smt_two_llcs(), v, (0, 3)), (smt_eight_llcs(), v, (0, 9))])
        {
            let (base, patch) = kernel.split_once('+').unwrap_or((kernel, ""));
            let mut prof = profile(base).unwrap();
            if !patch.is_empty() {
                prof.apply_patches(patch).unwrap();
            }
            let mut k = Kernel::new(&topo, prof);
            k.ttwu_pending_window_ns = 20_000;
            assert!(k.lb_index_check);
            let ix = k.lb_index.as_deref().unwrap();
            let cached = !ix.caches.is_empty();
            assert_eq!((ix.trees.len(), ix.caches.len()), parts);
            let mut next = crate::test_topology::xorshift(0x9e37_79b9_7f4a_7c15);
            let mut churn = crate::test_topology::Churn::new(128, 5, 3);
            let mut now = 0u64;
            for i in 0..300 {
                let p = k.sched_fork(&TaskParams { nice: (i % 3) as i8, ..Default::default() }, None, CpuId(0), now);
                k.wake_up_new_task(p, CpuId(0), now, &mut churn.fx);
            }
            for c in 0..128 {
                k.schedule(CpuId(c), SwitchReason::Preempt, now, &mut churn.fx);
            }
            for _ in 0..40_000 {
                now += next(30_000);
                churn.step(&mut k, &mut next, now, |k, p, c, fx| k.try_to_wake_up(p, c, k.rqs[c.idx()].curr, WakeFlags::TTWU, now, fx));
            }
            let passes = k.lb_index.as_deref().unwrap().passes;
            assert!(passes > 500, "{kernel} (cached {cached}): {passes} indexed passes");
        }
    }
}
