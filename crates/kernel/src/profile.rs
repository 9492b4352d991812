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

/// How the sched domains' tunables are set: the SD_*_INIT macros of
/// include/linux/topology.h (v2.6.x-v3.15) or sd_init() (v3.16+).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdInitVariant {
    /// SD_SIBLING_INIT / SD_MC_INIT / SD_CPU_INIT of include/linux/topology.h
    /// (v2.6.3x-v3.15) and sd_numa_init() (v3.5-v3.15): intervals 1/2 ms (SMT)
    /// and 1/4 ms (MC, CPU), busy_factor 64, imbalance_pct 110 (SMT) / 125,
    /// smt_gain 1178, load indices busy 2 / idle 1 (CPU level); NUMA levels
    /// span-sized intervals, busy_factor 32.
    V3,
    /// sd_init() v4.x-v5.9: imbalance_pct 125 (SMT 110, LLC 117), busy_factor 32.
    V4,
    /// sd_init() v5.10+: imbalance_pct 117 (SMT 110), busy_factor 16.
    V5_10,
}

/// Which form of the fork/exec slow path (`find_idlest_group()`) runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FindIdlestVariant {
    /// Pre-v5.5: least loaded group unless the local group is within imbalance_pct.
    LoadBased,
    /// v5.5+: group classification (has_spare / fully_busy / overloaded), idle CPU counts.
    GroupType,
}

/// Where a fork places the child's entity (`task_fork_fair()` /
/// `wake_up_new_task()` → `place_entity()`).
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

/// `wake_wide()` form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeWideVariant {
    /// Before v3.12: no wakee tracking at all.
    None,
    /// v3.12-v4.4 (Michael Wang 2013, seed 000: 62470419e993 + 7d9ffa896148;
    /// `--patch wakee-flips` on v3.10): flips reset to 0 every second; checked
    /// inside wake_affine(): wide iff wakee.flips > llc && waker.flips > llc * wakee.flips.
    V3_12,
    /// Mike Galbraith v4.5+: flips halved every second; symmetric master/slave test
    /// in select_task_rq_fair() before the domain walk.
    V4_5,
}

/// `wake_affine()` form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeAffineVariant {
    /// v2.6.3x-v4.13: load-index balance test with sync discount and tl_per_task.
    LoadIdx,
    /// v4.14-v5.10: WA_IDLE / WA_WEIGHT / WA_BIAS, no prev-idle clause.
    V4_14,
    /// v5.11+: wake_affine_idle() also returns prev when prev is idle.
    V5_11,
}

/// Which per-CPU load `weighted_cpuload()` / `cpu_load()` returns: the load
/// wake_affine() and the balancer compare (and the input of the cpu_load[]
/// indices in the LoadIdx balancer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeLoad {
    /// v2.6.x-v3.10: the instantaneous rq->load.weight.
    Instant,
    /// v3.11-v5.6 (b92486cbf2aa, a003a25b227d; `--patch runnable-load` on
    /// v3.10): cfs_rq->runnable_load_avg (PELT of runnable entities).
    RunnableAvg,
    /// v5.5+: cfs_rq->avg.load_avg.
    LoadAvg,
}

/// `select_idle_sibling()` form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SisVariant {
    /// this/prev if idle, else the first idle CPU walking up SD_SHARE_PKG_RESOURCES domains.
    V2_6_38,
    /// v3.9-v4.8: target if idle, prev if idle and sharing target's LLC (e0a79f529d5b), else a fully idle group walking down from sd_llc.
    V3_10,
    /// target, prev, recent_used_cpu, select_idle_core (LLC), select_idle_cpu (SIS_PROP), select_idle_smt(target).
    V5_2,
    /// Merged core/cpu scan (one loop), no select_idle_smt.
    V5_12,
    /// + select_idle_smt(prev) when no idle core (c722f35b513f).
    V5_13,
}

/// Which remote wakeups go through the wake list (`ttwu_queue_cond()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtwuQueueVariant {
    /// No wake lists (before v3.0).
    None,
    /// v3.0-v5.19: only across LLCs (WF_ON_CPU same-LLC case never arises here).
    CrossLlc,
    /// v6.0+ (f3dd3f674555): also to an idle target in the same LLC.
    IdleTarget,
}

/// How `select_task_rq_fair()` is shaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectShape {
    /// v2.6.x-v3.x: affine_sd → select_idle_sibling(); without an affine
    /// domain a wakeup returns prev_cpu (no idle search).
    AffineSd,
    /// v4.x+: the fast path select_idle_sibling() runs for every wakeup.
    FastPath,
}

/// How recent_used_cpu is kept (`select_idle_sibling()`, `select_task_rq_fair()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecentUsedVariant {
    None,
    /// v4.16-v5.14 (32e839dda3ba): the waker's recent_used_cpu is set to
    /// this_cpu after an affine fast path; a successful recent pick stores prev.
    V5_2,
    /// v5.15+ (89aafd67f28c): p->recent_used_cpu = prev on every select_idle_sibling().
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
    /// The NUMA balancing sysctls (kernel.numa_balancing*; `--sysctl`).
    pub numa: crate::fair::numa::NumaSysctl,
}

/// Load-balancer form (`load_balance()` / `sched_balance_rq()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LbVariant {
    /// v2.6.x-v5.4: avg_load comparison, load imbalance, no NUMA allowance.
    LoadIdx,
    /// v5.5+: group types and migration types; adjust_numa_imbalance().
    GroupTypes,
}

/// Which form of automatic NUMA balancing's task placement runs
/// (kernel/sched/fair.c `task_numa_migrate()` and what it calls:
/// `update_numa_stats()`, `task_numa_find_cpu()`, `task_numa_compare()`,
/// `task_numa_assign()`). Smaller changes inside a form are gated on the
/// release (`profile.version`) at the function, as the balancer does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumaVariant {
    /// Not modelled: v2.6.x has no NUMA balancing; v3.8-v3.12 had an earlier
    /// form (no numa_faults per node and task_numa_migrate() of v3.13).
    /// Runs keep kernel.numa_balancing off; `numa_balancing=1` is refused.
    None,
    /// v4.19-v5.6: `update_numa_stats()` sums the node's load and compute
    /// capacity only; a move is allowed when it does not make the load
    /// imbalance worse (`load_too_imbalanced()`); select_idle_sibling()
    /// picks the idle CPU; `rq->numa_migrate_on` (a4739eca4456, v4.19)
    /// keeps two migrations off one CPU.
    V4_19,
    /// v5.7+ (Mel Gorman's "reconcile NUMA balancing decisions with the load
    /// balancer" series, fb86f5b21192 and its siblings): node stats as the
    /// load balancer keeps them (nr_running, util, runnable, idle CPU),
    /// numa_classify() node types, moves into spare capacity subject to
    /// adjust_numa_imbalance(), preferred-node bias and early stop in
    /// task_numa_compare(), an alternative idle CPU in task_numa_assign().
    V5_7,
}

