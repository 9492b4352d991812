//! Decision records: why every wakeup landed where it did and what every
//! balance attempt did (issue 20).
//!
//! The kernel has no tracepoint for the reason of a placement; the model can
//! say exactly which clause of `select_task_rq_fair()`, `wake_affine()`,
//! `select_idle_sibling()` and `sched_balance_rq()` decided. The hooks in
//! those functions fill one fixed-size, `Copy` record per try_to_wake_up /
//! wake_up_new_task and per balance attempt; nothing is allocated per record
//! unless a log was asked for (`Explain::log`, for `--trace`).
//!
//! Off (`Kernel::explain == None`) every hook is one branch on that Option:
//! no decision reads a record, so outputs are byte-identical either way.
//!
//! The select_idle_sibling efficiency counters follow Mel Gorman's schedstat
//! patch "sched/fair: Track efficiency of select_idle_sibling" (posted 2021,
//! never merged): `sis_search` per call, `sis_scanned` 1 for the fast checks
//! (target, prev, recent) plus one per runqueue examined by a domain scan
//! (select_idle_core/cpu/smt, the CPU at which the budget runs out
//! included), `sis_domain_search` per call that reached the LLC scan,
//! `sis_failed` per call that returned target after it. The derived figures
//! are those of Chen Yu's SIS_UTIL postings (schedstat_parse.py).

use crate::core::Kernel;
use crate::sched::TaskId;
use schedlab_topology::CpuId;
use std::cell::Cell;

/// Level slots kept per counter (domain levels bottom-up; deeper levels are
/// folded into the last slot).
pub const MAX_LEVELS: usize = 8;

/// No domain level (wake_affine not asked, balance not at a level, ...).
pub const NO_LEVEL: u8 = u8::MAX;

/// What kind of placement a wake record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WakeKind {
    #[default]
    Wakeup,
    Fork,
}

/// The rule that decided a placement (one per record; these partition the wakeups).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, PartialOrd, Ord)]
pub enum Path {
    /// `ttwu_runnable()`: a v6.12 delayed-dequeue sleeper still queued, requeued in place.
    DelayedRequeue,
    /// `select_task_rq()`: affinity to one CPU, no selection.
    Pinned,
    /// `find_idlest_cpu()` slow path (fork/exec, SD_BALANCE_WAKE).
    SlowPath,
    /// v3.x affine_sd shape with no affine domain: prev_cpu without idle search.
    PrevNoSearch,
    /// `select_idle_sibling()`: target (this_cpu or prev after wake_affine) idle.
    TargetIdle,
    /// `select_idle_sibling()`: prev idle (shares the target's LLC).
    PrevIdle,
    /// `select_idle_sibling()`: p->recent_used_cpu idle (v4.16+).
    RecentUsed,
    /// `select_idle_smt(p, prev)` (v5.13+): an idle SMT sibling of prev.
    SmtPrev,
    /// An idle core found by the LLC scan (`select_idle_core()`).
    IdleCore,
    /// An idle CPU found by the LLC scan (`select_idle_cpu()`).
    IdleCpu,
    /// v5.2-v5.11 `select_idle_smt(p, target)` after a failed scan.
    SmtTarget,
    /// Chen Yu's short-task RFC: stacked on a short-running target.
    ShortRfc,
    /// v3.10 `select_idle_sibling()`: a fully idle group below sd_llc.
    IdleGroup,
    /// v2.6.38 `select_idle_sibling()`: first idle CPU walking up the cache domains.
    DomainWalk,
    /// No idle CPU found (or no LLC domain): target.
    #[default]
    Fallback,
}

