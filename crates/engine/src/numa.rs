//! The hardware side of process memory on NUMA nodes: what remote pages cost
//! a running task, what hinting faults and page copies cost, and the per-run
//! NUMA report. The pages themselves and NUMA balancing live in the kernel
//! model (schedlab_kernel::fair::numa); this module only reads them.
//!
//! Runs whose workload declares no memory, and one-node machines, never
//! reach this module: `Kernel::numa` is None and every call site tests that
//! first.

use crate::Sim;
use schedlab_kernel::fair::numa::{MmSpec, NumaCounters, HPAGE_PAGES};
use schedlab_kernel::{CpuId, TaskId};
use schedlab_machine::cost::CostModel;
use schedlab_workload::Workload;

/// Kernel entry of a NUMA hinting fault on a huge page (trap, page-table
/// walk, task_numa_fault() bookkeeping) [inferred: a minor fault, ~1-2 us].
// FIDELITY(F-770): one fixed cost per hinting fault; the copy of a migrated 2 MiB page at one core's streaming bandwidth.
pub const HINT_FAULT_NS: u64 = 1_500;

/// Per-process memory behaviour the cost model needs (by kernel mm index).
#[derive(Clone, Debug, Default)]
pub(crate) struct EngineNuma {
    /// Stall share (percent of Run time at local DRAM latency) per kernel mm index.
    stall_pct: Vec<u32>,
    /// Private access share (percent) per kernel mm index.
    private_pct: Vec<u32>,
}

/// NUMA statistics of one cpu cgroup (root = "/"), as the cling patch's
/// author printed them plus the kernel's NUMA counters.
#[derive(Clone, Debug, PartialEq)]
pub struct NumaGroupReport {
    pub name: String,
    /// CPU use per node in percent of one CPU (tick samples of running tasks).
    pub cpu_pct: Vec<f64>,
    /// Share of the group's resident memory on each node, percent.
    pub mem_pct: Vec<f64>,
    /// Resident memory, MiB.
    pub mem_mib: u64,
    pub counters: NumaCounters,
    /// NUMA group id (`cpu.numa_group` with the patches), if any.
    pub numa_group: Option<u32>,
}

/// NUMA part of a run's result.
#[derive(Clone, Debug, PartialEq)]
pub struct NumaReport {
    /// kernel.numa_balancing as the run had it.
    pub balancing: bool,
    pub nodes: usize,
    /// Per cpu cgroup that has tasks with memory, root first.
    pub groups: Vec<NumaGroupReport>,
}

/// Chunks of 2 MiB in `mib` MiB, rounded up.
fn chunks(mib: u64) -> u32 {
    mib.div_ceil(2) as u32
}

