//! Kernel profiles: a named release = feature bits + tunables + the variant of
//! each algorithm it runs. Versions are data, not `if version >= ...` scattered
//! through the policy code: the policy code asks the profile which variant to run.

use crate::features::{SchedFeat, SchedFeatures};
use SchedFeat::*;

/// Which picking algorithm the fair class runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickAlgo {
    /// Classic CFS: vruntime order, sched_latency / min_granularity slices (<= v6.5).
    Cfs,
    /// EEVDF: eligibility + virtual deadlines (v6.6+).
    Eevdf,
}

/// How sched_init() sizes domains (spec §2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdInitVariant {
    /// Per-arch SD_*_INIT macros of v3.x: imbalance_pct 125 (SMT 110), busy_factor 64 (NUMA 32).
    V3,
    /// sd_init() v4.x-v5.9: imbalance_pct 125 (SMT 110, LLC 117), busy_factor 32.
    V4,
    /// sd_init() v5.10+: imbalance_pct 117 (SMT 110), busy_factor 16.
    V5_10,
}

/// Which form of the fork/exec slow path (find_idlest_group) runs (spec §4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FindIdlestVariant {
    /// Pre-v5.5: least loaded group unless the local group is within imbalance_pct.
    LoadBased,
    /// v5.5+: group classification (has_spare / fully_busy / overloaded), idle CPU counts.
    GroupType,
}

/// Where a fork places the child's entity in EEVDF (spec §7.2 "Fork").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkPlacement {
    /// CFS: task_fork_fair copies the parent's vruntime, START_DEBIT, child_runs_first.
    CfsTaskFork,
    /// v6.6-v6.11: placed in task_fork_fair; the enqueue in wake_up_new_task
    /// re-places it without ENQUEUE_INITIAL (full slice).
    EevdfTaskFork,
    /// v6.12+: placed at wake_up_new_task with ENQUEUE_INITIAL (half slice).
    EevdfWakeUpNew,
}

/// wake_wide() form (spec §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeWideVariant {
    /// Before v3.12 (our v3.11 profile carries the patch): no wakee tracking at all.
    None,
    /// Michael Wang 2013 (seed 000): flips reset to 0 every second; checked inside
    /// wake_affine(): wide iff wakee.flips > llc && waker.flips > llc * wakee.flips.
    V3_11,
    /// Mike Galbraith v4.5+: flips halved every second; symmetric master/slave test
    /// in select_task_rq_fair() before the domain walk.
    V4_5,
}

/// wake_affine() form (spec §4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeAffineVariant {
    /// v2.6.3x-v4.13: load-index balance test with sync discount and tl_per_task.
    LoadIdx,
    /// v4.14-v5.10: WA_IDLE / WA_WEIGHT / WA_BIAS, no prev-idle clause.
    V4_14,
    /// v5.11+: wake_affine_idle() also returns prev when prev is idle.
    V5_11,
}

/// Which load wake_affine() compares (spec §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeLoad {
    /// Pre-v3.8: instantaneous rq weight (cpu_load[0]).
    Instant,
    /// v3.8-v5.4: cfs_rq->runnable_load_avg (PELT of runnable entities).
    RunnableAvg,
    /// v5.5+: cfs_rq->avg.load_avg.
    LoadAvg,
}

/// select_idle_sibling() form (spec §5, §5.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SisVariant {
    /// this/prev if idle, else the first idle CPU walking up SD_SHARE_PKG_RESOURCES domains.
    V2_6_38,
    /// this/prev if idle, else a fully idle group walking down from sd_llc.
    V3_10,
    /// target, prev, recent_used_cpu, select_idle_core (LLC), select_idle_cpu (SIS_PROP), select_idle_smt(target).
    V5_2,
    /// Merged core/cpu scan (one loop), no select_idle_smt.
    V5_12,
    /// + select_idle_smt(prev) when no idle core (c722f35b513f).
    V5_13,
}

/// Which remote wakeups go through the wake list (spec §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtwuQueueVariant {
    /// No wake lists (before v3.0).
    None,
    /// v3.0-v5.19: only across LLCs (WF_ON_CPU same-LLC case never arises here).
    CrossLlc,
    /// v6.0+ (f3dd3f674555): also to an idle target in the same LLC.
    IdleTarget,
}