impl Path {
    pub const ALL: [Path; 15] = [
        Path::DelayedRequeue,
        Path::Pinned,
        Path::SlowPath,
        Path::PrevNoSearch,
        Path::TargetIdle,
        Path::PrevIdle,
        Path::RecentUsed,
        Path::SmtPrev,
        Path::IdleCore,
        Path::IdleCpu,
        Path::SmtTarget,
        Path::ShortRfc,
        Path::IdleGroup,
        Path::DomainWalk,
        Path::Fallback,
    ];
    /// Short stable name (JSON keys, table rows).
    pub fn name(self) -> &'static str {
        match self {
            Path::DelayedRequeue => "delayed-requeue",
            Path::Pinned => "pinned",
            Path::SlowPath => "slow-path",
            Path::PrevNoSearch => "prev-no-search",
            Path::TargetIdle => "target-idle",
            Path::PrevIdle => "prev-idle",
            Path::RecentUsed => "recent-used",
            Path::SmtPrev => "smt-prev",
            Path::IdleCore => "idle-core-scan",
            Path::IdleCpu => "idle-cpu-scan",
            Path::SmtTarget => "smt-target",
            Path::ShortRfc => "short-rfc",
            Path::IdleGroup => "idle-group",
            Path::DomainWalk => "domain-walk",
            Path::Fallback => "none-target",
        }
    }
    /// The kernel rule, in words.
    pub fn rule(self) -> &'static str {
        match self {
            Path::DelayedRequeue => "ttwu_runnable(): delayed task requeued in place",
            Path::Pinned => "select_task_rq(): single-CPU affinity",
            Path::SlowPath => "find_idlest_cpu() slow path",
            Path::PrevNoSearch => "no affine domain: prev_cpu, no idle search",
            Path::TargetIdle => "select_idle_sibling(): target idle",
            Path::PrevIdle => "select_idle_sibling(): prev idle",
            Path::RecentUsed => "select_idle_sibling(): recent_used_cpu idle",
            Path::SmtPrev => "select_idle_smt(prev): idle sibling of prev",
            Path::IdleCore => "select_idle_core(): idle core by scan",
            Path::IdleCpu => "select_idle_cpu(): idle CPU by scan",
            Path::SmtTarget => "select_idle_smt(target) after the scan",
            Path::ShortRfc => "short-task RFC: stacked on a short target",
            Path::IdleGroup => "v3.10 idle group below sd_llc",
            Path::DomainWalk => "v2.6.38 idle CPU walking the cache domains",
            Path::Fallback => "nothing idle found: target",
        }
    }
}

/// The clause of `wake_affine()` that decided (or why it was not asked).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, PartialOrd, Ord)]
pub enum AffineRule {
    /// Not asked: fork/exec, wake_wide(), no SD_WAKE_AFFINE domain spanning prev.
    #[default]
    NotAsked,
    /// this_cpu == prev_cpu: nothing to decide.
    SameCpu,
    /// wake_affine_idle(): this_cpu idle and cache-affine; prev idle too -> prev.
    IdleThisPrevIdle,
    /// wake_affine_idle(): this_cpu idle and cache-affine -> this.
    IdleThis,
    /// wake_affine_idle(): sync wakeup, the waker is this CPU's only task -> this.
    SyncOneTask,
    /// Short-task RFC clause of wake_affine_idle() -> this.
    ShortRfc,
    /// wake_affine_idle() v5.11+: prev idle -> prev.
    PrevIdle,
    /// wake_affine_weight(): sync and the waker's load exceeds this CPU's -> this.
    WeightSyncHeavy,
    /// wake_affine_weight(): this side lighter -> this.
    WeightPull,
    /// wake_affine_weight(): prev side lighter or equal -> prev.
    WeightKeep,
    /// WA_IDLE and WA_WEIGHT both off (or idle clauses silent with WA_WEIGHT off) -> prev.
    NoClause,
    /// v3.12-v4.4: wake_wide() inside wake_affine() -> prev.
    OldWide,
    /// Pre-v4.14 wake_affine(): sync and balanced -> this.
    OldSyncBalanced,
    /// Pre-v4.14: balanced within imbalance_pct/2 -> this.
    OldBalanced,
    /// Pre-v4.14: this CPU lightly loaded (below tl_per_task) -> this.
    OldLightThis,
    /// Pre-v4.14: neither -> prev.
    OldKeep,
}

