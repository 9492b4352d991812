//! Wakeup and fork CPU selection: `select_task_rq_fair()` and the slow path
//! `find_idlest_cpu()` (kernel/sched/fair.c, v2.6.38..v6.12).

use crate::core::{Kernel, WakeFlags};
use crate::cpumask::CpuMask;
use crate::explain::{AffineRule, Budget, Path, ScanEnd, SlowWhy, NO_LEVEL};
use crate::features::SchedFeat::*;
use crate::profile::{FindIdlestVariant, Patch, RecentUsedVariant, SelectShape, SisVariant, WakeAffineVariant, WakeWideVariant};
use crate::sched::TaskId;
use crate::topology::{SchedDomain, SD_CLUSTER, SD_NUMA, SD_SHARE_LLC, SD_WAKE_AFFINE};
use schedlab_topology::CpuId;

/// Reused buffers of select_idle_cpu() (the kernel uses a per-CPU cpumask too:
/// `select_rq_mask`).
#[derive(Clone, Debug, Default)]
pub struct SisScratch {
    cpus: CpuMask,
    skip: CpuMask,
    /// The target's cluster span (v6.8+ cluster-first scan).
    cls: CpuMask,
    /// The walk's segments (cluster part, rest) and the hinted CPUs of one.
    seg: [CpuMask; 2],
    cand: CpuMask,
}

impl SisScratch {
    pub fn new(nr_cpus: usize) -> Self {
        let m = || CpuMask::new(nr_cpus);
        SisScratch { cpus: m(), skip: m(), cls: m(), seg: [m(), m()], cand: m() }
    }
}

/// CPUs of `seg` that `for_each_cpu_wrap(start)` visits at or after `from`
/// and before `to` ([`CpuMask::count_wrap_between`]); by arithmetic when the
/// segment is one range of CPUs (`dense`, [`CpuMask::contiguous`]: an LLC
/// without affinity limits), so a step of the walk costs the same on any LLC.
#[inline]
fn walk_count(seg: &CpuMask, dense: Option<(usize, usize)>, start: CpuId, from: CpuId, to: CpuId) -> u64 {
    let Some((lo, hi)) = dense else {
        return seg.count_wrap_between(start, from, to) as u64;
    };
    let range = |a: usize, b: usize| b.min(hi).saturating_sub(a.max(lo)) as u64;
    let (s, f, t) = (start.idx(), from.idx(), to.idx());
    if (f >= s) == (t >= s) {
        range(f, t)
    } else {
        range(f, usize::MAX) + range(0, t)
    }
}

/// Group classification used by the v5.5+ slow path (`enum group_type`, v5.5+), low to high.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum GroupType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