/// How select_task_rq_fair() is shaped (spec §4 notes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectShape {
    /// v2.6.x-v3.x: affine_sd → select_idle_sibling(); without an affine
    /// domain a wakeup returns prev_cpu (no idle search).
    AffineSd,
    /// v4.x+: the fast path select_idle_sibling() runs for every wakeup.
    FastPath,
}

/// How recent_used_cpu is kept (spec §5 step 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecentUsedVariant {
    None,
    /// v4.16-v5.12: the waker's recent_used_cpu is set to this_cpu after an
    /// affine fast path; a successful recent pick stores prev.
    V5_2,
    /// v5.13+: p->recent_used_cpu = prev on every select_idle_sibling().
    V5_13,
}

/// Sched-domain level names of that release (`/proc/schedstat`, debugfs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelNames {
    pub smt: &'static str,
    pub cls: &'static str,
    pub mc: &'static str,
    pub pkg: &'static str,
}

/// sysctl tunables at their *normalized* values (before the log2(ncpus) factor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunables {
    /// EEVDF request size, sysctl_sched_base_slice.
    pub base_slice_ns: u64,
    /// CFS sysctl_sched_latency.
    pub latency_ns: u64,
    /// CFS sysctl_sched_min_granularity.
    pub min_granularity_ns: u64,
    /// CFS sysctl_sched_wakeup_granularity.
    pub wakeup_granularity_ns: u64,
    /// sysctl_sched_migration_cost (not scaled).
    pub migration_cost_ns: u64,
    /// sysctl_sched_child_runs_first (CFS).
    pub child_runs_first: bool,
    /// CONFIG_HZ.
    pub hz: u32,
    /// node_reclaim_distance (RECLAIM_DISTANCE); AMD Zen raises it to 32 from v5.4.
    pub reclaim_distance: u32,
    /// v5.4+: arch code sets node_reclaim_distance = 32 on AMD family 17h+.
    pub amd_reclaim_distance_32: bool,
}

/// Load-balancer form (spec §8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LbVariant {
    /// v2.6.x-v5.4: avg_load comparison, load imbalance, no NUMA allowance.
    LoadIdx,
    /// v5.5+: group types and migration types; adjust_numa_imbalance().
    GroupTypes,
}

/// A proposed patch applied on top of a profile (`--patch NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Patch {
    /// Seed 002 applied to a kernel before it (v2.6.38).
    NextBuddyHint,
    /// Seed 002 reverted from a kernel after it.
    NoNextBuddyHint,
    /// Chen Yu, "sched/fair: Choose the CPU where short task is running during
    /// wake up", RFC v1 2022-09-16 on v6.0-rc4, never merged (spec §10.1).
    ShortrunRfc,
    /// FIDELITY(F-642). The delayed-dequeue accounting of later kernels on v6.12: h_nr_delayed
    /// ("sched/eevdf: More PELT vs DELAYED_DEQUEUE", v6.14: the runnable
    /// signal and the balancer's task counts exclude delayed tasks),
    /// 61b82dfb6b7e (v6.14: can_migrate_task() moves a delayed task only for
    /// migrate_load) and aa3ee4f0b754 (v6.15: wake_affine_idle()'s sync test
    /// subtracts delayed tasks).
    DelayedAccounting,
}

impl Patch {
    pub const ALL: &'static [(&'static str, Patch, &'static str)] = &[
        (
            "shortrun-rfc",
            Patch::ShortrunRfc,
            "Chen Yu 2022 RFC v1: wake short tasks on the CPU where a short task runs (wake_affine_idle, select_idle_cpu); base v6.0",
        ),
        (
            "delayed-accounting",
            Patch::DelayedAccounting,
            "v6.14/v6.15 delayed-dequeue accounting (h_nr_delayed in runnable, balancer counts, wake_affine_idle; delayed tasks move for load only); base v6.12",
        ),
        (
            "next-buddy-hint",
            Patch::NextBuddyHint,
            "Venkatesh Pallipadi 2011 (seed 002, merged v2.6.39): next-buddy hint on the sleep and preempt paths; base v2.6.38",
        ),
        (
            "no-next-buddy-hint",
            Patch::NoNextBuddyHint,
            "revert of seed 002 (next-buddy hint on the sleep and preempt paths) from a kernel that has it (v3.10 and later)",
        ),
    ];
    pub fn name(self) -> &'static str {
        Patch::ALL.iter().find(|(_, p, _)| *p == self).map(|(n, _, _)| *n).unwrap_or("?")
    }
}

