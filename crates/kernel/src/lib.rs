//! The modelled Linux kernel scheduler (fair class), a pure state machine.
//!
//! Files mirror kernel/sched/: `core` (ttwu, schedule, tick, fork), `fair`
//! (entities, pick, preemption, select_task_rq_fair), `pelt`, `topology` (sched
//! domains), `features` (the SCHED_FEAT table), `profile` (kernel versions as data).
//!
//! Architecture invariant: knows nothing about the event queue, clocks, costs
//! or IO; every entry point takes `now` (ns) explicitly.

pub mod core;
pub mod cpumask;
pub mod explain;
pub mod fair;
pub mod features;
pub mod pelt;
pub mod prefetch;
pub mod profile;
pub mod sched;
pub mod schedstat;
pub mod stats;
pub mod topology;

pub use crate::core::{Effects, Kernel, SwitchReason, SwitchResult, TaskParams, TickResult, WakeFlags, WakeResult};
pub use crate::sched::{TaskId, TaskState};
pub use schedlab_topology::CpuId;

/// Test machines shared by the kernel's tests.
#[cfg(test)]
pub(crate) mod test_topology {
    use schedlab_topology::{CpuInfo, CpuTopology};

    /// `n` CPUs, one core each, in one LLC and one node.
    pub(crate) fn flat(n: u32) -> CpuTopology {
        let cpus = (0..n).map(|c| CpuInfo { core: c, cluster: 0, llc: 0, node: 0, package: 0 }).collect();
        CpuTopology::new(cpus, vec![vec![10]]).unwrap()
    }

    /// A seeded xorshift64 stream for randomized tests: `next(m)` is in 0..m.
    pub(crate) fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        }
    }
}