impl AffineRule {
    pub const ALL: [AffineRule; 16] = [
        AffineRule::NotAsked,
        AffineRule::SameCpu,
        AffineRule::IdleThisPrevIdle,
        AffineRule::IdleThis,
        AffineRule::SyncOneTask,
        AffineRule::ShortRfc,
        AffineRule::PrevIdle,
        AffineRule::WeightSyncHeavy,
        AffineRule::WeightPull,
        AffineRule::WeightKeep,
        AffineRule::NoClause,
        AffineRule::OldWide,
        AffineRule::OldSyncBalanced,
        AffineRule::OldBalanced,
        AffineRule::OldLightThis,
        AffineRule::OldKeep,
    ];
    pub fn name(self) -> &'static str {
        match self {
            AffineRule::NotAsked => "not-asked",
            AffineRule::SameCpu => "same-cpu",
            AffineRule::IdleThisPrevIdle => "this-idle-prev-idle",
            AffineRule::IdleThis => "this-idle",
            AffineRule::SyncOneTask => "sync-one-task",
            AffineRule::ShortRfc => "short-rfc",
            AffineRule::PrevIdle => "prev-idle",
            AffineRule::WeightSyncHeavy => "wa-weight-sync-waker-heavy",
            AffineRule::WeightPull => "wa-weight-pull",
            AffineRule::WeightKeep => "wa-weight-keep",
            AffineRule::NoClause => "no-clause",
            AffineRule::OldWide => "wake-wide",
            AffineRule::OldSyncBalanced => "old-sync-balanced",
            AffineRule::OldBalanced => "old-balanced",
            AffineRule::OldLightThis => "old-this-light",
            AffineRule::OldKeep => "old-keep",
        }
    }
    /// Whether this clause pulls the wakee to this_cpu.
    pub fn pulls(self) -> bool {
        matches!(
            self,
            AffineRule::IdleThis
                | AffineRule::SyncOneTask
                | AffineRule::ShortRfc
                | AffineRule::WeightSyncHeavy
                | AffineRule::WeightPull
                | AffineRule::OldSyncBalanced
                | AffineRule::OldBalanced
                | AffineRule::OldLightThis
        )
    }
}

/// Which budget limited `select_idle_cpu()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Budget {
    /// No domain scan, or a scan without a budget (core scan, SIS_PROP off).
    #[default]
    None,
    SisProp,
    SisUtil,
}

impl Budget {
    pub fn name(self) -> &'static str {
        match self {
            Budget::None => "none",
            Budget::SisProp => "SIS_PROP",
            Budget::SisUtil => "SIS_UTIL",
        }
    }
}

/// How a domain scan ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ScanEnd {
    #[default]
    NotScanned,
    Found,
    /// `if (!--nr) return -1`: the budget ran out.
    BudgetOut,
    /// Covered every allowed CPU of the LLC, none idle.
    Exhausted,
    /// SIS_UTIL nr_idle_scan = 0: the LLC is judged overloaded, no scan.
    UtilZero,
    /// SIS_AVG_CPU: the waker CPU's idle time is below the average scan cost.
    AvgCpuSkip,
}

/// Why the slow path ended where it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SlowWhy {
    #[default]
    None,
    /// The task may run on no CPU of the domain: prev_cpu.
    NoAllowed,
    /// Every level kept the local group: this CPU.
    LocalKept,
    /// Descended into a remote idlest group at least once.
    Descended,
}

impl SlowWhy {
    pub fn name(self) -> &'static str {
        match self {
            SlowWhy::None => "none",
            SlowWhy::NoAllowed => "no-allowed-cpu",
            SlowWhy::LocalKept => "local-kept",
            SlowWhy::Descended => "idlest-group",
        }
    }
}

/// What the wakeup-preemption check decided for a wakee enqueued on a CPU
/// (check_preempt_wakeup() v2.6.23-v6.5, check_preempt_wakeup_fair()
/// v6.6-6.18.32, wakeup_preempt_fair() 6.18.33+).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preempt {
    /// The CPU ran its idle task: any fair wakee reschedules it.
    IdleCpu,
    /// TIF_NEED_RESCHED was already set (an earlier wakeup or the tick).
    Pending,
    /// A SCHED_IDLE curr (entity) against a non-idle wakee: preempt.
    IdleCurr,
    /// No check: an idle-policy wakee against a non-idle curr, a BATCH or IDLE
    /// wakee, or WAKEUP_PREEMPTION off.
    Policy,
    /// 6.18.33+: a WF_FORK wakeup or a still-delayed wakee never preempts.
    ForkOrDelayed,
    /// EEVDF: preempt, curr past the average vruntime (ineligible: its slice
    /// protection does not count).
    CurrPastV,
    /// EEVDF: preempt, PREEMPT_SHORT (a shorter-slice wakee ignores curr's protection).
    Short,
    /// EEVDF: preempt, curr eligible but no longer protected; the wakee's deadline is earlier.
    EarlierDeadline,
    /// EEVDF: keep curr, eligible and inside its protected slice (RUN_TO_PARITY).
    Protected,
    /// EEVDF: keep curr, the wakee is past the average vruntime itself.
    WakeeIneligible,
    /// EEVDF: keep curr, another entity (curr or a queued one) has the earlier deadline.
    OtherFirst,
    /// CFS: preempt, the wakee's vruntime trails curr's by more than the wakeup granularity.
    CfsGran,
    /// CFS: keep curr, the lead is within the wakeup granularity.
    CfsKeep,
}