/// A named kernel release as schedlab models it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelProfile {
    pub name: &'static str,
    pub summary: &'static str,
    pub version: (u32, u32),
    pub features: SchedFeatures,
    pub tunables: Tunables,
    pub pick: PickAlgo,
    pub sd_init: SdInitVariant,
    pub find_idlest: FindIdlestVariant,
    pub fork_placement: ForkPlacement,
    pub level_names: LevelNames,
    /// CONFIG_SCHED_CLUSTER exists (v5.16+).
    pub has_cluster_level: bool,
    pub wake_wide: WakeWideVariant,
    pub wake_affine: WakeAffineVariant,
    pub wake_load: WakeLoad,
    pub sis: SisVariant,
    pub select_shape: SelectShape,
    pub recent_used: RecentUsedVariant,
    pub ttwu_queue: TtwuQueueVariant,
    /// select_idle_cpu() starts scanning after target (~v5.18+) rather than at it.
    pub sis_scan_from_next: bool,
    /// select_idle_cpu() scans the target's cluster first (v6.8+).
    pub sis_cluster_first: bool,
    pub lb: LbVariant,
    /// Seed 002 (Venkatesh Pallipadi, "sched: next buddy hint on sleep and
    /// preempt path", v2.6.39): a sleeping task leaves its group entity as next
    /// buddy; a preempting wakee becomes next buddy. Switchable with
    /// `--patch next-buddy-hint` / `--patch no-next-buddy-hint`.
    pub next_buddy_hint: bool,
    /// Proposed patches applied on top (`--patch`).
    pub patches: Vec<Patch>,
}

const TUNABLES_CFS: Tunables = Tunables {
    base_slice_ns: 750_000,
    latency_ns: 6_000_000,
    min_granularity_ns: 750_000,
    wakeup_granularity_ns: 1_000_000,
    migration_cost_ns: 500_000,
    child_runs_first: false,
    hz: 250,
    reclaim_distance: 30,
    amd_reclaim_distance_32: false,
};

const NAMES_V3: LevelNames = LevelNames { smt: "SIBLING", cls: "CLS", mc: "MC", pkg: "CPU" };
const NAMES_V5: LevelNames = LevelNames { smt: "SMT", cls: "CLS", mc: "MC", pkg: "DIE" };
const NAMES_V6_7: LevelNames = LevelNames { smt: "SMT", cls: "CLS", mc: "MC", pkg: "PKG" };

/// Feature bits that exist only in EEVDF kernels.
const EEVDF_ONLY: &[SchedFeat] = &[PLACE_LAG, PLACE_DEADLINE_INITIAL, RUN_TO_PARITY];
const V6_12_ONLY: &[SchedFeat] = &[PLACE_REL_DEADLINE, PREEMPT_SHORT, DELAY_DEQUEUE, DELAY_ZERO];
const CFS_ONLY: &[SchedFeat] = &[LAST_BUDDY, GENTLE_FAIR_SLEEPERS, START_DEBIT];
const WA_BITS: &[SchedFeat] = &[WA_IDLE, WA_WEIGHT, WA_BIAS];

fn v3_10() -> KernelProfile {
    let features = SchedFeatures::empty()
        .with(
            &[NEXT_BUDDY, SIS_UTIL, SIS_PROP, SIS_AVG_CPU, UTIL_EST, UTIL_EST_FASTUP, SIS_SHORT, PICK_BUDDY, ALT_PERIOD, BASE_SLICE],
            false,
        )
        .with(&[WAKEUP_PREEMPTION, TTWU_QUEUE, CACHE_HOT_BUDDY], true)
        .with(CFS_ONLY, true)
        .with(WA_BITS, false);
    KernelProfile {
        name: "v3.10",
        summary: "CFS; blind wake_affine (no wakee_flips); select_idle_sibling idle-group walk; cross-LLC wake lists",
        version: (3, 10),
        features,
        tunables: TUNABLES_CFS,
        pick: PickAlgo::Cfs,
        sd_init: SdInitVariant::V3,
        find_idlest: FindIdlestVariant::LoadBased,
        fork_placement: ForkPlacement::CfsTaskFork,
        level_names: NAMES_V3,
        has_cluster_level: false,
        wake_wide: WakeWideVariant::None,
        wake_affine: WakeAffineVariant::LoadIdx,
        wake_load: WakeLoad::RunnableAvg,
        sis: SisVariant::V3_10,
        select_shape: SelectShape::AffineSd,
        recent_used: RecentUsedVariant::None,
        ttwu_queue: TtwuQueueVariant::CrossLlc,
        sis_scan_from_next: false,
        sis_cluster_first: false,
        lb: LbVariant::LoadIdx,
        next_buddy_hint: true,
        patches: Vec::new(),
    }
}