/// What `find_idlest_group()`'s walk of a domain yields: the local group and
/// the idlest other group, each with its statistics.
type IdlestWalk<'a> = (Option<(&'a CpuMask, GroupStats)>, Option<(&'a CpuMask, GroupStats)>);

#[derive(Clone, Copy, Debug, PartialEq)]
struct GroupStats {
    group_type: GroupType,
    avg_load: u64,
    idle_cpus: u32,
    group_util: u64,
    nr_running: u32,
    group_weight: u32,
}

impl Kernel {
    /// Pick the CPU a waking or forked fair task will be enqueued on.
    ///
    /// Kernel: `select_task_rq_fair()`, kernel/sched/fair.c, v2.6.38..v6.12.
    ///
    /// Why: wakeup placement trades cache locality against queueing delay. The
    /// kernel tries the cheap answers first: stay near the waker when the pair
    /// looks 1:1 (`wake_affine()` unless `wake_wide()`), then look for an idle
    /// core or SMT sibling in that LLC (`select_idle_sibling()`). Only fork/exec
    /// take the O(domain) slow path (`find_idlest_cpu()`).
    ///
    /// Model: the profile chooses the shape (`SelectShape`: v3.x affine_sd
    /// walk, or the v4+ fast path) and the form of each step.
    #[inline(always)]
    pub fn select_task_rq_fair(
        &mut self,
        p: TaskId,
        prev_cpu: CpuId,
        this_cpu: CpuId,
        waker: Option<TaskId>,
        wf: WakeFlags,
        now: u64,
    ) -> CpuId {
        // FIDELITY(F-001): no EAS, select_idle_capacity, wake_cap, kthread stacking or WF_CURRENT_CPU.
        // FIDELITY(F-649): mainline only; the measuring guest's vendor wakeup packing (vcpu_pack_room()) is not modelled.
        let sd_flag = wf.sd_flag();
        let ttwu = wf.contains(WakeFlags::TTWU);
        let sync = wf.contains(WakeFlags::SYNC) && waker.is_some();
        // v4.7+ (c58d25f371f5): record_wakee() here, so wakeups of tasks
        // pinned to one CPU (select_task_rq() skips the class hook) do not
        // count. The v3.12 form records in task_waking_fair() (core.rs).
        if ttwu && self.profile.wake_wide != WakeWideVariant::V3_12 {
            if let Some(w) = waker {
                self.record_wakee(w, p, now);
            }
        }
        let wide = ttwu && self.profile.wake_wide == WakeWideVariant::V4_5 && self.wake_wide(p, waker, this_cpu);
        let mut want_affine = ttwu && !wide && self.tasks[p.idx()].allowed(this_cpu);
        if want_affine && self.numa.is_some() && self.numa_cling_wakeup(p, prev_cpu, this_cpu) {
            want_affine = false; // the cling patch (fair/numa.rs)
        }
        self.xw(|r| {
            r.want_affine = want_affine;
            r.wake_wide = wide;
            r.waker_flips = waker.map_or(0, |w| self.tasks[w.idx()].wakee_flips);
            r.wakee_flips = self.tasks[p.idx()].wakee_flips;
        });
        let mut new_cpu = prev_cpu;
        let mut sd: Option<u32> = None;
        let mut affine: Option<usize> = None;
        for (lvl, &id) in self.sd.per_cpu[this_cpu.idx()].iter().enumerate() {
            let tmp = &self.sd.domains[id as usize];
            if want_affine && tmp.flags & SD_WAKE_AFFINE != 0 && tmp.span.test(prev_cpu) {
                affine = Some(lvl);
                sd = None;
                break;
            }
            if tmp.flags & sd_flag != 0 {
                sd = Some(id);
            } else if !want_affine && self.profile.select_shape == SelectShape::FastPath {
                break;
            }
        }
        self.xw(|r| r.affine_level = affine.map_or(NO_LEVEL, |l| l as u8));
        if affine.is_some() && this_cpu == prev_cpu {
            self.xw(|r| r.affine = AffineRule::SameCpu);
        }
        match self.profile.select_shape {
            SelectShape::AffineSd => {
                if let Some(lvl) = affine {
                    // v3.10: if (cpu != prev_cpu && wake_affine(affine_sd, p, sync)) prev_cpu = cpu;
                    let mut target = prev_cpu;
                    if this_cpu != prev_cpu && self.wake_affine_old(this_cpu, lvl, p, prev_cpu, sync, waker) {
                        target = this_cpu;
                    }
                    return self.select_idle_sibling(p, prev_cpu, target, this_cpu);
                }
                if let Some(sd) = sd {
                    return self.find_idlest_cpu(sd, p, this_cpu, prev_cpu, sd_flag);
                }
                self.xw(|r| r.path = Path::PrevNoSearch);
                prev_cpu
            }
            SelectShape::FastPath => {
                if let Some(lvl) = affine {
                    if this_cpu != prev_cpu {
                        new_cpu = self.wake_affine(this_cpu, lvl, p, prev_cpu, sync, waker);
                    }
                }
                if let Some(sd) = sd {
                    return self.find_idlest_cpu(sd, p, this_cpu, prev_cpu, sd_flag);
                }
                if ttwu {
                    new_cpu = self.select_idle_sibling(p, prev_cpu, new_cpu, this_cpu);
                    if self.profile.recent_used == RecentUsedVariant::V5_2 && want_affine {
                        if let Some(w) = waker {
                            self.tasks[w.idx()].recent_used_cpu = this_cpu;
                        }
                    }
                } else {
                    self.xw(|r| r.path = Path::PrevNoSearch);
                }
                new_cpu
            }
        }
    }

    /// `record_wakee()` (v3.12+, 62470419e993): the waker counts how often it switches wakee.
    /// v3.11 form resets the count every second, v4.5+ halves it. Called from
    /// task_waking_fair() for every full wakeup of a fair task up to v4.6, from
    /// select_task_rq_fair() since v4.7 (c58d25f371f5 "sched/fair: Move record_wakee()").
    #[inline(always)]
    pub(crate) fn record_wakee(&mut self, waker: TaskId, p: TaskId, now: u64) {
        if self.profile.wake_wide == WakeWideVariant::None {
            return; // v3.10 and older keep no wakee history
        }
        let jiffies = self.jiffies(now);
        let hz = self.profile.tunables.hz as u64;
        let w = &mut self.tasks[waker.idx()];
        if jiffies > w.wakee_flip_decay_ts + hz {
            match self.profile.wake_wide {
                WakeWideVariant::V3_12 => w.wakee_flips = 0,
                _ => w.wakee_flips >>= 1,
            }
            w.wakee_flip_decay_ts = jiffies;
        }
        if w.last_wakee != Some(p) {
            w.last_wakee = Some(p);
            w.wakee_flips += 1;
        }
    }

    /// `wake_wide()`, v3.12 (62470419e993 + 7d9ffa896148) and v4.5+ (63b0e9edceec) forms; factor = sd_llc_size of the waker's CPU.
    pub fn wake_wide(&self, p: TaskId, waker: Option<TaskId>, this_cpu: CpuId) -> bool {
        let Some(w) = waker else { return false };
        let factor = self.sd.sd_llc_size[this_cpu.idx()];
        let (waker_flips, wakee_flips) = (self.tasks[w.idx()].wakee_flips, self.tasks[p.idx()].wakee_flips);
        match self.profile.wake_wide {
            WakeWideVariant::None => false,
            WakeWideVariant::V3_12 => wakee_flips > factor && waker_flips > factor * wakee_flips,
            WakeWideVariant::V4_5 => {
                let (mut master, mut slave) = (waker_flips, wakee_flips);
                if master < slave {
                    std::mem::swap(&mut master, &mut slave);
                }
                !(slave < factor || master < slave * factor)
            }
        }
    }

    /// The load `wake_affine()` compares: `source_load()`/`target_load()` at
    /// wake_idx 0 = `weighted_cpuload()` (v2.6.x-v4.x; instantaneous weight up
    /// to v3.10, runnable_load_avg v3.11+), `cpu_load()` = load_avg (v5.7+).
    // FIDELITY(F-013): effective_load() of task groups is not modelled (w for every task).
    // FIDELITY(F-013): effective_load() through the task-group hierarchy is not
    // applied (effective_load(w) = w, also for tasks in groups); wake_idx = 0.
    fn wake_cpu_load(&self, c: CpuId) -> i64 {
        self.weighted_cpuload(c) as i64
    }

    /// Old `wake_affine()` (v2.6.3x-v4.13): pull to this_cpu when the
    /// loads are balanced within half the imbalance_pct, or when this CPU is
    /// lightly loaded. The v3.11 form first gives up on wide wakeups.
    fn wake_affine_old(&mut self, this_cpu: CpuId, lvl: usize, p: TaskId, prev_cpu: CpuId, sync: bool, waker: Option<TaskId>) -> bool {
        if self.profile.wake_wide == WakeWideVariant::V3_12 && self.wake_wide(p, waker, this_cpu) {
            self.xw(|r| {
                r.wake_wide = true;
                r.affine = AffineRule::OldWide;
            });
            return false;
        }
        let sd_id = self.sd.per_cpu[this_cpu.idx()][lvl] as usize;
        let pct = self.sd.domains[sd_id].imbalance_pct as i64;
        let load = self.wake_cpu_load(prev_cpu);
        let mut this_load = self.wake_cpu_load(this_cpu);
        if sync {
            // effective_load(tg, this_cpu, -weight, -weight) of the waker, taken as -weight (F-013).
            if let Some(w) = waker {
                this_load -= self.tasks[w.idx()].se.weight as i64;
            }
        }
        let weight = self.tasks[p.idx()].se.weight as i64;
        let balanced = if this_load > 0 {
            // Equal capacities: power_of() terms cancel.
            let this_eff = 100 * (this_load + weight);
            let prev_eff = (100 + (pct - 100) / 2) * load;
            this_eff <= prev_eff
        } else {
            true
        };
        self.xw(|r| {
            r.this_load = this_load + weight;
            r.prev_load = load;
            r.affine = if sync && balanced { AffineRule::OldSyncBalanced } else { AffineRule::OldKeep };
        });
        if sync && balanced {
            self.sd_stats[this_cpu.idx()][lvl].ttwu_move_affine += 1;
            return true;
        }
        let tl_per_task = self.cpu_avg_load_per_task(this_cpu) as i64;
        if balanced || (this_load <= load && this_load + load <= tl_per_task) {
            self.xw(|r| r.affine = if balanced { AffineRule::OldBalanced } else { AffineRule::OldLightThis });
            self.sd_stats[this_cpu.idx()][lvl].ttwu_move_affine += 1;
            return true;
        }
        false
    }

    /// `wake_affine()` v4.14+: WA_IDLE then WA_WEIGHT; returns this_cpu or prev_cpu.
    fn wake_affine(&mut self, this_cpu: CpuId, lvl: usize, p: TaskId, prev_cpu: CpuId, sync: bool, waker: Option<TaskId>) -> CpuId {
        let mut target = None;
        self.xw(|r| r.affine = AffineRule::NoClause);
        if self.feats.has(WA_IDLE) {
            target = self.wake_affine_idle(this_cpu, prev_cpu, sync);
        }
        if self.feats.has(WA_WEIGHT) && target.is_none() {
            target = self.wake_affine_weight(this_cpu, lvl, p, prev_cpu, sync, waker);
        }
        if target != Some(this_cpu) {
            return prev_cpu;
        }
        self.sd_stats[this_cpu.idx()][lvl].ttwu_move_affine += 1;
        this_cpu
    }

    /// `wake_affine_idle()`
    fn wake_affine_idle(&self, this_cpu: CpuId, prev_cpu: CpuId, sync: bool) -> Option<CpuId> {
        if self.available_idle_cpu(this_cpu) && self.sd.cpus_share_cache(this_cpu, prev_cpu) {
            let prev_idle = self.available_idle_cpu(prev_cpu);
            self.xw(|r| r.affine = if prev_idle { AffineRule::IdleThisPrevIdle } else { AffineRule::IdleThis });
            return Some(if self.available_idle_cpu(prev_cpu) { prev_cpu } else { this_cpu });
        }
        let rq = &self.rqs[this_cpu.idx()];
        let mut nr = rq.nr_running();
        if self.delayed_acct {
            // aa3ee4f0b754 (v6.16): delayed sleepers do not count; v6.12.0 counts them.
            nr -= rq.cfs.h_nr_delayed;
        }
        if sync && nr == 1 {
            self.xw(|r| r.affine = AffineRule::SyncOneTask);
            return Some(this_cpu);
        }
        if self.profile.has_patch(Patch::ShortrunRfc) {
            // RFC v1: `(sync && nr_running == 1) || is_short_task(cpu_curr(this_cpu))`
            // → this_cpu; no sync or nr_running condition on the second clause.
            if self.curr_is_short(this_cpu) {
                self.xw(|r| r.affine = AffineRule::ShortRfc);
                return Some(this_cpu);
            }
        }
        if self.profile.wake_affine == WakeAffineVariant::V5_11 && self.available_idle_cpu(prev_cpu) {
            self.xw(|r| r.affine = AffineRule::PrevIdle);
            return Some(prev_cpu);
        }
        None
    }

    /// `wake_affine_weight()`
    fn wake_affine_weight(
        &self,
        this_cpu: CpuId,
        lvl: usize,
        p: TaskId,
        prev_cpu: CpuId,
        sync: bool,
        waker: Option<TaskId>,
    ) -> Option<CpuId> {
        let sd = &self.sd.domains[self.sd.per_cpu[this_cpu.idx()][lvl] as usize];
        let mut this_eff = self.wake_cpu_load(this_cpu);
        if sync {
            if let Some(w) = waker {
                let current_load = self.task_h_load(w) as i64;
                if current_load > this_eff {
                    self.xw(|r| {
                        r.affine = AffineRule::WeightSyncHeavy;
                        r.this_load = this_eff;
                        r.prev_load = current_load;
                    });
                    return Some(this_cpu);
                }
                this_eff -= current_load;
            }
        }
        let task_load = self.task_h_load(p) as i64;
        this_eff += task_load;
        if self.feats.has(WA_BIAS) {
            this_eff *= 100;
        }
        this_eff *= 1024; // capacity_of(prev_cpu)
        let mut prev_eff = self.wake_cpu_load(prev_cpu) - task_load;
        if self.feats.has(WA_BIAS) {
            prev_eff *= 100 + (sd.imbalance_pct as i64 - 100) / 2;
        }
        prev_eff *= 1024; // capacity_of(this_cpu)
        if sync {
            prev_eff += 1;
        }
        self.xw(|r| {
            r.affine = if this_eff < prev_eff { AffineRule::WeightPull } else { AffineRule::WeightKeep };
            r.this_load = this_eff;
            r.prev_load = prev_eff;
        });
        (this_eff < prev_eff).then_some(this_cpu)
    }

    /// `is_short_task()` of Chen Yu's 2022 RFC v1 (on v6.0-rc4): average run per voluntary
    /// switch at most sysctl_sched_min_granularity.
    pub fn is_short_task(&self, t: TaskId) -> bool {
        let task = &self.tasks[t.idx()];
        task.se.sum_exec_runtime <= task.nvcsw * self.tun.min_granularity_ns
    }

    /// `is_short_task(cpu_curr(cpu))` of the RFC: an idle CPU's current task is
    /// the idle task, whose fair `sum_exec_runtime` and `nvcsw` are both 0, so
    /// it counts as short (0 <= 0). That matters for a CPU that is not
    /// `available_idle_cpu()` only because a wakeup is pending on it, and for
    /// an idle waker CPU outside prev's LLC.
    fn curr_is_short(&self, cpu: CpuId) -> bool {
        self.rqs[cpu.idx()].curr.is_none_or(|c| self.is_short_task(c))
    }

    /// `available_idle_cpu()` (v4.18+; no vCPU preemption).
    #[inline]
    pub fn available_idle_cpu(&self, c: CpuId) -> bool {
        self.idle_cpu(c)
    }

    /// `sched_idle_cpu()`: only SCHED_IDLE tasks are runnable there.
    #[inline]
    pub fn sched_idle_cpu(&self, c: CpuId) -> bool {
        let rq = &self.rqs[c.idx()];
        rq.nr_running() > 0 && rq.nr_running() == rq.cfs.h_nr_idle
    }

    #[inline]
    fn idle_candidate(&self, c: CpuId) -> bool {
        self.available_idle_cpu(c) || (self.at_least(5, 4) && self.sched_idle_cpu(c))
    }

    /// `select_idle_sibling()` in the profile's form (v2.6.38, v3.10, v5.2-v6.12). Counts the
    /// CPUs it examines in `self.last_scan`.
    pub(crate) fn select_idle_sibling(&mut self, p: TaskId, prev: CpuId, target: CpuId, this_cpu: CpuId) -> CpuId {
        self.xw(|r| {
            r.sis = true;
            r.target = target.0;
        });
        let cpu = match self.profile.sis {
            SisVariant::V2_6_38 => self.sis_v2_6_38(p, prev, target, this_cpu),
            SisVariant::V3_10 => self.sis_v3_10(p, prev, target, this_cpu),
            _ => self.sis_modern(p, prev, target, this_cpu),
        };
        // The domain scan's runqueues: CPUs examined since the scan began, plus
        // the one at which the budget ran out (sis_scanned counts it).
        let now_scanned = self.last_scan as u32;
        self.xw(|r| {
            if r.domain_search {
                r.domain_scanned = now_scanned.wrapping_sub(r.domain_scanned) + (r.scan_end == ScanEnd::BudgetOut) as u32;
            }
        });
        cpu
    }

    /// Decision record: the LLC scan of select_idle_sibling() begins here.
    #[inline(always)]
    fn xw_domain_search(&self) {
        let base = self.last_scan as u32;
        self.xw(|r| {
            r.domain_search = true;
            r.domain_scanned = base;
        });
    }

    /// v2.6.38: this/prev if idle, then the first idle allowed CPU walking up the
    /// SD_SHARE_PKG_RESOURCES domains of target, stopping at the domain that
    /// spans both this_cpu and prev.
    fn sis_v2_6_38(&mut self, p: TaskId, prev: CpuId, mut target: CpuId, this_cpu: CpuId) -> CpuId {
        self.last_scan += 1;
        if target == this_cpu && self.idle_cpu(this_cpu) {
            self.xw(|r| r.path = Path::TargetIdle);
            return this_cpu;
        }
        if target == prev && self.idle_cpu(prev) {
            self.xw(|r| r.path = Path::PrevIdle);
            return prev;
        }
        let orig = target;
        self.xw_domain_search();
        // The domains of the original target (the walk moves `target`).
        for lvl in 0..self.sd.per_cpu[orig.idx()].len() {
            let id = self.sd.per_cpu[orig.idx()][lvl];
            let sd = &self.sd.domains[id as usize];
            if sd.flags & SD_SHARE_LLC == 0 {
                break;
            }
            for i in sd.span.iter() {
                self.last_scan += 1;
                if self.tasks[p.idx()].allowed(i) && self.idle_cpu(i) {
                    target = i;
                    break;
                }
            }
            let sd = &self.sd.domains[id as usize];
            if sd.span.test(this_cpu) && sd.span.test(prev) {
                break;
            }
        }
        if target != orig {
            self.xw(|r| {
                r.path = Path::DomainWalk;
                r.scan_end = ScanEnd::Found;
            });
        } else {
            self.xw(|r| r.scan_end = ScanEnd::Exhausted);
        }
        target
    }

    /// v3.9-v4.8 `select_idle_sibling()` (e0a79f529d5b, "bouncing cow
    /// syndrome", v3.9-rc1, until the v4.9 rewrite around select_idle_core()):
    /// target if idle; else prev if it shares target's LLC and is idle; then walk
    /// down from sd_llc(target): the first group (in ring order from target's)
    /// whose CPUs are all idle and which does not contain target gives its first
    /// allowed CPU. Before the prev check (v3.2-v3.8 form) a pair that wakes
    /// each other affinely walked the package hand in hand, one CPU per wakeup.
    fn sis_v3_10(&mut self, p: TaskId, prev: CpuId, target: CpuId, this_cpu: CpuId) -> CpuId {
        self.last_scan += 1;
        if self.idle_cpu(target) {
            self.xw(|r| r.path = if target == prev && target != this_cpu { Path::PrevIdle } else { Path::TargetIdle });
            return target;
        }
        if prev != target && self.sd.cpus_share_cache(prev, target) {
            self.last_scan += 1;
            if self.idle_cpu(prev) {
                self.xw(|r| r.path = Path::PrevIdle);
                return prev;
            }
        }
        let Some(llc) = self.sd.sd_llc_level[target.idx()] else {
            return target;
        };
        self.xw_domain_search();
        for lvl in (0..=llc as usize).rev() {
            let sd = &self.sd.domains[self.sd.per_cpu[target.idx()][lvl] as usize];
            let n = sd.groups.len();
            let start = sd.group_of(target).unwrap_or(0);
            for k in 0..n {
                let g = &sd.groups[(start + k) % n];
                let task = &self.tasks[p.idx()];
                if !g.iter().any(|c| task.allowed(c)) {
                    continue;
                }
                let mut all_idle = true;
                for i in g.iter() {
                    self.last_scan += 1;
                    if i == target || !self.idle_cpu(i) {
                        all_idle = false;
                        break;
                    }
                }
                if all_idle {
                    self.xw(|r| {
                        r.path = Path::IdleGroup;
                        r.scan_end = ScanEnd::Found;
                    });
                    let task = &self.tasks[p.idx()];
                    return g.iter().find(|&c| task.allowed(c)).unwrap_or(target);
                }
            }
        }
        self.xw(|r| r.scan_end = ScanEnd::Exhausted);
        target
    }

    /// v5.2..v6.12 `select_idle_sibling()` (target, prev, recent_used_cpu, SMT, select_idle_cpu).
    fn sis_modern(&mut self, p: TaskId, prev: CpuId, target: CpuId, _this_cpu: CpuId) -> CpuId {
        self.last_scan += 1;
        if self.idle_candidate(target) {
            self.xw(|r| r.path = Path::TargetIdle);
            return target;
        }
        if prev != target && self.sd.cpus_share_cache(prev, target) {
            self.last_scan += 1;
            if self.idle_candidate(prev) {
                self.xw(|r| r.path = Path::PrevIdle);
                return prev;
            }
        }
        // recent_used_cpu (v4.16+, 32e839dda3ba)
        // FIDELITY(F-641): v6.12 on cluster machines would remember an idle
        // prev/recent outside the target's cluster and use it only after the scan.
        let recent = self.tasks[p.idx()].recent_used_cpu;
        if self.profile.recent_used == RecentUsedVariant::V5_13 {
            self.tasks[p.idx()].recent_used_cpu = prev;
        }
        if self.profile.recent_used != RecentUsedVariant::None
            && recent != prev
            && recent != target
            && self.sd.cpus_share_cache(recent, target)
            && self.tasks[p.idx()].allowed(recent)
        {
            self.last_scan += 1;
            self.xw(|r| r.recent_tried = true);
            if self.idle_candidate(recent) {
                if self.profile.recent_used == RecentUsedVariant::V5_2 {
                    self.tasks[p.idx()].recent_used_cpu = prev;
                }
                self.xw(|r| r.path = Path::RecentUsed);
                return recent;
            }
        }
        let Some(llc_lvl) = self.sd.sd_llc_level[target.idx()] else {
            return target;
        };
        self.xw_domain_search();
        let llc = self.sd.per_cpu[target.idx()][llc_lvl as usize] as usize;
        let smt = self.smt_active;
        let llc_id = self.sd.sd_llc_id[target.idx()] as usize;
        match self.profile.sis {
            SisVariant::V5_2 => {
                // select_idle_core(): whole LLC, only when has_idle_cores.
                if smt && self.llc_shared[llc_id].has_idle_cores {
                    self.xw(|r| r.core_search = true);
                    if let Some(c) = self.select_idle_core_v5_2(p, llc, target) {
                        self.xw(|r| {
                            r.core_hit = true;
                            r.path = Path::IdleCore;
                            r.scan_end = ScanEnd::Found;
                        });
                        return c;
                    }
                }
                if let Some(c) = self.select_idle_cpu_v5_2(p, llc, target) {
                    self.xw(|r| r.path = Path::IdleCpu);
                    return c;
                }
                if smt {
                    // select_idle_smt(p, target)
                    for s in self.sd.smt_mask[target.idx()].clone().iter() {
                        self.last_scan += 1;
                        if self.tasks[p.idx()].allowed(s) && self.available_idle_cpu(s) {
                            self.xw(|r| r.path = Path::SmtTarget);
                            return s;
                        }
                    }
                }
                target
            }
            _ => {
                let has_idle_core = smt && self.llc_shared[llc_id].has_idle_cores;
                if smt && self.profile.sis == SisVariant::V5_13 && !has_idle_core && self.sd.cpus_share_cache(prev, target) {
                    // select_idle_smt(p, sd, prev) (c722f35b513f)
                    let span = &self.sd.domains[llc].span;
                    for s in self.sd.smt_mask[prev.idx()].iter() {
                        if s == prev || !span.test(s) || !self.tasks[p.idx()].allowed(s) {
                            continue;
                        }
                        self.last_scan += 1;
                        if self.idle_candidate(s) {
                            self.xw(|r| r.path = Path::SmtPrev);
                            return s;
                        }
                    }
                }
                if let Some(c) = self.select_idle_cpu(p, llc, has_idle_core, target) {
                    return c;
                }
                target
            }
        }
    }

    /// v5.2 `select_idle_core()`: first fully idle core of the LLC from target.
    fn select_idle_core_v5_2(&mut self, p: TaskId, llc: usize, target: CpuId) -> Option<CpuId> {
        let span = self.sd.domains[llc].span.clone();
        let mut done = CpuMask::new(self.nr_cpus());
        for core in span.iter_wrap(target) {
            if done.test(core) || !self.tasks[p.idx()].allowed(core) {
                continue;
            }
            let mut idle = true;
            for c in self.sd.smt_mask[core.idx()].iter() {
                done.set(c);
                self.last_scan += 1;
                if !self.available_idle_cpu(c) {
                    idle = false;
                }
            }
            if idle {
                return Some(core);
            }
        }
        let id = self.sd.sd_llc_id[target.idx()] as usize;
        self.llc_shared[id].has_idle_cores = false;
        None
    }

    /// SIS_PROP scan budget (`select_idle_cpu()` v4.13-v5.19, 1ad3aaf3fcd2): proportional to the waker CPU's
    /// average idle time over the average cost of a scan.
    fn sis_prop_budget(&mut self, llc: usize, this_cpu: CpuId, now: u64) -> u64 {
        let span_weight = self.sd.domains[llc].span_weight as u64;
        // v5.14+ (94aafc3ee31d): wake_avg_idle; v4.13-v5.13: this_rq()->avg_idle / 512.
        let avg_idle = if self.sis_prop_uses_wake_avg_idle() {
            // wake_avg_idle, aged by halving per jiffy while busy.
            let jiffies = self.jiffies(now);
            let rq = &mut self.rqs[this_cpu.idx()];
            while rq.wake_stamp < jiffies && rq.wake_avg_idle > 0 {
                rq.wake_stamp += 1;
                rq.wake_avg_idle >>= 1;
            }
            rq.wake_avg_idle
        } else {
            self.rqs[this_cpu.idx()].avg_idle / 512
        };
        let avg_cost = self.avg_scan_cost[this_cpu.idx()] + 1;
        let span_avg = span_weight * avg_idle;
        if span_avg > 4 * avg_cost {
            span_avg / avg_cost
        } else {
            4
        }
    }

    /// v5.8-v5.11 `select_idle_cpu()`: first idle CPU from target within the
    /// SIS_PROP budget, over `sched_domain_span(sd) & p->cpus_ptr` (a CPU the
    /// task may not run on costs no budget). When the budget runs out
    /// (`if (!--nr) return -1;`) the function returns before `update_avg()`:
    /// avg_scan_cost learns only from scans that found a CPU or covered the LLC.
    fn select_idle_cpu_v5_2(&mut self, p: TaskId, llc: usize, target: CpuId) -> Option<CpuId> {
        let this_cpu = self.cur_this_cpu;
        let now = self.cur_now;
        let mut nr = u64::MAX;
        if self.feats.has(SIS_PROP) {
            nr = self.sis_prop_budget(llc, this_cpu, now);
        }
        if self.feats.has(SIS_AVG_CPU) && self.rqs[this_cpu.idx()].avg_idle / 512 < self.avg_scan_cost[this_cpu.idx()] + 1 {
            self.xw(|r| r.scan_end = ScanEnd::AvgCpuSkip);
            return None;
        }
        self.xw(|r| {
            if nr != u64::MAX {
                r.budget = Budget::SisProp;
                r.nr = nr.min(u32::MAX as u64 - 1) as u32;
            }
        });
        let mut scanned = 0;
        let mut found = None;
        let task = &self.tasks[p.idx()];
        for c in self.sd.domains[llc].span.iter_wrap(target) {
            if !task.allowed(c) {
                continue;
            }
            nr -= 1;
            if nr == 0 {
                // Budget exhausted: return -1 before update_avg().
                self.last_scan += scanned;
                self.xw(|r| r.scan_end = ScanEnd::BudgetOut);
                return None;
            }
            scanned += 1;
            if self.idle_candidate(c) {
                found = Some(c);
                break;
            }
        }
        self.last_scan += scanned;
        self.update_scan_cost(this_cpu, scanned, false);
        self.xw(|r| r.scan_end = if found.is_some() { ScanEnd::Found } else { ScanEnd::Exhausted });
        found
    }

    /// The SIS_PROP `avg_idle` is `rq->wake_avg_idle` (set with `wake_stamp` in
    /// ttwu_do_activate(), aged per jiffy, charged with each scan's time):
    /// 94aafc3ee31d.
    pub(crate) fn sis_prop_uses_wake_avg_idle(&self) -> bool {
        self.profile.version >= (5, 14)
    }

    /// The end of a SIS_PROP scan that did not run out of budget:
    /// `update_avg(&this_sd->avg_scan_cost, time)` and, with wake_avg_idle
    /// (v5.14+), `this_rq->wake_avg_idle -= min(this_rq->wake_avg_idle, time)`:
    /// the time spent scanning is idle time the waker CPU no longer has.
    /// Kernel: the tail of select_idle_cpu(), v5.8-v6.5.
    // FIDELITY(F-012): scan time = CPUs examined x the machine's per-CPU cost, not cpu_clock().
    fn update_scan_cost(&mut self, this_cpu: CpuId, scanned: u64, charge_wake_avg_idle: bool) {
        if self.feats.has(SIS_PROP) {
            let time = scanned * self.scan_cost_per_cpu_ns;
            if charge_wake_avg_idle && self.sis_prop_uses_wake_avg_idle() {
                let rq = &mut self.rqs[this_cpu.idx()];
                rq.wake_avg_idle -= rq.wake_avg_idle.min(time);
            }
            let a = &mut self.avg_scan_cost[this_cpu.idx()];
            *a = (*a as i64 + (time as i64 - *a as i64) / 8) as u64;
        }
    }

    /// v5.12+ `select_idle_cpu()`: one loop, core mode when has_idle_core, budget
    /// from SIS_PROP (<= v5.19) or SIS_UTIL (v6.0+); v6.8+ scans the cluster first.
    fn select_idle_cpu(&mut self, p: TaskId, llc: usize, has_idle_core: bool, target: CpuId) -> Option<CpuId> {
        // Scratch masks live in the kernel: no allocation per wakeup.
        let mut sc = self.sis_scratch.take().expect("select_idle_cpu() is not re-entered");
        let r = self.select_idle_cpu_scan(p, llc, has_idle_core, target, &mut sc);
        self.sis_scratch = Some(sc);
        r
    }

    fn select_idle_cpu_scan(&mut self, p: TaskId, llc: usize, has_idle_core: bool, target: CpuId, sc: &mut SisScratch) -> Option<CpuId> {
        let this_cpu = self.cur_this_cpu;
        let now = self.cur_now;
        let mut nr: u64 = u64::MAX;
        if self.feats.has(SIS_PROP) && !has_idle_core {
            nr = self.sis_prop_budget(llc, this_cpu, now);
            self.xw(|r| {
                r.budget = Budget::SisProp;
                r.nr = nr.min(u32::MAX as u64 - 1) as u32;
            });
        }
        if has_idle_core {
            self.xw(|r| r.core_search = true);
        }
        if self.feats.has(SIS_UTIL) {
            let id = self.sd.sd_llc_id[target.idx()] as usize;
            nr = self.llc_shared[id].nr_idle_scan as u64 + 1;
            if !has_idle_core {
                self.xw(|r| {
                    r.budget = Budget::SisUtil;
                    r.nr = (nr - 1) as u32;
                });
            }
            if nr == 1 {
                self.xw(|r| r.scan_end = ScanEnd::UtilZero);
                return None; // LLC judged overloaded: no scan at all
            }
            if self.profile.has_patch(Patch::ShortrunRfc) {
                // RFC v1: with the LLC over ~half busy, a short wakee goes to a
                // target that is running a short task instead of scanning.
                let span_weight = self.sd.domains[llc].span_weight as u64;
                if !has_idle_core && 5 * nr < 3 * span_weight && self.is_short_task(p) && self.curr_is_short(target) {
                    self.xw(|r| r.path = Path::ShortRfc);
                    return Some(target);
                }
            }
        }
        let mut idle_cpu: Option<CpuId> = None;
        let start = if self.profile.sis_scan_from_next { CpuId(((target.0 as usize + 1) % self.nr_cpus()) as u16) } else { target };
        // v6.8+: the target's cluster first, when the LLC's children are clusters;
        // then the rest of the LLC. Both walks are for_each_cpu_wrap(): lazy, so a
        // scan that stops at its budget has not looked at the CPUs after it.
        let cls_on = self.profile.sis_cluster_first && self.cluster_span_into(target, llc, &mut sc.cls);
        let affine_all = self.tasks[p.idx()].cpus_allowed.is_none();
        if affine_all && !cls_on && !has_idle_core {
            // The whole LLC, one walk: nothing to build (select_idle_cpu_span).
            let found = self.select_idle_cpu_span(llc, start, nr, this_cpu);
            if found.is_some() {
                self.xw(|r| {
                    r.path = Path::IdleCpu;
                    r.scan_end = ScanEnd::Found;
                });
            }
            return found;
        }
        // `cpumask_and(cpus, sched_domain_span(sd), p->cpus_ptr)`
        sc.cpus.copy_from(&self.sd.domains[llc].span);
        if let Some(m) = &self.tasks[p.idx()].cpus_allowed {
            sc.cpus.and_with(m);
        }
        if !has_idle_core {
            // `if (!--nr) return -1;` (v5.12-v5.19; `--nr <= 0` v6.0+): no
            // avg_scan_cost update when the budget runs out.
            let found = self.select_idle_cpu_budget(sc, cls_on, start, nr, this_cpu);
            if found.is_some() {
                self.xw(|r| {
                    r.path = Path::IdleCpu;
                    r.scan_end = ScanEnd::Found;
                });
            }
            return found;
        }
        // select_idle_core() per core (has_idle_core: no budget).
        sc.skip.clear_all();
        let (cpus, cls, skip) = (&sc.cpus, &sc.cls, &mut sc.skip);
        let first = if cls_on { Some(cls.iter_wrap(start)) } else { None };
        let order = first.into_iter().flatten().filter(|c| cpus.test(*c)).chain(cpus.iter_wrap(start).filter(|c| !cls_on || !cls.test(*c)));
        for c in order {
            if skip.test(c) {
                continue;
            }
            {
                // select_idle_core(): the whole core must be idle; note an idle thread meanwhile.
                let mut idle = true;
                for s in self.sd.smt_mask[c.idx()].iter() {
                    self.last_scan += 1;
                    if !self.available_idle_cpu(s) {
                        idle = false;
                        if idle_cpu.is_none() {
                            if self.sched_idle_cpu(s) && cpus.test(s) {
                                idle_cpu = Some(s);
                                break;
                            }
                            continue;
                        }
                        break;
                    }
                    if idle_cpu.is_none() && cpus.test(s) {
                        idle_cpu = Some(s);
                    }
                }
                if idle {
                    // An idle core returns at once: no SIS_PROP accounting
                    // (the budget and its cost are for !has_idle_core scans).
                    self.xw(|r| {
                        r.core_hit = true;
                        r.path = Path::IdleCore;
                        r.scan_end = ScanEnd::Found;
                    });
                    return Some(c);
                }
                skip.or_with(&self.sd.smt_mask[c.idx()]);
            }
        }
        // v5.12 as released cleared the waker's LLC (set_idle_cores(this, false));
        // fixed to target by 02dbb7246c5b (v5.13-rc2).
        let c = if self.profile.version == (5, 12) { this_cpu } else { target };
        let id = self.sd.sd_llc_id[c.idx()] as usize;
        self.llc_shared[id].has_idle_cores = false;
        self.xw(|r| {
            if idle_cpu.is_some() {
                r.path = Path::IdleCpu;
                r.scan_end = ScanEnd::Found;
            } else {
                r.scan_end = ScanEnd::Exhausted;
            }
        });
        idle_cpu
    }

    /// The `!has_idle_core` walk of [`Self::select_idle_cpu_scan`]: the CPUs of
    /// `sc.cpus` in `for_each_cpu_wrap(start)` order (the cluster's first when
    /// `cls_on`), each costing one unit of the budget `nr`; the first idle
    /// candidate wins, `if (!--nr) return -1` stops the walk, and a walk that
    /// did not run out charges its cost (update_scan_cost()).
    ///
    /// Kernel: the `else` branch of the loop in `select_idle_cpu()`, v5.12-v6.18.
    ///
    /// Model: same CPUs examined, same result, same `last_scan` count as
    /// testing every CPU in order, but only the CPUs of `idle_hint` are tested;
    /// the busy CPUs in between are counted from one candidate to the next,
    /// by arithmetic on a contiguous segment and word operations otherwise.
    fn select_idle_cpu_budget(&mut self, sc: &mut SisScratch, cls_on: bool, start: CpuId, nr: u64, this_cpu: CpuId) -> Option<CpuId> {
        if cls_on {
            sc.seg[0].and_from(&sc.cls, &sc.cpus);
            sc.seg[1].andnot_from(&sc.cpus, &sc.cls);
        } else {
            sc.seg[0].clear_all();
            sc.seg[1].copy_from(&sc.cpus);
        }
        // CPUs the walk passed in earlier segments.
        let mut base = 0u64;
        // Without a cluster level the first segment is empty: nothing to walk or count.
        for seg in &sc.seg[if cls_on { 0 } else { 1 }..] {
            sc.cand.and_from(seg, &self.idle_hint);
            // The walk's position, counted on from the last candidate.
            let (mut at, mut in_seg) = (start, 0u64);
            let dense = seg.contiguous();
            for c in sc.cand.iter_wrap(start) {
                in_seg += walk_count(seg, dense, start, at, c);
                at = c;
                if let Some(end) = self.sis_visit(c, base + in_seg, nr, this_cpu) {
                    return end;
                }
            }
            base += seg.weight() as u64;
        }
        self.sis_walk_end(base, nr, this_cpu)
    }

    /// The end of a budgeted walk that found no idle CPU among `walked`
    /// positions: out of budget at position nr - 1 if the walk was that long
    /// (no scan cost charged, as the kernel's `return -1` from the loop),
    /// otherwise exhausted, charging the positions walked (update_scan_cost()).
    fn sis_walk_end(&mut self, walked: u64, nr: u64, this_cpu: CpuId) -> Option<CpuId> {
        if walked >= nr {
            self.last_scan += nr - 1;
            self.xw(|r| r.scan_end = ScanEnd::BudgetOut);
            return None;
        }
        self.last_scan += walked;
        self.update_scan_cost(this_cpu, walked, true);
        self.xw(|r| r.scan_end = ScanEnd::Exhausted);
        None
    }

    /// One candidate `c` of `select_idle_cpu()`'s budgeted walk at position
    /// `pos` (0-based, counted from the walk's start): `Some(end)` ends the walk
    /// (`Some(None)`: the budget ran out at position nr - 1, before `c`;
    /// `Some(Some(c))`: `c` is idle), `None` goes on, after clearing `c`'s
    /// idle hint if it cannot be idle.
    fn sis_visit(&mut self, c: CpuId, pos: u64, nr: u64, this_cpu: CpuId) -> Option<Option<CpuId>> {
        if pos + 1 >= nr {
            self.last_scan += nr - 1;
            self.xw(|r| r.scan_end = ScanEnd::BudgetOut);
            return Some(None);
        }
        if self.idle_candidate(c) {
            self.last_scan += pos + 1;
            self.update_scan_cost(this_cpu, pos + 1, true);
            return Some(Some(c));
        }
        let rq = &self.rqs[c.idx()];
        // An idle CPU with a wakeup pending that every CPU sees by now (the
        // waker's store has reached them all, and time only goes forward)
        // stays out of every walk until the wakeup is activated there, an
        // enqueue: it is busy then, or SCHED_IDLE-only (the enqueue sets the
        // hint), until a dequeue or a schedule() that leaves it idle sets
        // the hint again. On a large machine most stale candidates are these
        // (82.8 % of sleepwake-flat1024's wakeups go through a wake list).
        let pending_for_all = rq.ttwu_pending > 0 && self.cur_now >= rq.ttwu_pending_visible_at;
        // Remote enqueues that some CPU cannot see yet leave it idle to that CPU.
        let unseen_by_some = rq.enq_unseen > 0 && rq.nr_running() == rq.enq_unseen && self.cur_now < rq.enq_visible_at;
        let maybe_idle = (rq.curr.is_none() && (rq.nr_running() == 0 || unseen_by_some) && !pending_for_all)
            || (rq.nr_running() > 0 && rq.nr_running() == rq.cfs.h_nr_idle);
        if !maybe_idle {
            self.idle_hint.clear(c); // busy: set again when it may become idle
        }
        None
    }

    /// [`Self::select_idle_cpu_budget`] for a walk of the whole LLC span (no
    /// cluster first, no affinity limit), the common case: the span's words
    /// and `idle_hint`'s are combined one word at a time as the walk reaches
    /// them, in `for_each_cpu_wrap(start)` order, and the position counted by
    /// arithmetic when the span is one range of CPUs. Only the span's words
    /// with a hinted CPU are read (`idle_hint`'s summary): a word without
    /// one has no CPU the walk would test, and the position of the next
    /// candidate is counted from the last one. Nothing is built per wakeup:
    /// the cost follows the candidates the walk reaches before its budget or
    /// an idle CPU stops it, not the LLC size.
    ///
    /// Kernel: the `else` branch of the loop in `select_idle_cpu()`, v5.12-v6.18.
    fn select_idle_cpu_span(&mut self, llc: usize, start: CpuId, nr: u64, this_cpu: CpuId) -> Option<CpuId> {
        let dom = &self.sd.domains[llc];
        let weight = dom.span_weight as u64;
        let Some((lo, hi)) = dom.span.bounds() else {
            return self.sis_walk_end(0, nr, this_cpu);
        };
        let dense = ((hi - lo) as u64 == weight).then_some((lo, hi));
        let s = start.idx();
        let (w0, hi_mask) = (s / 64, !0u64 << (s % 64));
        // The words other than start's that hold span CPUs and hinted CPUs,
        // rotated so that ascending bits are wrap order: the words after
        // start's, then the words before it (start's own word is bit 63).
        let span_words = (!0u64 << (lo / 64)) & (!0u64 >> (63 - (hi - 1) / 64));
        let mut rest = (self.idle_hint.nonempty_words() & span_words).rotate_right(w0 as u32 + 1) & !(1 << 63);
        let (mut at, mut pos) = (start, 0u64);
        // Start's word from start, the other words in wrap order, start's word below start.
        if let Some(end) = self.sis_span_word(llc, dense, start, w0, hi_mask, &mut at, &mut pos, nr, this_cpu) {
            return end;
        }
        while rest != 0 {
            let wi = (w0 + 1 + rest.trailing_zeros() as usize) % 64;
            rest &= rest - 1;
            if let Some(end) = self.sis_span_word(llc, dense, start, wi, !0, &mut at, &mut pos, nr, this_cpu) {
                return end;
            }
        }
        if let Some(end) = self.sis_span_word(llc, dense, start, w0, !hi_mask, &mut at, &mut pos, nr, this_cpu) {
            return end;
        }
        self.sis_walk_end(weight, nr, this_cpu)
    }

    /// The hinted CPUs of the LLC span's word `wi` (bits `m`) in
    /// [`Self::select_idle_cpu_span`]'s walk, each at its position counted
    /// on from the last candidate `at` (position `pos`): `Some(end)` ends
    /// the walk ([`Self::sis_visit`]).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn sis_span_word(
        &mut self,
        llc: usize,
        dense: Option<(usize, usize)>,
        start: CpuId,
        wi: usize,
        m: u64,
        at: &mut CpuId,
        pos: &mut u64,
        nr: u64,
        this_cpu: CpuId,
    ) -> Option<Option<CpuId>> {
        let mut bits = self.sd.domains[llc].span.word(wi) & self.idle_hint.word(wi) & m;
        while bits != 0 {
            let c = CpuId((wi * 64 + bits.trailing_zeros() as usize) as u16);
            bits &= bits - 1;
            *pos += walk_count(&self.sd.domains[llc].span, dense, start, *at, c);
            *at = c;
            if let Some(end) = self.sis_visit(c, *pos, nr, this_cpu) {
                return Some(end);
            }
        }
        None
    }

    /// Copy the span of the cluster domain below the LLC holding `target` into
    /// `out`; false (and `out` untouched) if the machine has no cluster level.
    fn cluster_span_into(&self, target: CpuId, llc: usize, out: &mut CpuMask) -> bool {
        let lvls = &self.sd.per_cpu[target.idx()];
        let Some(pos) = lvls.iter().position(|&x| x as usize == llc) else { return false };
        let Some(&child) = pos.checked_sub(1).and_then(|i| lvls.get(i)) else { return false };
        let child = &self.sd.domains[child as usize];
        if child.flags & SD_CLUSTER == 0 {
            return false;
        }
        out.copy_from(&child.span);
        true
    }

    /// `update_idle_cpu_scan()` (v6.0+, 70fb5ccf2ebb): SIS_UTIL's budget for the LLC
    /// of `cpu` from the summed utilisation of its CPUs.
    pub fn update_idle_cpu_scan(&mut self, cpu: CpuId) {
        let Some(llc) = self.sd.sd_llc(cpu) else {
            return;
        };
        let llc_weight = llc.span_weight as u64;
        let pct = llc.imbalance_pct as u64;
        let sum_util: u64 = llc.span.iter().map(|c| self.cpu_util_cfs(c)).sum();
        let x = sum_util / llc_weight;
        let tmp = (x * x * pct * pct / (10000 * 1024)).min(1024);
        let y = 1024 - tmp;
        let id = self.sd.sd_llc_id[cpu.idx()] as usize;
        self.llc_shared[id].nr_idle_scan = (y * llc_weight / 1024) as u32;
    }

    /// `cpu_util_cfs()`: util_avg or util_est, capped at capacity.
    pub fn cpu_util_cfs(&self, c: CpuId) -> u64 {
        let cfs = &self.rqs[c.idx()].cfs;
        let mut u = cfs.avg.util_avg;
        if self.feats.has(UTIL_EST) {
            u = u.max(cfs.util_est_enqueued);
        }
        u.min(1024)
    }

    /// `find_idlest_cpu()` / `sched_balance_find_dst_cpu()` (v2.6.x..v6.12): descend
    /// from `sd` through the idlest groups to the idlest CPU.
    fn find_idlest_cpu(&mut self, sd_id: u32, p: TaskId, mut cpu: CpuId, prev_cpu: CpuId, sd_flag: u32) -> CpuId {
        // The placement ranks of the wide single-CPU-group domains, current
        // for the whole descent (it writes no runqueue).
        let indexed = self.profile.find_idlest == FindIdlestVariant::GroupType
            && self.tasks[p.idx()].cpus_allowed.is_none()
            && self.idlest_index_sync();
        let task = &self.tasks[p.idx()];
        let sd0 = &self.sd.domains[sd_id as usize];
        let lvl0 = self.sd.per_cpu[cpu.idx()].iter().position(|&x| x == sd_id).map_or(NO_LEVEL, |l| l as u8);
        self.xw(|r| {
            r.path = Path::SlowPath;
            r.slow_level = lvl0;
            r.slow_why = SlowWhy::LocalKept;
        });
        if let Some(m) = &task.cpus_allowed {
            if !sd0.span.intersects(m) {
                self.xw(|r| r.slow_why = SlowWhy::NoAllowed);
                return prev_cpu;
            }
        }
        let mut new_cpu = cpu;
        // Levels of `cpu` from `sd` down, as indices into per_cpu[cpu].
        let mut level: Option<usize> = self.sd.per_cpu[cpu.idx()].iter().position(|&x| x == sd_id);
        while let Some(l) = level {
            let sd = &self.sd.domains[self.sd.per_cpu[cpu.idx()][l] as usize];
            if sd.flags & sd_flag == 0 {
                level = l.checked_sub(1);
                continue;
            }
            let Some(group) = self.find_idlest_group(self.sd.per_cpu[cpu.idx()][l], sd, p, cpu, indexed) else {
                level = l.checked_sub(1);
                continue;
            };
            new_cpu = self.find_idlest_group_cpu(group, p, cpu);
            if new_cpu == cpu {
                level = l.checked_sub(1);
                continue;
            }
            // Continue at the new CPU, below the level just balanced.
            self.xw(|r| {
                r.slow_why = SlowWhy::Descended;
                r.slow_moves += 1;
            });
            let w = sd.span_weight;
            cpu = new_cpu;
            level = None;
            for (i, &id) in self.sd.per_cpu[cpu.idx()].iter().enumerate() {
                let t = &self.sd.domains[id as usize];
                if w <= t.span_weight {
                    break;
                }
                if t.flags & sd_flag != 0 {
                    level = Some(i);
                }
            }
        }
        new_cpu
    }

    /// `cpu_load()`: the cfs_rq's PELT load_avg (v5.5+); v3.x used the
    /// instantaneous weighted load for fork (forkexec_idx = 0).
    fn fork_cpu_load(&self, c: CpuId) -> u64 {
        let cfs = &self.rqs[c.idx()].cfs;
        match self.profile.find_idlest {
            // source_load()/target_load() at forkexec_idx 0 (v3.10 SD_*_INIT).
            FindIdlestVariant::LoadBased => self.weighted_cpuload(c),
            FindIdlestVariant::GroupType => cfs.avg.load_avg,
        }
    }

    fn cpu_util(&self, c: CpuId) -> u64 {
        self.cpu_util_cfs(c)
    }

    /// [`Self::group_stats`] of the one-CPU group `c` (v5.5+ form) as a key
    /// that orders groups as update_pick_idlest() prefers them, lowest
    /// first: the group type, then the load (overloaded, fully busy; a
    /// one-CPU group's avg_load is its load) or, with spare capacity, idle
    /// before busy and then the lower utilization.
    /// (`task`: the task placed, whose own contribution to its CPU does not
    /// count; None: every task counts, the placement index's rank.)
    #[inline(always)]
    pub(crate) fn idlest_key(&self, pct: u64, util_est: bool, c: CpuId, task: Option<&crate::sched::Task>) -> u128 {
        let rq = &self.rqs[c.idx()];
        let cfs = &rq.cfs;
        let mut l = cfs.avg.load_avg;
        let mut u = if util_est { cfs.avg.util_avg.max(cfs.util_est_enqueued) } else { cfs.avg.util_avg }.min(1024);
        let mut n = cfs.h_nr_running;
        if let Some(task) = task.filter(|t| t.cpu == c && t.se.on_rq) {
            l = l.saturating_sub(task.se.avg.load_avg);
            u = u.saturating_sub(task.se.avg.util_avg);
            n = n.saturating_sub(1);
        }
        let runnable = cfs.avg.runnable_avg;
        let idle = n == 0 && rq.curr.is_none();
        let overloaded = n > 1 && (102_400 < u * pct || 1024 * pct < runnable * 100);
        let has_capacity = n < 1 || (1024 * pct >= runnable * 100 && 102_400 > u * pct);
        let (t, metric) = if overloaded {
            (GroupType::Overloaded, l)
        } else if !has_capacity {
            (GroupType::FullyBusy, l)
        } else {
            (GroupType::HasSpare, ((!idle as u64) << 32) | u)
        };
        ((t as u128) << 64) | metric as u128
    }

    fn group_stats(&self, sd: &SchedDomain, g: &[CpuId], p: TaskId) -> GroupStats {
        let mut load = 0u64;
        let mut util = 0u64;
        let mut runnable = 0u64;
        let mut nr = 0u32;
        let mut idle = 0u32;
        let task = &self.tasks[p.idx()];
        for &c in g {
            let rq = &self.rqs[c.idx()];
            let mut l = self.fork_cpu_load(c);
            let mut u = self.cpu_util(c);
            let mut n = rq.nr_running();
            // *_without(): p's own contribution does not count.
            if task.cpu == c && task.se.on_rq {
                l = l.saturating_sub(task.se.avg.load_avg);
                u = u.saturating_sub(task.se.avg.util_avg);
                n = n.saturating_sub(1);
            }
            load += l;
            util += u;
            runnable += rq.cfs.avg.runnable_avg;
            nr += n;
            if n == 0 && rq.curr.is_none() {
                idle += 1;
            }
        }
        let weight = g.len() as u32;
        let cap = 1024 * weight as u64;
        let pct = sd.imbalance_pct as u64;
        // group_is_overloaded() / group_has_capacity() (v5.5+)
        let overloaded = nr > weight && (cap * 100 < util * pct || cap * pct < runnable * 100);
        let has_capacity = nr < weight || (cap * pct >= runnable * 100 && cap * 100 > util * pct);
        let group_type = if overloaded {
            GroupType::Overloaded
        } else if !has_capacity {
            GroupType::FullyBusy
        } else {
            GroupType::HasSpare
        };
        GroupStats {
            group_type,
            avg_load: load * 1024 / cap.max(1),
            idle_cpus: idle,
            group_util: util,
            nr_running: nr,
            group_weight: weight,
        }
    }

    /// `find_idlest_group()`'s walk of the groups: the local group and the
    /// idlest other group (`update_pick_idlest()`), with their statistics.
    fn idlest_group_walk<'a>(&self, sd: &'a SchedDomain, p: TaskId, this_cpu: CpuId) -> IdlestWalk<'a> {
        let task = &self.tasks[p.idx()];
        let mut local: Option<(&CpuMask, GroupStats)> = None;
        let mut idlest: Option<(&CpuMask, GroupStats)> = None;
        for (gi, g) in sd.groups.iter().enumerate() {
            if let Some(m) = &task.cpus_allowed {
                if !g.intersects(m) {
                    continue;
                }
            }
            let st = self.group_stats(sd, sd.group_cpus(gi), p);
            if g.test(this_cpu) {
                local = Some((g, st));
                continue;
            }
            let better = match &idlest {
                None => true,
                Some((_, b)) => match self.profile.find_idlest {
                    FindIdlestVariant::LoadBased => st.avg_load < b.avg_load,
                    FindIdlestVariant::GroupType => {
                        if st.group_type != b.group_type {
                            st.group_type < b.group_type
                        } else {
                            match st.group_type {
                                GroupType::Overloaded | GroupType::FullyBusy => st.avg_load < b.avg_load,
                                GroupType::HasSpare => {
                                    st.idle_cpus > b.idle_cpus || (st.idle_cpus == b.idle_cpus && st.group_util < b.group_util)
                                }
                            }
                        }
                    }
                },
            };
            if better {
                idlest = Some((g, st));
            }
        }
        (local, idlest)
    }

    /// [`Self::idlest_group_walk`] of a domain of single-CPU groups (a flat
    /// LLC) for a task allowed everywhere, v5.5+ form, with the same result:
    /// one pass of one key per CPU in update_pick_idlest() order
    /// ([`Self::idlest_key`]), the first of equal keys kept as the walk
    /// keeps it; the local and the idlest group's statistics are read again
    /// at the end (nothing changed meanwhile).
    ///
    /// `indexed`: the placement ranks are current (`idlest_index_sync`); a
    /// domain with a tree then takes its choice from the tree instead of the
    /// pass (`idlest_index_pick`, checked against the pass in tests).
    fn idlest_singleton_walk<'a>(&self, dom: u32, sd: &'a SchedDomain, p: TaskId, this_cpu: CpuId, indexed: bool) -> IdlestWalk<'a> {
        let task = &self.tasks[p.idx()];
        let util_est = self.feats.has(UTIL_EST);
        let pick = indexed.then(|| self.idlest_index_pick(dom, task, this_cpu, util_est)).flatten();
        let (local_gi, best) = match pick {
            Some(r) => {
                if self.lb_index_check {
                    assert_eq!(r, self.idlest_singleton_pass(sd, task, this_cpu, util_est), "idlest_index_pick != idlest_singleton_pass");
                }
                r
            }
            None => self.idlest_singleton_pass(sd, task, this_cpu, util_est),
        };
        let group = |gi: usize| (&sd.groups[gi], self.group_stats(sd, sd.group_cpus(gi), p));
        (local_gi.map(group), best.map(group))
    }

    /// [`Self::idlest_singleton_walk`]'s pass: the positions of the local
    /// group and of the idlest other group.
    fn idlest_singleton_pass(
        &self,
        sd: &SchedDomain,
        task: &crate::sched::Task,
        this_cpu: CpuId,
        util_est: bool,
    ) -> (Option<usize>, Option<usize>) {
        let list = sd.group_cpus_from(0);
        let pct = sd.imbalance_pct as u64;
        let (mut best, mut best_key, mut local_gi) = (usize::MAX, u128::MAX, None);
        for (gi, &c) in list.iter().enumerate() {
            if let Some(&n) = list.get(gi + crate::fair::balance::LB_PREFETCH_AHEAD) {
                self.prefetch_rq_stats(n);
            }
            if c == this_cpu {
                local_gi = Some(gi);
                continue;
            }
            let key = self.idlest_key(pct, util_est, c, Some(task));
            if key < best_key {
                (best, best_key) = (gi, key);
            }
        }
        (local_gi, (best != usize::MAX).then_some(best))
    }

    /// `find_idlest_group()`: v5.5+ group-type form or the pre-v5.5 load form.
    /// (`dom`: `sd`'s index; `indexed`: as [`Self::idlest_singleton_walk`].)
    fn find_idlest_group<'a>(&self, dom: u32, sd: &'a SchedDomain, p: TaskId, this_cpu: CpuId, indexed: bool) -> Option<&'a CpuMask> {
        let single =
            sd.singleton_groups() && self.tasks[p.idx()].cpus_allowed.is_none() && self.profile.find_idlest == FindIdlestVariant::GroupType;
        let (local, idlest) = if single {
            let r = self.idlest_singleton_walk(dom, sd, p, this_cpu, indexed);
            if self.lb_index_check {
                assert_eq!(r, self.idlest_group_walk(sd, p, this_cpu), "idlest_singleton_walk != idlest_group_walk");
            }
            r
        } else {
            self.idlest_group_walk(sd, p, this_cpu)
        };
        let (ig, is) = idlest?;
        let Some((_, ls)) = local else {
            return Some(ig);
        };
        let pct = sd.imbalance_pct as u64;
        match self.profile.find_idlest {
            FindIdlestVariant::LoadBased => {
                // v2.6.3x-3.x: keep local unless the idlest is clearly less loaded.
                let scale = 100 + (pct - 100) / 2;
                if 100 * ls.avg_load < scale * is.avg_load {
                    None
                } else {
                    Some(ig)
                }
            }
            FindIdlestVariant::GroupType => {
                if ls.group_type < is.group_type {
                    return None;
                }
                if ls.group_type > is.group_type {
                    return Some(ig);
                }
                match ls.group_type {
                    GroupType::Overloaded | GroupType::FullyBusy => {
                        let imb = 1024 * (pct - 100) / 100;
                        if sd.flags & SD_NUMA != 0 && is.avg_load + imb >= ls.avg_load {
                            return None;
                        }
                        if is.avg_load >= ls.avg_load + imb {
                            return None;
                        }
                        if 100 * ls.avg_load <= pct * is.avg_load {
                            return None;
                        }
                        Some(ig)
                    }
                    GroupType::HasSpare => {
                        // v5.11-v5.17 allow_numa_imbalance(): keep the child on
                        // this node while it runs < 25% of the domain (23e6082a522e:
                        // local nr vs span_weight / 4; v5.16/17: local nr + 1 vs the
                        // local group's weight / 4).
                        // FIDELITY(F-621): the v5.16/17 operands are from the review, not a tree.
                        let v = self.profile.version;
                        if sd.flags & SD_NUMA != 0 && ((5, 11)..(5, 18)).contains(&v) {
                            let (running, weight) =
                                if v < (5, 16) { (ls.nr_running, sd.span_weight) } else { (ls.nr_running + 1, ls.group_weight) };
                            if running < weight / 4 {
                                return None;
                            }
                        }
                        if sd.flags & SD_NUMA != 0 && sd.imb_numa_nr > 0 {
                            // adjust_numa_imbalance() (v5.18+ form).
                            let imbalance = ls.idle_cpus.abs_diff(is.idle_cpus);
                            if ls.nr_running < sd.imb_numa_nr && imbalance <= 2 {
                                return None;
                            }
                        }
                        if ls.idle_cpus >= is.idle_cpus {
                            return None;
                        }
                        Some(ig)
                    }
                }
            }
        }
    }

    /// `find_idlest_group_cpu()`: an idle CPU (the shallowest idle state, most
    /// recently idled on ties) else the least loaded.
    ///
    /// Fidelity: F-003 — idle-state exit latencies are the machine model's; the
    /// kernel model sees every idle CPU at the same depth and keeps the most
    /// recently idled one.
    fn find_idlest_group_cpu(&self, g: &CpuMask, p: TaskId, this_cpu: CpuId) -> CpuId {
        // FIDELITY(F-003): every idle CPU is at the same depth for the kernel model.
        if g.weight() == 1 {
            return g.first().unwrap();
        }
        let task = &self.tasks[p.idx()];
        let mut best_idle: Option<CpuId> = None;
        let mut latest_idle_ts = 0u64;
        let mut least_loaded = this_cpu;
        let mut min_load = u64::MAX;
        for c in g.iter().filter(|&c| task.allowed(c)) {
            if self.idle_cpu(c) {
                let ts = self.rqs[c.idx()].idle_stamp;
                if best_idle.is_none() || ts > latest_idle_ts {
                    best_idle = Some(c);
                    latest_idle_ts = ts;
                }
            } else if best_idle.is_none() {
                let l = self.fork_cpu_load(c);
                if l < min_load {
                    min_load = l;
                    least_loaded = c;
                }
            }
        }
        best_idle.unwrap_or(least_loaded)
    }
}