impl Preempt {
    pub const N: usize = 13;
    pub const ALL: [Preempt; Preempt::N] = [
        Preempt::IdleCpu,
        Preempt::Pending,
        Preempt::IdleCurr,
        Preempt::Policy,
        Preempt::ForkOrDelayed,
        Preempt::CurrPastV,
        Preempt::Short,
        Preempt::EarlierDeadline,
        Preempt::Protected,
        Preempt::WakeeIneligible,
        Preempt::OtherFirst,
        Preempt::CfsGran,
        Preempt::CfsKeep,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Preempt::IdleCpu => "idle-cpu",
            Preempt::Pending => "resched-pending",
            Preempt::IdleCurr => "idle-curr",
            Preempt::Policy => "no-check",
            Preempt::ForkOrDelayed => "fork-or-delayed",
            Preempt::CurrPastV => "curr-past-v",
            Preempt::Short => "preempt-short",
            Preempt::EarlierDeadline => "earlier-deadline",
            Preempt::Protected => "curr-protected",
            Preempt::WakeeIneligible => "wakee-past-v",
            Preempt::OtherFirst => "other-first",
            Preempt::CfsGran => "cfs-past-gran",
            Preempt::CfsKeep => "cfs-within-gran",
        }
    }
    /// The kernel clause, for the report.
    pub fn rule(self) -> &'static str {
        match self {
            Preempt::IdleCpu => "curr is the idle task: resched_curr()",
            Preempt::Pending => "need_resched already set: return",
            Preempt::IdleCurr => "SCHED_IDLE curr, non-idle wakee: preempt",
            Preempt::Policy => "idle/batch wakee or NO_WAKEUP_PREEMPTION: return",
            Preempt::ForkOrDelayed => "WF_FORK or pse->sched_delayed: return (6.18.33+)",
            Preempt::CurrPastV => "pick is the wakee: curr not eligible, so not protected",
            Preempt::Short => "PREEMPT_SHORT: shorter-slice wakee is the pick",
            Preempt::EarlierDeadline => "pick is the wakee: earliest eligible deadline",
            Preempt::Protected => "pick is curr: protect_slice() (RUN_TO_PARITY)",
            Preempt::WakeeIneligible => "wakee not eligible: not the pick",
            Preempt::OtherFirst => "pick is curr or a queued entity: earlier deadline",
            Preempt::CfsGran => "wakeup_preempt_entity() == 1: preempt",
            Preempt::CfsKeep => "wakeup_preempt_entity() < 1: return",
        }
    }
    /// Whether the decision reschedules curr.
    pub fn preempts(self) -> bool {
        matches!(
            self,
            Preempt::IdleCpu | Preempt::IdleCurr | Preempt::CurrPastV | Preempt::Short | Preempt::EarlierDeadline | Preempt::CfsGran
        )
    }
}