fn v2_6_38() -> KernelProfile {
    let mut p = v3_10();
    p.name = "v2.6.38";
    p.summary =
        "CFS with next/last buddies (next first, last wins); select_idle_sibling first idle CPU up the shared-cache domains; no wake lists";
    p.version = (2, 6);
    p.features = p.features.with(&[TTWU_QUEUE], false);
    p.wake_load = WakeLoad::Instant;
    p.sis = SisVariant::V2_6_38;
    p.ttwu_queue = TtwuQueueVariant::None;
    p.next_buddy_hint = false;
    p
}

// FIDELITY(F-014): v3.11 = v3.10 + exactly seed 000's wakee_flips patch.
fn v3_11() -> KernelProfile {
    let mut p = v3_10();
    p.name = "v3.11";
    p.summary = "v3.10 + Michael Wang's wakee_flips / wake_wide (seed 000; merged for v3.12)";
    p.version = (3, 11);
    p.wake_wide = WakeWideVariant::V3_11;
    p
}

fn v5_11() -> KernelProfile {
    let features = SchedFeatures::empty()
        .with(&[WAKEUP_PREEMPTION, TTWU_QUEUE, CACHE_HOT_BUDDY, SIS_PROP, UTIL_EST, UTIL_EST_FASTUP], true)
        .with(CFS_ONLY, true)
        .with(WA_BITS, true)
        .with(&[NEXT_BUDDY, SIS_UTIL, SIS_AVG_CPU, SIS_SHORT, PICK_BUDDY, ALT_PERIOD, BASE_SLICE], false);
    KernelProfile {
        name: "v5.11",
        summary:
            "CFS; WA_IDLE/WA_WEIGHT with prev-idle clause; v5.2-form select_idle_sibling (idle core, SIS_PROP scan, idle SMT of target)",
        version: (5, 11),
        features,
        tunables: Tunables { amd_reclaim_distance_32: true, ..TUNABLES_CFS },
        pick: PickAlgo::Cfs,
        sd_init: SdInitVariant::V5_10,
        find_idlest: FindIdlestVariant::GroupType,
        fork_placement: ForkPlacement::CfsTaskFork,
        level_names: NAMES_V5,
        has_cluster_level: false,
        wake_wide: WakeWideVariant::V4_5,
        wake_affine: WakeAffineVariant::V5_11,
        wake_load: WakeLoad::LoadAvg,
        sis: SisVariant::V5_2,
        select_shape: SelectShape::FastPath,
        recent_used: RecentUsedVariant::V5_2,
        ttwu_queue: TtwuQueueVariant::CrossLlc,
        sis_scan_from_next: false,
        sis_cluster_first: false,
        lb: LbVariant::GroupTypes,
        next_buddy_hint: true,
        patches: Vec::new(),
    }
}

fn v5_12() -> KernelProfile {
    let mut p = v5_11();
    p.name = "v5.12";
    p.summary = "v5.11 with the merged select_idle_core/cpu scan; select_idle_smt removed";
    p.version = (5, 12);
    p.sis = SisVariant::V5_12;
    p
}

fn v5_13() -> KernelProfile {
    let mut p = v5_12();
    p.name = "v5.13";
    p.summary = "v5.12 + select_idle_smt(prev) (c722f35b513f), recent_used_cpu = prev, ALT_PERIOD/BASE_SLICE";
    p.version = (5, 13);
    p.sis = SisVariant::V5_13;
    p.recent_used = RecentUsedVariant::V5_13;
    p.features = p.features.with(&[ALT_PERIOD, BASE_SLICE], true);
    p
}

