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
    // FIDELITY(F-774): the remote cost is fixed where the op starts.
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
        let copy = pages * 4096 * 1000 / self.machine.costs.mem_bw_core_mbps;
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
            if !any {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimConfig;
    use schedlab_kernel::fair::numa::NO_NODE;
    use schedlab_kernel::profile::profile;
    use schedlab_kernel::Kernel;
    use schedlab_workload::{GroupSpec, MemSpec, MetricSpec, Op, TaskSpec};

    const S: u64 = 1_000_000_000;

    /// `procs` processes of `threads` CPU-bound threads, each process in
    /// its own cgroup, each with `shared_mib` of memory shared by its threads.
    fn cpu_bound(procs: u32, threads: u32, shared_mib: u64, initial_node: Option<u32>) -> Workload {
        let mut w = Workload {
            memory: Vec::new(),
            arrivals: None,
            name: "numa-test".into(),
            params: Vec::new(),
            programs: vec![vec![Op::Loop { count: u64::MAX }, Op::Run { ns: 1_000_000 }, Op::Count { id: 0, n: 1 }, Op::EndLoop]],
            tasks: Vec::new(),
            channels: Vec::new(),
            sems: Vec::new(),
            metric: MetricSpec::Rate { name: "loops".into(), unit: "loops/s".into(), counter: 0, start: None, end: None },
            time_bounded: true,
            jitter_pct: 0,
            groups: Vec::new(),
        };
        for p in 0..procs {
            w.groups.push(GroupSpec { name: format!("g{p}"), parent: 0, shares: 1024 });
            for t in 0..threads {
                w.tasks.push(TaskSpec {
                    name: format!("p{p}t{t}"),
                    program: 0,
                    mm: p,
                    nice: 0,
                    cpus: None,
                    start: true,
                    group: p + 1,
                    footprint_kib: None,
                    shared: None,
                    timer_slack_ns: schedlab_workload::DEFAULT_TIMER_SLACK_NS,
                });
            }
            w.memory.push(MemSpec {
                mm: p,
                shared_mib,
                private_mib: 0,
                private_pct: 0,
                stall_pct: 40,
                touch_mib_per_s: 2048,
                initial_node,
            });
        }
        if shared_mib > 0 {
            w.validate().unwrap();
        }
        w
    }

    fn run_kernel(kernel: &str, patch: Option<&str>, sysctl: &str, w: &Workload, secs: u64) -> (crate::RunResult, Kernel) {
        run_kernel_seed(kernel, patch, sysctl, w, secs, 1)
    }

    fn run_kernel_seed(kernel: &str, patch: Option<&str>, sysctl: &str, w: &Workload, secs: u64, seed: u64) -> (crate::RunResult, Kernel) {
        let m = schedlab_machine::load("numa-2n-96").unwrap();
        let mut k = profile(kernel).unwrap();
        if let Some(p) = patch {
            k.apply_patches(p).unwrap();
        }
        k.tunables.numa.apply(sysctl).unwrap();
        let cfg =
            SimConfig { seed, duration_ns: Some(secs * S), schedstat: false, model: Default::default(), trace: false, switch_log: false };
        let kernel = Kernel::new(&m.topology, k);
        let sim = Sim::new(&m, kernel, w, &cfg);
        sim.run_keep_kernel(&cfg)
    }

    fn node_of(k: &Kernel, cpu: CpuId) -> u32 {
        if cpu.0 < 24 || (48..72).contains(&cpu.0) {
            0
        } else {
            let _ = k;
            1
        }
    }

    /// task_numa_work()/task_numa_fault()/should_numa_migrate_memory() and
    /// numa_migrate_preferred() (v5.2): four threads whose memory (128 MiB
    /// each, private) sits on node 1 while they start on node 0 (forked from
    /// CPU 0; find_idlest_group() keeps them local). The scan starts after
    /// scan_delay (1 s) and marks scan_size (256 MB) per scan period; with
    /// 512 MiB resident task_scan_start() = max(100 ms, 1000 ms / 2 windows)
    /// = 500 ms, so the pages are all marked within 1 s + 2 x 500 ms; the
    /// first fault of a young task (numa_scan_seq <= 4) migrates the page to
    /// the faulting node, and a task whose faults say node 1 moves there. By
    /// 3 s every thread's memory is where the thread runs.
    #[test]
    fn memory_on_node1_threads_on_node0_becomes_local() {
        memory_follows_threads_or_threads_memory("v5.2");
    }

    /// The same on v6.12 (the v5.7+ placement: node 0 runs 4 tasks and node 1
    /// none, so task_numa_find_cpu() finds node 1 has_spare with no running
    /// imbalance left by a move and takes its idle CPU).
    #[test]
    fn memory_on_node1_threads_on_node0_becomes_local_v6_12() {
        memory_follows_threads_or_threads_memory("v6.12");
    }

    fn memory_follows_threads_or_threads_memory(kernel: &str) {
        let mut w = cpu_bound(1, 4, 0, Some(1));
        w.memory[0].private_mib = 128;
        w.memory[0].private_pct = 100;
        w.validate().unwrap();
        let (r, k) = run_kernel(kernel, None, "", &w, 3);
        let st = k.numa.as_deref().unwrap();
        assert_eq!(st.mms[0].chunks_on.iter().sum::<u64>(), 256, "4 x 128 MiB = 256 huge pages");
        for i in 0..4 {
            let node = node_of(&k, k.tasks[i].cpu) as usize;
            let on = &st.tasks[i].priv_on;
            let total: u64 = on.iter().sum();
            // Each thread's 64 private huge pages, counted from their initial node on
            // (a release build would wrap an uncounted page's departure instead of failing).
            assert_eq!(total, 64, "thread {i}: its private pages per node {on:?}");
            assert!(on[node] * 10 >= total * 9, "thread {i} on node {node}, its memory per node {on:?}");
        }
        let c = &r.numa.as_ref().unwrap().groups.iter().find(|g| g.name == "g0").unwrap().counters;
        assert!(c.hint_faults >= 256 * 512, "every huge page faulted at least once: {c:?}");
        // Nothing happened before the scan delay: a 1 s run has no fault.
        let (r0, k0) = run_kernel(kernel, None, "", &w, 1);
        let c0 = &r0.numa.as_ref().unwrap().groups.iter().find(|g| g.name == "g0").unwrap().counters;
        assert_eq!(c0.hint_faults, 0, "no scan within scan_delay: {c0:?}");
        assert_eq!(k0.numa.as_deref().unwrap().mms[0].chunks_on, vec![0, 256]);
        // Threads bound to node 0 cannot follow their memory: the pages come to them.
        let node0: Vec<u16> = (0..24).chain(48..72).collect();
        for t in &mut w.tasks {
            t.cpus = Some(node0.clone());
        }
        let (_, kb) = run_kernel(kernel, None, "", &w, 3);
        assert_eq!(kb.numa.as_deref().unwrap().mms[0].chunks_on, vec![256, 0]);
    }

    /// With kernel.numa_balancing=0 nothing moves for NUMA reasons: no scan,
    /// no hinting fault, no page or task migration by NUMA balancing, no
    /// preferred node; the pages stay where they were first touched.
    #[test]
    fn balancing_off_moves_nothing() {
        let w = cpu_bound(1, 4, 512, Some(1));
        let (r, k) = run_kernel("v5.2", None, "numa_balancing=0", &w, 3);
        let rep = r.numa.as_ref().unwrap();
        assert!(!rep.balancing);
        let c = &rep.groups.iter().find(|g| g.name == "g0").unwrap().counters;
        assert_eq!((c.hint_faults, c.pages_migrated, c.task_migrated, c.task_swapped, c.pte_updates), (0, 0, 0, 0, 0));
        let st = k.numa.as_deref().unwrap();
        assert_eq!(st.mms[0].chunks_on, vec![0, 256]);
        assert!(st.tasks.iter().all(|t| t.preferred_nid == NO_NODE));
    }

    /// task_numa_placement() / task_numa_group() / task_numa_migrate() /
    /// migrate_swap() / should_numa_migrate_memory() (v5.2): two processes
    /// that share nothing, 16 CPU-bound threads and 256 MiB each (each fits
    /// in one 48-CPU node of numa-2n-96), start mixed over both nodes (fork
    /// balancing from CPU 0). A scan pass over 256 MiB takes about one scan
    /// period (task_scan_start(): 1000 ms / 1 window, growing towards
    /// task_scan_max() while faults are local) and placement runs once per
    /// pass; within 60 s each process's threads sit on one node with its
    /// memory, the two on different nodes (swaps need imp >= SMALLIMP and no
    /// worse load imbalance, so it takes tens of passes).
    #[test]
    fn two_groups_settle_on_different_nodes() {
        let w = cpu_bound(2, 16, 256, None);
        let (_, k) = run_kernel("v5.2", None, "", &w, 60);
        assert_settled_apart(&k);
    }

    /// The same two processes under v6.12 with numa_balancing=1, the v5.7+
    /// form of task_numa_migrate(): update_numa_stats() classifies both
    /// nodes has_spare (16 + 16 threads on 2 x 48 CPUs), so
    /// task_numa_find_cpu() moves a thread into its preferred node only while
    /// adjust_numa_imbalance() (v5.19+: dst_running <= imb_numa_nr, 2 here)
    /// allows it, and otherwise swaps it (task_numa_compare()) with a thread
    /// of the other group that prefers the other node. Slower than v5.2: at
    /// 60 s three of six seeds have settled; at 120 s the threads have on
    /// seeds 1-3, and 63-100 % of each process's memory is on its node (the
    /// page migration still runs the v5.2 form, F-771).
    #[test]
    fn two_groups_settle_on_different_nodes_v6_12() {
        let w = cpu_bound(2, 16, 256, None);
        for seed in 1..=3 {
            let (r, k) = run_kernel_seed("v6.12", None, "numa_balancing=1", &w, 120, seed);
            assert!(r.numa.as_ref().unwrap().balancing);
            let c = &r.numa.as_ref().unwrap().groups;
            assert!(c.iter().map(|g| g.counters.task_swapped + g.counters.task_migrated).sum::<u64>() > 0, "NUMA moves happened");
            assert_settled_apart_with(&k, 3, 5);
        }
    }

    /// Each of the two 16-thread processes has at least 14 threads and 90%
    /// of its memory on one node, and the two nodes differ.
    fn assert_settled_apart(k: &Kernel) {
        assert_settled_apart_with(k, 9, 10)
    }

    /// As [`assert_settled_apart`], with at least `num / den` of the memory home.
    fn assert_settled_apart_with(k: &Kernel, num: u64, den: u64) {
        let st = k.numa.as_deref().unwrap();
        let mut home = Vec::new();
        for p in 0..2usize {
            let on: Vec<u32> = (0..16).map(|i| node_of(k, k.tasks[p * 16 + i].cpu)).collect();
            let n1 = on.iter().filter(|&&n| n == 1).count();
            let node = if n1 * 2 > 16 { 1 } else { 0 };
            let mine = on.iter().filter(|&&n| n == node).count();
            let m = &st.mms[p];
            let total: u64 = m.chunks_on.iter().sum();
            assert!(mine >= 14, "process {p}: threads per node {on:?}");
            assert!(m.chunks_on[node as usize] * den >= total * num, "process {p}: memory per node {:?}", m.chunks_on);
            home.push(node);
        }
        assert_ne!(home[0], home[1], "the two processes share a node");
    }
}