/// One try_to_wake_up() / wake_up_new_task(), as the kernel functions decided it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct WakeRecord {
    pub now: u64,
    pub kind: WakeKind,
    pub wakee: u32,
    /// u32::MAX: no waker task (interrupt context, fork).
    pub waker: u32,
    pub prev_cpu: u16,
    pub this_cpu: u16,
    /// wakee_flips of the waker and the wakee (after record_wakee()).
    pub waker_flips: u32,
    pub wakee_flips: u32,
    pub wake_wide: bool,
    pub want_affine: bool,
    /// The SD_WAKE_AFFINE level that spans prev (index in this_cpu's domains).
    pub affine_level: u8,
    pub affine: AffineRule,
    /// WA_WEIGHT / old wake_affine loads: this side and prev side as compared.
    pub this_load: i64,
    pub prev_load: i64,
    /// The target handed to select_idle_sibling().
    pub target: u16,
    pub path: Path,
    pub budget: Budget,
    /// The scan budget (nr) when one applied; u32::MAX without a limit.
    pub nr: u32,
    pub scan_end: ScanEnd,
    /// Runqueues examined by the domain scan (sis_scanned minus the fast-path 1).
    pub domain_scanned: u32,
    /// select_idle_sibling() ran (sis_search) and reached the LLC scan (sis_domain_search).
    pub sis: bool,
    pub domain_search: bool,
    /// recent_used_cpu was tried (eligible) and whether it hit.
    pub recent_tried: bool,
    /// A core-mode scan ran (has_idle_core) and whether it found an idle core.
    pub core_search: bool,
    pub core_hit: bool,
    /// Slow path: start level, why it ended, levels at which it moved to another group.
    pub slow_level: u8,
    pub slow_why: SlowWhy,
    pub slow_moves: u8,
    /// The task went on the target's wake list (TTWU_QUEUE) instead of a direct enqueue.
    pub wake_list: bool,
    pub cpu: u16,
    /// Lowest level of this_cpu's domains spanning `cpu` (NO_LEVEL: the same CPU).
    pub share_level: u8,
}

/// `enum cpu_idle_type` as a record field.
pub const IDLE_NAMES: [&str; 3] = ["busy", "idle", "newidle"];

/// How a sched_balance_rq() attempt ended (one per attempt: these partition the attempts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, PartialOrd, Ord)]
pub enum LbOutcome {
    /// should_we_balance(): another CPU of the local group balances this level.
    #[default]
    NotDesignated,
    /// find_busiest_group(): balanced (no busiest group or no imbalance).
    Balanced,
    /// find_busiest_queue(): no runqueue to pull from.
    NoBusiestRq,
    /// The busiest runqueue had one task (the running one): nothing detachable.
    OneTask,
    /// Tasks moved.
    Moved,
    /// Candidates examined, none moved (see the refusal counts).
    Refused,
}

impl LbOutcome {
    pub const ALL: [LbOutcome; 6] =
        [LbOutcome::NotDesignated, LbOutcome::Balanced, LbOutcome::NoBusiestRq, LbOutcome::OneTask, LbOutcome::Moved, LbOutcome::Refused];
    pub fn name(self) -> &'static str {
        match self {
            LbOutcome::NotDesignated => "not-designated",
            LbOutcome::Balanced => "balanced",
            LbOutcome::NoBusiestRq => "no-busiest-rq",
            LbOutcome::OneTask => "one-task",
            LbOutcome::Moved => "moved",
            LbOutcome::Refused => "all-refused",
        }
    }
}

/// Why can_migrate_task() / detach_tasks() left a task where it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not allowed on the destination (LBF_SOME_PINNED).
    Affinity,
    /// task_on_cpu(): the running task.
    Running,
    /// task_hot() while nr_balance_failed <= cache_nice_tries.
    CacheHot,
    /// v6.14 61b82dfb6b7e (`--patch delayed-accounting`): delayed task, not migrate_load.
    Delayed,
    /// detach_tasks(): its load/util (shifted by nr_balance_failed) exceeds the imbalance left.
    TooBig,
    /// migrate_degrades_locality() (v4.7+, NUMA balancing on): the move would take
    /// the task, or its NUMA group, away from the node holding more of its faults,
    /// while nr_balance_failed <= cache_nice_tries.
    NumaLocality,
}

impl Refusal {
    pub const ALL: [Refusal; 6] =
        [Refusal::Affinity, Refusal::Running, Refusal::CacheHot, Refusal::Delayed, Refusal::TooBig, Refusal::NumaLocality];
    pub fn name(self) -> &'static str {
        match self {
            Refusal::Affinity => "affinity",
            Refusal::Running => "running",
            Refusal::CacheHot => "cache-hot",
            Refusal::Delayed => "delayed",
            Refusal::TooBig => "too-big",
            Refusal::NumaLocality => "numa-local",
        }
    }
}

