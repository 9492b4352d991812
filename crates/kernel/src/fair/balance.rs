//! Load balancing (kernel/sched/fair.c `sched_balance_*`, formerly
//! `load_balance()` / `rebalance_domains()` / `idle_balance()`; v2.6.38..v6.12).
//!
//! Two forms, chosen by the profile's `LbVariant`:
//! - `GroupTypes` (v5.5+ rework by Vincent Guittot): group classification,
//!   migration types (load, util, task), NUMA imbalance allowance;
//! - `LoadIdx` (v2.6.x-v5.4): avg_load comparison with imbalance_pct, the
//!   load imbalance moved by weighted load, no NUMA allowance.
//!
//! Periodic balancing runs from the tick of a busy CPU (`scheduler_tick`),
//! idle CPUs are balanced by the nohz idle balancer (`nohz_idle_balance`),
//! and a CPU about to go idle runs `sched_balance_newidle`.

use crate::core::Kernel;
use crate::explain::{LbOutcome, Refusal};
use crate::fair::numa::FbqType;
use crate::features::SchedFeat::*;
use crate::profile::LbVariant;
use crate::sched::{TaskId, TaskState};
use crate::stats::LbStats;
use crate::topology::{SD_BALANCE_NEWIDLE, SD_NUMA, SD_PREFER_SIBLING, SD_SHARE_CPUCAPACITY, SD_SHARE_LLC};
use schedlab_topology::CpuId;

/// `enum cpu_idle_type`, in the v16+ schedstat order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleType {
    Busy = 0,
    Idle = 1,
    NewlyIdle = 2,
}

/// Per CPU, per domain level balancing state (`struct sched_domain` fields that
/// are per-CPU copies in the kernel).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SdLbState {
    pub last_balance: u64,
    /// ms
    pub balance_interval: u64,
    pub nr_balance_failed: u32,
    pub max_newidle_lb_cost: u64,
    pub last_decay_max_lb_cost: u64,
}

/// `enum group_type` (v5.5+), low to high.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum GroupType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

/// `enum migration_type`
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MigrationType {
    Load,
    Util,
    Task,
}

/// `struct sg_lb_stats`
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct SgStats {
    pub(crate) group_load: u64,
    pub(crate) group_util: u64,
    pub(crate) group_runnable: u64,
    pub(crate) sum_nr_running: u32,
    pub(crate) idle_cpus: u32,
    pub(crate) group_weight: u32,
    pub(crate) group_capacity: u64,
    pub(crate) avg_load: u64,
    pub(crate) overloaded_cpu: bool,
}

struct LbEnv {
    dst: CpuId,
    lvl: usize,
    idle: IdleType,
    imbalance: i64,
    migration_type: MigrationType,
    all_pinned: bool,
    /// `LBF_ACTIVE_LB`: the env of active_load_balance_cpu_stop().
    active: bool,
    /// `env->fbq_type`: `All` unless an SD_NUMA level classified the busiest group.
    fbq_type: FbqType,
}

/// Outcome of balancing that the engine must act on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BalanceResult {
    /// Tasks moved.
    pub pulled: u32,
    /// CPUs examined (the hardware charges for reading their runqueues).
    pub examined: u64,
    /// CPUs whose current task must be preempted (active balance sources).
    pub kicks: Vec<CpuId>,
}

/// `degrade_factor[idx][j]` of kernel/sched/proc.c (v3.10): (1 - 2^-idx)^(2^j)
/// in 1/128ths, for `decay_load_missed()`.
const DEGRADE_SHIFT: u32 = 7;
const DEGRADE_ZERO_TICKS: [u64; 5] = [0, 8, 32, 64, 128];
const DEGRADE_FACTOR: [[u64; 8]; 5] = [
    [0, 0, 0, 0, 0, 0, 0, 0],
    [64, 32, 8, 0, 0, 0, 0, 0],
    [96, 72, 40, 12, 1, 0, 0, 0],
    [112, 98, 75, 43, 15, 1, 0, 0],
    [120, 112, 98, 76, 45, 16, 2, 0],
];

/// `decay_load_missed()` (v3.10, kernel/sched/proc.c): `load` decayed by
/// `missed` ticks of idx's factor at zero load.
fn decay_load_missed(mut load: u64, mut missed: u64, idx: usize) -> u64 {
    if missed == 0 {
        return load;
    }
    if missed >= DEGRADE_ZERO_TICKS[idx] {
        return 0;
    }
    if idx == 1 {
        return load >> missed;
    }
    let mut j = 0;
    while missed > 0 {
        if missed % 2 == 1 {
            load = (load * DEGRADE_FACTOR[idx][j]) >> DEGRADE_SHIFT;
        }
        missed >>= 1;
        j += 1;
    }
    load
}

/// v3.10 per-group statistics (`struct sg_lb_stats` of v3.10).
#[derive(Clone, Copy, Debug, Default)]
struct SgStatsV3 {
    avg_load: u64,
    group_load: u64,
    sum_nr_running: u64,
    sum_weighted_load: u64,
    group_capacity: u64,
    idle_cpus: u64,
    group_weight: u64,
    group_imb: bool,
    has_capacity: bool,
    power: u64,
}

/// How many CPUs ahead of the balancer's group-statistics walk the runqueues
/// are prefetched.
pub(crate) const LB_PREFETCH_AHEAD: usize = 6;

/// What the v5.5+ balancer's per-CPU reads ask of the profile, asked once per
/// pass instead of once per CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LbRead {
    /// `--patch delayed-accounting`: delayed tasks are not counted as running.
    pub(crate) delayed: bool,
    /// UTIL_EST: util_est of the enqueued tasks bounds the utilization below.
    pub(crate) util_est: bool,
}

/// What `update_sd_lb_stats()` gathers from a domain's groups.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct LbWalk {
    local: Option<SgStats>,
    /// (group index, statistics, type) of the busiest non-local group.
    busiest: Option<(usize, SgStats, GroupType)>,
    total_load: u64,
    total_cap: u64,
    /// Some CPU runs more than one task (`sg_overloaded`).
    overloaded: bool,
    /// CPUs read.
    examined: u64,
}

/// One CPU's part of `update_sg_lb_stats()`.
#[derive(Clone, Copy)]
pub(crate) struct CpuLb {
    pub(crate) nr: u32,
    pub(crate) load: u64,
    pub(crate) util: u64,
    pub(crate) runnable: u64,
    pub(crate) idle: bool,
}

impl Kernel {
    /// `weighted_cpuload()`: v2.6.x-v3.10 the instantaneous `rq->load.weight`;
    /// v3.11-v5.6 (b92486cbf2aa; `--patch runnable-load` on v3.10)
    /// `cfs.runnable_load_avg`; v5.7+ `cpu_load()` = `cfs_rq->avg.load_avg`.
    pub(crate) fn weighted_cpuload(&self, c: CpuId) -> u64 {
        let cfs = &self.rqs[c.idx()].cfs;
        match self.profile.wake_load {
            crate::profile::WakeLoad::Instant => cfs.load_weight,
            crate::profile::WakeLoad::RunnableAvg => {
                let mut sum = cfs.curr.filter(|&e| self.se(e).on_rq).map_or(0, |e| self.se(e).avg.load_avg);
                for e in cfs.queue.iter_unordered() {
                    sum += self.se(e).avg.load_avg;
                }
                sum
            }
            crate::profile::WakeLoad::LoadAvg => cfs.avg.load_avg,
        }
    }

    /// The load the v5.5+ balancer compares: PELT load_avg.
    fn lb_cpu_load(&self, c: CpuId) -> u64 {
        let cfs = &self.rqs[c.idx()].cfs;
        match self.profile.lb {
            LbVariant::LoadIdx => self.weighted_cpuload(c),
            LbVariant::GroupTypes => cfs.avg.load_avg.max(if cfs.nr_running > 0 { 1 } else { 0 }),
        }
    }

    /// `__update_cpu_load()` (v3.10, kernel/sched/proc.c) for the pending ticks
    /// since `last_load_update_tick`: cpu_load[0] = load, cpu_load[i] decays
    /// the missed ticks at zero load then averages in `load` with weight 2^-i
    /// (rounding up while the load rises). `idle_exit` is
    /// `update_cpu_load_nohz()`: the CPU was idle, so `load` is 0.
    #[inline(always)]
    pub(crate) fn update_cpu_load(&mut self, c: CpuId, now: u64, idle_exit: bool) {
        // Only the load-index balancers keep cpu_load[]: the others return
        // here, without a call (every idle exit asks).
        if self.profile.lb == LbVariant::LoadIdx {
            self.update_cpu_load_idx(c, now, idle_exit);
        }
    }

    fn update_cpu_load_idx(&mut self, c: CpuId, now: u64, idle_exit: bool) {
        let jiffies = now / self.tun.tick_ns;
        let pending = jiffies.saturating_sub(self.rqs[c.idx()].last_load_update_tick);
        if pending == 0 {
            return;
        }
        let load = if idle_exit { 0 } else { self.weighted_cpuload(c) };
        let rq = &mut self.rqs[c.idx()];
        rq.last_load_update_tick = jiffies;
        rq.cpu_load[0] = load;
        let mut scale = 2u64;
        for i in 1..5 {
            let old = decay_load_missed(rq.cpu_load[i], pending - 1, i);
            let mut new = load;
            if new > old {
                new += scale - 1;
            }
            rq.cpu_load[i] = (old * (scale - 1) + new) >> i;
            scale += scale;
        }
    }

    /// `source_load()` (v3.10): a low guess of a migration source's load,
    /// min(cpu_load[idx-1], weighted_cpuload()) (LB_BIAS), idx 0 = instantaneous.
    pub(crate) fn source_load(&self, c: CpuId, idx: u8) -> u64 {
        let total = self.weighted_cpuload(c);
        if idx == 0 {
            return total;
        }
        self.rqs[c.idx()].cpu_load[idx as usize - 1].min(total)
    }

    /// `target_load()` (v3.10): a high guess of a migration target's load.
    pub(crate) fn target_load(&self, c: CpuId, idx: u8) -> u64 {
        let total = self.weighted_cpuload(c);
        if idx == 0 {
            return total;
        }
        self.rqs[c.idx()].cpu_load[idx as usize - 1].max(total)
    }

    /// `cpu_avg_load_per_task()` (v3.10: rq->load.weight / nr_running; v3.11
    /// runnable_load_avg / nr_running).
    pub(crate) fn cpu_avg_load_per_task(&self, c: CpuId) -> u64 {
        let nr = self.rqs[c.idx()].nr_running() as u64;
        self.weighted_cpuload(c).checked_div(nr).unwrap_or(0)
    }

    /// `power_of(cpu)` = `cpu_power` of v3.10 (`update_cpu_power()`): SMT
    /// threads share `smt_gain` (1178 / threads = 589 for two), others 1024.
    // FIDELITY(F-006): no RT/IRQ time, so scale_rt_power() is 1024.
    pub(crate) fn cpu_power_v3(&self, c: CpuId) -> u64 {
        let w = self.sd.smt_mask[c.idx()].weight() as u64;
        let smt = self.sd.per_cpu[c.idx()].first().map(|&id| &self.sd.domains[id as usize]).filter(|d| d.smt_gain > 0);
        match smt {
            Some(d) if w > 1 => d.smt_gain as u64 / w,
            _ => 1024,
        }
    }

    /// Delayed-dequeue tasks the balancer leaves out of a CPU's task count:
    /// none in v6.12.0 (update_sg_lb_stats() sums rq->nr_running and
    /// find_busiest_queue() reads cfs.h_nr_running, both counting delayed
    /// sleepers); `h_nr_delayed` with `--patch delayed-accounting` (v6.14
    /// h_nr_runnable).
    fn lb_delayed(&self, c: CpuId) -> u32 {
        if self.profile.delayed_accounting() {
            self.rqs[c.idx()].cfs.h_nr_delayed
        } else {
            0
        }
    }

    pub(crate) fn lb_read(&self) -> LbRead {
        LbRead { delayed: self.profile.delayed_accounting(), util_est: self.feats.has(UTIL_EST) }
    }

    /// What `update_sg_lb_stats()` reads of CPU `c` (the v5.5+ balancer): the
    /// runqueue's first cache line, with few branches (idle and busy CPUs
    /// alternate unpredictably in a walk). Same values as `nr_running() -
    /// lb_delayed()`, `lb_cpu_load()`, `cpu_util_cfs()` and `idle_cpu()`.
    #[inline(always)]
    fn lb_cpu(&self, rd: LbRead, c: CpuId, env_dst: CpuId) -> CpuLb {
        let rq = &self.rqs[c.idx()];
        let mut x = Self::lb_cpu_of(rq, rd);
        // idle_cpu() (its ttwu_pending test reads further lines only when a
        // wakeup is pending); the balancing CPU itself counts as idle when newly idle.
        let no_task = rq.curr.is_none() & (rq.cfs.h_nr_running == 0);
        x.idle = (no_task && !self.ttwu_pending_seen(rq)) | (rq.curr.is_none() & (c == env_dst) & (x.nr == 0));
        x
    }