/// A proposed patch applied on top of a profile (`--patch NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Patch {
    /// Seed 002 applied to a kernel before it (v2.6.38).
    NextBuddyHint,
    /// Seed 002 reverted from a kernel after it.
    NoNextBuddyHint,
    /// Chen Yu, "sched/fair: Choose the CPU where short task is running during
    /// wake up", RFC v1 2022-09-16 on v6.0-rc4, never merged.
    ShortrunRfc,
    /// Seed 000, Michael Wang's "smart wake-affine" v3 series as merged for
    /// v3.12: 62470419e993 (record_wakee()/wake_wide() in wake_affine()) +
    /// 7d9ffa896148 (factor = sd_llc_size). Base v3.10.
    WakeeFlips,
    /// Alex Shi's runnable-load series as merged for v3.11: b92486cbf2aa
    /// (weighted_cpuload()/cpu_avg_load_per_task() read cfs.runnable_load_avg)
    /// and a003a25b227d (move_tasks() weighs tasks by their runnable average).
    /// In tip sched/core from 2013-06-27. Base v3.10.
    RunnableLoad,
    /// FIDELITY(F-642). The delayed-dequeue accounting of later kernels on v6.12: h_nr_delayed
    /// ("sched/eevdf: More PELT vs DELAYED_DEQUEUE", v6.14: the runnable
    /// signal and the balancer's task counts exclude delayed tasks),
    /// 61b82dfb6b7e (v6.14: can_migrate_task() moves a delayed task only for
    /// migrate_load) and aa3ee4f0b754 (v6.16: wake_affine_idle()'s sync test
    /// subtracts delayed tasks).
    DelayedAccounting,
    /// The 6.18.y stable changes to the fair class up to 6.18.44, on v6.18
    /// (`stable_6_18()` gates each at the stable release that took it):
    /// 6.18.17: 6e3c0a4e1ad1 "sched/fair: Fix lag clamp" (the lag limit is
    /// the largest slice queued on the cfs_rq plus one tick) and
    /// bcd74b2ffdd0 "sched/fair: Only set slice protection at pick time";
    /// 6.18.33: e837456fdca8 "sched/fair: Reimplement NEXT_BUDDY to align with
    /// EEVDF goals" with 15257cc2f905 "sched/fair: Revert force wakeup
    /// preemption", ac8e69e69363 "sched/fair: Fix wakeup_preempt_fair() vs
    /// delayed dequeue" and 9f6d929ee2c6 "sched/fair: Fix
    /// wakeup_preempt_fair() for not waking up task". FIDELITY(F-648).
    Stable6_18_44,
    /// Michael Wang (王贇), "per-cgroup NUMA suite" patches 1-3 (LKML
    /// 2019-07, base v5.2): `cpu.numa_group` gives a cpu cgroup one NUMA
    /// group that all its tasks join, and `cpu.numa_stat` reports the
    /// group's locality and per-node execution time. Never merged.
    NumaGroupCgroup,
    /// Aaron Lu, "sched/fair: Ratelimit update to tg->load_avg" (1528c661c24b,
    /// merged for v6.7): `update_tg_load_avg()` at most once per ms per
    /// cfs_rq. Base v6.6, the release before it.
    TgLoadRatelimit,
    /// Patch 4/4 of that suite, "numa: introduce numa cling feature": tasks
    /// of a cgroup NUMA group cling to their preferred node on wakeup, in
    /// load balancing and against NUMA swaps, paused on a busy node. Implies
    /// patches 1-3. Never merged.
    NumaCling,
    /// aaec5a95d596 (Oleg Nesterov, "pipe_read: don't wake up the writer if
    /// the pipe is still full", merged for v6.14) reverted, as K Prateek
    /// Nayak measured it on 2025-01-31 (mainline at 05dbaf8dd8bf against the
    /// revert): `pipe_read()` wakes a writer on every read of a full pipe.
    /// On a kernel that has the commit (v6.14+).
    PipeReadWasFull,
    /// aaec5a95d596 applied to a kernel before it (v5.5-v6.13): `pipe_read()`
    /// wakes a writer only when the read released a page of a full pipe.
    PipeReadOnRelease,
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
            "v6.14-v6.16 delayed-dequeue accounting (h_nr_delayed in runnable, balancer counts, wake_affine_idle; delayed tasks move for load only); base v6.12",
        ),
        (
            "stable-6.18.44",
            Patch::Stable6_18_44,
            "6.18.y stable fair-class changes up to 6.18.44: lag clamp = largest queued slice + TICK_NSEC (6e3c0a4e1ad1, 6.18.17); slice protection set at pick only (bcd74b2ffdd0, 6.18.17); wakeup check of 6.18.33 (e837456fdca8 without its forced preemption, 15257cc2f905; ac8e69e69363; 9f6d929ee2c6): no preemption by WF_FORK or still-delayed wakees, PICK_BUDDY inside the pick, the pick repeated through pick_next_entity() dequeuing delayed sleepers it returns, preempt iff the first non-delayed pick is the wakee, update_protect_slice() after every non-preempting wakeup; NEXT_BUDDY stays off; base v6.18",
        ),
        (
            "tg-load-ratelimit",
            Patch::TgLoadRatelimit,
            "Aaron Lu 2023 (1528c661c24b, merged v6.7): update_tg_load_avg() at most once per ms per cfs_rq; base v6.6",
        ),
        (
            "numa-group",
            Patch::NumaGroupCgroup,
            "Michael Wang 2019 per-cgroup NUMA suite patches 1-3: cpu.numa_group (one NUMA group per cpu cgroup) + cpu.numa_stat; base v5.2",
        ),
        (
            "numa-cling",
            Patch::NumaCling,
            "Michael Wang 2019 \"numa: introduce numa cling feature\" (patch 4/4, with 1-3): cgroup NUMA groups cling to their preferred node, paused on a busy node; base v5.2",
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
        (
            "pipe-read-was-full",
            Patch::PipeReadWasFull,
            "revert of aaec5a95d596 (v6.14, \"pipe_read: don't wake up the writer if the pipe is still full\"): every read of a full pipe wakes one writer, as v5.5-v6.13 did; on v6.14 and later",
        ),
        (
            "pipe-read-on-release",
            Patch::PipeReadOnRelease,
            "Oleg Nesterov 2025 (aaec5a95d596, merged v6.14): pipe_read() wakes a writer only when it released a page of a full pipe; base v5.5-v6.13",
        ),
        (
            "wakee-flips",
            Patch::WakeeFlips,
            "Michael Wang 2013 (seed 000, merged v3.12: 62470419e993 + 7d9ffa896148): wakee_flips / wake_wide() in wake_affine(); base v3.10",
        ),
        (
            "runnable-load",
            Patch::RunnableLoad,
            "Alex Shi 2013 (merged v3.11: b92486cbf2aa + a003a25b227d; tip sched/core 2013-06-27): balancer and wake_affine loads from runnable_load_avg; base v3.10",
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
    /// Which release or tree this profile is (`schedlab kernel show`).
    pub tree: &'static str,
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
    /// Automatic NUMA balancing placement form.
    pub numa: NumaVariant,
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
    numa: crate::fair::numa::NumaSysctl::DEFAULT,
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
        summary: "CFS; blind wake_affine (no wakee_flips) on instantaneous loads; cpu_load[] indices; select_idle_sibling: idle target, idle cache-affine prev, then idle-group walk; cross-LLC wake lists",
        tree: "Linux v3.10 release (2013-06-30)",
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
        // weighted_cpuload() = rq->load.weight in v3.10; runnable_load_avg is v3.11.
        wake_load: WakeLoad::Instant,
        sis: SisVariant::V3_10,
        select_shape: SelectShape::AffineSd,
        recent_used: RecentUsedVariant::None,
        ttwu_queue: TtwuQueueVariant::CrossLlc,
        sis_scan_from_next: false,
        sis_cluster_first: false,
        lb: LbVariant::LoadIdx,
        numa: NumaVariant::None,
        next_buddy_hint: true,
        patches: Vec::new(),
    }
}