/// Group classification and migration type names (v5.5+; `-` for the LoadIdx balancer).
pub const GROUP_TYPE_NAMES: [&str; 4] = ["-", "has_spare", "fully_busy", "overloaded"];
pub const MIGRATION_NAMES: [&str; 4] = ["-", "load", "util", "task"];

/// One sched_balance_rq() attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BalanceRecord {
    pub now: u64,
    pub cpu: u16,
    pub level: u8,
    /// IdleType as usize (busy, idle, newidle).
    pub idle: u8,
    /// Index into GROUP_TYPE_NAMES (0: not classified).
    pub local_type: u8,
    pub busiest_type: u8,
    /// First CPU of the busiest group (u16::MAX: none).
    pub busiest_group: u16,
    pub busiest_rq: u16,
    /// Index into MIGRATION_NAMES.
    pub migration: u8,
    pub imbalance: i64,
    pub moved: u32,
    pub refused: [u32; 6],
    pub outcome: LbOutcome,
    /// need_active_balance(): the busiest CPU's stopper was kicked.
    pub active_kick: bool,
}

/// An entry of the optional record log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    Wake(WakeRecord),
    Balance(BalanceRecord),
}

/// Counters summed from the records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub wakeups: u64,
    pub forks: u64,
    /// Per path, per share level slot (0: same CPU, 1 + l: level l).
    pub wake_paths: [[u64; MAX_LEVELS + 1]; 15],
    pub fork_paths: [[u64; MAX_LEVELS + 1]; 15],
    /// Per affine rule, per affine level slot (0: no level, 1 + l).
    pub affine: [[u64; MAX_LEVELS + 1]; 16],
    pub wake_wide: u64,
    pub want_affine: u64,
    pub wake_list: u64,
    pub migrated: u64,
    /// Wakeups that took the idle-CPU scan path, by budget kind (Budget as usize).
    pub idle_cpu_by_budget: [u64; 3],
    /// Scans by budget kind (index Budget as usize) and the budget summed.
    pub scans: [u64; 3],
    pub budget_sum: [u64; 3],
    pub scan_ends: [u64; 6],
    pub sis_search: u64,
    pub sis_domain_search: u64,
    pub sis_scanned: u64,
    pub sis_failed: u64,
    pub sis_recent_hit: u64,
    pub sis_recent_miss: u64,
    pub sis_core_search: u64,
    pub sis_core_miss: u64,
    pub slow: [u64; 4],
    /// Balance attempts per level, per idle type, per outcome.
    pub lb: [[[u64; 6]; 3]; MAX_LEVELS],
    pub lb_refused: [[u64; 6]; MAX_LEVELS],
    pub lb_moved: [u64; MAX_LEVELS],
    pub lb_kicks: [u64; MAX_LEVELS],
    pub lb_migration: [[u64; 4]; MAX_LEVELS],
    pub balance_attempts: u64,
    /// Wakeup-preemption checks by outcome (index Preempt as usize).
    pub preempt: [u64; Preempt::N],
    /// Task sleeps where DELAY_DEQUEUE applies (v6.12+, dequeue_entity()
    /// with DEQUEUE_SLEEP): [dequeued, kept queued as sched_delayed because
    /// the sleeper was not eligible].
    pub sleeps: [u64; 2],
}

/// Decision recording state (`Kernel::explain`).
#[derive(Debug, Default)]
pub struct Explain {
    /// The wakeup being decided (hooks in `&self` functions write it).
    pub(crate) wake: Cell<WakeRecord>,
    pub(crate) bal: Cell<BalanceRecord>,
    /// Level slot of (cpu, level index): domains matched by name and rank, as level_stats().
    pub slot: Vec<[u8; MAX_LEVELS]>,
    /// Level names by slot, bottom-up.
    pub level_names: Vec<&'static str>,
    pub counts: Counts,
    /// Every record in order, when asked for (`--trace`).
    pub log: Option<Vec<Record>>,
}

impl Explain {
    /// The path/level counts of wakeups as (path, total).
    pub fn wake_path_totals(&self) -> Vec<(Path, u64)> {
        Path::ALL.iter().map(|&p| (p, self.counts.wake_paths[p as usize].iter().sum())).collect()
    }
}

#[inline]
fn slot1(lvl: u8) -> usize {
    if lvl == NO_LEVEL {
        0
    } else {
        1 + (lvl as usize).min(MAX_LEVELS - 1)
    }
}