fn v6_0() -> KernelProfile {
    let mut p = v5_13();
    p.name = "v6.0";
    p.summary = "CFS; SIS_UTIL replaces SIS_PROP; wake list to idle same-LLC targets (f3dd3f674555); cluster level";
    p.version = (6, 0);
    p.features = p.features.with(&[SIS_UTIL], true).with(&[SIS_PROP], false);
    p.ttwu_queue = TtwuQueueVariant::IdleTarget;
    p.has_cluster_level = true;
    p.sis_scan_from_next = true;
    p
}

fn v6_6() -> KernelProfile {
    let features = SchedFeatures::empty()
        .with(EEVDF_ONLY, true)
        .with(&[WAKEUP_PREEMPTION, TTWU_QUEUE, CACHE_HOT_BUDDY, SIS_UTIL, UTIL_EST, UTIL_EST_FASTUP], true)
        .with(WA_BITS, true)
        .with(&[NEXT_BUDDY, SIS_PROP, SIS_AVG_CPU, SIS_SHORT, PICK_BUDDY], false);
    KernelProfile {
        name: "v6.6",
        summary: "first EEVDF release (lag, virtual deadlines, RUN_TO_PARITY); SIS_UTIL; select_idle_smt(prev)",
        version: (6, 6),
        features,
        tunables: Tunables { amd_reclaim_distance_32: true, ..TUNABLES_CFS },
        pick: PickAlgo::Eevdf,
        sd_init: SdInitVariant::V5_10,
        find_idlest: FindIdlestVariant::GroupType,
        fork_placement: ForkPlacement::EevdfTaskFork,
        level_names: NAMES_V5,
        has_cluster_level: true,
        wake_wide: WakeWideVariant::V4_5,
        wake_affine: WakeAffineVariant::V5_11,
        wake_load: WakeLoad::LoadAvg,
        sis: SisVariant::V5_13,
        select_shape: SelectShape::FastPath,
        recent_used: RecentUsedVariant::V5_13,
        ttwu_queue: TtwuQueueVariant::IdleTarget,
        sis_scan_from_next: true,
        sis_cluster_first: false,
        lb: LbVariant::GroupTypes,
        next_buddy_hint: true,
        patches: Vec::new(),
    }
}

fn v6_12() -> KernelProfile {
    let mut p = v6_6();
    p.name = "v6.12";
    p.summary = "EEVDF with delayed dequeue, PREEMPT_SHORT, new tasks placed at wake_up_new_task; cluster-first idle scan";
    p.version = (6, 12);
    p.features = p.features.with(V6_12_ONLY, true);
    p.fork_placement = ForkPlacement::EevdfWakeUpNew;
    p.level_names = NAMES_V6_7;
    p.sis_cluster_first = true;
    p
}

/// Every profile schedlab knows, oldest first.
pub fn profiles() -> Vec<KernelProfile> {
    vec![v2_6_38(), v3_10(), v3_11(), v5_11(), v5_12(), v5_13(), v6_0(), v6_6(), v6_12()]
}

/// Look a profile up by name (`v6.6`, `6.6`).
pub fn profile(name: &str) -> Result<KernelProfile, String> {
    let want = name.trim().trim_start_matches('v');
    profiles().into_iter().find(|p| p.name.trim_start_matches('v') == want).ok_or_else(|| {
        format!(
            "unknown kernel {name:?}; known profiles: {} (see `schedlab kernels`)",
            profiles().iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
        )
    })
}

impl KernelProfile {
    /// Apply `--features NO_X,Y` the way /sys/kernel/debug/sched/features takes them.
    pub fn apply_features(&mut self, spec: &str) -> Result<(), String> {
        for tok in spec.split(',').filter(|t| !t.trim().is_empty()) {
            self.features.apply(tok)?;
        }
        Ok(())
    }