    /// [`Self::lb_cpu`] without `idle` (which depends on the time and the
    /// balancing CPU): what the runqueue alone determines.
    #[inline(always)]
    pub(crate) fn lb_cpu_of(rq: &crate::sched::Rq, rd: LbRead) -> CpuLb {
        let cfs = &rq.cfs;
        let nr = cfs.h_nr_running - if rd.delayed { cfs.h_nr_delayed } else { 0 };
        let load = cfs.avg.load_avg.max((cfs.nr_running > 0) as u64);
        let util = cfs.avg.util_avg.max(if rd.util_est { cfs.util_est_enqueued } else { 0 }).min(1024);
        CpuLb { nr, load, util, runnable: cfs.avg.runnable_avg, idle: false }
    }

    /// `update_sg_lb_stats()` of group `g`; `walk` is the rest of the domain's
    /// walk from `g`'s first CPU on, whose runqueues are prefetched
    /// [`LB_PREFETCH_AHEAD`] CPUs ahead.
    #[inline]
    fn lb_group_stats(
        &self,
        rd: LbRead,
        g: &[CpuId],
        walk: &[CpuId],
        env_dst: CpuId,
        examined: &mut u64,
        sg_overloaded: &mut bool,
    ) -> SgStats {
        let mut s = SgStats::default();
        for (j, &c) in g.iter().enumerate() {
            if let Some(&n) = walk.get(j + LB_PREFETCH_AHEAD) {
                self.prefetch_rq_stats(n);
            }
            let x = self.lb_cpu(rd, c, env_dst);
            s.group_load += x.load;
            s.group_util += x.util;
            s.group_runnable += x.runnable;
            s.sum_nr_running += x.nr;
            s.overloaded_cpu |= x.nr > 1;
            s.idle_cpus += x.idle as u32;
        }
        *examined += g.len() as u64;
        *sg_overloaded |= s.overloaded_cpu;
        s.group_weight = g.len() as u32;
        s.group_capacity = 1024 * s.group_weight as u64;
        s
    }

    /// `update_sd_lb_stats()`'s walk of `sd`'s groups: every group's
    /// statistics, the local group's kept, the busiest other group picked
    /// (`update_sd_pick_busiest()`).
    fn lb_group_walk(&self, rd: LbRead, sd: &crate::topology::SchedDomain, pct: u64, local_gi: Option<usize>, env_dst: CpuId) -> LbWalk {
        Self::lb_group_pick(sd.groups.len(), pct, local_gi, |gi, examined, overloaded| {
            self.lb_group_stats(rd, sd.group_cpus(gi), sd.group_cpus_from(gi), env_dst, examined, overloaded)
        })
    }

    /// The rest of `update_sd_lb_stats()` over `n` groups whose statistics
    /// `stats` gives (adding the CPUs it read and `sg_overloaded`): sums, the
    /// local group kept, the busiest other one picked (`update_sd_pick_busiest()`).
    pub(crate) fn lb_group_pick(
        n: usize,
        pct: u64,
        local_gi: Option<usize>,
        mut stats: impl FnMut(usize, &mut u64, &mut bool) -> SgStats,
    ) -> LbWalk {
        let mut w = LbWalk::default();
        for gi in 0..n {
            let s = stats(gi, &mut w.examined, &mut w.overloaded);
            w.total_load += s.group_load;
            w.total_cap += s.group_capacity;
            if Some(gi) == local_gi {
                w.local = Some(s);
                continue;
            }
            if s.sum_nr_running == 0 {
                continue;
            }
            let t = Self::group_classify(pct, &s);
            let better = match &w.busiest {
                None => true,
                Some((_, b, bt)) => {
                    if t != *bt {
                        t > *bt
                    } else {
                        match t {
                            GroupType::Overloaded | GroupType::FullyBusy => Self::sg_avg_load(&s) > Self::sg_avg_load(b),
                            GroupType::HasSpare => {
                                s.idle_cpus < b.idle_cpus || (s.idle_cpus == b.idle_cpus && s.sum_nr_running > b.sum_nr_running)
                            }
                        }
                    }
                }
            };
            if better {
                w.busiest = Some((gi, s, t));
            }
        }
        w
    }

    /// [`Self::lb_group_walk`] of a domain whose groups are single CPUs
    /// (`singleton_groups()`, e.g. a flat LLC of hundreds of CPUs), with the
    /// same result, in one pass with no branch that depends on the CPU (idle
    /// and busy CPUs alternate unpredictably). A one-CPU group that runs a
    /// task has no idle CPU, so among candidates (not local,
    /// `sum_nr_running > 0`) "busier" is the group type, then the load
    /// (overloaded, fully busy) or the number of tasks (has spare): one key,
    /// and of equal keys the first wins, as the group walk keeps the first.
    /// The local and the busiest group's statistics are read again at the
    /// end (nothing changed meanwhile).
    fn lb_singleton_walk(
        &self,
        rd: LbRead,
        sd: &crate::topology::SchedDomain,
        pct: u64,
        local_gi: Option<usize>,
        env_dst: CpuId,
    ) -> LbWalk {
        let list = sd.group_cpus_from(0);
        let local = local_gi.unwrap_or(usize::MAX);
        let mut total_load = 0u64;
        let mut overloaded = false;
        let mut best_key = 0u128;
        let mut best = usize::MAX;
        for (gi, &c) in list.iter().enumerate() {
            if let Some(&n) = list.get(gi + LB_PREFETCH_AHEAD) {
                self.prefetch_rq_stats(n);
            }
            let x = self.lb_cpu(rd, c, env_dst);
            total_load += x.load;
            overloaded |= x.nr > 1;
            // 0 for a CPU without tasks, which is no candidate.
            let key = super::lb_index::singleton_key(pct, &x);
            let better = (gi != local) & (key > best_key);
            best_key = if better { key } else { best_key };
            best = if better { gi } else { best };
        }
        self.lb_singleton_result(rd, sd, pct, local_gi, (best != usize::MAX).then_some(best), total_load, overloaded, env_dst)
    }