impl Kernel {
    /// Switch decision recording on (`log`: keep every record too).
    pub fn enable_explain(&mut self, log: bool) {
        let mut level_names: Vec<&'static str> = Vec::new();
        let mut slot = vec![[0u8; MAX_LEVELS]; self.nr_cpus()];
        for (c, levels) in self.sd.per_cpu.iter().enumerate() {
            for (k, &id) in levels.iter().enumerate().take(MAX_LEVELS) {
                let name = self.sd.domains[id as usize].name;
                let nth = levels[..k].iter().filter(|&&x| self.sd.domains[x as usize].name == name).count();
                let pos = level_names.iter().enumerate().filter(|(_, n)| **n == name).map(|(i, _)| i).nth(nth);
                let i = pos.unwrap_or_else(|| {
                    level_names.push(name);
                    level_names.len() - 1
                });
                slot[c][k] = i.min(MAX_LEVELS - 1) as u8;
            }
        }
        self.explain = Some(Box::new(Explain { slot, level_names, log: log.then(Vec::new), ..Default::default() }));
    }

    /// Count one wakeup-preemption decision (no-op when recording is off).
    #[inline(always)]
    pub(crate) fn xp(&mut self, why: Preempt) {
        if let Some(e) = self.explain.as_deref_mut() {
            e.counts.preempt[why as usize] += 1;
        }
    }

    /// Count one EEVDF task sleep, `delayed` when DELAY_DEQUEUE kept it queued
    /// (no-op when recording is off).
    #[inline(always)]
    pub(crate) fn x_sleep(&mut self, delayed: bool) {
        if self.explain.is_some() {
            self.x_sleep_count(delayed);
        }
    }

    /// The counting of [`Kernel::x_sleep`], out of the dequeue path's line.
    #[cold]
    #[inline(never)]
    fn x_sleep_count(&mut self, delayed: bool) {
        if let Some(e) = self.explain.as_deref_mut() {
            e.counts.sleeps[delayed as usize] += 1;
        }
    }

    /// Update the wake record being decided (no-op when recording is off).
    #[inline(always)]
    pub(crate) fn xw(&self, f: impl FnOnce(&mut WakeRecord)) {
        if let Some(e) = &self.explain {
            let mut r = e.wake.get();
            f(&mut r);
            e.wake.set(r);
        }
    }

    /// Update the balance record being decided (no-op when recording is off).
    #[inline(always)]
    pub(crate) fn xb(&self, f: impl FnOnce(&mut BalanceRecord)) {
        if let Some(e) = &self.explain {
            let mut r = e.bal.get();
            f(&mut r);
            e.bal.set(r);
        }
    }

    /// Start the record of a wakeup or fork placement.
    #[inline(always)]
    pub(crate) fn xw_begin(&self, kind: WakeKind, p: TaskId, waker: Option<TaskId>, prev: CpuId, this_cpu: CpuId, now: u64) {
        if let Some(e) = &self.explain {
            e.wake.set(WakeRecord {
                now,
                kind,
                wakee: p.0,
                waker: waker.map_or(u32::MAX, |w| w.0),
                prev_cpu: prev.0,
                this_cpu: this_cpu.0,
                affine_level: NO_LEVEL,
                target: prev.0,
                nr: u32::MAX,
                slow_level: NO_LEVEL,
                share_level: NO_LEVEL,
                ..Default::default()
            });
        }
    }

    /// Close the wake record: final CPU, wake list; count it (and log it).
    #[inline(always)]
    pub(crate) fn xw_finish(&mut self, cpu: CpuId, wake_list: bool) {
        if self.explain.is_some() {
            self.xw_finish_slow(cpu, wake_list);
        }
    }