fn v2_6_38() -> KernelProfile {
    let mut p = v3_10();
    p.name = "v2.6.38";
    p.summary =
        "CFS with next/last buddies (next first, last wins); select_idle_sibling first idle CPU up the shared-cache domains; no wake lists";
    p.tree = "Linux v2.6.38 release (2011-03-14)";
    p.version = (2, 6);
    p.features = p.features.with(&[TTWU_QUEUE], false);
    p.wake_load = WakeLoad::Instant;
    p.sis = SisVariant::V2_6_38;
    p.ttwu_queue = TtwuQueueVariant::None;
    p.next_buddy_hint = false;
    p
}

/// Linux v5.2 (2019-07-07), the base of the per-cgroup NUMA / cling series:
/// the pre-v5.5 load balancer (avg_load, cpu_load[] indices), wake_affine()
/// v4.14 form (WA_IDLE/WA_WEIGHT/WA_BIAS, no prev-idle clause) on
/// runnable_load_avg, select_idle_sibling() with select_idle_core /
/// select_idle_cpu (SIS_PROP, SIS_AVG_CPU off) / select_idle_smt(target),
/// recent_used_cpu, find_idlest_group() load form, sd_init() v4 tunables,
/// UTIL_EST without FASTUP, and NUMA balancing (task_numa_work,
/// task_numa_placement, task_numa_migrate with update_numa_stats() = load +
/// capacity, migrate_degrades_locality()).
fn v5_2() -> KernelProfile {
    let mut p = v5_11();
    p.name = "v5.2";
    p.summary = "CFS; pre-v5.5 balancer (cpu_load[] indices); wake_affine v4.14 on runnable_load_avg; SIS_PROP scan; NUMA balancing v5.2";
    p.tree = "Linux v5.2 release (2019-07-07)";
    p.version = (5, 2);
    p.features = p.features.with(&[UTIL_EST_FASTUP], false);
    p.tunables.amd_reclaim_distance_32 = false;
    // FIDELITY(F-772): sd_init() v4's busy_idx/idle_idx are not set (index 0).
    p.sd_init = SdInitVariant::V4;
    p.find_idlest = FindIdlestVariant::LoadBased;
    p.wake_affine = WakeAffineVariant::V4_14;
    p.wake_load = WakeLoad::RunnableAvg;
    p.lb = LbVariant::LoadIdx;
    p.numa = NumaVariant::V4_19;
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
            "CFS; WA_IDLE/WA_WEIGHT with prev-idle clause; v5.2-form select_idle_sibling (idle core, SIS_PROP scan, idle SMT of target); exclusive pipe waits (v5.5)",
        tree: "Linux v5.11 release (2021-02-14)",
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
        numa: NumaVariant::V5_7,
        next_buddy_hint: true,
        patches: Vec::new(),
    }
}

fn v5_12() -> KernelProfile {
    let mut p = v5_11();
    p.name = "v5.12";
    p.summary = "v5.11 with the merged select_idle_core/cpu scan; select_idle_smt removed; has_idle_cores cleared on the waker's LLC";
    p.tree = "Linux v5.12 release (2021-04-25)";
    p.version = (5, 12);
    p.sis = SisVariant::V5_12;
    p
}

fn v5_13() -> KernelProfile {
    let mut p = v5_12();
    p.name = "v5.13";
    p.summary = "v5.12 + select_idle_smt(prev) (c722f35b513f), has_idle_cores fix, ALT_PERIOD/BASE_SLICE";
    p.tree = "Linux v5.13 release (2021-06-27)";
    p.version = (5, 13);
    p.sis = SisVariant::V5_13;
    p.features = p.features.with(&[ALT_PERIOD, BASE_SLICE], true);
    p
}

fn v6_0() -> KernelProfile {
    let mut p = v5_13();
    p.name = "v6.0";
    p.summary = "CFS; SIS_UTIL replaces SIS_PROP; wake list to idle same-LLC targets (f3dd3f674555); cluster level";
    p.tree = "Linux v6.0 release (2022-10-02)";
    p.version = (6, 0);
    p.recent_used = RecentUsedVariant::V5_13;
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
        tree: "Linux v6.6 release (2023-10-30)",
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
        numa: NumaVariant::V5_7,
        next_buddy_hint: true,
        patches: Vec::new(),
    }
}

fn v6_12() -> KernelProfile {
    let mut p = v6_6();
    p.name = "v6.12";
    p.summary = "EEVDF with delayed dequeue, PREEMPT_SHORT, new tasks placed at wake_up_new_task; cluster-first idle scan";
    p.tree = "Linux v6.12 release (2024-11-17)";
    p.version = (6, 12);
    p.features = p.features.with(V6_12_ONLY, true);
    p.fork_placement = ForkPlacement::EevdfWakeUpNew;
    p.level_names = NAMES_V6_7;
    p.sis_cluster_first = true;
    p
}

/// Linux v6.18 (2025-11-30) as tagged, modelled as v6.12 plus the fair-class
/// changes of v6.13-v6.18 that act on what schedlab models:
/// - 2ae891b82695 "sched: Reduce the default slice to avoid tasks getting an
///   extra tick" (v6.15): normalized base slice 0.75 -> 0.70 ms;
/// - 2a77e4be12cb "sched/fair: Untangle NEXT_BUDDY and pick_next_task()"
///   (v6.14): the PICK_BUDDY bit, pick_next_entity() honours an eligible
///   cfs_rq->next with NEXT_BUDDY off;
/// - the delayed-dequeue accounting of v6.14-v6.15 ("sched/eevdf: More PELT vs
///   DELAYED_DEQUEUE", 61b82dfb6b7e, aa3ee4f0b754), which `--patch
///   delayed-accounting` puts on v6.12 (`KernelProfile::delayed_accounting()`);
/// - f553741ac8c0 "sched: Cancel the slice protection of the idle entity"
///   (v6.15);
/// - Vincent Guittot's run-to-parity series (v6.17: 9cdb4fe20cd2, 74eec63661d4,
///   9de74a9850b9, 052c3d87c82e, 3a0baa8e6c57, 0b9ca2dcabc3): protection is
///   a vruntime bound (vprot), `__pick_eevdf(protect)`, PREEMPT_SHORT only for
///   a shorter-slice wakee, protection cancelled only when the wakee wins,
///   update_curr() reschedules when the deadline passed or protection ended.
///
/// What of v6.13-v6.18 is not modelled: FIDELITY(F-647).
fn v6_18() -> KernelProfile {
    let mut p = v6_12();
    p.name = "v6.18";
    p.summary = "v6.12 + 0.70 ms base slice (v6.15), PICK_BUDDY (v6.14), v6.14-v6.16 delayed-dequeue accounting, v6.17 run-to-parity (vprot bound, PREEMPT_SHORT only for shorter slices); epoll passes WF_SYNC on (v6.13)";
    p.tree = "Linux v6.18 release (2025-11-30)";
    p.version = (6, 18);
    p.tunables.base_slice_ns = 700_000;
    p.features = p.features.with(&[PICK_BUDDY], true);
    p
}

/// Every profile schedlab knows, oldest first.
pub fn profiles() -> Vec<KernelProfile> {
    vec![v2_6_38(), v3_10(), v5_2(), v5_11(), v5_12(), v5_13(), v6_0(), v6_6(), v6_12(), v6_18()]
}

/// Old profile names that were never the release they were named after:
/// (name, base profile, patches, note printed on stderr when used).
pub const DEPRECATED: &[(&str, &str, &str, &str)] = &[(
    "v3.11",
    "v3.10",
    "wakee-flips",
    "v3.11 was never this (it was v3.10 + the v3.12 wakee_flips patches, 62470419e993 + 7d9ffa896148); use --kernel v3.10 --patch wakee-flips",
)];