impl Sim<'_> {
    /// Tell the kernel about the processes that declare memory (before any
    /// task exists). Nothing happens without memory or on one node.
    pub(crate) fn numa_setup(&mut self, wl: &Workload) {
        if wl.memory.is_empty() || self.machine.topology.nr_nodes() < 2 {
            return;
        }
        let specs: Vec<MmSpec> = wl
            .memory
            .iter()
            .map(|m| MmSpec {
                mm: m.mm,
                shared_chunks: chunks(m.shared_mib),
                private_chunks: chunks(m.private_mib),
                threads: wl.tasks.iter().filter(|t| t.mm == m.mm).count() as u32,
                private_pct: m.private_pct,
                touch_chunks_per_s: m.touch_mib_per_s.div_ceil(2),
                initial_node: m.initial_node,
            })
            .collect();
        let node_of = self.machine.topology.cpus().iter().map(|c| c.node).collect();
        self.kernel.numa_init(specs, wl.groups.len(), node_of);
        if let Some(st) = self.kernel.numa.as_deref() {
            let mut e = EngineNuma::default();
            for m in &st.mms {
                let w = wl.memory.iter().find(|w| w.mm == m.spec.mm).expect("declared");
                e.stall_pct.push(w.stall_pct);
                e.private_pct.push(w.private_pct);
            }
            self.numa_mem = Some(Box::new(e));
        }
    }

    /// Wall work of `ns` nominal ns of `Run` for task `t` on `c`: the DRAM
    /// share stretches by the mean latency of the pages it reads from
    /// this node, weighted by the task's private/shared access split.
    pub(crate) fn numa_run_ns(&self, t: TaskId, c: CpuId, ns: u64) -> u64 {
        let (Some(st), Some(e)) = (self.kernel.numa.as_deref(), self.numa_mem.as_deref()) else { return ns };
        let Some(tn) = st.tasks.get(t.idx()) else { return ns };
        let Some(mi) = tn.mm else { return ns };
        let m = &st.mms[mi];
        let stall = e.stall_pct[mi] as u128;
        if stall == 0 {
            return ns;
        }
        let node = self.cost.node(c);
        let local = self.cost.dram_ns(node, node).max(1) as u128;
        // Mean latency (x1000) over resident chunks; no resident chunk = first touch here.
        let mean = |on: &[u64]| -> u128 {
            let total: u64 = on.iter().sum();
            if total == 0 {
                return local * 1000;
            }
            let s: u128 = on.iter().enumerate().map(|(n, &k)| k as u128 * self.cost.dram_ns(node, n as u32) as u128).sum();
            s * 1000 / total as u128
        };
        let ppct = if m.spec.private_chunks == 0 {
            0
        } else if m.spec.shared_chunks == 0 {
            100
        } else {
            e.private_pct[mi] as u128
        };
        let lat = (ppct * mean(&tn.priv_on) + (100 - ppct) * mean(&m.shared_on)) / 100;
        let n = ns as u128;
        (n * (100 - stall) / 100 + n * stall * lat / (100 * 1000 * local)) as u64
    }

    /// Charge the running task of `c` for the hinting faults and page copies
    /// the kernel recorded for it in this tick.
    pub(crate) fn numa_charge(&mut self, c: CpuId) {
        let Some(st) = self.kernel.numa.as_deref_mut() else { return };
        let (faults, pages) = std::mem::take(&mut st.pending_cost[c.idx()]);
        if faults == 0 {
            return;
        }
        let copy = pages * 4096 * 1000 / CostModel::CORE_BW_MBPS;
        if let Some(t) = self.cpus[c.idx()].running {
            self.rt[t.idx()].remaining += faults * HINT_FAULT_NS + copy;
            self.reschedule_segment(c, t);
        }
    }

    /// The NUMA report at the end of a run.
    pub(crate) fn numa_report(&self, end: u64) -> Option<NumaReport> {
        let st = self.kernel.numa.as_deref()?;
        let groups = self.kernel.groups();
        let mut out = Vec::new();
        for (gi, g) in groups.iter().enumerate() {
            // Processes whose first task is in this group.
            let mut on = vec![0u64; st.nr_nodes];
            let mut any = false;
            for m in &st.mms {
                let Some(t) = self.wl.tasks.iter().find(|t| t.mm == m.spec.mm) else { continue };
                if t.group as usize != gi {
                    continue;
                }
                any = true;
                for (n, k) in m.chunks_on.iter().enumerate() {
                    on[n] += k;
                }
            }
            let c = &st.counters[gi];
            if !any && c.ticks_on.iter().all(|&x| x == 0) {
                continue;
            }
            let total: u64 = on.iter().sum();
            let secs = end.max(1) as f64;
            out.push(NumaGroupReport {
                name: g.name.clone(),
                cpu_pct: c.ticks_on.iter().map(|&k| k as f64 * self.kernel.tun.tick_ns as f64 * 100.0 / secs).collect(),
                mem_pct: on.iter().map(|&k| if total == 0 { 0.0 } else { k as f64 * 100.0 / total as f64 }).collect(),
                mem_mib: total * HPAGE_PAGES * 4096 / (1 << 20),
                counters: c.clone(),
                numa_group: st.groups.iter().position(|ng| ng.tg == Some(gi as u32)).map(|x| x as u32),
            });
        }
        Some(NumaReport { balancing: st.enabled, nodes: st.nr_nodes, groups: out })
    }
}
