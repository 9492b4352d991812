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
pub mod maskvec;
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

    /// Drives the kernel's entry points at random for invariant tests: each
    /// step on a random CPU of `0..n` is a tick (1 in `kinds`), a block of its
    /// running task (2 in `kinds`) or a wakeup of a random sleeper from it
    /// (the rest); then, 1 in `activate` times, one CPU's wake list is
    /// activated; then that CPU and one more random CPU pick if due.
    pub(crate) struct Churn {
        pub(crate) n: u16,
        pub(crate) kinds: u64,
        pub(crate) activate: u64,
        pub(crate) sleeping: Vec<crate::TaskId>,
        pub(crate) pending: Vec<crate::CpuId>,
        pub(crate) fx: crate::core::Effects,
    }

    impl Churn {
        pub(crate) fn new(n: u16, kinds: u64, activate: u64) -> Churn {
            Churn { n, kinds, activate, sleeping: Vec::new(), pending: Vec::new(), fx: crate::core::Effects::default() }
        }

        /// One step at `now`; `wake` makes each wakeup (the kernel, the
        /// task, the waking CPU) and returns its result.
        pub(crate) fn step(
            &mut self,
            k: &mut crate::core::Kernel,
            next: &mut impl FnMut(u64) -> u64,
            now: u64,
            mut wake: impl FnMut(&mut crate::core::Kernel, crate::TaskId, crate::CpuId, &mut crate::core::Effects) -> crate::core::WakeResult,
        ) {
            use crate::core::SwitchReason;
            use crate::sched::TaskState;
            use crate::CpuId;
            let c = CpuId(next(self.n as u64) as u16);
            match next(self.kinds) {
                0 => {
                    k.scheduler_tick(c, now, &mut self.fx);
                }
                1 | 2 => {
                    if let Some(p) = k.rqs[c.idx()].curr {
                        k.schedule(c, SwitchReason::Block, now, &mut self.fx);
                        if k.tasks[p.idx()].state == TaskState::Sleeping {
                            self.sleeping.push(p);
                        }
                    }
                }
                _ => {
                    if !self.sleeping.is_empty() {
                        let p = self.sleeping.swap_remove(next(self.sleeping.len() as u64) as usize);
                        let w = wake(k, p, c, &mut self.fx);
                        if w.queued {
                            self.pending.push(w.cpu);
                        }
                    }
                }
            }
            if !self.pending.is_empty() && next(self.activate) == 0 {
                let c = self.pending.swap_remove(next(self.pending.len() as u64) as usize);
                k.sched_ttwu_pending(c, now, &mut self.fx);
            }
            for c in [c, CpuId(next(self.n as u64) as u16)] {
                if k.rqs[c.idx()].need_resched || k.rqs[c.idx()].curr.is_none() {
                    k.schedule(c, SwitchReason::Preempt, now, &mut self.fx);
                }
            }
            self.fx.locked.clear();
        }
    }
}