/// The deprecation note for an old profile name, if `name` is one.
pub fn deprecation_note(name: &str) -> Option<&'static str> {
    let want = name.trim().trim_start_matches('v');
    DEPRECATED.iter().find(|(n, ..)| n.trim_start_matches('v') == want).map(|(.., note)| *note)
}

/// Look a profile up by name (`v6.6`, `6.6`). A deprecated name resolves to
/// what it always ran (its base plus patches); see [`deprecation_note`].
pub fn profile(name: &str) -> Result<KernelProfile, String> {
    let want = name.trim().trim_start_matches('v');
    if let Some((_, base, patches, _)) = DEPRECATED.iter().find(|(n, ..)| n.trim_start_matches('v') == want) {
        let mut p = profile(base)?;
        p.apply_patches(patches)?;
        return Ok(p);
    }
    profiles().into_iter().find(|p| p.name.trim_start_matches('v') == want).ok_or_else(|| {
        format!(
            "unknown kernel {name:?}; known profiles: {} (see `schedlab kernels`)",
            profiles().iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
        )
    })
}

impl KernelProfile {
    /// Whether this kernel (its release plus its patches) has feature bit `f`
    /// in its features.h, i.e. in /sys/kernel/debug/sched/features.
    pub fn has_feature_bit(&self, f: SchedFeat) -> bool {
        let by_patch = match f {
            SchedFeat::SIS_SHORT => self.has_patch(Patch::ShortrunRfc),
            SchedFeat::NEXT_BUDDY => self.has_patch(Patch::NextBuddyHint),
            _ => false,
        };
        by_patch || crate::features::release_of(self.name).is_some_and(|r| f.in_release(r))
    }