#[cfg(test)]
mod tests {
    use crate::core::{Kernel, SwitchReason, TaskParams};
    use crate::profile::profile;
    use schedlab_topology::{CpuId, CpuInfo, CpuTopology};

    /// x86-12 as the preset describes it: 2 nodes x 6 cores, no SMT, SLIT 10/20.
    pub(super) fn x86_12_topology() -> CpuTopology {
        x86_12()
    }

    fn x86_12() -> CpuTopology {
        let cpus = (0..12u32).map(|c| CpuInfo { core: c, cluster: c / 6, llc: c / 6, node: c / 6, package: c / 6 }).collect();
        CpuTopology::new(cpus, vec![vec![10, 20], vec![20, 10]]).unwrap()
    }

    // find_idlest_cpu() (v3.10, v6.6, v6.12): fork balancing (SD_BALANCE_FORK on every level within
    // RECLAIM_DISTANCE) sends successive busy children to idle CPUs: 12 forks
    // from cpu0 land on 12 different CPUs, in both slow-path forms.
    #[test]
    fn fork_balancing_spreads_children() {
        for kernel in ["v3.10", "v6.6", "v6.12"] {
            let mut k = Kernel::new(&x86_12(), profile(kernel).unwrap());
            let mut seen = Vec::new();
            for i in 0..12u64 {
                let now = i * 1000;
                let p = k.sched_fork(&TaskParams::default(), None, CpuId(0), now);
                let r = k.wake_up_new_task(p, CpuId(0), now, &mut crate::core::Effects::default());
                // The child starts running there (the CPU was idle).
                assert!(r.resched, "{kernel}: child {i} on busy cpu{}", r.cpu.0);
                k.schedule(r.cpu, SwitchReason::Preempt, now, &mut crate::core::Effects::default());
                seen.push(r.cpu.0);
            }
            let mut s = seen.clone();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), 12, "{kernel}: children placed on {seen:?}");
        }
    }

    // A pinned task is never placed outside its affinity.
    #[test]
    fn affinity_is_respected() {
        let mut k = Kernel::new(&x86_12(), profile("v6.6").unwrap());
        let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(7)]), ..Default::default() }, None, CpuId(0), 0);
        assert_eq!(k.wake_up_new_task(p, CpuId(0), 0, &mut crate::core::Effects::default()).cpu, CpuId(7));
    }
}