    #[inline(never)]
    fn xw_finish_slow(&mut self, cpu: CpuId, wake_list: bool) {
        let Some(e) = self.explain.as_deref_mut() else { return };
        let mut r = e.wake.get();
        r.cpu = cpu.0;
        r.wake_list = wake_list;
        let this = r.this_cpu as usize;
        r.share_level = if cpu.0 == r.this_cpu {
            NO_LEVEL
        } else {
            self.sd.per_cpu[this]
                .iter()
                .position(|&id| self.sd.domains[id as usize].span.test(cpu))
                .map_or(NO_LEVEL - 1, |l| e.slot[this][l.min(MAX_LEVELS - 1)])
        };
        let c = &mut e.counts;
        let sl = slot1(r.share_level);
        match r.kind {
            WakeKind::Wakeup => {
                c.wakeups += 1;
                c.wake_paths[r.path as usize][sl] += 1;
                if r.path == Path::IdleCpu {
                    c.idle_cpu_by_budget[r.budget as usize] += 1;
                }
            }
            WakeKind::Fork => {
                c.forks += 1;
                c.fork_paths[r.path as usize][sl] += 1;
            }
        }
        if r.kind == WakeKind::Wakeup {
            let al = if r.affine_level == NO_LEVEL { NO_LEVEL } else { e.slot[this][(r.affine_level as usize).min(MAX_LEVELS - 1)] };
            c.affine[r.affine as usize][slot1(al)] += 1;
            c.wake_wide += r.wake_wide as u64;
            c.want_affine += r.want_affine as u64;
            c.wake_list += r.wake_list as u64;
            c.migrated += (cpu.0 != r.prev_cpu) as u64;
        }
        // FIDELITY(F-740): Mel Gorman's sis_* counters per run, from the records.
        if r.sis {
            c.sis_search += 1;
            c.sis_scanned += 1 + r.domain_scanned as u64;
            c.sis_domain_search += r.domain_search as u64;
            c.sis_failed += (r.path == Path::Fallback) as u64;
            if r.recent_tried {
                if r.path == Path::RecentUsed {
                    c.sis_recent_hit += 1;
                } else {
                    c.sis_recent_miss += 1;
                }
            }
            if r.core_search {
                c.sis_core_search += 1;
                c.sis_core_miss += (!r.core_hit) as u64;
            }
        }
        if r.scan_end != ScanEnd::NotScanned {
            c.scan_ends[r.scan_end as usize] += 1;
            c.scans[r.budget as usize] += 1;
            if r.nr != u32::MAX {
                c.budget_sum[r.budget as usize] += r.nr as u64;
            }
        }
        if r.path == Path::SlowPath {
            c.slow[r.slow_why as usize] += 1;
        }
        if let Some(log) = &mut e.log {
            log.push(Record::Wake(r));
        }
    }

    /// Start the record of a balance attempt.
    #[inline(always)]
    pub(crate) fn xb_begin(&self, cpu: CpuId, lvl: usize, idle: usize, now: u64) {
        if let Some(e) = &self.explain {
            e.bal.set(BalanceRecord {
                now,
                cpu: cpu.0,
                level: lvl.min(NO_LEVEL as usize - 1) as u8,
                idle: idle as u8,
                busiest_group: u16::MAX,
                busiest_rq: u16::MAX,
                ..Default::default()
            });
        }
    }

    /// Close the balance record with its outcome; count it (and log it).
    #[inline(always)]
    pub(crate) fn xb_finish(&mut self, outcome: LbOutcome) {
        if self.explain.is_some() {
            self.xb_finish_slow(outcome);
        }
    }

    #[inline(never)]
    fn xb_finish_slow(&mut self, outcome: LbOutcome) {
        let Some(e) = self.explain.as_deref_mut() else { return };
        let mut r = e.bal.get();
        r.outcome = outcome;
        let s = e.slot[r.cpu as usize][(r.level as usize).min(MAX_LEVELS - 1)] as usize;
        let c = &mut e.counts;
        c.balance_attempts += 1;
        c.lb[s][r.idle as usize][outcome as usize] += 1;
        for (k, n) in r.refused.iter().enumerate() {
            c.lb_refused[s][k] += *n as u64;
        }
        c.lb_moved[s] += r.moved as u64;
        c.lb_kicks[s] += r.active_kick as u64;
        c.lb_migration[s][r.migration as usize] += (outcome != LbOutcome::NotDesignated && outcome != LbOutcome::Balanced) as u64;
        if let Some(log) = &mut e.log {
            log.push(Record::Balance(r));
        }
    }

    /// Count a refusal in the balance record being decided.
    #[inline(always)]
    pub(crate) fn xb_refuse(&self, why: Refusal) {
        self.xb(|r| r.refused[why as usize] += 1);
    }
}

#[cfg(test)]
mod tests;