    /// Apply `--patch a,b` overlays. The short-task RFC needs a v6.0-era
    /// fast path (SIS_UTIL); other bases are refused rather than guessed.
    pub fn apply_patches(&mut self, spec: &str) -> Result<(), String> {
        for tok in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let Some(&(_, patch, _)) = Patch::ALL.iter().find(|(n, _, _)| *n == tok) else {
                return Err(format!(
                    "unknown patch {tok:?}; known patches: {}",
                    Patch::ALL.iter().map(|(n, _, d)| format!("{n} ({d})")).collect::<Vec<_>>().join("; ")
                ));
            };
            if patch == Patch::ShortrunRfc && !(self.pick == PickAlgo::Cfs && self.version >= (6, 0)) {
                return Err(format!("patch shortrun-rfc applies to v6.0 (CFS with SIS_UTIL); {} is not that base", self.name));
            }
            match patch {
                Patch::NextBuddyHint if self.next_buddy_hint => {
                    return Err(format!(
                        "patch next-buddy-hint: {} already has it (merged in v2.6.39); use v2.6.38 as the base",
                        self.name
                    ));
                }
                Patch::NoNextBuddyHint if !self.next_buddy_hint => {
                    return Err(format!("patch no-next-buddy-hint: {} does not have the next-buddy hint to revert", self.name));
                }
                Patch::NextBuddyHint => self.next_buddy_hint = true,
                Patch::NoNextBuddyHint => self.next_buddy_hint = false,
                Patch::DelayedAccounting if !self.features.has(DELAY_DEQUEUE) => {
                    return Err(format!("patch delayed-accounting needs a kernel with delayed dequeue (v6.12); {} has none", self.name));
                }
                Patch::ShortrunRfc | Patch::DelayedAccounting => {}
            }
            if !self.patches.contains(&patch) {
                self.patches.push(patch);
            }
        }
        Ok(())
    }

    pub fn has_patch(&self, p: Patch) -> bool {
        self.patches.contains(&p)
    }

    /// `sysctl_sched_tunable_scaling = SCHED_TUNABLESCALING_LOG`: factor = 1 + ilog2(min(ncpus, 8)).
    pub fn tunable_factor(nr_cpus: usize) -> u64 {
        let n = nr_cpus.clamp(1, 8) as u64;
        1 + (63 - n.leading_zeros() as u64)
    }

    /// The tick period, TICK_NSEC.
    pub fn tick_ns(&self) -> u64 {
        1_000_000_000 / self.tunables.hz as u64
    }
}

/// Tunables after scaling for the machine's CPU count (what the kernel uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EffectiveTunables {
    pub base_slice_ns: u64,
    pub latency_ns: u64,
    pub min_granularity_ns: u64,
    pub wakeup_granularity_ns: u64,
    /// sched_nr_latency = latency / min_granularity.
    pub nr_latency: u64,
    pub migration_cost_ns: u64,
    pub tick_ns: u64,
}

impl EffectiveTunables {
    pub fn new(p: &KernelProfile, nr_cpus: usize) -> Self {
        let f = KernelProfile::tunable_factor(nr_cpus);
        let t = &p.tunables;
        let latency = t.latency_ns * f;
        let min_gran = t.min_granularity_ns * f;
        EffectiveTunables {
            base_slice_ns: t.base_slice_ns * f,
            latency_ns: latency,
            min_granularity_ns: min_gran,
            wakeup_granularity_ns: t.wakeup_granularity_ns * f,
            nr_latency: latency.div_ceil(min_gran),
            migration_cost_ns: t.migration_cost_ns,
            tick_ns: p.tick_ns(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn lookup_and_factor() {
        assert_eq!(profile("6.6").unwrap().pick, PickAlgo::Eevdf);
        assert_eq!(profile("v3.10").unwrap().pick, PickAlgo::Cfs);
        assert!(profile("v9.9").unwrap_err().contains("v6.12"));
        // spec §1.3: 1 CPU:1, 2:2, 4:3, >=8:4
        assert_eq!([1, 2, 4, 8, 256].map(KernelProfile::tunable_factor), [1, 2, 3, 4, 4]);
        let t = EffectiveTunables::new(&profile("v6.6").unwrap(), 256);
        assert_eq!(t.base_slice_ns, 3_000_000);
        assert_eq!(t.nr_latency, 8);
    }
    #[test]
    fn v6_12_has_delayed_dequeue_v6_6_not() {
        assert!(profile("v6.12").unwrap().features.has(DELAY_DEQUEUE));
        assert!(!profile("v6.6").unwrap().features.has(DELAY_DEQUEUE));
    }
}