#[cfg(test)]
mod placement_tests {
    use crate::core::{Kernel, SwitchReason, TaskParams, WakeFlags};
    use crate::profile::profile;
    use crate::sched::{TaskId, TaskState};
    use schedlab_topology::{CpuId, CpuInfo, CpuTopology};

    /// One LLC of `cores` cores x 2 threads; the sibling of cpu c is c + cores (server numbering).
    fn smt_llc(cores: u32) -> CpuTopology {
        let cpus = (0..2 * cores).map(|c| CpuInfo { core: c % cores, cluster: 0, llc: 0, node: 0, package: 0 }).collect();
        CpuTopology::new(cpus, vec![vec![10]]).unwrap()
    }

    /// One LLC of `n` CPUs without SMT.
    fn flat_llc(n: u32) -> CpuTopology {
        let cpus = (0..n).map(|c| CpuInfo { core: c, cluster: 0, llc: 0, node: 0, package: 0 }).collect();
        CpuTopology::new(cpus, vec![vec![10]]).unwrap()
    }

    /// A task running on `cpu` (created pinned there, then unpinned).
    fn occupy(k: &mut Kernel, cpu: u16) -> TaskId {
        let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(cpu)]), ..Default::default() }, None, CpuId(cpu), 0);
        let r = k.wake_up_new_task(p, CpuId(cpu), 0, &mut crate::core::Effects::default());
        assert_eq!(r.cpu, CpuId(cpu));
        k.schedule(CpuId(cpu), SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
        k.tasks[p.idx()].cpus_allowed = None;
        p
    }

    /// A sleeping task whose prev_cpu is `cpu`.
    fn sleeper_on(k: &mut Kernel, cpu: u16) -> TaskId {
        let p = k.sched_fork(&TaskParams::default(), None, CpuId(cpu), 0);
        let t = &mut k.tasks[p.idx()];
        t.cpu = CpuId(cpu);
        t.recent_used_cpu = CpuId(cpu);
        t.state = TaskState::Sleeping;
        p
    }

    // select_idle_sibling() v5.13 (c722f35b513f): with no idle core in the LLC, v5.13 returns
    // prev's idle SMT sibling; v5.12 (no select_idle_smt) scans the LLC from
    // target and takes the first idle CPU.
    #[test]
    fn v5_13_prefers_prev_sibling_v5_12_scans() {
        let mut picks = Vec::new();
        for kernel in ["v5.12", "v5.13"] {
            let mut k = Kernel::new(&smt_llc(4), profile(kernel).unwrap());
            let waker = occupy(&mut k, 0);
            for c in 1..4 {
                occupy(&mut k, c);
            }
            // every core has one busy thread: no idle core
            k.llc_shared[0].has_idle_cores = false;
            let p = sleeper_on(&mut k, 1);
            let r = k.try_to_wake_up(p, CpuId(0), Some(waker), WakeFlags::default(), 0, &mut crate::core::Effects::default());
            picks.push(r.cpu.0);
        }
        assert_eq!(picks, vec![4, 5], "v5.12 scans to cpu4 (first idle from target 0); v5.13 takes prev(1)'s sibling 5");
    }

    // select_idle_cpu()'s budgeted walk examines only the CPUs of idle_hint and
    // counts the rest: the same CPU and the same number examined as testing
    // every CPU of the LLC in for_each_cpu_wrap() order, with a stale hint
    // (CPUs busy again since they were idle), affinity masks and every budget.
    #[test]
    fn budgeted_walk_equals_the_cpu_by_cpu_walk() {
        let mut rnd = crate::test_topology::xorshift(0x2545_f491_4f6c_dd1d);
        for kernel in ["v5.13", "v6.0", "v6.12"] {
            for round in 0..6 {
                let n = 130u16;
                let mut k = Kernel::new(&flat_llc(n as u32), profile(kernel).unwrap());
                // Busy CPUs: every CPU's hint bit starts set (stale for these).
                let busy_pct = [0, 50, 90, 98, 100, 75][round];
                for c in 0..n {
                    if rnd(100) < busy_pct {
                        occupy(&mut k, c);
                    }
                }
                let llc = k.sd.per_cpu[0][k.sd.sd_llc_level[0].unwrap() as usize] as usize;
                for _ in 0..200 {
                    let target = CpuId(rnd(n as u64) as u16);
                    let p = sleeper_on(&mut k, target.0);
                    if rnd(3) == 0 {
                        let m = crate::cpumask::CpuMask::from_cpus(n as usize, (0..n).filter(|_| rnd(4) != 0).map(CpuId));
                        k.tasks[p.idx()].cpus_allowed = Some(Box::new(m));
                    }
                    k.llc_shared[0].nr_idle_scan = rnd(n as u64 + 10) as u32;
                    let budget = if k.feats.has(crate::features::SchedFeat::SIS_UTIL) {
                        k.llc_shared[0].nr_idle_scan as u64 + 1
                    } else {
                        k.sis_prop_budget(llc, k.cur_this_cpu, k.cur_now)
                    };
                    // Reference: test every allowed CPU in order.
                    let start = if k.profile.sis_scan_from_next { CpuId((target.0 + 1) % n) } else { target };
                    let order: Vec<CpuId> = k.sd.domains[llc].span.iter_wrap(start).filter(|&c| k.tasks[p.idx()].allowed(c)).collect();
                    let mut want = (None, 0u64);
                    if budget != 1 {
                        let mut left = budget;
                        for &c in &order {
                            left -= 1;
                            if left == 0 {
                                break;
                            }
                            want.1 += 1;
                            if k.idle_candidate(c) {
                                want.0 = Some(c);
                                break;
                            }
                        }
                    }
                    let before = k.last_scan;
                    let got = k.select_idle_cpu(p, llc, false, target);
                    assert_eq!((got, k.last_scan - before), want, "{kernel} round {round} target {target:?} budget {budget}");
                }
            }
        }
    }

    // select_idle_cpu_span() reads only the span's words with a hinted CPU
    // (idle_hint's summary) and counts positions from one candidate to the
    // next: the same CPU, the same last_scan count, the same scan end, scan
    // cost and idle hints as visiting every hinted CPU of the span in
    // for_each_cpu_wrap() order at its position (sis_visit()), on random
    // hints (other LLCs' words hinted too), busy CPUs, starts (inside and
    // outside the span) and budgets (out of budget in many walks), for spans
    // of one word, several, not word-aligned, and not contiguous.
    #[test]
    fn span_walk_over_hinted_words_equals_the_full_walk() {
        // (CPUs, LLCs, interleaved: the LLC of CPU c is c % LLCs, else
        // c / (CPUs / LLCs)): flat 5, 64, 300; two LLCs of 150 (the second
        // at 150..300); two interleaved LLCs of 100 (not contiguous).
        let shapes = [(5u32, 1u32, false), (64, 1, false), (300, 1, false), (300, 2, false), (200, 2, true)];
        let mut rnd = crate::test_topology::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut stopped = 0;
        for (shape, &(n, llcs, interleaved)) in shapes.iter().enumerate() {
            let llc_of = |c: u32| if interleaved { c % llcs } else { c / (n / llcs) };
            let topo = || {
                let cpus = (0..n).map(|c| CpuInfo { core: c, cluster: llc_of(c), llc: llc_of(c), node: 0, package: 0 }).collect();
                CpuTopology::new(cpus, vec![vec![10]]).unwrap()
            };
            for kernel in ["v5.13", "v6.12"] {
                // Two kernels in the same state: the walk under test and the reference.
                let mut ks = [Kernel::new(&topo(), profile(kernel).unwrap()), Kernel::new(&topo(), profile(kernel).unwrap())];
                let busy: Vec<u16> = (0..n as u16).filter(|_| rnd(3) == 0).collect();
                for k in &mut ks {
                    k.enable_explain(false);
                    for &c in &busy {
                        occupy(k, c);
                    }
                }
                for round in 0..400 {
                    let this_cpu = CpuId(rnd(n as u64) as u16);
                    let llc = ks[0].sd.per_cpu[this_cpu.idx()][ks[0].sd.sd_llc_level[this_cpu.idx()].unwrap() as usize] as usize;
                    let weight = ks[0].sd.domains[llc].span_weight as u64;
                    let start = CpuId(rnd(n as u64) as u16);
                    let nr = if rnd(8) == 0 { u64::MAX } else { 1 + rnd(weight + 3) };
                    // Hints from none to all (stale ones for busy CPUs included).
                    let pct = [0, 1, 3, 10, 50, 100][rnd(6) as usize];
                    let hint = crate::cpumask::CpuMask::from_cpus(n as usize, (0..n as u16).filter(|_| rnd(100) < pct).map(CpuId));
                    let mut out = Vec::new();
                    for (i, k) in ks.iter_mut().enumerate() {
                        k.idle_hint.copy_from(&hint);
                        k.cur_this_cpu = this_cpu;
                        k.cur_now = round * 1000;
                        k.explain.as_ref().unwrap().wake.set(Default::default());
                        let before = k.last_scan;
                        let got = if i == 0 {
                            k.select_idle_cpu_span(llc, start, nr, this_cpu)
                        } else {
                            // Every span CPU in wrap order; the hinted ones visited at their position.
                            let order: Vec<CpuId> = k.sd.domains[llc].span.iter_wrap(start).collect();
                            let mut end = None;
                            for (pos, &c) in order.iter().enumerate() {
                                if k.idle_hint.test(c) {
                                    end = k.sis_visit(c, pos as u64, nr, this_cpu);
                                    if end.is_some() {
                                        break;
                                    }
                                }
                            }
                            end.unwrap_or_else(|| k.sis_walk_end(weight, nr, this_cpu))
                        };
                        let scan_end = k.explain.as_ref().unwrap().wake.get().scan_end;
                        let hint_after: Vec<CpuId> = k.idle_hint.iter().collect();
                        let rq = &k.rqs[this_cpu.idx()];
                        out.push((got, k.last_scan - before, scan_end, hint_after, k.avg_scan_cost[this_cpu.idx()], rq.wake_avg_idle));
                    }
                    assert_eq!(out[0], out[1], "shape {shape} {kernel} round {round}: start {start:?} nr {nr} hint {pct}%");
                    stopped += (out[0].2 == crate::explain::ScanEnd::BudgetOut) as u32;
                }
            }
        }
        // The budget ran out in enough walks to exercise the stop.
        assert!(stopped > 1000, "{stopped} walks out of budget");
    }

    // v6.0 update_idle_cpu_scan() on a 16-CPU LLC: x=512 -> 10, x>=876 -> 0.
    // The spec's x=768 -> 4 is rounded; the kernel's integer steps give
    // 1024 - 768^2*117^2/(10000*1024) = 236, 236*16/1024 = 3.
    #[test]
    fn sis_util_budget_from_llc_utilisation() {
        let mut k = Kernel::new(&flat_llc(16), profile("v6.0").unwrap());
        for (util, want) in [(0u64, 16u32), (512, 10), (768, 3), (875, 0), (876, 0), (1024, 0)] {
            for rq in &mut k.rqs {
                rq.cfs.avg.util_avg = util;
            }
            k.update_idle_cpu_scan(CpuId(0));
            assert_eq!(k.llc_shared[0].nr_idle_scan, want, "util {util}");
        }
    }

    // v6.0 select_idle_cpu() (SIS_UTIL): examines exactly nr_idle_scan CPUs when none
    // is idle, and none at all when the LLC is above ~85.5% utilisation.
    #[test]
    fn sis_util_examines_exactly_nr_idle_scan() {
        for (util, want) in [(512u64, 10u64), (768, 3), (900, 0)] {
            let mut k = Kernel::new(&flat_llc(16), profile("v6.0").unwrap());
            let mut ts = Vec::new();
            for c in 0..16 {
                ts.push(occupy(&mut k, c));
            }
            for rq in &mut k.rqs {
                rq.cfs.avg.util_avg = util;
            }
            k.update_idle_cpu_scan(CpuId(0));
            let p = sleeper_on(&mut k, 3);
            k.last_scan = 0;
            let llc = k.sd.per_cpu[0][k.sd.sd_llc_level[0].unwrap() as usize] as usize;
            assert_eq!(k.select_idle_cpu(p, llc, false, CpuId(3)), None);
            assert_eq!(k.last_scan, want, "util {util}");
        }
    }

    // wake_wide() v4.5+ (63b0e9edceec): wide iff slave >= llc_size AND master >= slave * llc_size.
    #[test]
    fn wake_wide_needs_both_inequalities() {
        let mut k = Kernel::new(&flat_llc(8), profile("v6.6").unwrap());
        let w = occupy(&mut k, 0);
        let p = sleeper_on(&mut k, 1);
        let mut wide = |wf: u32, pf: u32| {
            k.tasks[w.idx()].wakee_flips = wf;
            k.tasks[p.idx()].wakee_flips = pf;
            k.wake_wide(p, Some(w), CpuId(0))
        };
        assert!(wide(64, 8), "slave 8 >= 8 and master 64 >= 64");
        assert!(!wide(63, 8), "master below slave * factor");
        assert!(!wide(640, 7), "slave below factor");
        assert!(wide(8, 64), "symmetric: the larger count is the master");
        assert!(!wide(0, 0));
    }

    // v3.11 (Michael Wang): wide iff wakee.flips > factor && waker.flips > factor * wakee.flips.
    #[test]
    fn wake_wide_v3_11_form() {
        let mut k = Kernel::new(&flat_llc(6), profile("v3.11").unwrap());
        let w = occupy(&mut k, 0);
        let p = sleeper_on(&mut k, 1);
        let mut wide = |wf: u32, pf: u32| {
            k.tasks[w.idx()].wakee_flips = wf;
            k.tasks[p.idx()].wakee_flips = pf;
            k.wake_wide(p, Some(w), CpuId(0))
        };
        assert!(wide(43, 7));
        assert!(!wide(42, 7), "not strictly greater than 6 * 7");
        assert!(!wide(1000, 6), "wakee flips must exceed the factor");
        assert!(!wide(7, 43), "not symmetric in v3.11");
    }

    // select_idle_sibling() v3.9-v4.8 (e0a79f529d5b): with target (the waker's CPU) busy,
    // an idle prev that shares target's LLC is returned before any scan; a prev in
    // another LLC is not, and the scan takes the first fully idle group from target's.
    #[test]
    fn v3_10_returns_an_idle_cache_affine_prev_before_scanning() {
        let mut k = Kernel::new(&flat_llc(6), profile("v3.10").unwrap());
        let _waker = occupy(&mut k, 0);
        let p = sleeper_on(&mut k, 4);
        assert_eq!(k.select_idle_sibling(p, CpuId(4), CpuId(0), CpuId(0)), CpuId(4), "idle prev in target's LLC");
        // v2.6.38 (before the prev check) walks from target to the first idle CPU instead.
        let mut old = Kernel::new(&flat_llc(6), profile("v2.6.38").unwrap());
        let _waker = occupy(&mut old, 0);
        let q = sleeper_on(&mut old, 4);
        assert_eq!(old.select_idle_sibling(q, CpuId(4), CpuId(0), CpuId(0)), CpuId(1));
    }

    // v3.10 (before 62470419e993) keeps no wakee history: record_wakee() does nothing and
    // wake_wide() is never true, whatever the counts.
    #[test]
    fn v3_10_never_consults_wakee_flips() {
        let mut k = Kernel::new(&flat_llc(6), profile("v3.10").unwrap());
        let w = occupy(&mut k, 0);
        let p = sleeper_on(&mut k, 1);
        k.tasks[w.idx()].wakee_flips = 1_000_000;
        k.tasks[p.idx()].wakee_flips = 1_000;
        assert!(!k.wake_wide(p, Some(w), CpuId(0)));
        let before = k.tasks[w.idx()].wakee_flips;
        k.try_to_wake_up(p, CpuId(0), Some(w), WakeFlags::SYNC, 0, &mut crate::core::Effects::default());
        assert_eq!(k.tasks[w.idx()].wakee_flips, before, "no record_wakee in v3.10");
        assert_eq!(k.tasks[w.idx()].last_wakee, None);
    }

    // record_wakee() (v3.12 reset / v4.5+ halving): counts switches of wakee; the once-per-second
    // decay resets to 0 in v3.11 and halves from v4.5.
    #[test]
    fn a_child_inherits_its_parents_wakee_history() {
        // dup_task_struct() copies wakee_flips, their decay stamp and
        // last_wakee; __sched_fork() leaves them.
        let mut k = Kernel::new(&flat_llc(4), profile("v6.6").unwrap());
        let w = occupy(&mut k, 0);
        let (a, b) = (sleeper_on(&mut k, 1), sleeper_on(&mut k, 2));
        k.record_wakee(w, a, 0);
        k.record_wakee(w, b, 1_000);
        let child = k.sched_fork(&TaskParams::default(), Some(w), CpuId(0), 2_000);
        let (c, p) = (&k.tasks[child.idx()], &k.tasks[w.idx()]);
        assert_eq!((c.wakee_flips, c.wakee_flip_decay_ts, c.last_wakee), (2, p.wakee_flip_decay_ts, Some(b)));
        // A task created without a parent (a built-in's task at time 0) has none.
        let orphan = k.sched_fork(&TaskParams::default(), None, CpuId(0), 2_000);
        assert_eq!((k.tasks[orphan.idx()].wakee_flips, k.tasks[orphan.idx()].last_wakee), (0, None));
    }

    #[test]
    fn record_wakee_decay_forms() {
        for (kernel, after) in [("v3.11", 1u32), ("v6.6", 41)] {
            let mut k = Kernel::new(&flat_llc(6), profile(kernel).unwrap());
            let w = occupy(&mut k, 0);
            let a = sleeper_on(&mut k, 1);
            let b = sleeper_on(&mut k, 2);
            k.record_wakee(w, a, 0); // first call: decay stamp set
            k.tasks[w.idx()].wakee_flips = 80;
            k.tasks[w.idx()].last_wakee = Some(a);
            // 1.1 s later a different wakee: decay, then +1
            k.record_wakee(w, b, 1_100_000_000);
            assert_eq!(k.tasks[w.idx()].wakee_flips, after, "{kernel}");
        }
    }

    // Where record_wakee() runs: in task_waking_fair() for every full wakeup up
    // to v4.6 (the v3.12 form: a wakee pinned to one CPU counts), in
    // select_task_rq_fair() from v4.7 (c58d25f371f5), which select_task_rq()
    // skips for a pinned wakee. A per-CPU kworker woken from an interrupt thus
    // gave the interrupted task flips on v3.12-v4.6 and gives none since.
    #[test]
    fn pinned_wakees_count_as_flips_until_v4_6() {
        for (kernel, counted) in [("v3.11", true), ("v6.6", false)] {
            let mut k = Kernel::new(&flat_llc(6), profile(kernel).unwrap());
            let w = occupy(&mut k, 0);
            let kw = sleeper_on(&mut k, 0);
            k.tasks[kw.idx()].cpus_allowed = Some(Box::new(crate::cpumask::CpuMask::from_cpus(6, [CpuId(0)])));
            let p = sleeper_on(&mut k, 1);
            k.try_to_wake_up(kw, CpuId(0), Some(w), WakeFlags::default(), 1000, &mut crate::core::Effects::default());
            assert_eq!(k.tasks[w.idx()].last_wakee == Some(kw), counted, "{kernel}: pinned wakee recorded");
            k.try_to_wake_up(p, CpuId(0), Some(w), WakeFlags::default(), 2000, &mut crate::core::Effects::default());
            assert_eq!(k.tasks[w.idx()].last_wakee, Some(p), "{kernel}");
            assert_eq!(k.tasks[w.idx()].wakee_flips, if counted { 2 } else { 1 }, "{kernel}");
        }
    }

    // Issue 14 item 13 — v5.14+ ttwu_do_activate() sets wake_stamp = jiffies
    // with wake_avg_idle = avg_idle / 2, so a scan in the same jiffy keeps the
    // whole estimate (no halving per jiffy since an old stamp), and
    // select_idle_cpu() charges its scan time to wake_avg_idle.
    #[test]
    fn wake_avg_idle_restarts_with_its_stamp_and_pays_for_scans() {
        // v5.14+ SIS_PROP form: v6.0 with SIS_PROP on and SIS_UTIL off.
        let mut prof = profile("v6.0").unwrap();
        prof.apply_features("SIS_PROP,NO_SIS_UTIL").unwrap();
        let mut k = Kernel::new(&flat_llc(8), prof);
        let tick = k.tun.tick_ns;
        let now = 40 * tick + 1000; // jiffy 40
                                    // cpu0 went idle at jiffy 39.5 and is woken now.
        k.rqs[0].idle_stamp = 39 * tick + tick / 2;
        k.rqs[0].wake_stamp = 3; // a stale stamp from long ago
        let p = sleeper_on(&mut k, 0);
        k.try_to_wake_up(p, CpuId(0), None, WakeFlags::default(), now, &mut crate::core::Effects::default());
        assert_eq!(k.rqs[0].idle_stamp, 0);
        assert_eq!(k.rqs[0].wake_stamp, 40, "wake_stamp set with wake_avg_idle");
        assert_eq!(k.rqs[0].wake_avg_idle, k.rqs[0].avg_idle / 2);
        let before = k.rqs[0].wake_avg_idle;
        assert!(before > 0);
        // Same jiffy: the budget sees the full estimate, far more than 4 CPUs.
        let llc = k.sd.per_cpu[0][k.sd.sd_llc_level[0].unwrap() as usize] as usize;
        k.avg_scan_cost[0] = 100;
        assert!(k.sis_prop_budget(llc, CpuId(0), now) > 4);
        assert_eq!(k.rqs[0].wake_avg_idle, before, "no aging within the jiffy");
        // A scan that finds an idle CPU charges its time (scanned x cost).
        for c in 1..4 {
            occupy(&mut k, c);
        }
        let q = sleeper_on(&mut k, 1);
        k.cur_this_cpu = CpuId(0);
        k.cur_now = now;
        let r = k.select_idle_cpu(q, llc, false, CpuId(1));
        assert_eq!(r, Some(CpuId(4)));
        let scanned = 3; // cpus 2, 3, 4 (forms that scan from target: 1, 2, 3, 4)
        let scanned = if k.profile.sis_scan_from_next { scanned } else { scanned + 1 };
        assert_eq!(k.rqs[0].wake_avg_idle, before - before.min(scanned * k.scan_cost_per_cpu_ns));
    }

    // Issue 14 item 15 — only a wakeup updates avg_idle (ttwu_do_activate());
    // wake_up_new_task() leaves idle_stamp and avg_idle alone. Before v3.13 a
    // gap above 2 * sysctl_sched_migration_cost sets avg_idle to that maximum.
    #[test]
    fn avg_idle_only_at_ttwu_and_v3_10_clamp() {
        let mut k = Kernel::new(&flat_llc(2), profile("v6.6").unwrap());
        k.rqs[1].idle_stamp = 1000;
        let avg = k.rqs[1].avg_idle;
        let c = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(1)]), ..Default::default() }, None, CpuId(0), 0);
        k.wake_up_new_task(c, CpuId(0), 5_000_000, &mut crate::core::Effects::default());
        assert_eq!((k.rqs[1].idle_stamp, k.rqs[1].avg_idle), (1000, avg), "fork leaves avg_idle alone");
        for (kernel, want) in [("v3.10", 1_000_000u64), ("v6.6", 1_000_000 + (50_000_000 - 1_000_000) / 8)] {
            let mut k = Kernel::new(&flat_llc(2), profile(kernel).unwrap());
            k.rqs[1].max_idle_balance_cost = 25_000_000; // v3.13+ clamp far above
            k.rqs[1].avg_idle = 1_000_000;
            k.rqs[1].idle_stamp = 1;
            let p = sleeper_on(&mut k, 1);
            k.tasks[p.idx()].cpus_allowed = Some(Box::new(crate::cpumask::CpuMask::from_cpus(2, [CpuId(1)])));
            let r = k.try_to_wake_up(p, CpuId(0), None, WakeFlags::default(), 50_000_001, &mut crate::core::Effects::default());
            assert_eq!(r.cpu, CpuId(1));
            if r.queued {
                // v6.0+ wake list to an idle same-LLC CPU: activated by the target.
                k.sched_ttwu_pending(CpuId(1), 50_000_001, &mut crate::core::Effects::default());
            }
            assert_eq!(k.rqs[1].avg_idle, want, "{kernel}");
        }
    }

    // Issue 14 item 14 — select_idle_cpu() returns before update_avg() when the
    // SIS_PROP budget runs out (v5.11: `if (!--nr) return -1;`; v5.12+ the same
    // on the !has_idle_core path); a scan that finds a CPU updates it.
    #[test]
    fn sis_prop_cost_not_updated_when_budget_runs_out() {
        for kernel in ["v5.11", "v5.12"] {
            let mut k = Kernel::new(&flat_llc(8), profile(kernel).unwrap());
            for c in 0..7 {
                occupy(&mut k, c);
            }
            k.rqs[0].avg_idle = 0; // budget 4: scans 3 CPUs
            k.avg_scan_cost[0] = 777;
            let p = sleeper_on(&mut k, 1);
            k.cur_this_cpu = CpuId(0);
            let llc = k.sd.per_cpu[0][k.sd.sd_llc_level[0].unwrap() as usize] as usize;
            let r = if kernel == "v5.11" { k.select_idle_cpu_v5_2(p, llc, CpuId(1)) } else { k.select_idle_cpu(p, llc, false, CpuId(1)) };
            assert_eq!(r, None, "{kernel}: cpu7 is beyond the budget");
            assert_eq!(k.avg_scan_cost[0], 777, "{kernel}: no update when the budget ran out");
            let r = if kernel == "v5.11" { k.select_idle_cpu_v5_2(p, llc, CpuId(6)) } else { k.select_idle_cpu(p, llc, false, CpuId(6)) };
            assert_eq!(r, Some(CpuId(7)), "{kernel}");
            assert_ne!(k.avg_scan_cost[0], 777, "{kernel}: a scan that found a CPU updates the average");
        }
    }

    // Issue 14 item 7 — v6.12.0 wake_affine_idle(): `sync && nr_running == 1`
    // counts a delayed-dequeue sleeper; aa3ee4f0b754 (v6.16, `--patch
    // delayed-accounting`) subtracts it.
    #[test]
    fn v6_12_sync_affine_counts_delayed_tasks() {
        for (patch, want) in [(false, None), (true, Some(CpuId(0)))] {
            let mut prof = profile("v6.12").unwrap();
            if patch {
                prof.apply_patches("delayed-accounting").unwrap();
            }
            let mut k = Kernel::new(&flat_llc(2), prof);
            occupy(&mut k, 0);
            occupy(&mut k, 1);
            let d = sleeper_on(&mut k, 0);
            k.tasks[d.idx()].state = TaskState::New;
            k.tasks[d.idx()].cpus_allowed = Some(Box::new(crate::cpumask::CpuMask::from_cpus(2, [CpuId(0)])));
            k.wake_up_new_task(d, CpuId(0), 0, &mut crate::core::Effects::default());
            k.mark_delayed(d);
            k.tasks[d.idx()].state = TaskState::Sleeping;
            assert_eq!(k.rqs[0].nr_running(), 2);
            assert_eq!(k.wake_affine_idle(CpuId(0), CpuId(1), true), want, "patch {patch}");
        }
    }

    // __update_idle_core() / select_idle_cpu(): has_idle_cores is set when a CPU goes idle with all its
    // siblings idle, and cleared by a core scan that finds no idle core.
    #[test]
    fn idle_core_tracking() {
        let mut k = Kernel::new(&smt_llc(2), profile("v6.6").unwrap());
        let t = occupy(&mut k, 0);
        k.llc_shared[0].has_idle_cores = false;
        // cpu0 blocks; its sibling 2 is idle -> set
        k.schedule(CpuId(0), SwitchReason::Block, 10, &mut crate::core::Effects::default());
        assert!(k.llc_shared[0].has_idle_cores);
        let _ = t;
        // Occupy one thread of each core; a core scan then finds nothing and clears it.
        occupy(&mut k, 0);
        occupy(&mut k, 1);
        let p = sleeper_on(&mut k, 0);
        let llc = k.sd.per_cpu[0][k.sd.sd_llc_level[0].unwrap() as usize] as usize;
        // SIS_UTIL: the machine starts warm and idle, nr_idle_scan = llc size (F-646).
        assert_eq!(k.llc_shared[0].nr_idle_scan as usize, k.sd.sd_llc_size[0] as usize);
        let r = k.select_idle_cpu(p, llc, true, CpuId(0));
        assert!(r == Some(CpuId(2)) || r == Some(CpuId(3)), "an idle thread noted during the core scan: {r:?}");
        assert!(!k.llc_shared[0].has_idle_cores, "failed core scan clears the hint");
    }

    // ttwu_queue_cond() (v3.0 317f394160e9, v6.0 f3dd3f674555): which wakeups use the wake list, per version.
    #[test]
    fn ttwu_queue_cond_per_version() {
        // 2 LLCs of 2 CPUs.
        let cpus = (0..4u32).map(|c| CpuInfo { core: c, cluster: c / 2, llc: c / 2, node: 0, package: 0 }).collect();
        let topo = CpuTopology::new(cpus, vec![vec![10]]).unwrap();
        let queued = |kernel: &str, target: u16| {
            let mut k = Kernel::new(&topo, profile(kernel).unwrap());
            let w = occupy(&mut k, 0);
            let p = sleeper_on(&mut k, target);
            k.tasks[p.idx()].cpus_allowed = Some(Box::new(crate::cpumask::CpuMask::from_cpus(4, [CpuId(target)])));
            let r = k.try_to_wake_up(p, CpuId(0), Some(w), WakeFlags::default(), 0, &mut crate::core::Effects::default());
            r.queued
        };
        assert!(!queued("v2.6.38", 2), "no wake lists before v3.0");
        assert!(queued("v3.10", 2), "cross-LLC: queued");
        assert!(!queued("v3.10", 1), "same LLC: the waker enqueues");
        assert!(queued("v6.0", 1), "v6.0: idle same-LLC target queued");
        assert!(queued("v6.12", 2));
    }

    // wake_affine_idle(): v5.11+ returns an idle prev; v4.14-form
    // kernels would fall through to the weight test. Sync wakeups from a CPU
    // whose only task is the waker pull to this_cpu.
    #[test]
    fn wake_affine_idle_clauses() {
        let mut k = Kernel::new(&flat_llc(4), profile("v5.11").unwrap());
        let w = occupy(&mut k, 0);
        assert_eq!(k.wake_affine_idle(CpuId(0), CpuId(1), true), Some(CpuId(0)), "sync, waker alone");
        assert_eq!(k.wake_affine_idle(CpuId(0), CpuId(1), false), Some(CpuId(1)), "prev idle");
        occupy(&mut k, 1);
        assert_eq!(k.wake_affine_idle(CpuId(0), CpuId(1), false), None);
        let _ = w;
    }

    // Chen Yu's RFC v1 (2022-09-16): with the patch, a short wakee goes to a target running
    // a short task when SIS_UTIL says the LLC is over ~half busy.
    #[test]
    fn shortrun_rfc_stacks_short_tasks() {
        let run = |patch: bool| {
            let mut prof = profile("v6.0").unwrap();
            if patch {
                prof.apply_patches("shortrun-rfc").unwrap();
            }
            let mut k = Kernel::new(&flat_llc(8), prof);
            let ts: Vec<TaskId> = (0..6).map(|c| occupy(&mut k, c)).collect();
            for &t in &ts {
                k.tasks[t.idx()].nvcsw = 1000; // short: ~0 runtime per voluntary switch
            }
            k.llc_shared[0].nr_idle_scan = 3; // nr = 4: 5*4 < 3*8
            let p = sleeper_on(&mut k, 3);
            k.tasks[p.idx()].nvcsw = 1000;
            let llc = k.sd.per_cpu[0][k.sd.sd_llc_level[0].unwrap() as usize] as usize;
            k.select_idle_cpu(p, llc, false, CpuId(3))
        };
        assert_eq!(run(true), Some(CpuId(3)), "patched: stack on the short-running target");
        assert_eq!(run(false), Some(CpuId(6)), "v6.0 scans 3 CPUs from target+1: 4, 5 busy, 6 idle");
    }

    // v5.11 find_idlest_group() at SD_NUMA with has_spare (23e6082a522e):
    // allow_numa_imbalance(local nr, span_weight) keeps a forked child on the
    // parent's node while that node runs < span_weight / 4 = 3 tasks (x86-12).
    #[test]
    fn v5_11_numa_fork_stays_local_below_quarter_span() {
        let mut k = Kernel::new(&super::tests::x86_12_topology(), profile("v5.11").unwrap());
        let mut nodes = Vec::new();
        for i in 0..4u64 {
            let now = i * 1000;
            let p = k.sched_fork(&TaskParams::default(), None, CpuId(0), now);
            let r = k.wake_up_new_task(p, CpuId(0), now, &mut crate::core::Effects::default());
            k.schedule(r.cpu, SwitchReason::Preempt, now, &mut crate::core::Effects::default());
            nodes.push(r.cpu.0 / 6);
        }
        assert_eq!(nodes, [0, 0, 0, 1]);
    }

    // The idle hint that select_idle_cpu()'s walk reads is a superset of the
    // CPUs the walk could take: a CPU whose hint the walk cleared (busy, or
    // idle with a wakeup pending that every CPU sees) gets it back from the
    // enqueue, dequeue or schedule() that can leave it idle or SCHED_IDLE-only.
    // Random wakeups (wake lists included), blocks, wake-list activations,
    // ticks and picks on a flat 48-CPU LLC; checked after every step, from a
    // CPU that is not the waker (which always sees its own pending store).
    #[test]
    fn idle_hint_covers_every_cpu_a_walk_could_take() {
        use crate::core::WakeFlags;
        let n = 48u16;
        for kernel in ["v5.13", "v6.6", "v6.12"] {
            let mut next = crate::test_topology::xorshift(0x9e37_79b9_7f4a_7c15);
            let mut k = Kernel::new(&flat_llc(n as u32), profile(kernel).unwrap());
            k.ttwu_pending_window_ns = 200;
            let mut churn = crate::test_topology::Churn::new(n, 6, 4);
            let mut now = 0u64;
            for _ in 0..(n as usize * 3 / 2) {
                let p = k.sched_fork(&TaskParams::default(), None, CpuId(0), now);
                k.wake_up_new_task(p, CpuId(0), now, &mut churn.fx);
            }
            for c in 0..n {
                k.schedule(CpuId(c), SwitchReason::Preempt, now, &mut churn.fx);
            }
            let (mut walks_cleared, mut steps) = (0u64, 0u64);
            for _ in 0..30_000 {
                now += next(3_000);
                churn.step(&mut k, &mut next, now, |k, p, c, fx| {
                    let before = k.idle_hint.clone();
                    let w = k.try_to_wake_up(p, c, k.rqs[c.idx()].curr, WakeFlags::TTWU, now, fx);
                    walks_cleared += (0..n).filter(|&i| before.test(CpuId(i)) && !k.idle_hint.test(CpuId(i))).count() as u64;
                    w
                });
                // Seen from a CPU that made no pending store, a little later.
                k.cur_now = now + 1;
                k.cur_this_cpu = CpuId(u16::MAX);
                for i in 0..n {
                    let c = CpuId(i);
                    if k.idle_candidate(c) {
                        assert!(k.idle_hint.test(c), "{kernel}: cpu {i} can be taken but its idle hint is clear (step {steps})");
                    }
                }
                steps += 1;
            }
            assert!(walks_cleared > 100, "{kernel}: the walks cleared only {walks_cleared} hints: the test does not reach the clearing");
        }
    }

    // F-004, the direct path (v5.13: a same-LLC wakeup enqueues under the
    // target's rq lock, no wake list): a second waker inside the window after
    // the first one's enqueue onto an idle CPU still sees that CPU idle and
    // stacks its wakee there (without the window it takes the other idle
    // CPU); the first waker sees its own store, and after the window nobody
    // sees the CPU idle.
    #[test]
    fn remote_enqueue_onto_an_idle_cpu_is_seen_a_window_later() {
        use crate::core::WakeFlags;
        for (window, stacked) in [(200u64, true), (0, false)] {
            let mut k = Kernel::new(&flat_llc(8), profile("v5.13").unwrap());
            k.ttwu_pending_window_ns = window;
            let mut fx = crate::core::Effects::default();
            for c in [0u16, 1, 2, 3, 4, 7] {
                occupy(&mut k, c);
            }
            let wake = |k: &mut Kernel, waker_cpu: u16, now: u64, fx: &mut crate::core::Effects| {
                let p = sleeper_on(k, 5);
                let waker = k.rqs[waker_cpu as usize].curr;
                k.try_to_wake_up(p, CpuId(waker_cpu), waker, WakeFlags::TTWU, now, fx)
            };
            let a = wake(&mut k, 0, 10_000, &mut fx);
            assert_eq!((a.cpu, a.queued), (CpuId(5), false), "window {window}: the idle prev CPU, enqueued directly");
            assert_eq!(k.rqs[5].nr_running(), 1);
            let b = wake(&mut k, 1, 10_100, &mut fx);
            let want = if stacked { CpuId(5) } else { CpuId(6) };
            assert_eq!(b.cpu, want, "window {window}: the second waker, 100 ns later");
            // The first waker sees its own enqueue at once.
            k.cur_now = 10_100;
            k.cur_this_cpu = CpuId(0);
            assert!(!k.idle_cpu(CpuId(5)));
            // A third CPU sees it idle inside the window, busy after it.
            k.cur_this_cpu = CpuId(2);
            assert_eq!(k.idle_cpu(CpuId(5)), stacked, "window {window}: CPU 2 at 10.1 us");
            k.cur_now = 10_000 + window.max(1);
            assert!(!k.idle_cpu(CpuId(5)), "window {window}: CPU 2 once the window has passed");
        }
    }
}
