//! schedstat counters as the kernel keeps them (kernel/sched/stats.c,
//! Documentation/scheduler/sched-stats.rst; ecosystem reference §2), summed
//! per domain level. The /proc/schedstat text (writer and reader) is in
//! `crate::schedstat`.

/// Per-CPU, per-domain counters (`struct sched_domain` schedstat fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SdStats {
    /// Wakeups by this CPU whose target first shares this domain with it.
    pub ttwu_wake_remote: u64,
    /// wake_affine() pulled the wakee to this CPU with this domain as affine_sd.
    pub ttwu_move_affine: u64,
    /// Wakeups balanced through SD_BALANCE_WAKE (unused with default flags).
    pub ttwu_move_balance: u64,
    /// Active balancing pushed a running task to this CPU at this level.
    pub alb_pushed: u64,
    /// active_load_balance_cpu_stop() runs for this CPU at this level.
    pub alb_count: u64,
    /// ... that found no task to move.
    pub alb_failed: u64,
}

pub use crate::schedstat::LevelStats;

/// Per-LLC shared state (`struct sched_domain_shared`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LlcShared {
    pub has_idle_cores: bool,
    /// SIS_UTIL scan budget (v6.0+).
    pub nr_idle_scan: u32,
    /// When update_idle_cpu_scan() may next run for this LLC (ns).
    pub next_scan_update: u64,
}

/// Load-balancing counters of one idle type (issue: load balancing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LbStats {
    pub lb_count: u64,
    pub lb_balanced: u64,
    pub lb_failed: u64,
    pub lb_gained: u64,
    pub lb_nobusyq: u64,
}