    /// The [`LbWalk`] of a domain of single-CPU groups once its walk has found
    /// the busiest group (`best`), the total load and `sg_overloaded`: the
    /// local and the busiest group's statistics are read again (nothing
    /// changed since the walk).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn lb_singleton_result(
        &self,
        rd: LbRead,
        sd: &crate::topology::SchedDomain,
        pct: u64,
        local_gi: Option<usize>,
        best: Option<usize>,
        total_load: u64,
        overloaded: bool,
        env_dst: CpuId,
    ) -> LbWalk {
        let list = sd.group_cpus_from(0);
        let mut scratch = (0u64, false);
        let mut group = |gi: usize| self.lb_group_stats(rd, sd.group_cpus(gi), &[], env_dst, &mut scratch.0, &mut scratch.1);
        LbWalk {
            local: local_gi.map(&mut group),
            busiest: best.map(|best| {
                let s = group(best);
                (best, s, Self::group_classify(pct, &s))
            }),
            total_load,
            total_cap: 1024 * list.len() as u64,
            overloaded,
            examined: list.len() as u64,
        }
    }

    /// `sgs->avg_load = group_load * SCHED_CAPACITY_SCALE / group_capacity`;
    /// a one-CPU group (capacity 1024) without the division.
    #[inline]
    fn sg_avg_load(s: &SgStats) -> u64 {
        if s.group_capacity == 1024 {
            s.group_load
        } else {
            s.group_load * 1024 / s.group_capacity
        }
    }

    fn group_classify(pct: u64, s: &SgStats) -> GroupType {
        let cap = s.group_capacity;
        let nr = s.sum_nr_running as u64;
        let w = s.group_weight as u64;
        // group_is_overloaded() / group_has_capacity() (v5.5+)
        if nr > w && (cap * 100 < s.group_util * pct || cap * pct < s.group_runnable * 100) {
            return GroupType::Overloaded;
        }
        let has_capacity = nr < w || (cap * pct >= s.group_runnable * 100 && cap * 100 > s.group_util * pct);
        if has_capacity {
            GroupType::HasSpare
        } else {
            GroupType::FullyBusy
        }
    }

    /// `should_we_balance()`: only one CPU of the local group balances a level.
    // FIDELITY(F-640): no v6.6 idle-core preference, group_smt_balance or sibling_imbalance().
    fn should_we_balance(&self, dst: CpuId, lvl: usize, idle: IdleType) -> bool {
        if idle == IdleType::NewlyIdle {
            let rq = &self.rqs[dst.idx()];
            return rq.nr_running() == 0 && rq.ttwu_pending == 0;
        }
        let sd = &self.sd.domains[self.sd.per_cpu[dst.idx()][lvl] as usize];
        let local = sd.group_cpus(sd.group_of(dst).expect("local group"));
        // The first idle CPU of the local group, else its first CPU.
        for &c in local {
            if self.idle_cpu(c) {
                return c == dst;
            }
        }
        local.first() == Some(&dst)
    }

    /// `sched_balance_rq()` / `load_balance()` at level `lvl` of `dst`'s domains.
    /// Returns (pulled, continue_balancing).
    ///
    /// The exits, as load_balance() takes them (v3.10..v6.12):
    /// - `should_we_balance()` false, no busiest group or queue: `out_balanced`
    ///   — nr_balance_failed = 0 (newly idle too), then the interval doubles
    ///   (not for newly idle balancing since 3f130a37c442, v5.8);
    /// - nothing moved: nr_balance_failed++ (not when newly idle); if
    ///   need_active_balance(), kick the busiest CPU's stopper unless its
    ///   running task may not run on dst (`out_one_pinned`: the interval
    ///   doubles). Before v5.13 the kick sets nr_balance_failed to
    ///   cache_nice_tries + 1; v5.13+ (23fb06d9602b) leaves it for the stopper
    ///   to reset when it moved a task;
    /// - then the interval goes back to min_interval unless a stopper was
    ///   kicked and need_active_balance() no longer holds.
    // FIDELITY(F-008): no misfit, asym packing, group_imbalanced retries or SD_SERIALIZE token.
    pub(crate) fn sched_balance_rq(&mut self, dst: CpuId, lvl: usize, idle: IdleType, now: u64, out: &mut BalanceResult) -> (u32, bool) {
        let sd_id = self.sd.per_cpu[dst.idx()][lvl] as usize;
        self.lb_stats[dst.idx()][lvl][idle as usize].lb_count += 1;
        self.xb_begin(dst, lvl, idle as usize, now);
        if !self.should_we_balance(dst, lvl, idle) {
            self.lb_out_balanced(dst, lvl, idle);
            self.xb_finish(LbOutcome::NotDesignated);
            return (0, false);
        }
        let mut env = LbEnv {
            dst,
            lvl,
            idle,
            imbalance: 0,
            migration_type: MigrationType::Load,
            all_pinned: true,
            active: false,
            fbq_type: FbqType::All,
        };
        let Some(bg) = self.find_busiest_group(sd_id, &mut env, out) else {
            self.lb_stats[dst.idx()][lvl][idle as usize].lb_balanced += 1;
            self.lb_out_balanced(dst, lvl, idle);
            self.xb_finish(LbOutcome::Balanced);
            return (0, true);
        };
        // update_sd_lb_stats() (v3.13+): at an SD_NUMA level the busiest
        // group's class limits the runqueues find_busiest_queue() may take from.
        // (The group's span, read in place: no copy of the mask.)
        let busiest_group = &self.sd.domains[sd_id].groups[bg];
        if self.sd.domains[sd_id].flags & SD_NUMA != 0 && self.profile.version >= (3, 13) {
            env.fbq_type = self.fbq_classify_group(busiest_group);
        }
        self.xb(|r| {
            r.busiest_group = busiest_group.first().map_or(u16::MAX, |c| c.0);
            r.migration = env.migration_type as u8 + 1;
            r.imbalance = env.imbalance;
        });
        let Some(src) = self.find_busiest_queue(self.sd.domains[sd_id].group_cpus(bg), &env, out) else {
            let st: &mut LbStats = &mut self.lb_stats[dst.idx()][lvl][idle as usize];
            st.lb_nobusyq += 1;
            st.lb_balanced += 1;
            self.lb_out_balanced(dst, lvl, idle);
            self.xb_finish(LbOutcome::NoBusiestRq);
            return (0, true);
        };
        self.xb(|r| r.busiest_rq = src.0);
        let one_task = self.rqs[src.idx()].nr_running() <= 1;
        let pulled = if self.rqs[src.idx()].nr_running() > 1 {
            // detach_tasks() runs under the busiest rq's lock (the engine charges it).
            self.lb_locked.push(src);
            self.detach_attach_tasks(src, &mut env, now)
        } else {
            0
        };
        let cache_nice_tries = self.sd.domains[sd_id].cache_nice_tries;
        let v5_13 = self.profile.version >= (5, 13);
        let mut kicked = false;
        if pulled == 0 {
            self.lb_stats[dst.idx()][lvl][idle as usize].lb_failed += 1;
            if idle != IdleType::NewlyIdle {
                self.sd_lb[dst.idx()][lvl].nr_balance_failed += 1;
            }
            if self.need_active_balance(dst, lvl, &env) {
                let curr_allowed = self.rqs[src.idx()].curr.is_some_and(|c| self.tasks[c.idx()].allowed(dst));
                if !curr_allowed {
                    // out_one_pinned
                    self.lb_tune_interval(dst, lvl, idle);
                    out.pulled += pulled;
                    self.xb_finish(if one_task { LbOutcome::OneTask } else { LbOutcome::Refused });
                    return (0, true);
                }
                if self.rqs[src.idx()].active_balance.is_none() {
                    self.rqs[src.idx()].active_balance = Some(dst);
                    self.resched_curr(src);
                    out.kicks.push(src);
                    kicked = true;
                    self.xb(|r| r.active_kick = true);
                }
                if !v5_13 {
                    // "We've kicked active balancing, force task migration."
                    self.sd_lb[dst.idx()][lvl].nr_balance_failed = cache_nice_tries + 1;
                }
            }
        } else {
            self.sd_lb[dst.idx()][lvl].nr_balance_failed = 0;
            self.lb_stats[dst.idx()][lvl][idle as usize].lb_gained += pulled as u64;
        }
        if !kicked || self.need_active_balance(dst, lvl, &env) {
            // We were unbalanced: back to the minimum interval.
            self.sd_lb[dst.idx()][lvl].balance_interval = self.sd.domains[sd_id].min_interval as u64;
        }
        out.pulled += pulled;
        self.xb(|r| r.moved = pulled);
        self.xb_finish(if pulled > 0 {
            LbOutcome::Moved
        } else if one_task {
            LbOutcome::OneTask
        } else {
            LbOutcome::Refused
        });
        (pulled, true)
    }

    /// `need_active_balance()`: enough periodic attempts failed
    /// (nr_balance_failed > cache_nice_tries + 2). v5.10+ (e9b9734b7465) asks this only for migrate_task imbalances
    /// (`imbalanced_active_balance()`); the LoadIdx balancer for any.
    fn need_active_balance(&self, dst: CpuId, lvl: usize, env: &LbEnv) -> bool {
        let sd = &self.sd.domains[self.sd.per_cpu[dst.idx()][lvl] as usize];
        let generic = self.profile.lb == LbVariant::LoadIdx || env.migration_type == MigrationType::Task;
        generic && self.sd_lb[dst.idx()][lvl].nr_balance_failed > sd.cache_nice_tries + 2
    }

    /// `out_balanced` of load_balance(): clear the failure count, then tune the interval.
    fn lb_out_balanced(&mut self, dst: CpuId, lvl: usize, idle: IdleType) {
        self.sd_lb[dst.idx()][lvl].nr_balance_failed = 0;
        self.lb_tune_interval(dst, lvl, idle);
    }

    /// `out_one_pinned` of load_balance(): double balance_interval up to
    /// max_interval; newly idle balancing leaves it alone from v5.8
    /// (3f130a37c442), earlier kernels double it there too.
    fn lb_tune_interval(&mut self, dst: CpuId, lvl: usize, idle: IdleType) {
        if idle == IdleType::NewlyIdle && self.profile.version >= (5, 8) {
            return;
        }
        let sd = &self.sd.domains[self.sd.per_cpu[dst.idx()][lvl] as usize];
        let max = sd.max_interval as u64;
        let st = &mut self.sd_lb[dst.idx()][lvl];
        if st.balance_interval < max {
            st.balance_interval = (st.balance_interval * 2).min(max);
        }
    }

    /// `active_load_balance_cpu_stop()` on `src` (its stopper now runs; the
    /// preempted task is back in the queue): detach_one_task() takes the first
    /// task from the tail of cfs_tasks (least recently run) that
    /// can_migrate_task() allows — v5.13+ (23fb06d9602b, `LBF_ACTIVE_LB`)
    /// without the hotness test, before that with the kick's forced
    /// nr_balance_failed — and attaches it to `dst`. v5.13+ resets the
    /// failure count of dst's domain only when a task moved.
    /// Returns the task moved.
    // FIDELITY(F-643): runs in the source's next schedule(), not as a stop-class task.
    pub(crate) fn active_load_balance_cpu_stop(&mut self, src: CpuId, dst: CpuId, now: u64) -> Option<TaskId> {
        // Is there any task to move? (busiest_rq->nr_running <= 1 counts the stopper.)
        if self.rqs[src.idx()].nr_running() == 0 || src == dst {
            return None;
        }
        let lvl = self.sd.per_cpu[dst.idx()].iter().position(|&id| self.sd.domains[id as usize].span.test(src))?;
        self.sd_stats[dst.idx()][lvl].alb_count += 1;
        let mut env = LbEnv {
            dst,
            lvl,
            idle: IdleType::Idle,
            imbalance: 0,
            migration_type: MigrationType::Load,
            all_pinned: true,
            active: true,
            fbq_type: FbqType::All,
        };
        // The tail of rq->cfs_tasks: least recently run first (the ordered set).
        let p = self.rqs[src.idx()].cfs_tasks.iter(&self.tasks).find(|&p| self.can_migrate_task(p, src, &mut env, now));
        match p {
            Some(p) => {
                self.migrate_queued_task(p, src, dst, now);
                self.sd_stats[dst.idx()][lvl].alb_pushed += 1;
                self.lb_stats[dst.idx()][lvl][IdleType::Idle as usize].lb_gained += 1;
                self.alb_pushed += 1;
                if self.profile.version >= (5, 13) {
                    self.sd_lb[dst.idx()][lvl].nr_balance_failed = 0;
                }
            }
            None => self.sd_stats[dst.idx()][lvl].alb_failed += 1,
        }
        p
    }

    /// `find_busiest_group()` (`sched_balance_find_src_group()`): returns the
    /// busiest group's index in the domain's groups and sets the imbalance,
    /// or None when balanced.
    fn find_busiest_group(&mut self, sd_id: usize, env: &mut LbEnv, out: &mut BalanceResult) -> Option<usize> {
        let sd = &self.sd.domains[sd_id];
        let sis_update = env.idle != IdleType::NewlyIdle
            && self.feats.has(SIS_UTIL)
            && sd.span_weight == self.sd.sd_llc_size[env.dst.idx()]
            && sd.flags & SD_SHARE_LLC != 0;
        let r = if self.profile.lb == LbVariant::LoadIdx {
            self.find_busiest_group_v3_out(sd_id, env, out)
        } else {
            self.find_busiest_group_stats(sd_id, env, out)
        };
        if sis_update {
            // update_idle_cpu_scan() (v6.0+ SIS_UTIL) from periodic balancing of the LLC domain.
            self.update_idle_cpu_scan(env.dst);
        }
        r
    }

    /// The v3.10 pass ([`Self::find_busiest_group_v3`]) of domain `sd_id`,
    /// run with the domain taken out of the arena and a placeholder in its
    /// place. The placeholder carries the domain's smt_gain: cpu_power_v3()
    /// reads the smt_gain of each CPU's first domain, which is this one
    /// while the SMT level is balanced (v3.10 update_cpu_power() scales
    /// rq->cpu_power by sd->smt_gain / span_weight; until session 27 the
    /// placeholder's 0 gave those CPUs 1024, F-651). (Out of line: the v5.5+
    /// pass's caller stays as small as without it.)
    #[inline(never)]
    fn find_busiest_group_v3_out(&mut self, sd_id: usize, env: &mut LbEnv, out: &mut BalanceResult) -> Option<usize> {
        let stand_in = self.v3_stand_in(sd_id);
        let sd = std::mem::replace(&mut self.sd.domains[sd_id], stand_in);
        let r = self.find_busiest_group_v3(&sd, env, out);
        self.sd.domains[sd_id] = sd;
        r
    }

    /// What stands in the arena for domain `sd_id` while the v3.10 pass
    /// holds it: an empty domain with its smt_gain, the one field the pass
    /// reads through the arena (cpu_power_v3()).
    fn v3_stand_in(&self, sd_id: usize) -> crate::topology::SchedDomain {
        let mut stand_in = crate::topology::SchedDomain::placeholder();
        stand_in.smt_gain = self.sd.domains[sd_id].smt_gain;
        stand_in
    }

    /// The v5.5+ `find_busiest_group()` of domain `sd_id`. (The domain is
    /// read in place, by index: the walk from the balancing index updates
    /// the kernel meanwhile.)
    fn find_busiest_group_stats(&mut self, sd_id: usize, env: &mut LbEnv, out: &mut BalanceResult) -> Option<usize> {
        let sd = &self.sd.domains[sd_id];
        let pct = sd.imbalance_pct as u64;
        let rd = self.lb_read();
        if !sd.groups.is_empty() {
            for &c in sd.group_cpus_from(0).iter().take(LB_PREFETCH_AHEAD) {
                self.prefetch_rq_stats(c);
            }
        }
        let local_gi = sd.group_of(env.dst);
        let dom = sd_id as u32;
        debug_assert_eq!(dom, self.sd.per_cpu[env.dst.idx()][env.lvl]);
        let w = if sd.singleton_groups() {
            match self.lb_index_walk(dom, rd, local_gi, env.dst) {
                Some(w) => {
                    if self.lb_index_check {
                        let sd = &self.sd.domains[sd_id];
                        assert_eq!(w, self.lb_singleton_walk(rd, sd, pct, local_gi, env.dst), "lb_index_walk != lb_singleton_walk");
                    }
                    w
                }
                None => self.lb_singleton_walk(rd, &self.sd.domains[sd_id], pct, local_gi, env.dst),
            }
        } else {
            match self.lb_cache_walk(dom, rd, pct, local_gi, env.dst) {
                Some(w) => {
                    if self.lb_index_check {
                        let sd = &self.sd.domains[sd_id];
                        assert_eq!(w, self.lb_group_walk(rd, sd, pct, local_gi, env.dst), "lb_cache_walk != lb_group_walk");
                    }
                    w
                }
                None => self.lb_group_walk(rd, &self.sd.domains[sd_id], pct, local_gi, env.dst),
            }
        };
        out.examined += w.examined;
        let (sg_overloaded, total_load, total_cap) = (w.overloaded, w.total_load, w.total_cap);
        let (local, busiest) = (w.local, w.busiest);
        // Root domain: refresh rd->overload.
        if self.sd.per_cpu[env.dst.idx()].len() == env.lvl + 1 {
            self.rd_overload = sg_overloaded;
        }
        let sd = &self.sd.domains[sd_id];
        let mut local = local?;
        let (bg, mut busiest_s, bt) = busiest?;
        let sds_avg = total_load * 1024 / total_cap.max(1);
        local.avg_load = local.group_load * 1024 / local.group_capacity.max(1);
        busiest_s.avg_load = busiest_s.group_load * 1024 / busiest_s.group_capacity.max(1);
        let lt = Self::group_classify(pct, &local);
        if lt > bt {
            return None;
        }
        if lt == GroupType::Overloaded
            && (local.avg_load >= busiest_s.avg_load || local.avg_load >= sds_avg || 100 * busiest_s.avg_load <= pct * local.avg_load)
        {
            return None;
        }
        // Try to move all excess tasks to a sibling domain of the busiest group's child.
        let prefer_sibling = self.sd_child_prefers_sibling(env.dst, env.lvl);
        let force = prefer_sibling && lt == GroupType::HasSpare && busiest_s.sum_nr_running > local.sum_nr_running + 1;
        if !force && bt != GroupType::Overloaded {
            if env.idle == IdleType::Busy {
                return None;
            }
            if busiest_s.group_weight > 1 && local.idle_cpus <= busiest_s.idle_cpus + 1 {
                return None;
            }
            if busiest_s.sum_nr_running <= 1 {
                return None;
            }
        }
        self.xb(|r| {
            r.local_type = lt as u8 + 1;
            r.busiest_type = bt as u8 + 1;
        });
        self.calculate_imbalance(sd, env, &local, &busiest_s, lt, bt, sds_avg);
        if env.imbalance <= 0 {
            return None;
        }
        Some(bg)
    }

    /// `find_busiest_group()` of v2.6.37-v3.10 (`update_sd_lb_stats()`,
    /// `update_sg_lb_stats()`, `update_sd_pick_busiest()`, `calculate_imbalance()`,
    /// `fix_small_imbalance()`): group loads from cpu_load[idx] (source_load for
    /// remote groups, target_load for the local one) scaled by the group's
    /// cpu_power; a group is busiest only when it runs more tasks than its
    /// capacity (DIV_ROUND_CLOSEST(power, 1024); 1 under SD_PREFER_SIBLING of
    /// the child) or is internally imbalanced; CPU_IDLE compares idle-CPU
    /// counts, the others imbalance_pct.
    // FIDELITY(F-620): no SD_ASYM_PACKING, LBF_ALL_PINNED retries or group_power refresh timing.
    fn find_busiest_group_v3(&self, sd: &crate::topology::SchedDomain, env: &mut LbEnv, out: &mut BalanceResult) -> Option<usize> {
        let load_idx = sd.load_idx[env.idle as usize];
        let prefer_sibling = self.sd_child_prefers_sibling(env.dst, env.lvl);
        let n = sd.groups.len();
        let start = sd.group_of(env.dst)?;
        let (mut total_load, mut total_pwr) = (0u64, 0u64);
        let mut this: Option<SgStatsV3> = None;
        let mut busiest: Option<(usize, SgStatsV3)> = None;
        let mut max_load = 0u64;
        // The ring of groups starts at the local group (sd->groups of dst's domain).
        for k in 0..n {
            let gi = (start + k) % n;
            let local = k == 0;
            let mut sgs = self.sg_lb_stats_v3(sd.group_cpus(gi), local, load_idx, &mut out.examined);
            total_load += sgs.group_load;
            total_pwr += sgs.power;
            if prefer_sibling && !local && this.is_some_and(|t| t.has_capacity) {
                sgs.group_capacity = sgs.group_capacity.min(1);
            }
            if local {
                this = Some(sgs);
            } else if sgs.avg_load > max_load && (sgs.sum_nr_running > sgs.group_capacity || sgs.group_imb) {
                // update_sd_pick_busiest()
                max_load = sgs.avg_load;
                busiest = Some((gi, sgs));
            }
        }
        let this = this?;
        let (bi, b) = busiest?;
        if b.sum_nr_running == 0 {
            return None;
        }
        let avg_load = 1024 * total_load / total_pwr.max(1);
        let force = b.group_imb || (env.idle == IdleType::NewlyIdle && this.has_capacity && !b.has_capacity);
        if !force {
            if this.avg_load >= max_load || this.avg_load >= avg_load {
                return None;
            }
            if env.idle == IdleType::Idle {
                if this.idle_cpus <= b.idle_cpus + 1 && b.sum_nr_running <= b.group_weight {
                    return None;
                }
            } else if 100 * max_load <= sd.imbalance_pct as u64 * this.avg_load {
                return None;
            }
        }
        env.imbalance = self.calculate_imbalance_v3(env.dst, &this, &b, max_load, avg_load) as i64;
        env.migration_type = MigrationType::Load;
        if env.imbalance <= 0 {
            // load_balance() goes on to find_busiest_queue() with imbalance 0
            // and moves nothing; the outcome is the same as balanced.
            return None;
        }
        Some(bi)
    }

    /// `update_sg_lb_stats()` of v3.10.
    fn sg_lb_stats_v3(&self, g: &[CpuId], local: bool, load_idx: u8, examined: &mut u64) -> SgStatsV3 {
        let mut s = SgStatsV3::default();
        let (mut max_cpu_load, mut min_cpu_load) = (0u64, u64::MAX);
        let (mut max_nr, mut min_nr) = (0u64, u64::MAX);
        for &c in g {
            *examined += 1;
            let nr = self.rqs[c.idx()].nr_running() as u64;
            let load = if local {
                self.target_load(c, load_idx)
            } else {
                let l = self.source_load(c, load_idx);
                max_cpu_load = max_cpu_load.max(l);
                min_cpu_load = min_cpu_load.min(l);
                max_nr = max_nr.max(nr);
                min_nr = min_nr.min(nr);
                l
            };
            s.group_load += load;
            s.sum_nr_running += nr;
            s.sum_weighted_load += self.weighted_cpuload(c);
            if self.idle_cpu(c) {
                s.idle_cpus += 1;
            }
            s.power += self.cpu_power_v3(c);
        }
        s.avg_load = s.group_load * 1024 / s.power.max(1);
        let avg_load_per_task = s.sum_weighted_load.checked_div(s.sum_nr_running).unwrap_or(0);
        if !local && max_cpu_load.wrapping_sub(min_cpu_load) >= avg_load_per_task && max_nr.wrapping_sub(min_nr) > 1 {
            s.group_imb = true;
        }
        // DIV_ROUND_CLOSEST(power, SCHED_POWER_SCALE); fix_small_capacity() only for 0.
        s.group_capacity = ((s.power + 512) / 1024).max(1);
        s.group_weight = g.len() as u64;
        s.has_capacity = s.group_capacity > s.sum_nr_running;
        s
    }

    /// `calculate_imbalance()` + `fix_small_imbalance()` of v3.10, with the
    /// kernel's unsigned-long arithmetic (wrapping where it wraps).
    fn calculate_imbalance_v3(&self, dst: CpuId, this: &SgStatsV3, b: &SgStatsV3, max_load: u64, avg_load: u64) -> u64 {
        let mut busiest_lpt = b.sum_weighted_load / b.sum_nr_running.max(1);
        if b.group_imb {
            busiest_lpt = busiest_lpt.min(avg_load);
        }
        if max_load < avg_load {
            return self.fix_small_imbalance_v3(dst, this, b, max_load, busiest_lpt, 0);
        }
        let mut load_above_capacity = u64::MAX;
        if !b.group_imb {
            load_above_capacity = b.sum_nr_running.wrapping_sub(b.group_capacity).wrapping_mul(1024 * 1024) / b.power.max(1);
        }
        let max_pull = (max_load - avg_load).min(load_above_capacity);
        let imbalance = max_pull.wrapping_mul(b.power).min(avg_load.wrapping_sub(this.avg_load).wrapping_mul(this.power)) / 1024;
        if imbalance < busiest_lpt {
            return self.fix_small_imbalance_v3(dst, this, b, max_load, busiest_lpt, imbalance);
        }
        imbalance
    }

    fn fix_small_imbalance_v3(&self, dst: CpuId, this: &SgStatsV3, b: &SgStatsV3, max_load: u64, busiest_lpt: u64, imbalance: u64) -> u64 {
        let mut imbn = 2;
        let this_lpt = match this.sum_weighted_load.checked_div(this.sum_nr_running) {
            Some(t) => {
                if busiest_lpt > t {
                    imbn = 1;
                }
                t
            }
            None => self.cpu_avg_load_per_task(dst),
        };
        let scaled_busy_lpt = busiest_lpt * 1024 / b.power.max(1);
        if max_load.wrapping_sub(this.avg_load).wrapping_add(scaled_busy_lpt) >= scaled_busy_lpt * imbn {
            return busiest_lpt;
        }
        // Not enough imbalance to move a task, unless moving one raises the
        // total CPU power used.
        let mut pwr_now = b.power * busiest_lpt.min(max_load);
        pwr_now += this.power * this_lpt.min(this.avg_load);
        pwr_now /= 1024;
        let mut pwr_move = 0;
        let tmp = busiest_lpt * 1024 / b.power.max(1);
        if max_load > tmp {
            pwr_move += b.power * busiest_lpt.min(max_load - tmp);
        }
        let tmp = if max_load * b.power < busiest_lpt * 1024 {
            max_load * b.power / this.power.max(1)
        } else {
            busiest_lpt * 1024 / this.power.max(1)
        };
        pwr_move += this.power * this_lpt.min(this.avg_load + tmp);
        pwr_move /= 1024;
        if pwr_move > pwr_now {
            busiest_lpt
        } else {
            imbalance
        }
    }

    /// The child domain of level `lvl` has SD_PREFER_SIBLING.
    fn sd_child_prefers_sibling(&self, dst: CpuId, lvl: usize) -> bool {
        lvl > 0 && self.sd.domains[self.sd.per_cpu[dst.idx()][lvl - 1] as usize].flags & SD_PREFER_SIBLING != 0
    }

    /// `calculate_imbalance()` (v5.5+, 0b0695f2b34a).
    #[allow(clippy::too_many_arguments)]
    fn calculate_imbalance(
        &self,
        sd: &crate::topology::SchedDomain,
        env: &mut LbEnv,
        local: &SgStats,
        busiest: &SgStats,
        lt: GroupType,
        bt: GroupType,
        sds_avg: u64,
    ) {
        if lt == GroupType::HasSpare {
            if bt > GroupType::FullyBusy && sd.flags & SD_SHARE_LLC == 0 {
                // Use spare capacity of the local group.
                env.migration_type = MigrationType::Util;
                env.imbalance = (local.group_capacity as i64 - local.group_util as i64).max(0);
                if env.imbalance == 0 && env.idle != IdleType::Busy {
                    env.migration_type = MigrationType::Task;
                    env.imbalance = 1;
                }
                return;
            }
            env.migration_type = MigrationType::Task;
            env.imbalance = if busiest.group_weight == 1 || self.sd_child_prefers_sibling(env.dst, env.lvl) {
                // Even out the number of tasks (nr_diff; v6.6+ sibling_imbalance() per core).
                (busiest.sum_nr_running as i64 - local.sum_nr_running as i64).max(0)
            } else {
                (local.idle_cpus as i64 - busiest.idle_cpus as i64).max(0)
            };
            let v = self.profile.version;
            if sd.flags & SD_NUMA != 0 && v < (5, 18) {
                // v5.11-v5.17 (7d2b5dd0bcc4): halve first, then adjust_numa_imbalance()
                // on the halved value with allow_numa_imbalance(): v5.11-v5.15
                // busiest->sum_nr_running < busiest->group_weight / 4; v5.16/17
                // local->sum_nr_running + 1 < local->group_weight / 4.
                env.imbalance >>= 1;
                let (running, weight) = if v < (5, 16) {
                    (busiest.sum_nr_running, busiest.group_weight)
                } else {
                    (local.sum_nr_running + 1, local.group_weight)
                };
                if running < weight / 4 && env.imbalance <= 2 {
                    env.imbalance = 0;
                }
                return;
            }
            if sd.flags & SD_NUMA != 0 {
                // v5.18+ adjust_numa_imbalance(): allow a small imbalance while the
                // destination runs at most imb_numa_nr tasks, keeping communicating
                // tasks together.
                if local.sum_nr_running < sd.imb_numa_nr && env.imbalance <= 2 {
                    env.imbalance = 0;
                }
            }
            // Number of tasks to move to restore balance.
            env.imbalance >>= 1;
            return;
        }
        // Local is fully busy or overloaded: move load toward the domain average.
        env.migration_type = MigrationType::Load;
        if bt == GroupType::Overloaded && lt < GroupType::Overloaded {
            // Local group not overloaded: move enough to bring busiest to the average.
        }
        let local_avg = local.group_load * 1024 / local.group_capacity.max(1);
        let busiest_avg = busiest.group_load * 1024 / busiest.group_capacity.max(1);
        if local_avg >= busiest_avg {
            env.imbalance = 0;
            return;
        }
        let pull = busiest_avg.saturating_sub(sds_avg) * busiest.group_capacity;
        let push = sds_avg.saturating_sub(local_avg) * local.group_capacity;
        env.imbalance = (pull.min(push) / 1024) as i64;
    }

    /// `cpu_util_cfs_boost()` (v6.5+): max(util_avg, runnable_avg), then util_est, capped.
    fn cpu_util_cfs_boost(&self, c: CpuId) -> u64 {
        let cfs = &self.rqs[c.idx()].cfs;
        let mut u = cfs.avg.util_avg.max(cfs.avg.runnable_avg);
        if self.feats.has(UTIL_EST) {
            u = u.max(cfs.util_est_enqueued);
        }
        u.min(1024)
    }

    /// `find_busiest_queue()` (`sched_balance_find_src_rq()`) over group `g`'s
    /// CPUs (ascending, as for_each_cpu_and() visits them). The v5.5+
    /// balancer without an fbq class takes one loop per migration type, with
    /// the profile's answers read once (every CPU of a socket-wide group is
    /// examined); the other forms take [`Self::find_busiest_queue_general`].
    fn find_busiest_queue(&self, g: &[CpuId], env: &LbEnv, out: &mut BalanceResult) -> Option<CpuId> {
        out.examined += g.len() as u64;
        if self.profile.lb == LbVariant::LoadIdx || env.fbq_type != FbqType::All {
            return self.find_busiest_queue_general(g, env);
        }
        let delayed = self.profile.delayed_accounting();
        let imbalance = env.imbalance;
        match env.migration_type {
            // lb_cpu_load(): a single task whose load exceeds the imbalance cannot help.
            MigrationType::Load => self.busiest_of(g, delayed, |cfs, nr| {
                let load = cfs.avg.load_avg.max((cfs.nr_running > 0) as u64);
                (nr != 1 || load as i64 <= imbalance).then_some(load)
            }),
            MigrationType::Util => {
                // v6.5+ (7d0583cf9ec7): cpu_util_cfs_boost(), runnable_avg counts too.
                let boost = self.profile.version >= (6, 5);
                let util_est = self.feats.has(UTIL_EST);
                self.busiest_of(g, delayed, |cfs, nr| {
                    if nr <= 1 {
                        return None;
                    }
                    let mut u = if boost { cfs.avg.util_avg.max(cfs.avg.runnable_avg) } else { cfs.avg.util_avg };
                    if util_est {
                        u = u.max(cfs.util_est_enqueued);
                    }
                    Some(u.min(1024))
                })
            }
            MigrationType::Task => self.busiest_of(g, delayed, |_, nr| Some(nr as u64)),
        }
    }

    /// The first CPU of `g` with the largest `metric` among those with a
    /// task (`nr_running() - lb_delayed()` > 0) whose metric is Some: the
    /// loop of [`Self::find_busiest_queue`].
    #[inline(always)]
    fn busiest_of(&self, g: &[CpuId], delayed: bool, metric: impl Fn(&crate::sched::CfsRq, u32) -> Option<u64>) -> Option<CpuId> {
        let mut best: Option<(CpuId, u64)> = None;
        for &c in g {
            let cfs = &self.rqs[c.idx()].cfs;
            let nr = cfs.h_nr_running - if delayed { cfs.h_nr_delayed } else { 0 };
            if nr == 0 {
                continue;
            }
            let Some(m) = metric(cfs, nr) else { continue };
            if best.is_none_or(|(_, b)| m > b) {
                best = Some((c, m));
            }
        }
        best.map(|(c, _)| c)
    }

    /// `find_busiest_queue()` of the load-index balancer (v2.6.x-v5.4), and
    /// of the v5.5+ one under an fbq class.
    fn find_busiest_queue_general(&self, g: &[CpuId], env: &LbEnv) -> Option<CpuId> {
        let mut best: Option<(CpuId, u64)> = None;
        for &c in g {
            let rq = &self.rqs[c.idx()];
            let nr = rq.nr_running() - self.lb_delayed(c);
            if nr == 0 {
                continue;
            }
            // v3.13+: skip runqueues of a higher fbq class than the busiest
            // group's (keeps ideally placed NUMA tasks where they are).
            if env.fbq_type != FbqType::All && self.fbq_classify_rq(c) > env.fbq_type {
                continue;
            }
            if self.profile.lb == LbVariant::LoadIdx {
                // v3.10: skip a single task heavier than the imbalance; rank by
                // weighted_cpuload() scaled by the CPU's power.
                let wl = self.weighted_cpuload(c);
                if nr == 1 && wl as i64 > env.imbalance {
                    continue;
                }
                let wl = wl * 1024 / self.cpu_power_v3(c);
                if best.is_none_or(|(_, m)| wl > m) {
                    best = Some((c, wl));
                }
                continue;
            }
            let metric = match env.migration_type {
                MigrationType::Load => {
                    let load = self.lb_cpu_load(c);
                    // A single task whose load exceeds the imbalance cannot help.
                    if nr == 1 && load as i64 > env.imbalance && self.profile.lb == LbVariant::GroupTypes {
                        continue;
                    }
                    load
                }
                MigrationType::Util => {
                    if nr <= 1 {
                        continue;
                    }
                    // v6.5+ (7d0583cf9ec7): cpu_util_cfs_boost(), runnable_avg counts too.
                    if self.profile.version >= (6, 5) {
                        self.cpu_util_cfs_boost(c)
                    } else {
                        self.cpu_util_cfs(c)
                    }
                }
                MigrationType::Task => nr as u64,
            };
            if best.is_none_or(|(_, m)| metric > m) {
                best = Some((c, metric));
            }
        }
        best.map(|(c, _)| c)
    }

    /// `task_hot()`, kernel/sched/fair.c: a task that ran on its CPU within
    /// sysctl_sched_migration_cost is cache hot. v5.10+ (ec73240b1627): never
    /// hot when balancing an SD_SHARE_CPUCAPACITY (SMT) domain, whose CPUs
    /// share every cache level.
    fn task_hot(&self, p: TaskId, lvl: usize, dst: CpuId, now: u64) -> bool {
        let t = &self.tasks[p.idx()];
        if t.policy == crate::sched::Policy::Idle {
            return false;
        }
        let sd_flags = self.sd.domains[self.sd.per_cpu[dst.idx()][lvl] as usize].flags;
        if self.profile.version >= (5, 10) && sd_flags & SD_SHARE_CPUCAPACITY != 0 {
            return false;
        }
        let pe = crate::sched::Ent::task(p);
        if self.feats.has(CACHE_HOT_BUDDY) && self.rqs[dst.idx()].nr_running() > 0 && self.cfs(self.cfs_of(pe)).next == Some(pe) {
            return true;
        }
        if t.se.exec_start == 0 {
            return false; // just migrated: cold
        }
        now.saturating_sub(t.se.exec_start) < self.tun.migration_cost_ns
    }

    /// `can_migrate_task()` (v2.6.x..v6.12).
    fn can_migrate_task(&self, p: TaskId, src: CpuId, env: &mut LbEnv, now: u64) -> bool {
        let t = &self.tasks[p.idx()];
        if t.se.sched_delayed && env.migration_type != MigrationType::Load && self.profile.delayed_accounting() {
            self.xb_refuse(Refusal::Delayed);
            return false; // 61b82dfb6b7e (v6.14)
        }
        if !t.allowed(env.dst) {
            self.xb_refuse(Refusal::Affinity);
            return false;
        }
        env.all_pinned = false;
        if self.rqs[src.idx()].curr == Some(p) {
            self.xb_refuse(Refusal::Running);
            return false;
        }
        if env.active && self.profile.version >= (5, 13) {
            return true;
        }
        let sd = &self.sd.domains[self.sd.per_cpu[env.dst.idx()][env.lvl] as usize];
        // v4.7+: migrate_degrades_locality() first, task_hot() when it has no opinion (fair/numa.rs).
        let numa =
            if self.numa.is_some() { self.migrate_degrades_locality(p, src, env.dst, sd.flags, env.idle == IdleType::Idle) } else { None };
        let hot = match numa {
            Some(h) => h,
            None => self.task_hot(p, env.lvl, env.dst, now),
        };
        let ok = !hot || self.sd_lb[env.dst.idx()][env.lvl].nr_balance_failed > sd.cache_nice_tries;
        if !ok {
            // Both are nr_failed_migrations_hot in the kernel; the record says which rule spoke.
            self.xb_refuse(if numa == Some(true) { Refusal::NumaLocality } else { Refusal::CacheHot });
        }
        ok
    }

    /// `detach_tasks()` + `attach_tasks()`: move tasks from the tail of `src`'s
    /// cfs_tasks (least recently run first) until the imbalance is met.
    fn detach_attach_tasks(&mut self, src: CpuId, env: &mut LbEnv, now: u64) -> u32 {
        // loop_max = min(sysctl_nr_migrate, nr_running): the 32 least recently used.
        let mut buf = [TaskId(0); 32];
        let mut nc = 0;
        for (slot, p) in buf.iter_mut().zip(self.rqs[src.idx()].cfs_tasks.iter(&self.tasks)) {
            *slot = p;
            nc += 1;
        }
        let cands = &buf[..nc];
        self.rq_steps.set(self.rq_steps.get() + cands.len() as u64);
        #[cfg(debug_assertions)]
        {
            let mut all: Vec<TaskId> = Vec::new();
            self.cfs_tasks(src, &mut all);
            all.sort_by_key(|t| (self.tasks[t.idx()].mru, t.0));
            all.truncate(32);
            assert_eq!(all, cands, "cfs_tasks list out of step on cpu {}", src.0);
        }
        let loop_max = cands.len();
        let mut moved = 0;
        for &p in cands.iter().take(loop_max) {
            if env.imbalance <= 0 {
                break;
            }
            if !self.can_migrate_task(p, src, env, now) {
                continue;
            }
            let load = match self.profile.wake_load {
                // v3.10 task_h_load() without groups: p->se.load.weight.
                crate::profile::WakeLoad::Instant => self.tasks[p.idx()].se.weight as i64,
                _ => self.task_h_load(p).max(1) as i64,
            };
            match env.migration_type {
                MigrationType::Load => {
                    let failed = self.sd_lb[env.dst.idx()][env.lvl].nr_balance_failed;
                    // move_tasks() v3.x: skip if load / 2 > imbalance; v5.10+ shr_bound(load, failed).
                    let eff = if self.profile.lb == LbVariant::LoadIdx { load / 2 } else { load >> failed.min(63) };
                    if eff > env.imbalance {
                        self.xb_refuse(Refusal::TooBig);
                        continue;
                    }
                    env.imbalance -= load;
                }
                MigrationType::Util => {
                    let util = self.tasks[p.idx()].se.avg.util_est_value() as i64;
                    // v6.8+ (Pierre Gondois, "sched/fair: Use all little CPUs for
                    // CPU-bound workloads"): shr_bound(util, nr_balance_failed).
                    let failed = if self.profile.version >= (6, 8) { self.sd_lb[env.dst.idx()][env.lvl].nr_balance_failed } else { 0 };
                    if (util >> failed.min(63)) > env.imbalance {
                        self.xb_refuse(Refusal::TooBig);
                        continue;
                    }
                    env.imbalance -= util;
                }
                MigrationType::Task => env.imbalance -= 1,
            }
            self.migrate_queued_task(p, src, env.dst, now);
            moved += 1;
            // Newly idle balancing stops after one task on preemptible kernels.
            if env.idle == IdleType::NewlyIdle {
                break;
            }
        }
        moved
    }

    /// `detach_task()` + `attach_task()` for a queued, not running task.
    ///
    /// v6.12: a `sched_delayed` sleeper (movable under migrate_load only) moves
    /// as it is: dequeue_entity() without DEQUEUE_DELAYED keeps
    /// `se->sched_delayed`, the task stays asleep (TASK_INTERRUPTIBLE) and is
    /// queued delayed on dst until a pick there completes its dequeue or a
    /// wakeup requeues it (kernel/sched/fair.c dequeue_entity(),
    /// enqueue_task_fair(), v6.12). Found by `schedlab oracle` (docs/FIDELITY.md,
    /// "Real-kernel comparison"): the model had made such a sleeper runnable.
    pub(crate) fn migrate_queued_task(&mut self, p: TaskId, src: CpuId, dst: CpuId, now: u64) {
        debug_assert_ne!(self.rqs[src.idx()].curr, Some(p));
        let delayed = self.tasks[p.idx()].se.sched_delayed;
        self.dequeue_task_fair(src, p, 0, now);
        let se = &mut self.tasks[p.idx()].se;
        se.avg.update(now, 0, se.weight, 0, false);
        self.set_task_cpu_pub(p, dst);
        let queued_at = self.tasks[p.idx()].last_queued.get();
        self.enqueue_task_fair(p, crate::fair::flags::ENQUEUE_MIGRATED, now);
        if delayed {
            // v6.12 detach_task()/attach_task(): a delayed-dequeue entity (a
            // sleeper, migrated for load) moves as it is: still sched_delayed
            // on dst, still asleep; its pick there completes the dequeue.
            self.mark_delayed(p);
            // enqueue_task_fair() skips util_est_enqueue() for a delayed task
            // that is migrating: its estimate left the CPUs at its sleep.
            self.util_est_dequeue(p);
            self.note_nr_running(dst);
            return;
        }
        let t = &mut self.tasks[p.idx()];
        t.state = TaskState::Runnable;
        t.last_queued.set(queued_at.or(Some(now)));
        self.check_preempt_wakeup(dst, p, false, now);
        self.note_nr_running(dst);
    }

    /// `sched_balance_domains()` / `rebalance_domains()`: periodic balancing of
    /// `cpu`'s domains whose interval has elapsed.
    pub fn sched_balance_domains(&mut self, cpu: CpuId, idle: IdleType, now: u64) -> BalanceResult {
        let mut out = BalanceResult::default();
        let jiffy = self.tun.tick_ns;
        let busy = idle == IdleType::Busy;
        let mut next_balance = now + 60 * jiffy;
        let mut continue_balancing = true;
        let nlev = self.sd.per_cpu[cpu.idx()].len();
        let max_lb = jiffy * (self.profile.tunables.hz as u64 * self.nr_cpus() as u64 / 10).max(1);
        for lvl in 0..nlev {
            let sd = &self.sd.domains[self.sd.per_cpu[cpu.idx()][lvl] as usize];
            let busy_factor = sd.busy_factor as u64;
            // Decay max_newidle_lb_cost once per second (x 253/256).
            let st = &mut self.sd_lb[cpu.idx()][lvl];
            if now > st.last_decay_max_lb_cost + 1_000_000_000 {
                st.max_newidle_lb_cost = st.max_newidle_lb_cost * 253 / 256;
                st.last_decay_max_lb_cost = now;
            }
            if !continue_balancing {
                continue;
            }
            let mut interval_ms = st.balance_interval.max(1);
            if busy {
                interval_ms *= busy_factor;
            }
            let mut interval = interval_ms * 1_000_000;
            if busy {
                interval = interval.saturating_sub(jiffy);
            }
            interval = interval.clamp(jiffy, max_lb);
            if now >= st.last_balance + interval {
                let (_, cont) = self.sched_balance_rq(cpu, lvl, idle, now, &mut out);
                continue_balancing = cont;
                self.sd_lb[cpu.idx()][lvl].last_balance = now;
            }
            let st = &self.sd_lb[cpu.idx()][lvl];
            next_balance = next_balance.min(st.last_balance + interval);
        }
        self.rqs[cpu.idx()].next_balance = next_balance;
        out
    }

    /// `sched_balance_newidle()` (`idle_balance()` before v5.x): a CPU about to go idle pulls work.
    pub(crate) fn sched_balance_newidle(&mut self, cpu: CpuId, now: u64) -> BalanceResult {
        let mut out = BalanceResult::default();
        if self.rqs[cpu.idx()].ttwu_pending > 0 || self.sd.per_cpu[cpu.idx()].is_empty() {
            return out;
        }
        let avg_idle = self.rqs[cpu.idx()].avg_idle;
        let overload_gate = self.at_least(4, 0) && !self.rd_overload;
        let cutoff = if self.at_least(5, 16) { self.sd_lb[cpu.idx()][0].max_newidle_lb_cost } else { self.tun.migration_cost_ns };
        if overload_gate || avg_idle < cutoff {
            return out;
        }
        let mut curr_cost = 0u64;
        for lvl in 0..self.sd.per_cpu[cpu.idx()].len() {
            let sd = &self.sd.domains[self.sd.per_cpu[cpu.idx()][lvl] as usize];
            // Per-domain cost cutoff: 9bd721c55c8a / f48627e686a6 (v3.13).
            if self.at_least(3, 13) && avg_idle < curr_cost + self.sd_lb[cpu.idx()][lvl].max_newidle_lb_cost {
                break;
            }
            if sd.flags & SD_BALANCE_NEWIDLE == 0 {
                continue;
            }
            let before = out.examined;
            let (pulled, cont) = self.sched_balance_rq(cpu, lvl, IdleType::NewlyIdle, now, &mut out);
            let cost = (out.examined - before) * self.scan_cost_per_cpu_ns.max(1);
            curr_cost += cost;
            let st = &mut self.sd_lb[cpu.idx()][lvl];
            st.max_newidle_lb_cost = st.max_newidle_lb_cost.max(cost);
            if pulled > 0 || !cont {
                break;
            }
        }
        let rq = &mut self.rqs[cpu.idx()];
        rq.max_idle_balance_cost = rq.max_idle_balance_cost.max(curr_cost);
        out
    }

    /// `nohz_balancer_kick()` conditions at the tick of a busy CPU: returns the
    /// idle load balancer CPU to kick, if any.
    pub(crate) fn nohz_balancer_kick(&mut self, cpu: CpuId, now: u64) -> Option<CpuId> {
        if now < self.nohz_next_balance {
            return None;
        }
        // Kick when this CPU runs two tasks or two CPUs of its LLC are busy
        // (the LLC walk stops at the second busy CPU).
        if self.rqs[cpu.idx()].nr_running() < 2 {
            let busy_llc = self.sd.sd_llc(cpu).map_or(0, |sd| sd.span.iter().filter(|&c| self.rqs[c.idx()].curr.is_some()).take(2).count());
            if busy_llc < 2 {
                return None;
            }
        }
        // find_new_ilb(): the first idle CPU.
        let ilb = (0..self.nr_cpus()).map(|c| CpuId(c as u16)).find(|&c| self.idle_cpu(c))?;
        self.nohz_next_balance = now + self.tun.tick_ns;
        Some(ilb)
    }

    /// `nohz_idle_balance()`: the kicked idle CPU balances every idle CPU whose
    /// next_balance has passed. Returns the CPUs that received work.
    ///
    /// Order: v5.10+ `_nohz_idle_balance()` walks the idle CPUs from ilb + 1
    /// wrapping (for_each_cpu_wrap), so the ILB itself comes last and other
    /// idle CPUs get the first chance to pull (7a82e5f52a35); v3.x
    /// run_rebalance_domains() balanced the ILB first, then the others from
    /// CPU 0 up.
    pub fn nohz_idle_balance(&mut self, ilb: CpuId, now: u64, fx: &mut crate::core::Effects) -> BalanceResult {
        let r = self.nohz_idle_balance_inner(ilb, now);
        self.hand_over(fx);
        r
    }

    fn nohz_idle_balance_inner(&mut self, ilb: CpuId, now: u64) -> BalanceResult {
        self.cur_now = now;
        self.cur_this_cpu = ilb;
        let mut all = BalanceResult::default();
        let mut next = u64::MAX;
        let n = self.nr_cpus();
        let wrap = self.profile.version >= (5, 10);
        for k in 0..n {
            let c = if wrap {
                CpuId(((ilb.idx() + 1 + k) % n) as u16)
            } else if k == 0 {
                ilb
            } else {
                // 0..n without ilb
                CpuId((if k - 1 < ilb.idx() { k - 1 } else { k }) as u16)
            };
            if !self.idle_cpu(c) && c != ilb {
                continue;
            }
            if self.rqs[c.idx()].curr.is_some() {
                continue;
            }
            let due = now >= self.rqs[c.idx()].next_balance;
            if c != ilb {
                // The walk takes each other idle CPU's rq lock (the engine
                // charges the sections to the ILB, one after another, and
                // wakers of that CPU wait for them). v3.x (and v4.x before
                // NOHZ_STATS_KICK, v4.17): for every CPU walked, one section
                // for update_rq_clock() + update_idle_cpu_load(), one for
                // update_blocked_averages() at the top of rebalance_domains().
                // v4.17+: update_nohz_stats() -> update_blocked_averages(),
                // and update_rq_clock() only for a CPU due for balancing.
                // Only CPUs whose tick stopped are in nohz.idle_cpus_mask:
                // before v4.17 every idle entry stopped it; from v4.17 the
                // idle governor keeps the tick when it predicts a short idle
                // (554c8aa8ecad), taken here as idle for less than a tick.
                // FIDELITY(F-440): every walked rq counted as having blocked load (v4.17+ skips those without); v2.6.38 as v3.10; the walk's balancing itself still covers every idle CPU (F-017).
                let v4_17 = self.profile.version >= (4, 17);
                let tick_stopped = !v4_17 || now.saturating_sub(self.rqs[c.idx()].idle_stamp) >= self.tun.tick_ns;
                if tick_stopped {
                    self.lb_locked.push(c);
                    if !v4_17 || due {
                        self.lb_locked.push(c);
                    }
                }
            }
            if due {
                // update_idle_cpu_load() (v3.10): an empty rq's cpu_load[] decays at load 0.
                if self.rqs[c.idx()].cfs.load_weight == 0 {
                    self.update_cpu_load(c, now, true);
                }
                let r = self.sched_balance_domains(c, IdleType::Idle, now);
                all.pulled += r.pulled;
                all.examined += r.examined;
                all.kicks.extend(r.kicks);
            }
            next = next.min(self.rqs[c.idx()].next_balance);
        }
        self.nohz_next_balance = next.max(now + self.tun.tick_ns);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{SwitchReason, TaskParams};
    use crate::profile::profile;
    use schedlab_topology::{CpuInfo, CpuTopology};

    use crate::test_topology::flat;

    // can_migrate_task()/task_hot(): a queued task that ran within sysctl_sched_migration_cost is
    // cache hot and is not pulled until the domain's nr_balance_failed exceeds
    // cache_nice_tries (1 at the LLC level).
    #[test]
    fn cache_hot_tasks_skipped_until_balance_failures() {
        // Run each for a while so all three are hot at t = 3 ms.
        let (mut k, _, now) = three_on_cpu0("v6.6");
        let queued: Vec<TaskId> = k.rqs[0].cfs.queue.iter().map(|e| e.task_id().unwrap()).collect();
        assert_eq!(queued.len(), 2);
        let now = now + 100_000; // 0.1 ms later: the last-run queued task is hot
        let hot = *queued.iter().max_by_key(|t| k.tasks[t.idx()].se.exec_start).unwrap();
        assert!(k.task_hot(hot, 0, CpuId(1), now));
        let mut env = LbEnv {
            dst: CpuId(1),
            lvl: 0,
            idle: IdleType::Idle,
            imbalance: 1,
            migration_type: MigrationType::Task,
            all_pinned: true,
            active: false,
            fbq_type: FbqType::All,
        };
        let cache_nice_tries = k.sd.domains[k.sd.per_cpu[1][0] as usize].cache_nice_tries;
        assert_eq!(cache_nice_tries, 1);
        for failed in 0..=cache_nice_tries {
            k.sd_lb[1][0].nr_balance_failed = failed;
            assert!(!k.can_migrate_task(hot, CpuId(0), &mut env, now), "hot task migrated with nr_balance_failed={failed}");
        }
        k.sd_lb[1][0].nr_balance_failed = cache_nice_tries + 1;
        assert!(k.can_migrate_task(hot, CpuId(0), &mut env, now));
        // Cold after migration_cost.
        k.sd_lb[1][0].nr_balance_failed = 0;
        assert!(k.can_migrate_task(hot, CpuId(0), &mut env, now + 600_000));
        // The running task is never pulled by a periodic balance.
        let curr = k.rqs[0].curr.unwrap();
        k.sd_lb[1][0].nr_balance_failed = 10;
        assert!(!k.can_migrate_task(curr, CpuId(0), &mut env, now));
    }

    // detach_task()/attach_task() with delayed dequeue (v6.12): a sched_delayed sleeper moved by migrate_load
    // stays an asleep, delayed entity on the destination; the destination's
    // next pick completes its dequeue instead of running it.
    #[test]
    fn delayed_sleeper_migrates_asleep() {
        let mut k = Kernel::new(&flat(2), profile("v6.12").unwrap());
        for _ in 0..2 {
            let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(0)]), ..Default::default() }, None, CpuId(0), 0);
            k.wake_up_new_task(p, CpuId(0), 0, &mut crate::core::Effects::default());
            k.tasks[p.idx()].cpus_allowed = None;
        }
        k.schedule(CpuId(0), SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
        let sleeper = k.rqs[0].curr.unwrap();
        // It ran 10 ms ahead of the other: ineligible when it blocks, so delayed.
        k.schedule(CpuId(0), SwitchReason::Block, 10_000_000, &mut crate::core::Effects::default());
        assert!(k.tasks[sleeper.idx()].se.sched_delayed && k.tasks[sleeper.idx()].se.on_rq);
        assert_ne!(k.rqs[0].curr, Some(sleeper));
        k.migrate_queued_task(sleeper, CpuId(0), CpuId(1), 10_000_000);
        let t = &k.tasks[sleeper.idx()];
        assert_eq!(t.state, TaskState::Sleeping, "a migrated sleeper must not become runnable");
        assert!(t.se.sched_delayed && t.se.on_rq && t.cpu == CpuId(1));
        assert_eq!((k.rqs[0].cfs.h_nr_delayed, k.rqs[1].cfs.h_nr_delayed), (0, 1));
        // CPU 1's pick finishes the delayed dequeue and finds nothing to run.
        k.schedule(CpuId(1), SwitchReason::Preempt, 10_000_000, &mut crate::core::Effects::default());
        assert_eq!(k.rqs[1].curr, None);
        assert!(!k.tasks[sleeper.idx()].se.on_rq && !k.tasks[sleeper.idx()].se.sched_delayed);
        assert_eq!(k.rqs[1].cfs.h_nr_delayed, 0);
    }

    // load_balance() (v3.10, v6.6): an idle CPU pulls from a CPU with several runnable tasks.
    #[test]
    fn idle_cpu_pulls_from_overloaded_cpu() {
        for kernel in ["v3.10", "v6.6"] {
            let (mut k, now) = overloaded_cpu0(kernel, 4);
            let r = k.sched_balance_domains(CpuId(1), IdleType::Idle, now + 10_000_000);
            assert!(r.pulled >= 1, "{kernel}: nothing pulled");
            assert!(
                k.rqs[1].nr_running() >= 1 && k.rqs[0].nr_running() >= 2,
                "{kernel}: {} / {}",
                k.rqs[0].nr_running(),
                k.rqs[1].nr_running()
            );
        }
    }

    // decay_load_missed() (v3.10 kernel/sched/proc.c): missed idle ticks decay
    // cpu_load[idx] by (1 - 2^-idx) per tick from the 1/128 table; idx 1 is a
    // plain shift; from degrade_zero_ticks on the load is 0.
    #[test]
    fn cpu_load_decay_follows_v3_10_table() {
        assert_eq!(decay_load_missed(1024, 0, 2), 1024);
        assert_eq!(decay_load_missed(1024, 3, 1), 128);
        assert_eq!(decay_load_missed(1024, 3, 2), (((1024 * 96) >> 7) * 72) >> 7);
        assert_eq!(decay_load_missed(1024, 32, 2), 0);
        assert_eq!(decay_load_missed(1024, 63, 4), {
            let mut l = 1024u64;
            for f in [120, 112, 98, 76, 45, 16] {
                l = (l * f) >> 7;
            }
            l
        });
    }

    // v3.10 weighted_cpuload() = rq->load.weight; __update_cpu_load() averages
    // it into cpu_load[i] with weight 2^-i per tick, rounding up while rising.
    // With --patch runnable-load (b92486cbf2aa, v3.11) it is runnable_load_avg.
    #[test]
    fn v3_10_loads_are_instantaneous() {
        let mut k = Kernel::new(&flat(2), profile("v3.10").unwrap());
        let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(0)]), ..Default::default() }, None, CpuId(0), 0);
        k.wake_up_new_task(p, CpuId(0), 0, &mut crate::core::Effects::default());
        k.schedule(CpuId(0), SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
        assert_eq!(k.weighted_cpuload(CpuId(0)), 1024);
        let tick = k.tun.tick_ns;
        k.scheduler_tick(CpuId(0), tick, &mut crate::core::Effects::default());
        assert_eq!(k.rqs[0].cpu_load, [1024, 512, 256, 128, 64]);
        k.scheduler_tick(CpuId(0), 2 * tick, &mut crate::core::Effects::default());
        assert_eq!(k.rqs[0].cpu_load[1], (512 + 1024 + 1) >> 1);
        assert_eq!(k.source_load(CpuId(0), 2), k.rqs[0].cpu_load[1]);
        assert_eq!(k.target_load(CpuId(0), 2), 1024);
        // The task blocks: the instantaneous load is 0 at once, PELT's is not.
        k.schedule(CpuId(0), SwitchReason::Block, 2 * tick + 1, &mut crate::core::Effects::default());
        assert_eq!(k.weighted_cpuload(CpuId(0)), 0);
        assert!(k.rqs[0].cfs.avg.load_avg > 0);
    }

    // v3.10 find_busiest_group(): a group is busiest only above its capacity
    // (update_sd_pick_busiest(): sum_nr_running > group_capacity), so an idle
    // CPU does not pull a CPU's only task however heavy it is.
    #[test]
    fn v3_10_group_at_capacity_is_not_busiest() {
        let mut k = Kernel::new(&flat(2), profile("v3.10").unwrap());
        let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(0)]), nice: -10, ..Default::default() }, None, CpuId(0), 0);
        k.wake_up_new_task(p, CpuId(0), 0, &mut crate::core::Effects::default());
        k.tasks[p.idx()].cpus_allowed = None;
        k.schedule(CpuId(0), SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
        let mut now = 0;
        for _ in 0..20 {
            now += k.tun.tick_ns;
            k.scheduler_tick(CpuId(0), now, &mut crate::core::Effects::default());
        }
        let sd = k.sd.per_cpu[1][0] as usize;
        let mut env = LbEnv {
            dst: CpuId(1),
            lvl: 0,
            idle: IdleType::Idle,
            imbalance: 0,
            migration_type: MigrationType::Load,
            all_pinned: true,
            active: false,
            fbq_type: FbqType::All,
        };
        let mut out = BalanceResult::default();
        assert!(k.find_busiest_group(sd, &mut env, &mut out).is_none());
        // A second task puts CPU 0 above its capacity of 1: now it is busiest.
        let q = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(0)]), ..Default::default() }, None, CpuId(0), now);
        k.wake_up_new_task(q, CpuId(0), now, &mut crate::core::Effects::default());
        let mut env = LbEnv {
            dst: CpuId(1),
            lvl: 0,
            idle: IdleType::Idle,
            imbalance: 0,
            migration_type: MigrationType::Load,
            all_pinned: true,
            active: false,
            fbq_type: FbqType::All,
        };
        assert!(k.find_busiest_group(sd, &mut env, &mut out).is_some());
        assert!(env.imbalance > 0);
    }

    // v3.10 SD_*_INIT tunables (include/linux/topology.h): SIBLING 1/2 ms,
    // busy_factor 64, imbalance_pct 110, smt_gain 1178 (cpu_power 589 per
    // thread); MC 1/4 ms, busy_factor 64, imbalance_pct 125, busy_idx 2.
    #[test]
    fn v3_10_domain_tunables() {
        let cpus = (0..8u32).map(|c| CpuInfo { core: c / 2, cluster: 0, llc: 0, node: 0, package: 0 }).collect();
        let topo = CpuTopology::new(cpus, vec![vec![10]]).unwrap();
        let k = Kernel::new(&topo, profile("v3.10").unwrap());
        let smt = &k.sd.domains[k.sd.per_cpu[0][0] as usize];
        let mc = &k.sd.domains[k.sd.per_cpu[0][1] as usize];
        assert_eq!((smt.min_interval, smt.max_interval, smt.busy_factor, smt.imbalance_pct, smt.smt_gain), (1, 2, 64, 110, 1178));
        assert_eq!((mc.min_interval, mc.max_interval, mc.busy_factor, mc.imbalance_pct, mc.load_idx), (1, 4, 64, 125, [2, 0, 0]));
        assert_eq!(k.cpu_power_v3(CpuId(0)), 589);
        // F-651: while the SMT level itself is balanced (the domain out of
        // the arena, its stand-in in place) its threads still weigh 589.
        let mut k = k;
        let smt_id = k.sd.per_cpu[0][0] as usize;
        let stand_in = k.v3_stand_in(smt_id);
        let held = std::mem::replace(&mut k.sd.domains[smt_id], stand_in);
        assert_eq!((k.cpu_power_v3(CpuId(0)), k.cpu_power_v3(CpuId(1))), (589, 589));
        k.sd.domains[smt_id] = held;
        // sd_init() (v3.16+): span-sized intervals.
        let k6 = Kernel::new(&topo, profile("v6.6").unwrap());
        let mc6 = &k6.sd.domains[k6.sd.per_cpu[0][1] as usize];
        assert_eq!((mc6.min_interval, mc6.max_interval), (8, 16));
    }

    // idle_balance() of v3.10-v3.12 has no per-domain cost cutoff
    // (max_newidle_lb_cost is 9bd721c55c8a / f48627e686a6, v3.13): with a
    // recorded cost above avg_idle the newly idle CPU still pulls.
    #[test]
    fn v3_10_newidle_has_no_per_domain_cost_cutoff() {
        let (mut k, now) = overloaded_cpu0("v3.10", 3);
        k.rqs[1].avg_idle = 10 * k.tun.migration_cost_ns;
        k.sd_lb[1][0].max_newidle_lb_cost = 100 * k.tun.migration_cost_ns;
        let r = k.sched_balance_newidle(CpuId(1), now + 10_000_000);
        assert_eq!(r.pulled, 1);
    }

    /// `n` tasks forked on cpu0 of a flat 2-CPU machine, then 50 ticks of 4 ms
    /// (long enough that nothing is cache hot and PELT has seen the load).
    fn overloaded_cpu0(kernel: &str, n: usize) -> (Kernel, u64) {
        let mut k = Kernel::new(&flat(2), profile(kernel).unwrap());
        for _ in 0..n {
            let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(0)]), ..Default::default() }, None, CpuId(0), 0);
            k.wake_up_new_task(p, CpuId(0), 0, &mut crate::core::Effects::default());
            k.tasks[p.idx()].cpus_allowed = None;
        }
        k.schedule(CpuId(0), SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
        let mut now = 0;
        for _ in 0..50 {
            now += 4_000_000;
            k.scheduler_tick(CpuId(0), now, &mut crate::core::Effects::default());
            if k.rqs[0].need_resched {
                k.schedule(CpuId(0), SwitchReason::Preempt, now, &mut crate::core::Effects::default());
            }
        }
        (k, now)
    }

    // An entry point hands its effects to the caller's Effects, appended to
    // what is there: the runqueue balancing locked to detach tasks and, only
    // when recording, each migration (task, from, to); nothing stays behind.
    #[test]
    fn nohz_idle_balance_hands_over_locks_and_migrations() {
        for record in [false, true] {
            let (mut k, now) = overloaded_cpu0("v6.6", 4);
            k.record_migrations(record);
            let mut fx = crate::core::Effects { locked: vec![CpuId(7)], migrations: Vec::new(), tg_lines: Vec::new() };
            let r = k.nohz_idle_balance(CpuId(1), now + 10_000_000, &mut fx);
            assert!(r.pulled >= 1, "record {record}: nothing pulled");
            assert_eq!(fx.locked[0], CpuId(7), "appended after what the caller had");
            assert!(fx.locked.len() >= 2 && fx.locked[1..].iter().all(|&c| c == CpuId(0)), "{:?}", fx.locked);
            if record {
                assert_eq!(fx.migrations.len(), r.pulled as usize);
                assert!(fx.migrations.iter().all(|&(p, from, to)| from == CpuId(0) && to == CpuId(1) && k.task_cpu(p) == CpuId(1)));
            } else {
                assert!(fx.migrations.is_empty());
            }
            assert!(k.lb_locked.is_empty() && k.migration_log.as_ref().is_none_or(|l| l.is_empty()));
        }
    }

    // The ILB's walk takes the rq lock of every other idle CPU it visits:
    // v3.10 twice (the clock and idle-load update, update_blocked_averages()),
    // v4.17+ once for the blocked-load update and once more only where the
    // CPU is due for balancing, and only for CPUs whose tick stopped. Busy
    // CPUs and the ILB itself are not locked by the walk.
    #[test]
    fn nohz_walk_locks_each_other_idle_rq() {
        for (kernel, not_due, due) in [("v3.10", 2, 2), ("v6.6", 1, 2)] {
            let mut k = Kernel::new(&flat(8), profile(kernel).unwrap());
            // CPU 3 runs a task; the others are idle.
            let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(3)]), ..Default::default() }, None, CpuId(3), 0);
            k.wake_up_new_task(p, CpuId(3), 0, &mut crate::core::Effects::default());
            k.schedule(CpuId(3), SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
            let now = 50_000_000;
            for c in 0..8 {
                k.rqs[c].next_balance = if c == 5 { now + 1_000_000 } else { now };
            }
            // CPU 6 went idle half a tick ago: from v4.17 its tick still runs
            // (not in the nohz mask), before it every idle entry stopped it.
            k.rqs[6].idle_stamp = now - k.tun.tick_ns / 2;
            let mut fx = crate::core::Effects::default();
            k.nohz_idle_balance(CpuId(1), now, &mut fx);
            let count = |c: u16| fx.locked.iter().filter(|&&x| x == CpuId(c)).count();
            assert_eq!(count(1), 0, "{kernel}: the ILB's own rq");
            assert_eq!(count(3), 0, "{kernel}: a busy CPU with one task is neither walked nor a busiest rq");
            assert_eq!(count(5), not_due, "{kernel}: an idle CPU not due for balancing");
            for c in [0, 2, 4, 7] {
                assert_eq!(count(c), due, "{kernel}: idle CPU {c}");
            }
            assert_eq!(count(6), if kernel == "v3.10" { 2 } else { 0 }, "{kernel}: a CPU idle for half a tick");
        }
    }

    // The one-pass walk of a domain of one-CPU groups (a flat LLC) gathers
    // what the group-by-group walk gathers: same local and busiest group,
    // sums and count, for every balancing CPU, with idle, busy, overloaded
    // and tied CPUs (HasSpare ties on the task count, equal loads).
    #[test]
    fn singleton_walk_matches_group_walk() {
        for kernel in ["v5.13", "v6.6", "v6.12"] {
            let n = 24u16;
            let mut k = Kernel::new(&flat(n as u32), profile(kernel).unwrap());
            for c in 0..n {
                // 0, 1, 2 or 3 tasks; CPUs 4k+1 have one nice-0 task each (ties).
                let tasks = [0, 1, 3, 2][c as usize % 4];
                for i in 0..tasks {
                    let nice = if c % 8 == 3 { (i as i8 * 5) - 5 } else { 0 };
                    let params = TaskParams { nice, cpus_allowed: Some(vec![CpuId(c)]), ..Default::default() };
                    let p = k.sched_fork(&params, None, CpuId(c), 0);
                    k.wake_up_new_task(p, CpuId(c), 0, &mut crate::core::Effects::default());
                }
                if tasks > 0 {
                    k.schedule(CpuId(c), SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
                }
            }
            let mut now = 0;
            for _ in 0..20 {
                now += 4_000_000;
                for c in 0..n {
                    let c = CpuId(c);
                    if k.rqs[c.idx()].curr.is_some() {
                        k.scheduler_tick(c, now, &mut crate::core::Effects::default());
                        if k.rqs[c.idx()].need_resched {
                            k.schedule(c, SwitchReason::Preempt, now, &mut crate::core::Effects::default());
                        }
                    }
                }
            }
            let rd = k.lb_read();
            let mut compared = 0;
            for dst in 0..n {
                let dst = CpuId(dst);
                let sd = &k.sd.domains[k.sd.per_cpu[dst.idx()][0] as usize];
                assert!(sd.singleton_groups(), "{kernel}: a flat LLC's groups are single CPUs");
                let pct = sd.imbalance_pct as u64;
                let local = sd.group_of(dst);
                let one = k.lb_singleton_walk(rd, sd, pct, local, dst);
                let groups = k.lb_group_walk(rd, sd, pct, local, dst);
                assert_eq!(one, groups, "{kernel}: dst {}", dst.0);
                assert!(one.busiest.is_some() && one.overloaded);
                compared += 1;
            }
            assert_eq!(compared, n);
        }
    }

    /// Three tasks queued on cpu0 of a flat 2-CPU machine, run in order, the last running.
    fn three_on_cpu0(kernel: &str) -> (Kernel, Vec<TaskId>, u64) {
        let mut k = Kernel::new(&flat(2), profile(kernel).unwrap());
        let mut ts = Vec::new();
        for _ in 0..3 {
            let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(0)]), ..Default::default() }, None, CpuId(0), 0);
            k.wake_up_new_task(p, CpuId(0), 0, &mut crate::core::Effects::default());
            k.tasks[p.idx()].cpus_allowed = None;
            ts.push(p);
        }
        let mut now = 0;
        for _ in 0..3 {
            now += 1_000_000;
            k.rqs[0].need_resched = true;
            k.schedule(CpuId(0), SwitchReason::Preempt, now, &mut crate::core::Effects::default());
        }
        (k, ts, now)
    }

    // Issue 14 item 9 — task_hot(): v5.10+ (ec73240b1627) never hot at an
    // SD_SHARE_CPUCAPACITY level; v3.10 still is.
    #[test]
    fn task_hot_not_at_smt_level_from_v5_10() {
        let cpus = (0..2u32).map(|_| CpuInfo { core: 0, cluster: 0, llc: 0, node: 0, package: 0 }).collect();
        let topo = CpuTopology::new(cpus, vec![vec![10]]).unwrap();
        for (kernel, hot) in [("v3.10", true), ("v5.11", false), ("v6.12", false)] {
            let mut k = Kernel::new(&topo, profile(kernel).unwrap());
            let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(0)]), ..Default::default() }, None, CpuId(0), 0);
            k.wake_up_new_task(p, CpuId(0), 0, &mut crate::core::Effects::default());
            k.tasks[p.idx()].se.exec_start = 1_000_000;
            let lvl0 = k.sd.domains[k.sd.per_cpu[1][0] as usize].flags;
            assert_ne!(lvl0 & SD_SHARE_CPUCAPACITY, 0, "level 0 is SMT");
            assert_eq!(k.task_hot(p, 0, CpuId(1), 1_100_000), hot, "{kernel}");
        }
    }

    // Issue 14 item 11 — active_load_balance_cpu_stop(): detach_one_task()
    // takes the least recently run movable task from the tail of cfs_tasks
    // (not the task the stopper preempted), ignoring hotness (v5.13+
    // LBF_ACTIVE_LB), and resets dst's nr_balance_failed only when it moved one.
    #[test]
    fn stopper_moves_tail_task_and_resets_on_success() {
        let (mut k, _ts, now) = three_on_cpu0("v6.6");
        let running = k.rqs[0].curr.unwrap();
        let tail = *k.rqs[0]
            .cfs
            .queue
            .iter()
            .map(|e| e.task_id().unwrap())
            .collect::<Vec<_>>()
            .iter()
            .min_by_key(|t| k.tasks[t.idx()].mru)
            .unwrap();
        k.sd_lb[1][0].nr_balance_failed = 5;
        k.rqs[0].active_balance = Some(CpuId(1));
        let r = k.schedule(CpuId(0), SwitchReason::Preempt, now + 1000, &mut crate::core::Effects::default());
        assert_eq!(r.kick, Some(CpuId(1)));
        assert_eq!(k.tasks[tail.idx()].cpu, CpuId(1), "the least recently run task moved");
        assert_eq!(k.tasks[running.idx()].cpu, CpuId(0), "the preempted task stays");
        assert_eq!(k.sd_lb[1][0].nr_balance_failed, 0);
        assert_eq!((k.sd_stats[1][0].alb_count, k.sd_stats[1][0].alb_pushed), (1, 1));
        // Nothing movable (all pinned to cpu0): no reset, alb_failed counted.
        let (mut k, ts, now) = three_on_cpu0("v6.6");
        for t in ts {
            k.tasks[t.idx()].cpus_allowed = Some(Box::new(crate::cpumask::CpuMask::from_cpus(2, [CpuId(0)])));
        }
        k.sd_lb[1][0].nr_balance_failed = 5;
        k.rqs[0].active_balance = Some(CpuId(1));
        let r = k.schedule(CpuId(0), SwitchReason::Preempt, now + 1000, &mut crate::core::Effects::default());
        assert_eq!(r.kick, None);
        assert_eq!((k.sd_lb[1][0].nr_balance_failed, k.sd_stats[1][0].alb_failed), (5, 1));
    }

    // Issue 14 item 11 — load_balance(): the kick does not need a single task
    // on the busiest CPU; v5.13+ leaves nr_balance_failed at the kick, earlier
    // kernels force it to cache_nice_tries + 1; balance_interval goes back to
    // min_interval after an imbalance (v5.13+ also after a kick).
    // should_we_balance() failing is out_balanced: failures cleared, interval doubled.
    #[test]
    fn active_balance_kick_and_interval_per_version() {
        for (kernel, failed_after) in [("v5.12", 2u32), ("v5.13", 4)] {
            let (mut k, ts, now) = three_on_cpu0(kernel);
            // Pin the queued tasks: nothing detachable, so the pass fails.
            for &t in &ts {
                if k.rqs[0].curr != Some(t) {
                    k.tasks[t.idx()].cpus_allowed = Some(Box::new(crate::cpumask::CpuMask::from_cpus(2, [CpuId(0)])));
                }
            }
            let tries = k.sd.domains[k.sd.per_cpu[1][0] as usize].cache_nice_tries;
            k.sd_lb[1][0].nr_balance_failed = tries + 2;
            k.sd_lb[1][0].balance_interval = 8;
            let mut out = BalanceResult::default();
            k.sched_balance_rq(CpuId(1), 0, IdleType::Idle, now, &mut out);
            assert_eq!(out.kicks, vec![CpuId(0)], "{kernel}: kicked with 3 tasks on the source");
            assert_eq!(k.sd_lb[1][0].nr_balance_failed, failed_after, "{kernel}");
            let min = k.sd.domains[k.sd.per_cpu[1][0] as usize].min_interval as u64;
            let want = if kernel == "v5.13" { min } else { 8 };
            assert_eq!(k.sd_lb[1][0].balance_interval, want, "{kernel}: interval after the kick");
        }
        // should_we_balance() false (cpu1 busy, cpu0 idle first in the group? use newly idle with a task queued)
        let (mut k, _ts, now) = three_on_cpu0("v6.6");
        k.sd_lb[0][0].nr_balance_failed = 3;
        k.sd_lb[0][0].balance_interval = 2;
        let mut out = BalanceResult::default();
        // cpu0 has queued tasks: a newly idle pass on it is refused by should_we_balance().
        let (_, cont) = k.sched_balance_rq(CpuId(0), 0, IdleType::NewlyIdle, now, &mut out);
        assert!(!cont);
        assert_eq!(k.sd_lb[0][0].nr_balance_failed, 0, "out_balanced clears the count, newly idle too");
        assert_eq!(k.sd_lb[0][0].balance_interval, 2, "v5.8+: newly idle leaves the interval");
    }

    // Issue 14 item 7 — v6.12.0 can_migrate_task() has no sched_delayed test:
    // a delayed sleeper moves for migrate_task too; 61b82dfb6b7e (v6.14,
    // `--patch delayed-accounting`) moves it for migrate_load only.
    #[test]
    fn v6_12_delayed_task_movable_for_any_migration_type() {
        for (patch, movable) in [(false, true), (true, false)] {
            let mut prof = profile("v6.12").unwrap();
            if patch {
                prof.apply_patches("delayed-accounting").unwrap();
            }
            let mut k = Kernel::new(&flat(2), prof);
            let mut ts = Vec::new();
            for _ in 0..2 {
                let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(0)]), ..Default::default() }, None, CpuId(0), 0);
                k.wake_up_new_task(p, CpuId(0), 0, &mut crate::core::Effects::default());
                k.tasks[p.idx()].cpus_allowed = None;
                ts.push(p);
            }
            k.schedule(CpuId(0), SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
            let queued = ts.iter().copied().find(|&t| k.rqs[0].curr != Some(t)).unwrap();
            k.mark_delayed(queued);
            let mut env = LbEnv {
                dst: CpuId(1),
                lvl: 0,
                idle: IdleType::Idle,
                imbalance: 1,
                migration_type: MigrationType::Task,
                all_pinned: true,
                active: false,
                fbq_type: FbqType::All,
            };
            assert_eq!(k.can_migrate_task(queued, CpuId(0), &mut env, 10_000_000), movable, "patch {patch}");
            env.migration_type = MigrationType::Load;
            assert!(k.can_migrate_task(queued, CpuId(0), &mut env, 10_000_000));
        }
    }

    // Issue 14 item 15 — _nohz_idle_balance() (v5.10+) visits idle CPUs from
    // ilb + 1 wrapping, the ILB last; v3.x balanced the ILB first.
    #[test]
    fn nohz_idle_balance_order() {
        for (kernel, first_puller) in [("v6.6", CpuId(3)), ("v3.10", CpuId(2))] {
            let mut k = Kernel::new(&flat(4), profile(kernel).unwrap());
            // Two tasks on cpu0, one on cpu1; cpus 2 and 3 idle; ILB = cpu2.
            for c in [0u16, 0, 1] {
                let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(c)]), ..Default::default() }, None, CpuId(c), 0);
                k.wake_up_new_task(p, CpuId(c), 0, &mut crate::core::Effects::default());
                k.tasks[p.idx()].cpus_allowed = None;
                k.schedule(CpuId(c), SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
            }
            let r = k.nohz_idle_balance(CpuId(2), 100_000_000, &mut crate::core::Effects::default());
            assert!(r.pulled >= 1, "{kernel}");
            assert_eq!(k.rqs[first_puller.idx()].nr_running(), 1, "{kernel}: {first_puller:?} pulled first");
        }
    }
}