    /// Apply `--features NO_X,Y` the way /sys/kernel/debug/sched/features takes
    /// them: a bit this kernel does not have is an error (debugfs answers EINVAL),
    /// naming the kernels that have it.
    pub fn apply_features(&mut self, spec: &str) -> Result<(), String> {
        for tok in spec.split(',').filter(|t| !t.trim().is_empty()) {
            self.features.apply(tok)?;
            let t = tok.trim();
            let name = t.strip_prefix("NO_").unwrap_or(t);
            if let Some(&f) = SchedFeat::ALL.iter().find(|f| f.name() == name) {
                if !self.has_feature_bit(f) {
                    let with: Vec<&str> = profiles().into_iter().filter(|p| p.has_feature_bit(f)).map(|p| p.name).collect();
                    let patch = match f {
                        SchedFeat::SIS_SHORT => " (--patch shortrun-rfc adds it)",
                        SchedFeat::NEXT_BUDDY => " (--patch next-buddy-hint adds it to v2.6.38)",
                        _ => "",
                    };
                    return Err(format!(
                        "sched feature {name} does not exist in {} (features.h has it in {}{patch}); kernels that have it: {}; `schedlab kernel show {}` lists the bits it has",
                        self.name,
                        f.releases_text(),
                        if with.is_empty() { "none of the profiles".to_string() } else { with.join(", ") },
                        self.name
                    ));
                }
            }
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
            if matches!(patch, Patch::NumaGroupCgroup | Patch::NumaCling) && self.version != (5, 2) {
                return Err(format!(
                    "patch {tok} applies to v5.2 (the series was posted against v5.2/v5.3); {} is not that base",
                    self.name
                ));
            }
            if patch == Patch::Stable6_18_44 && self.version != (6, 18) {
                return Err(format!(
                    "patch stable-6.18.44 applies to v6.18 (the 6.18.y stable series up to 6.18.44); {} is not that base",
                    self.name
                ));
            }
            if patch == Patch::TgLoadRatelimit && self.version != (6, 6) {
                return Err(format!(
                    "patch tg-load-ratelimit applies to v6.6 (it was merged for v6.7; later profiles have it); {} is not that base",
                    self.name
                ));
            }
            if patch == Patch::DelayedAccounting && self.version >= (6, 16) {
                return Err(format!("patch delayed-accounting: {} already has it (v6.14-v6.16); use v6.12 as the base", self.name));
            }
            if matches!(patch, Patch::WakeeFlips | Patch::RunnableLoad) && self.version != (3, 10) {
                return Err(format!("patch {tok} applies to v3.10 (it was merged for v3.11/v3.12); {} is not that base", self.name));
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
                Patch::PipeReadWasFull if self.version < (6, 14) => {
                    return Err(format!(
                        "patch pipe-read-was-full reverts aaec5a95d596 (v6.14); {} does not have it (it wakes a writer on every read of a full pipe already from v5.5)",
                        self.name
                    ));
                }
                Patch::PipeReadOnRelease if !(self.version >= (5, 5) && self.version < (6, 14)) => {
                    return Err(format!(
                        "patch pipe-read-on-release (aaec5a95d596, merged v6.14) applies to v5.5-v6.13; {} {}",
                        self.name,
                        if self.version >= (6, 14) { "already has it" } else { "has the pre-v5.5 pipe wait queue" }
                    ));
                }
                Patch::PipeReadWasFull | Patch::PipeReadOnRelease => {}
                Patch::NextBuddyHint => self.next_buddy_hint = true,
                Patch::NoNextBuddyHint => self.next_buddy_hint = false,
                Patch::DelayedAccounting if !self.features.has(DELAY_DEQUEUE) => {
                    return Err(format!("patch delayed-accounting needs a kernel with delayed dequeue (v6.12); {} has none", self.name));
                }
                Patch::ShortrunRfc | Patch::DelayedAccounting | Patch::NumaGroupCgroup | Patch::Stable6_18_44 | Patch::TgLoadRatelimit => {}
                Patch::NumaCling => {
                    // Patch 4 sits on patches 1-3.
                    if !self.patches.contains(&Patch::NumaGroupCgroup) {
                        self.patches.push(Patch::NumaGroupCgroup);
                    }
                }
                // FIDELITY(F-014): the seed's series as merged, nothing else of v3.12.
                Patch::WakeeFlips => self.wake_wide = WakeWideVariant::V3_12,
                Patch::RunnableLoad => self.wake_load = WakeLoad::RunnableAvg,
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

    /// The delayed-dequeue accounting of v6.14-v6.16 (h_nr_runnable in the
    /// runnable signal and the balancer's counts, can_migrate_task() moving a
    /// delayed task for migrate_load only, wake_affine_idle()'s sync test
    /// without delayed tasks): from v6.16 on, or `--patch delayed-accounting`
    /// on v6.12. v6.12.0 counts delayed sleepers everywhere.
    pub fn delayed_accounting(&self) -> bool {
        self.version >= (6, 16) || self.has_patch(Patch::DelayedAccounting)
    }

    /// `update_tg_load_avg()` at most once per ms per cfs_rq: v6.7+
    /// (1528c661c24b "sched/fair: Ratelimit update to tg->load_avg").
    pub fn tg_load_ratelimit(&self) -> bool {
        self.version >= (6, 7) || self.has_patch(Patch::TgLoadRatelimit)
    }

    /// `ep_poll_callback()` passes a waker's WF_SYNC on to the task blocked in
    /// epoll_wait(): v6.13+ (900bbaae67e9 "epoll: Add synchronous wakeup
    /// support for ep_poll_callback"; stable trees backported it in December
    /// 2024, after every release profile but v6.18). Before it an epoll
    /// wakeup was a plain wake_up(), whatever the socket or pipe asked for;
    /// select() and poll() (pollwake()) always passed it on.
    pub fn epoll_sync_wakeup(&self) -> bool {
        self.version >= (6, 13)
    }

    /// `pipe_read()` and `pipe_write()` wait exclusively, readers and writers
    /// on queues of their own: v5.5+ (0ddad21d3e99 "pipe: use exclusive waits
    /// when reading or writing", after the head/tail ring of 8cefc107ca54). A
    /// page released from full slots then wakes one writer, and a writer back
    /// from its wait wakes the next while a slot is free. Before it both
    /// slept on one `pipe->wait`, non-exclusive: every page release woke
    /// every waiting writer, and all but the first found the slots full again.
    pub fn pipe_exclusive_waits(&self) -> bool {
        self.version >= (5, 5)
    }

    /// `pipe_read()` wakes a writer only when the read released a page of a
    /// pipe whose slots were all taken: v6.14+ (aaec5a95d596 "pipe_read:
    /// don't wake up the writer if the pipe is still full"). From v5.5
    /// (f467a6a66419 "pipe: fix and clarify pipe read wakeup logic") to v6.13
    /// the test was `was_full`, taken before the read: every read of a full
    /// pipe woke one exclusive writer, which found the slots still full
    /// unless that read emptied the tail page, and went back to sleep at the
    /// tail of the queue. Before v5.5 a released page woke the writers
    /// (`do_wakeup`), as from v6.14.
    /// `--patch pipe-read-on-release` applies the commit to v5.5-v6.13,
    /// `--patch pipe-read-was-full` reverts it from v6.14+.
    pub fn pipe_read_wakes_on_release(&self) -> bool {
        if self.version < (5, 5) {
            return true;
        }
        if self.version >= (6, 14) {
            !self.has_patch(Patch::PipeReadWasFull)
        } else {
            self.has_patch(Patch::PipeReadOnRelease)
        }
    }

    /// update_cfs_group() leaves the weight of a group whose cfs_rq is empty
    /// alone, so that a delayed group entity burns off its lag at the weight
    /// it had: v6.13+ (66951e4860d3 "sched/fair: Fix update_cfs_group() vs
    /// DELAY_DEQUEUE"). Before it, such a group was reweighted down to
    /// MIN_SHARES.
    pub fn empty_group_keeps_weight(&self) -> bool {
        self.pick == PickAlgo::Eevdf && self.version >= (6, 13)
    }

    /// Whether this kernel has the 6.18.y stable change that first shipped
    /// in 6.18.`level` (`--patch stable-6.18.44` carries 6.18.1 to 6.18.44).
    pub fn stable_6_18(&self, level: u32) -> bool {
        self.version == (6, 18) && level <= 44 && self.has_patch(Patch::Stable6_18_44)
    }

    /// The EEVDF rules this kernel runs where releases differ (`schedlab
    /// kernel show`): slice protection, PREEMPT_SHORT, update_curr()'s
    /// reschedule, the wakeup pick, the lag clamp, the buddy at pick and the
    /// delayed-dequeue accounting. Empty for CFS kernels.
    pub fn eevdf_rules(&self) -> Vec<(&'static str, &'static str)> {
        if self.pick != PickAlgo::Eevdf {
            return Vec::new();
        }
        let v617 = self.version >= (6, 17);
        let s33 = self.stable_6_18(33);
        let mut v = vec![
            (
                "slice protection",
                if v617 {
                    "vprot set at pick: the deadline, or vruntime + the smallest queued slice if shorter (NO_RUN_TO_PARITY: + 0.70 ms); protected while vruntime < vprot (v6.17+)"
                } else {
                    "the deadline stashed at pick; protected while it is still the deadline (v6.6-v6.16)"
                },
            ),
            (
                "PREEMPT_SHORT",
                if v617 {
                    "a shorter-slice wakee: pick without curr's protection, cancel it only if the wakee wins, else tighten it to vruntime + smallest slice (v6.17+)"
                } else if self.version >= (6, 12) {
                    "a shorter-slice eligible wakee with an earlier deadline (or curr ineligible) cancels curr's protection before the pick, win or lose (v6.12-v6.16)"
                } else {
                    "none (PREEMPT_SHORT came with v6.12)"
                },
            ),
            (
                "update_curr reschedule",
                if v617 {
                    "deadline reached, or protection ended (v6.17+)"
                } else if self.version >= (6, 12) {
                    "deadline reached, or protection cancelled and curr ineligible (v6.12-v6.16)"
                } else {
                    "deadline reached (v6.6-v6.11)"
                },
            ),
            (
                "wakeup pick",
                if s33 {
                    "WF_FORK and still-delayed wakees never preempt; pick_next_entity() repeated, dequeuing the delayed sleepers it returns; PICK_BUDDY inside the pick; the wakee preempts iff it is the pick; update_protect_slice() after every non-preempting wakeup (6.18.33+)"
                } else {
                    "one pick_eevdf(); the wakee preempts iff it is the pick, a delayed sleeper picked counts as another task (v6.6-6.18.32)"
                },
            ),
            (
                "lag clamp",
                if self.stable_6_18(17) {
                    "largest slice on the cfs_rq + TICK_NSEC (6.18.17+)"
                } else {
                    "max(2 * slice, TICK_NSEC) (v6.6-6.18.16)"
                },
            ),
            (
                "buddy at pick",
                if self.version >= (6, 14) {
                    "cfs_rq->next if eligible, under PICK_BUDDY (v6.14+)"
                } else {
                    "cfs_rq->next if eligible, under NEXT_BUDDY (v6.6-v6.13)"
                },
            ),
        ];
        if self.features.has(DELAY_DEQUEUE) || self.version >= (6, 12) {
            v.push((
                "delayed-dequeue accounting",
                if self.delayed_accounting() {
                    "delayed sleepers are not runnable: PELT runnable, balancer counts, wake_affine_idle(); moved for load only (v6.14-v6.16)"
                } else {
                    "delayed sleepers count as runnable everywhere (v6.12.0)"
                },
            ));
        }
        v
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

/// Where each algorithm variant, version-gated behaviour and feature bit a
/// profile can carry came from: (item, first release that has it, commit).
/// Releases are (major, minor, patch-level of 2.6.x). `profile_items()` lists
/// what a profile uses; the test `no_profile_carries_a_later_change` checks
/// every profile against this table.
pub const INTRODUCED: &[(&str, (u32, u32, u32), &str)] = &[
    ("wake_wide=V3_12", (3, 12, 0), "62470419e993 + 7d9ffa896148"),
    ("wake_wide=V4_5", (4, 5, 0), "63b0e9edceec"),
    ("wake_affine=LoadIdx", (2, 6, 0), "(CFS, v2.6.23)"),
    ("wake_affine=V4_14", (4, 14, 0), "(Peter Zijlstra 2017: WA_IDLE/WA_WEIGHT/WA_BIAS)"),
    ("wake_affine=V5_11", (5, 11, 0), "d8fcb81f1acf (wake_affine_idle(): prev idle)"),
    ("wake_load=Instant", (2, 6, 0), "(rq->load.weight)"),
    ("wake_load=RunnableAvg", (3, 11, 0), "b92486cbf2aa + a003a25b227d"),
    ("wake_load=LoadAvg", (5, 7, 0), "0dacee1bfa70 (runnable_load_avg removed)"),
    ("sis=V2_6_38", (2, 6, 33), "(select_idle_sibling(), v2.6.33)"),
    ("sis=V3_10", (3, 9, 0), "e0a79f529d5b (idle cache-affine prev; idle-group walk from sd_llc)"),
    ("sis=V5_2", (4, 9, 0), "10e2f1acd010 (select_idle_core/cpu/smt)"),
    ("sis=V5_12", (5, 12, 0), "9fe1f127b913"),
    ("sis=V5_13", (5, 13, 0), "c722f35b513f"),
    ("select_shape=FastPath", (4, 14, 0), "(select_idle_sibling() for every wakeup)"),
    ("recent_used=V5_2", (4, 16, 0), "32e839dda3ba"),
    ("recent_used=V5_13", (5, 15, 0), "89aafd67f28c"),
    ("ttwu_queue=CrossLlc", (3, 0, 0), "317f394160e9"),
    ("ttwu_queue=IdleTarget", (6, 0, 0), "f3dd3f674555"),
    ("sis_scan_from_next", (5, 15, 0), "56498cfb045d"),
    ("sis_cluster_first", (6, 8, 0), "\"sched/fair: Scan cluster before scanning LLC in wake-up path\""),
    ("lb=LoadIdx", (2, 6, 37), "(v2.6.37 find_busiest_group(): capacity, idle-CPU test)"),
    ("lb=GroupTypes", (5, 5, 0), "0b0695f2b34a (load balance rework)"),
    ("numa=V4_19", (4, 19, 0), "a4739eca4456 (rq->numa_migrate_on) on the v3.13+ task_numa_migrate()"),
    ("numa=V5_7", (5, 7, 0), "fb86f5b21192 (NUMA balancing reconciled with the load balancer)"),
    ("find_idlest=LoadBased", (2, 6, 23), "(CFS find_idlest_group())"),
    ("find_idlest=GroupType", (5, 5, 0), "57abff067a08"),
    ("sd_init=V4", (3, 16, 0), "143e1e28cb40 (sd_init())"),
    ("sd_init=V5_10", (5, 10, 0), "2208cdaa56c9 / 6e7499135db7 (imbalance_pct 117, busy_factor 16)"),
    ("pick=Eevdf", (6, 6, 0), "147f3efaa241"),
    ("fork_placement=EevdfWakeUpNew", (6, 12, 0), "(v6.12: new tasks placed at wake_up_new_task() with ENQUEUE_INITIAL)"),
    ("has_cluster_level", (5, 16, 0), "778c558f49a2"),
    ("next_buddy_hint", (2, 6, 39), "2f36825b176f (seed 002)"),
    ("amd_reclaim_distance_32", (5, 4, 0), "a55c7454a8c8"),
    ("TTWU_QUEUE", (3, 0, 0), "317f394160e9"),
    ("WA_IDLE", (4, 14, 0), "(WA_IDLE)"),
    ("WA_WEIGHT", (4, 14, 0), "(WA_WEIGHT)"),
    ("WA_BIAS", (4, 14, 0), "(WA_BIAS)"),
    ("SIS_AVG_CPU", (4, 13, 0), "1ad3aaf3fcd2"),
    ("SIS_PROP", (4, 13, 0), "1ad3aaf3fcd2"),
    ("SIS_UTIL", (6, 0, 0), "70fb5ccf2ebb"),
    ("UTIL_EST", (4, 17, 0), "7f65ea42eb00"),
    ("UTIL_EST_FASTUP", (5, 5, 0), "(util_est faster ramp-up EWMA)"),
    ("ALT_PERIOD", (5, 13, 0), "0c2de3f054a5"),
    ("BASE_SLICE", (5, 13, 0), "0c2de3f054a5"),
    ("PLACE_LAG", (6, 6, 0), "86bfbb7ce4f6"),
    ("PLACE_DEADLINE_INITIAL", (6, 6, 0), "147f3efaa241"),
    ("RUN_TO_PARITY", (6, 6, 0), "63304558ba5d"),
    ("PLACE_REL_DEADLINE", (6, 12, 0), "82e9d0456e06"),
    ("PREEMPT_SHORT", (6, 12, 0), "85e511df3cec"),
    ("DELAY_DEQUEUE", (6, 12, 0), "152e11f6df29"),
    ("DELAY_ZERO", (6, 12, 0), "54a58a787791"),
    ("PICK_BUDDY", (6, 14, 0), "2a77e4be12cb (\"sched/fair: Untangle NEXT_BUDDY and pick_next_task()\")"),
    ("base_slice=0.70ms", (6, 15, 0), "2ae891b82695 (\"sched: Reduce the default slice to avoid tasks getting an extra tick\")"),
    ("delayed_accounting", (6, 16, 0), "\"sched/eevdf: More PELT vs DELAYED_DEQUEUE\" + 61b82dfb6b7e (v6.14), aa3ee4f0b754 (v6.16)"),
    ("tg_load_avg_ratelimit", (6, 7, 0), "1528c661c24b (\"sched/fair: Ratelimit update to tg->load_avg\")"),
    ("pipe_exclusive_waits", (5, 5, 0), "0ddad21d3e99 (\"pipe: use exclusive waits when reading or writing\")"),
    ("pipe_read_wakes_on_release", (6, 14, 0), "aaec5a95d596 (\"pipe_read: don't wake up the writer if the pipe is still full\"); v5.5-v6.13 woke one on every read of a full pipe (f467a6a66419)"),
    ("empty_group_keeps_weight", (6, 13, 0), "66951e4860d3 (\"sched/fair: Fix update_cfs_group() vs DELAY_DEQUEUE\")"),
    ("epoll_sync_wakeup", (6, 13, 0), "900bbaae67e9 (\"epoll: Add synchronous wakeup support for ep_poll_callback\")"),
    ("run_to_parity_vprot", (6, 17, 0), "9cdb4fe20cd2, 74eec63661d4, 9de74a9850b9, 052c3d87c82e, 3a0baa8e6c57, 0b9ca2dcabc3"),
    ("SIS_SHORT", (99, 0, 0), "never merged (shortrun RFC)"),
    ("NEXT_BUDDY", (2, 6, 31), "(NEXT_BUDDY)"),
    ("LAST_BUDDY", (2, 6, 31), "(LAST_BUDDY)"),
    ("CACHE_HOT_BUDDY", (2, 6, 30), "(CACHE_HOT_BUDDY)"),
    ("GENTLE_FAIR_SLEEPERS", (2, 6, 32), "(GENTLE_FAIR_SLEEPERS)"),
    ("START_DEBIT", (2, 6, 23), "(CFS)"),
    ("WAKEUP_PREEMPTION", (2, 6, 23), "(CFS)"),
];

impl KernelProfile {
    /// The release this profile is, as (major, minor, 2.6.x patch level).
    pub fn release(&self) -> (u32, u32, u32) {
        match self.version {
            (2, 6) => (2, 6, 38),
            (a, b) => (a, b, 0),
        }
    }

    /// Every variant, version-gated behaviour and enabled feature bit this
    /// profile uses, as keys of [`INTRODUCED`].
    pub fn profile_items(&self) -> Vec<String> {
        let mut v = vec![
            format!("wake_affine={:?}", self.wake_affine),
            format!("wake_load={:?}", self.wake_load),
            format!("sis={:?}", self.sis),
            format!("lb={:?}", self.lb),
            format!("find_idlest={:?}", self.find_idlest),
        ];
        if self.numa != NumaVariant::None {
            v.push(format!("numa={:?}", self.numa));
        }
        if self.wake_wide != WakeWideVariant::None {
            v.push(format!("wake_wide={:?}", self.wake_wide));
        }
        if self.select_shape == SelectShape::FastPath {
            v.push("select_shape=FastPath".into());
        }
        if self.recent_used != RecentUsedVariant::None {
            v.push(format!("recent_used={:?}", self.recent_used));
        }
        if self.ttwu_queue != TtwuQueueVariant::None {
            v.push(format!("ttwu_queue={:?}", self.ttwu_queue));
        }
        if self.sd_init != SdInitVariant::V3 {
            v.push(format!("sd_init={:?}", self.sd_init));
        }
        if self.pick == PickAlgo::Eevdf {
            v.push("pick=Eevdf".into());
        }
        if self.fork_placement == ForkPlacement::EevdfWakeUpNew {
            v.push("fork_placement=EevdfWakeUpNew".into());
        }
        if self.pick == PickAlgo::Eevdf && self.tunables.base_slice_ns == 700_000 {
            v.push("base_slice=0.70ms".into());
        }
        if self.delayed_accounting() {
            v.push("delayed_accounting".into());
        }
        if self.pick == PickAlgo::Eevdf && self.version >= (6, 17) {
            v.push("run_to_parity_vprot".into());
        }
        if self.version >= (6, 7) {
            v.push("tg_load_avg_ratelimit".into());
        }
        if self.pipe_exclusive_waits() {
            v.push("pipe_exclusive_waits".into());
        }
        if self.version >= (6, 14) && self.pipe_read_wakes_on_release() {
            v.push("pipe_read_wakes_on_release".into());
        }
        if self.epoll_sync_wakeup() {
            v.push("epoll_sync_wakeup".into());
        }
        if self.empty_group_keeps_weight() {
            v.push("empty_group_keeps_weight".into());
        }
        for (flag, on) in [
            ("sis_scan_from_next", self.sis_scan_from_next),
            ("sis_cluster_first", self.sis_cluster_first),
            ("has_cluster_level", self.has_cluster_level),
            ("next_buddy_hint", self.next_buddy_hint),
            ("amd_reclaim_distance_32", self.tunables.amd_reclaim_distance_32),
        ] {
            if on {
                v.push(flag.into());
            }
        }
        for f in SchedFeat::ALL {
            if self.features.has(*f) {
                v.push(f.name().into());
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A profile named after a release contains nothing from a later one: every
    // variant and enabled feature bit was in that release (INTRODUCED table).
    #[test]
    fn no_profile_carries_a_later_change() {
        for p in profiles() {
            for item in p.profile_items() {
                let Some((_, rel, commit)) = INTRODUCED.iter().find(|(k, ..)| *k == item) else {
                    panic!("{}: {item} has no entry in INTRODUCED", p.name);
                };
                assert!(*rel <= p.release(), "{} carries {item}, introduced in {rel:?} by {commit}", p.name);
            }
        }
        // The check can fail: the old v3.11 (v3.10 + wakee-flips) carried v3.12 code.
        let old = profile("v3.11").unwrap();
        let rel = INTRODUCED.iter().find(|(k, ..)| *k == "wake_wide=V3_12").unwrap().1;
        assert!(old.profile_items().contains(&"wake_wide=V3_12".to_string()) && rel > old.release());
        assert!(old.has_patch(Patch::WakeeFlips));
        assert!(deprecation_note("v3.11").unwrap().contains("--patch wakee-flips"));
        assert!(deprecation_note("v3.10").is_none());
    }

    // The seed-000 overlays apply only to their v3.10 base.
    #[test]
    fn v3_overlays_need_v3_10() {
        let mut p = profile("v3.10").unwrap();
        p.apply_patches("runnable-load,wakee-flips").unwrap();
        assert_eq!((p.wake_load, p.wake_wide), (WakeLoad::RunnableAvg, WakeWideVariant::V3_12));
        assert_eq!(profile("v3.10").unwrap().wake_load, WakeLoad::Instant);
        assert!(profile("v5.11").unwrap().apply_patches("wakee-flips").unwrap_err().contains("v3.10"));
    }
    // pipe_read()'s writer wakeup by release (aaec5a95d596, v6.14): the
    // pre-v5.5 queue wakes on a released page, v5.5-v6.13 on every read of a
    // full pipe; the commit applies to v5.5-v6.13 and reverts from v6.14+.
    #[test]
    fn pipe_read_wakeup_follows_the_release_and_its_overlays() {
        let on = |name: &str, patches: &str| {
            let mut p = profile(name).unwrap();
            p.apply_patches(patches).map(|_| p.pipe_read_wakes_on_release())
        };
        assert_eq!(on("v5.2", ""), Ok(true));
        assert_eq!(on("v5.11", ""), Ok(false));
        assert_eq!(on("v6.12", ""), Ok(false));
        assert_eq!(on("v6.18", ""), Ok(true));
        assert_eq!(on("v6.12", "pipe-read-on-release"), Ok(true));
        assert_eq!(on("v6.18", "pipe-read-was-full"), Ok(false));
        assert!(on("v6.18", "pipe-read-on-release").unwrap_err().contains("already has it"));
        assert!(on("v5.2", "pipe-read-on-release").unwrap_err().contains("v5.5-v6.13"));
        assert!(on("v6.12", "pipe-read-was-full").unwrap_err().contains("does not have it"));
    }
    #[test]
    fn lookup_and_factor() {
        assert_eq!(profile("6.6").unwrap().pick, PickAlgo::Eevdf);
        assert_eq!(profile("v3.10").unwrap().pick, PickAlgo::Cfs);
        assert!(profile("v9.9").unwrap_err().contains("v6.12"));
        // get_update_sysctl_factor() (SCHED_TUNABLESCALING_LOG): 1 CPU:1, 2:2, 4:3, >=8:4
        assert_eq!([1, 2, 4, 8, 256].map(KernelProfile::tunable_factor), [1, 2, 3, 4, 4]);
        let t = EffectiveTunables::new(&profile("v6.6").unwrap(), 256);
        assert_eq!(t.base_slice_ns, 3_000_000);
        assert_eq!(t.nr_latency, 8);
    }
    // v6.18 as tagged: the v6.15 slice, PICK_BUDDY, the v6.14-v6.16
    // delayed-dequeue accounting; stable-6.18.44 goes on v6.18 only, and
    // delayed-accounting (already in v6.18) on v6.12 only.
    #[test]
    fn v6_18_and_its_stable_overlay() {
        let p = profile("v6.18").unwrap();
        assert_eq!((p.version, p.tunables.base_slice_ns), ((6, 18), 700_000));
        assert!(p.features.has(PICK_BUDDY) && !p.features.has(NEXT_BUDDY) && p.has_feature_bit(PICK_BUDDY));
        assert!(p.delayed_accounting() && !profile("v6.12").unwrap().delayed_accounting());
        assert!(p.patches.is_empty() && !p.stable_6_18(17));
        assert_eq!(profile("v6.12").unwrap().tunables.base_slice_ns, 750_000);
        let e = profile("v6.12").unwrap().apply_patches("stable-6.18.44").unwrap_err();
        assert!(e.contains("applies to v6.18") && e.contains("v6.12"), "{e}");
        let e = p.clone().apply_patches("delayed-accounting").unwrap_err();
        assert!(e.contains("already has it"), "{e}");
        let mut s = p.clone();
        s.apply_patches("stable-6.18.44").unwrap();
        assert!(s.stable_6_18(17) && s.stable_6_18(33) && !s.stable_6_18(45));
        let rules = |k: &KernelProfile| k.eevdf_rules().into_iter().map(|(n, r)| format!("{n}: {r}")).collect::<Vec<_>>().join("\n");
        assert!(rules(&s).contains("6.18.33+") && rules(&s).contains("6.18.17+") && !rules(&p).contains("6.18.33+"));
        assert!(rules(&p).contains("v6.17+") && !rules(&profile("v6.12").unwrap()).contains("v6.17+"));
        assert!(profile("v3.10").unwrap().eevdf_rules().is_empty());
    }

    #[test]
    fn v6_12_has_delayed_dequeue_v6_6_not() {
        assert!(profile("v6.12").unwrap().features.has(DELAY_DEQUEUE));
        assert!(!profile("v6.6").unwrap().features.has(DELAY_DEQUEUE));
    }
}

/// One difference between two profiles: a feature bit, or one algorithm
/// variant / setting (issue 20, `schedlab bisect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aspect {
    Feature(SchedFeat),
    Tunables,
    Pick,
    SdInit,
    FindIdlest,
    ForkPlacement,
    LevelNames,
    ClusterLevel,
    WakeWide,
    WakeAffine,
    WakeLoad,
    Sis,
    SelectShape,
    RecentUsed,
    TtwuQueue,
    SisScanFromNext,
    SisClusterFirst,
    Lb,
    Numa,
    NextBuddyHint,
    Patches,
    /// The code the model gates on the release number (`profile.version`
    /// comparisons: fixes and changes that have no variant of their own).
    Version,
}

/// A difference of `to` from `from`, with both values in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    pub aspect: Aspect,
    pub name: String,
    pub from: String,
    pub to: String,
}

impl Difference {
    /// `wake_affine: V4_14 -> V5_11`
    pub fn describe(&self) -> String {
        format!("{}: {} -> {}", self.name, self.from, self.to)
    }
}

impl KernelProfile {
    /// Every way `to` differs from `self`, feature bits one by one; applying
    /// all of them to `self` (`apply_difference`) gives `to`'s behaviour.
    pub fn differences(&self, to: &KernelProfile) -> Vec<Difference> {
        let mut out = Vec::new();
        for &f in SchedFeat::ALL {
            let (a, b) = (self.features.has(f), to.features.has(f));
            if a != b {
                let on = |x: bool| if x { "on" } else { "off" }.to_string();
                out.push(Difference { aspect: Aspect::Feature(f), name: format!("feature {}", f.name()), from: on(a), to: on(b) });
            }
        }
        macro_rules! field {
            ($aspect:expr, $name:expr, $f:ident) => {
                if self.$f != to.$f {
                    out.push(Difference {
                        aspect: $aspect,
                        name: $name.into(),
                        from: format!("{:?}", self.$f),
                        to: format!("{:?}", to.$f),
                    });
                }
            };
        }
        field!(Aspect::Tunables, "tunables", tunables);
        field!(Aspect::Pick, "pick", pick);
        field!(Aspect::SdInit, "sd_init", sd_init);
        field!(Aspect::FindIdlest, "find_idlest_group", find_idlest);
        field!(Aspect::ForkPlacement, "fork placement", fork_placement);
        field!(Aspect::LevelNames, "level names", level_names);
        field!(Aspect::ClusterLevel, "cluster level", has_cluster_level);
        field!(Aspect::WakeWide, "wake_wide", wake_wide);
        field!(Aspect::WakeAffine, "wake_affine", wake_affine);
        field!(Aspect::WakeLoad, "wake load", wake_load);
        field!(Aspect::Sis, "select_idle_sibling", sis);
        field!(Aspect::SelectShape, "select_task_rq_fair shape", select_shape);
        field!(Aspect::RecentUsed, "recent_used_cpu", recent_used);
        field!(Aspect::TtwuQueue, "ttwu_queue_cond", ttwu_queue);
        field!(Aspect::SisScanFromNext, "select_idle_cpu scan from target+1", sis_scan_from_next);
        field!(Aspect::SisClusterFirst, "select_idle_cpu cluster first", sis_cluster_first);
        field!(Aspect::Lb, "load balancer", lb);
        field!(Aspect::Numa, "NUMA balancing placement", numa);
        field!(Aspect::NextBuddyHint, "next-buddy hint", next_buddy_hint);
        field!(Aspect::Patches, "patches", patches);
        if self.version != to.version {
            out.push(Difference {
                aspect: Aspect::Version,
                name: "version-gated code".into(),
                from: format!("{}.{}", self.version.0, self.version.1),
                to: format!("{}.{}", to.version.0, to.version.1),
            });
        }
        out
    }

    /// Take one difference (`aspect`) from `to`, leaving everything else as it is.
    pub fn apply_difference(&mut self, to: &KernelProfile, aspect: Aspect) {
        match aspect {
            Aspect::Feature(f) => self.features.set(f, to.features.has(f)),
            Aspect::Tunables => self.tunables = to.tunables,
            Aspect::Pick => self.pick = to.pick,
            Aspect::SdInit => self.sd_init = to.sd_init,
            Aspect::FindIdlest => self.find_idlest = to.find_idlest,
            Aspect::ForkPlacement => self.fork_placement = to.fork_placement,
            Aspect::LevelNames => self.level_names = to.level_names,
            Aspect::ClusterLevel => self.has_cluster_level = to.has_cluster_level,
            Aspect::WakeWide => self.wake_wide = to.wake_wide,
            Aspect::WakeAffine => self.wake_affine = to.wake_affine,
            Aspect::WakeLoad => self.wake_load = to.wake_load,
            Aspect::Sis => self.sis = to.sis,
            Aspect::SelectShape => self.select_shape = to.select_shape,
            Aspect::RecentUsed => self.recent_used = to.recent_used,
            Aspect::TtwuQueue => self.ttwu_queue = to.ttwu_queue,
            Aspect::SisScanFromNext => self.sis_scan_from_next = to.sis_scan_from_next,
            Aspect::SisClusterFirst => self.sis_cluster_first = to.sis_cluster_first,
            Aspect::Lb => self.lb = to.lb,
            Aspect::Numa => self.numa = to.numa,
            Aspect::NextBuddyHint => self.next_buddy_hint = to.next_buddy_hint,
            Aspect::Patches => self.patches = to.patches.clone(),
            Aspect::Version => self.version = to.version,
        }
    }
}

#[cfg(test)]
mod difference_tests {
    use super::*;

    // Applying every difference of v5.13 from v5.11 to v5.11 gives v5.13's
    // behaviour (every field but the names); v5.12 -> v5.13 is the
    // select_idle_sibling variant, two feature bits and the version gates.
    #[test]
    fn differences_rebuild_the_target() {
        let (a, b) = (profile("v5.11").unwrap(), profile("v5.13").unwrap());
        let mut x = a.clone();
        for d in a.differences(&b) {
            x.apply_difference(&b, d.aspect);
        }
        assert!(x.differences(&b).is_empty());
        let (a, b) = (profile("v5.12").unwrap(), profile("v5.13").unwrap());
        let names: Vec<String> = a.differences(&b).iter().map(|d| d.describe()).collect();
        assert_eq!(
            names,
            [
                "feature ALT_PERIOD: off -> on",
                "feature BASE_SLICE: off -> on",
                "select_idle_sibling: V5_12 -> V5_13",
                "version-gated code: 5.12 -> 5.13"
            ]
        );
        let mut one = a.clone();
        one.apply_difference(&b, Aspect::Sis);
        assert_eq!(one.sis, SisVariant::V5_13);
        assert_eq!(one.version, (5, 12), "one difference only");
        assert_eq!(one.differences(&b).len(), 3);
    }
}
