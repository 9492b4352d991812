//! Automatic NUMA balancing (CONFIG_NUMA_BALANCING): the memory of processes
//! on nodes, the hinting-fault scanner, fault statistics, preferred nodes,
//! NUMA task migration and swaps, NUMA groups, page migration, and the
//! balancer's locality test; plus Michael Wang's 2019 per-cgroup NUMA group
//! and cling patches as overlays.
//!
//! Kernel sources followed: kernel/sched/fair.c of v5.2 (the NUMA balancing
//! block: task_numa_work() .. task_tick_numa(), migrate_degrades_locality())
//! and mm/mempolicy.c mpol_misplaced(), mm/memory.c do_numa_page() /
//! mm/huge_memory.c do_huge_pmd_numa_page() of v5.2; the placement search
//! (update_numa_stats(), task_numa_find_cpu(), task_numa_compare(),
//! task_numa_assign()) also in its v5.7+ form as of v6.12, chosen by the
//! profile's `NumaVariant` and gated on the release where v5.10-v5.19
//! changed it. Where v6.12 differs elsewhere it is named at the function
//! (docs/FIDELITY.md F-771).
//!
//! Model of memory: a process's memory is a list of 2 MiB chunks (one
//! transparent huge page each: `HPAGE_PAGES` base pages), each with its node
//! (or none before first touch), its NUMA-hinting protection (set by the
//! scanner, cleared by the fault) and its `last_cpupid`. The first
//! `shared_chunks` are shared by all threads; each thread owns
//! `private_chunks` more. A running thread touches chunks at its declared
//! rate, a share `private_pct` in its own region and the rest in the shared
//! one, walking each region with a cursor.
// FIDELITY(F-760): memory in 2 MiB (THP) chunks touched by a rotating cursor, not pages touched by real addresses.
//!
//! Architecture: all state lives in `Kernel::numa` (None for runs whose
//! workload declares no memory or whose machine has one node), so every hook
//! costs one `is_none()` test when NUMA balancing does not apply.

use crate::core::Kernel;
use crate::cpumask::CpuMask;
use crate::profile::{NumaVariant, Patch};
use crate::sched::TaskId;
use crate::topology::SD_NUMA;
use schedlab_topology::CpuId;

/// Base pages per chunk: a 2 MiB transparent huge page (HPAGE_PMD_NR on x86-64).
pub const HPAGE_PAGES: u64 = 512;
pub const NO_NODE: u32 = u32::MAX;
/// `SMALLIMP` (kernel/sched/fair.c v3.13+): smallest improvement worth a swap.
const SMALLIMP: i64 = 30;
/// `ACTIVE_NODE_FRACTION` (v4.2+, should_numa_migrate_memory(), numa_group_count_active_nodes()).
const ACTIVE_NODE_FRACTION: u64 = 3;
/// `NUMA_PERIOD_SLOTS` / `NUMA_PERIOD_THRESHOLD` (update_task_scan_period(), v3.13+).
const NUMA_PERIOD_SLOTS: i64 = 10;
const NUMA_PERIOD_THRESHOLD: i64 = 7;
/// `MAX_SCAN_WINDOW` MB/s (task_scan_min(), v4.2+).
const MAX_SCAN_WINDOW: u64 = 2560;
/// `LOAD_AVG_MAX` (PELT, used by numa_get_avg_runtime() for a first placement).
const LOAD_AVG_MAX: u64 = 47742;
/// Cling patch: `NUMA_MIGRATE_WEIGHT` and `NUMA_MIGRATE_SCALE`.
const NUMA_MIGRATE_WEIGHT: u64 = 1024;
const NUMA_MIGRATE_SCALE: u64 = 10;

/// The NUMA balancing sysctls (kernel/sysctl.c; defaults of v3.13-v6.12),
/// set with `--sysctl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumaSysctl {
    /// `kernel.numa_balancing`: None = the kernel's default (on when the
    /// machine has more than one node: check_numabalancing_enable()).
    pub enabled: Option<bool>,
    /// `kernel.numa_balancing_scan_delay_ms`
    pub scan_delay_ms: u64,
    /// `kernel.numa_balancing_scan_period_min_ms`
    pub scan_period_min_ms: u64,
    /// `kernel.numa_balancing_scan_period_max_ms`
    pub scan_period_max_ms: u64,
    /// `kernel.numa_balancing_scan_size_mb`
    pub scan_size_mb: u64,
    /// `kernel.numa_balancing_cling_degree` (the cling patch; 0..=100).
    pub cling_degree: u64,
}

impl NumaSysctl {
    pub const DEFAULT: NumaSysctl = NumaSysctl {
        enabled: None,
        scan_delay_ms: 1000,
        scan_period_min_ms: 1000,
        scan_period_max_ms: 60000,
        scan_size_mb: 256,
        cling_degree: 20,
    };

    /// Names `--sysctl` accepts, with their meaning.
    pub const NAMES: &'static [(&'static str, &'static str)] = &[
        ("numa_balancing", "0 or 1 (default: 1 on machines with more than one node)"),
        ("numa_balancing_scan_delay_ms", "first scan after this much time (default 1000)"),
        ("numa_balancing_scan_period_min_ms", "shortest scan period (default 1000)"),
        ("numa_balancing_scan_period_max_ms", "longest scan period (default 60000)"),
        ("numa_balancing_scan_size_mb", "memory marked per scan (default 256)"),
        ("numa_balancing_cling_degree", "cling patch: failure ratio (%) that pauses cling on a busy node (default 20, 0..100)"),
    ];

    /// Apply `name=value[,name=value]` (names with or without `kernel.`).
    pub fn apply(&mut self, spec: &str) -> Result<(), String> {
        for tok in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let Some((k, v)) = tok.split_once('=') else {
                return Err(format!("--sysctl {tok:?}: expected name=value, e.g. numa_balancing=0"));
            };
            let k = k.trim().trim_start_matches("kernel.");
            let v: u64 = v.trim().parse().map_err(|_| format!("--sysctl {k}: {:?} is not a non-negative integer", v.trim()))?;
            let positive = |v: u64| if v == 0 { Err(format!("--sysctl {k}=0: must be at least 1")) } else { Ok(v) };
            match k {
                "numa_balancing" => {
                    if v > 1 {
                        return Err(format!("--sysctl numa_balancing={v}: use 0 (off) or 1 (on)"));
                    }
                    self.enabled = Some(v == 1);
                }
                "numa_balancing_scan_delay_ms" => self.scan_delay_ms = v,
                "numa_balancing_scan_period_min_ms" => self.scan_period_min_ms = positive(v)?,
                "numa_balancing_scan_period_max_ms" => self.scan_period_max_ms = positive(v)?,
                "numa_balancing_scan_size_mb" => self.scan_size_mb = positive(v)?,
                "numa_balancing_cling_degree" => {
                    if v > 100 {
                        return Err(format!("--sysctl numa_balancing_cling_degree={v}: the patch's maximum is 100"));
                    }
                    self.cling_degree = v
                }
                _ => {
                    return Err(format!(
                        "unknown --sysctl {k:?}; known: {}",
                        Self::NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                    ))
                }
            }
        }
        if self.scan_period_min_ms > self.scan_period_max_ms {
            return Err(format!(
                "--sysctl: numa_balancing_scan_period_min_ms {} is above numa_balancing_scan_period_max_ms {}",
                self.scan_period_min_ms, self.scan_period_max_ms
            ));
        }
        Ok(())
    }
}

/// What a workload declares about one process's memory (the engine passes
/// it in from the workload's memory spec).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MmSpec {
    /// Process id (`TaskSpec::mm`).
    pub mm: u32,
    /// Chunks shared by all threads.
    pub shared_chunks: u32,
    /// Chunks each thread owns.
    pub private_chunks: u32,
    /// Threads the process will have (private regions to reserve).
    pub threads: u32,
    /// Of a thread's accesses, the percentage to its private region.
    pub private_pct: u32,
    /// Distinct chunks a thread touches per second of CPU time.
    pub touch_chunks_per_s: u64,
    /// Pages already resident on this node at the start (a loader pinned
    /// there touched them); None = first touch by the threads.
    pub initial_node: Option<u32>,
}

#[derive(Clone, Copy, Debug)]
struct Chunk {
    /// Node holding it; `NO_NODE` before the first touch.
    node: u32,
    /// PROT_NONE set by the scanner: the next touch is a hinting fault.
    marked: bool,
    /// `page_cpupid_last()`: (cpu, task) of the last hinting fault.
    last: Option<(CpuId, TaskId)>,
}

/// One process's memory (`struct mm_struct` NUMA fields plus its pages).
#[derive(Clone, Debug)]
pub struct NumaMm {
    pub spec: MmSpec,
    chunks: Vec<Chunk>,
    /// Thread slot (private region) of each task, in order of first run.
    slots: Vec<TaskId>,
    /// `mm->numa_next_scan` (ns); 0 = not set yet.
    numa_next_scan: u64,
    /// `mm->numa_scan_offset` (chunk index).
    numa_scan_offset: usize,
    /// `mm->numa_scan_seq`
    numa_scan_seq: u32,
    /// Resident chunks per node, shared region.
    pub shared_on: Vec<u64>,
    /// Resident chunks per node, whole process.
    pub chunks_on: Vec<u64>,
}

impl NumaMm {
    fn rss_pages(&self) -> u64 {
        self.chunks_on.iter().sum::<u64>() * HPAGE_PAGES
    }
}

/// Per-task NUMA state (`task_struct` NUMA fields).
#[derive(Clone, Debug, Default)]
pub struct TaskNuma {
    /// Index into `NumaState::mms`; None for a task whose process declares no memory.
    pub mm: Option<usize>,
    slot: usize,
    started: bool,
    /// `p->node_stamp` (ns of sum_exec_runtime)
    node_stamp: u64,
    /// `p->numa_scan_period` (ms)
    pub numa_scan_period: u64,
    numa_scan_period_max: u64,
    /// `p->numa_scan_seq`
    numa_scan_seq: u32,
    /// `p->numa_preferred_nid`
    pub preferred_nid: u32,
    /// `p->numa_faults`: [NUMA_MEM, NUMA_CPU, NUMA_MEMBUF, NUMA_CPUBUF] x node x {shared, private}.
    faults: Vec<u64>,
    /// `p->numa_faults_locality`: remote, local, failed migrations.
    faults_locality: [u64; 3],
    pub total_numa_faults: u64,
    /// `p->numa_migrate_retry` (ns)
    numa_migrate_retry: u64,
    last_task_numa_placement: u64,
    last_sum_exec_runtime: u64,
    /// Index into `NumaState::groups`.
    pub group: Option<usize>,
    /// sum_exec_runtime seen by the touch model, and the fractional chunk carry (x 1e9).
    touched_runtime: u64,
    touch_carry: u64,
    mix: u64,
    priv_cursor: u32,
    shared_cursor: u32,
    /// Resident chunks per node of this task's private region.
    pub priv_on: Vec<u64>,
    /// `p->numa_pages_migrated`
    pub pages_migrated: u64,
}

/// `struct numa_group` (v5.2), plus the cling patch's migration statistics.
#[derive(Clone, Debug)]
pub struct NumaGroup {
    pub gid: u32,
    pub nr_tasks: u32,
    /// `refcount`: tasks plus the cgroup's reference.
    refcount: u32,
    pub active_nodes: u32,
    /// [mem x node x {shared, private}] then [cpu x node x {shared, private}].
    faults: Vec<u64>,
    pub total_faults: u64,
    max_faults_cpu: u64,
    /// The cpu cgroup it serves (patches 1-3), if any.
    pub tg: Option<u32>,
    /// Cling patch: `do_cling`, `busiest_nid`, `migrate_stat` [failure, total, ratio] x node.
    do_cling: bool,
    pub busiest_nid: u32,
    mstat: Vec<u64>,
    cling_timer_at: u64,
    dead: bool,
}

/// Counters of one cgroup (or the whole run), as /proc/vmstat and
/// /proc/<pid>/sched name them, plus per-node CPU ticks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NumaCounters {
    /// numa_hint_faults, numa_hint_faults_local (base pages)
    pub hint_faults: u64,
    pub hint_faults_local: u64,
    /// numa_pages_migrated (base pages)
    pub pages_migrated: u64,
    /// PTE updates of the scanner (numa_pte_updates, base pages)
    pub pte_updates: u64,
    /// numa_task_migrated / numa_task_swapped (schedstat names, v5.x: numa_migrate / numa_swap)
    pub task_migrated: u64,
    pub task_swapped: u64,
    /// task_numa_migrate() that found no better CPU.
    pub task_migrate_failed: u64,
    /// Ticks of running tasks with a preferred node, and of those on it.
    pub ticks_with_pref: u64,
    pub ticks_on_pref: u64,
    /// Running ticks per node (CPU usage per node).
    pub ticks_on: Vec<u64>,
}

/// Everything NUMA balancing keeps.
#[derive(Clone, Debug)]
pub struct NumaState {
    pub sysctl: NumaSysctl,
    /// `sched_numa_balancing` static key.
    pub enabled: bool,
    pub nr_nodes: usize,
    node_of: Vec<u32>,
    /// CPUs of each node (cpumask_of_node).
    node_cpus: Vec<Vec<CpuId>>,
    pub mms: Vec<NumaMm>,
    /// Process id (`Task::mm`) → index into `mms`.
    mm_index: Vec<(u32, usize)>,
    pub tasks: Vec<TaskNuma>,
    pub groups: Vec<NumaGroup>,
    /// Per cpu cgroup: its NUMA group (patches 1-3).
    tg_group: Vec<Option<usize>>,
    /// Per CPU: a task the stopper must move (migrate_task_to / migrate_swap):
    /// (task, destination, whether the move holds the destination's numa_migrate_on).
    stop: Vec<Option<(TaskId, CpuId, bool)>>,
    /// Per CPU: `rq->numa_migrate_on` (v4.19+, a4739eca4456): a NUMA
    /// migration has chosen this CPU and not finished; other searches skip it.
    pub(crate) migrate_on: Vec<bool>,
    /// CPUs to kick after this entry point (a swap partner running elsewhere).
    pub kicks: Vec<CpuId>,
    /// Hinting faults and migrated base pages the running task of each CPU
    /// incurred since the engine last charged them.
    pub pending_cost: Vec<(u64, u64)>,
    /// Counters per cpu cgroup (index = group id; 0 = root).
    pub counters: Vec<NumaCounters>,
    /// The cgroup each task belongs to.
    tick_ns: u64,
}

impl NumaState {
    /// Chunks per node of a process's memory, for the cost model.
    #[inline]
    pub fn task_mm(&self, p: TaskId) -> Option<&NumaMm> {
        let i = self.tasks.get(p.idx())?.mm?;
        Some(&self.mms[i])
    }

    fn mm_of(&self, mm: u32) -> Option<usize> {
        self.mm_index.binary_search_by_key(&mm, |&(m, _)| m).ok().map(|i| self.mm_index[i].1)
    }

    /// `task_faults_idx()`: stat s, node, private (1) or shared (0).
    #[inline]
    fn idx(&self, s: usize, nid: u32, private: usize) -> usize {
        2 * (s * self.nr_nodes + nid as usize) + private
    }

    /// `task_faults()`
    fn task_faults(&self, p: TaskId, nid: u32) -> u64 {
        let t = &self.tasks[p.idx()];
        if t.faults.is_empty() {
            return 0;
        }
        t.faults[self.idx(0, nid, 0)] + t.faults[self.idx(0, nid, 1)]
    }

    /// `group_faults()`
    fn group_faults(&self, g: usize, nid: u32) -> u64 {
        let f = &self.groups[g].faults;
        f[self.idx(0, nid, 0)] + f[self.idx(0, nid, 1)]
    }

    /// `group_faults_cpu()`: faults_cpu[] of the group (second half of faults[]).
    fn group_faults_cpu(&self, g: usize, nid: u32) -> u64 {
        let f = &self.groups[g].faults;
        f[self.idx(1, nid, 0)] + f[self.idx(1, nid, 1)]
    }

    /// `group_faults_priv()` / `group_faults_shared()`
    fn group_faults_split(&self, g: usize) -> (u64, u64) {
        let f = &self.groups[g].faults;
        let (mut p, mut s) = (0, 0);
        for nid in 0..self.nr_nodes as u32 {
            s += f[self.idx(0, nid, 0)];
            p += f[self.idx(0, nid, 1)];
        }
        (p, s)
    }

    /// `task_weight()` (v3.13+; score_nearby_nodes() is 0 on NUMA_DIRECT machines).
    // FIDELITY(F-761): score_nearby_nodes() and preferred_group_nid() for NUMA_GLUELESS / NUMA_BACKPLANE are not modelled.
    fn task_weight(&self, p: TaskId, nid: u32) -> i64 {
        let total = self.tasks[p.idx()].total_numa_faults;
        if total == 0 {
            return 0;
        }
        (1000 * self.task_faults(p, nid) / total) as i64
    }

    /// `group_weight()` (v3.13+)
    fn group_weight(&self, p: TaskId, nid: u32) -> i64 {
        let Some(g) = self.tasks[p.idx()].group else { return 0 };
        let total = self.groups[g].total_faults;
        if total == 0 {
            return 0;
        }
        (1000 * self.group_faults(g, nid) / total) as i64
    }

    /// `task_nr_scan_windows()` (v4.2+)
    fn nr_scan_windows(&self, p: TaskId) -> u64 {
        let nr_scan_pages = self.sysctl.scan_size_mb << 8;
        let rss = self.task_mm(p).map_or(0, |m| m.rss_pages());
        let rss = if rss == 0 { nr_scan_pages } else { rss };
        rss.div_ceil(nr_scan_pages)
    }

    /// `task_scan_min()` (v4.2+)
    fn task_scan_min(&self, p: TaskId) -> u64 {
        let scan_size = self.sysctl.scan_size_mb;
        let windows = if scan_size < MAX_SCAN_WINDOW { MAX_SCAN_WINDOW / scan_size } else { 1 };
        let floor = 1000 / windows;
        let scan = self.sysctl.scan_period_min_ms / self.nr_scan_windows(p);
        floor.max(scan)
    }

    /// Whether the shared-memory scaling of the scan period applies to the
    /// task's group (the cling patch exempts groups that cling).
    fn scaled_group(&self, p: TaskId) -> Option<usize> {
        let g = self.tasks[p.idx()].group?;
        (!self.groups[g].do_cling).then_some(g)
    }

    /// `task_scan_start()` (v4.15+)
    fn task_scan_start(&self, p: TaskId) -> u64 {
        let smin = self.task_scan_min(p);
        let mut period = smin;
        if let Some(g) = self.scaled_group(p) {
            let (private, shared) = self.group_faults_split(g);
            period *= self.groups[g].refcount as u64;
            period *= shared + 1;
            period /= private + shared + 1;
        }
        smin.max(period)
    }

    /// `task_scan_max()` (v4.2+)
    fn task_scan_max(&self, p: TaskId) -> u64 {
        let smin = self.task_scan_min(p);
        let mut smax = self.sysctl.scan_period_max_ms / self.nr_scan_windows(p);
        if let Some(g) = self.scaled_group(p) {
            let (private, shared) = self.group_faults_split(g);
            let mut period = smax;
            period *= self.groups[g].refcount as u64;
            period *= shared + 1;
            period /= private + shared + 1;
            smax = smax.max(period);
        }
        smin.max(smax)
    }

    /// Cling patch `busy_node()`.
    fn busy_node(&self, g: usize, nid: u32) -> bool {
        let ng = &self.groups[g];
        let n = self.nr_nodes;
        if ng.mstat[nid as usize] < NUMA_MIGRATE_WEIGHT {
            return false;
        }
        if ng.busiest_nid != nid {
            return false;
        }
        ng.mstat[2 * n + nid as usize] > self.sysctl.cling_degree
    }

    /// Cling patch `task_numa_cling(p, snid, dnid)`: p should stay on snid.
    pub fn task_numa_cling(&self, p: TaskId, snid: u32, dnid: u32) -> bool {
        let t = &self.tasks[p.idx()];
        let Some(g) = t.group else { return false };
        if !self.groups[g].do_cling {
            return false;
        }
        let pnid = t.preferred_nid;
        if pnid == NO_NODE || dnid == pnid || snid != pnid {
            return false;
        }
        !self.busy_node(g, snid)
    }

    /// Cling patch `update_failure_ratio()`.
    fn update_failure_ratio(&mut self, g: usize, nid: usize) {
        let n = self.nr_nodes;
        let m = &mut self.groups[g].mstat;
        m[2 * n + nid] = m[nid] * 100 / (m[n + nid] + 1);
    }

    /// Cling patch `cling_timer_func()`: halve the statistics every
    /// scan_period_max / NUMA_MIGRATE_SCALE, pick the busiest node.
    fn cling_timers(&mut self, now: u64) {
        let period = self.sysctl.scan_period_max_ms * 1_000_000 / NUMA_MIGRATE_SCALE;
        for g in 0..self.groups.len() {
            if !self.groups[g].do_cling || self.groups[g].dead {
                continue;
            }
            while now >= self.groups[g].cling_timer_at {
                let mut max_failure = 0;
                for nid in 0..self.nr_nodes {
                    let n = self.nr_nodes;
                    self.groups[g].mstat[nid] /= 2;
                    self.groups[g].mstat[n + nid] /= 2;
                    self.update_failure_ratio(g, nid);
                    if self.groups[g].mstat[nid] > max_failure {
                        self.groups[g].busiest_nid = nid as u32;
                        max_failure = self.groups[g].mstat[nid];
                    }
                }
                self.groups[g].cling_timer_at += period.max(1);
            }
        }
    }
}

impl Kernel {
    /// Set up NUMA balancing for a run: the processes that declare memory.
    /// Called by the engine before any task exists; does nothing on a
    /// one-node machine or without memory (then `self.numa` stays None).
    pub fn numa_init(&mut self, mms: Vec<MmSpec>, nr_groups: usize, node_of: Vec<u32>) {
        let nr_nodes = node_of.iter().copied().max().map_or(1, |m| m as usize + 1);
        if nr_nodes < 2 || mms.is_empty() {
            return;
        }
        let sysctl = self.profile.tunables.numa;
        let mut node_cpus = vec![Vec::new(); nr_nodes];
        for (c, &n) in node_of.iter().enumerate() {
            node_cpus[n as usize].push(CpuId(c as u16));
        }
        let mut mm_index = Vec::new();
        let mut out = Vec::new();
        for s in mms {
            let nchunks = s.shared_chunks as usize + s.private_chunks as usize * s.threads as usize;
            let node = s.initial_node.map_or(NO_NODE, |n| n.min(nr_nodes as u32 - 1));
            let chunks = vec![Chunk { node, marked: false, last: None }; nchunks];
            let mut m = NumaMm {
                chunks,
                slots: Vec::new(),
                numa_next_scan: 0,
                numa_scan_offset: 0,
                numa_scan_seq: 0,
                shared_on: vec![0; nr_nodes],
                chunks_on: vec![0; nr_nodes],
                spec: s.clone(),
            };
            if node != NO_NODE {
                m.shared_on[node as usize] = s.shared_chunks as u64;
                m.chunks_on[node as usize] = nchunks as u64;
            }
            mm_index.push((s.mm, out.len()));
            out.push(m);
        }
        mm_index.sort_unstable();
        let tick_ns = self.tun.tick_ns;
        let mut st = NumaState {
            sysctl,
            // FIDELITY(F-771): profiles whose form is not modelled (v2.6.38, v3.10) run with it off.
            enabled: sysctl.enabled.unwrap_or(true) && Self::numa_balancing_modelled(&self.profile),
            nr_nodes,
            node_of,
            node_cpus,
            mms: out,
            mm_index,
            tasks: Vec::new(),
            groups: Vec::new(),
            tg_group: vec![None; nr_groups + 1],
            stop: vec![None; self.rqs.len()],
            migrate_on: vec![false; self.rqs.len()],
            kicks: Vec::new(),
            pending_cost: vec![(0, 0); self.rqs.len()],
            counters: vec![NumaCounters { ticks_on: vec![0; nr_nodes], ..Default::default() }; nr_groups + 1],
            tick_ns,
        };
        // Patches 1-3: every cpu cgroup gets a NUMA group (cpu.numa_group = 1);
        // update_tg_numa_group(): refcount 1 held by the cgroup; the cling
        // patch sets do_cling, busiest_nid = NUMA_NO_NODE and starts the timer.
        // FIDELITY(F-762): cpu.numa_group is on for every cgroup of the workload under the patch; the root group has none.
        if self.profile.has_patch(Patch::NumaGroupCgroup) {
            let cling = self.profile.has_patch(Patch::NumaCling);
            let period = sysctl.scan_period_max_ms * 1_000_000 / NUMA_MIGRATE_SCALE;
            for tg in 1..=nr_groups {
                let gi = st.groups.len();
                st.groups.push(NumaGroup {
                    gid: 0,
                    nr_tasks: 0,
                    refcount: 1,
                    active_nodes: 1,
                    faults: vec![0; 4 * nr_nodes],
                    total_faults: 0,
                    max_faults_cpu: 0,
                    tg: Some(tg as u32),
                    do_cling: cling,
                    busiest_nid: NO_NODE,
                    mstat: vec![0; 3 * nr_nodes],
                    cling_timer_at: period.max(1),
                    dead: false,
                });
                st.tg_group[tg] = Some(gi);
            }
        }
        self.numa = Some(Box::new(st));
    }

    /// Whether this profile's NUMA balancing form is modelled (`profile.numa`):
    /// v5.2 (v4.19-v5.6 form) and v5.11 onwards (v5.7+ form).
    pub fn numa_balancing_modelled(p: &crate::profile::KernelProfile) -> bool {
        p.numa != NumaVariant::None
    }

    /// What the profile's NUMA balancing placement is, in words (`schedlab kernel show`).
    pub fn numa_balancing_form(p: &crate::profile::KernelProfile) -> String {
        match p.numa {
            NumaVariant::None => "not modelled (runs keep kernel.numa_balancing off; numa_balancing=1 is refused)".into(),
            NumaVariant::V4_19 => "v4.19-v5.6 task_numa_migrate(): node load and capacity, moves while load_too_imbalanced() allows, \
                 select_idle_sibling() for the idle CPU, rq->numa_migrate_on"
                .into(),
            NumaVariant::V5_7 => {
                let v = p.version;
                let adjust = if v < (5, 10) {
                    "source runs <= 2 tasks"
                } else if v < (5, 11) {
                    "destination runs <= 2 tasks"
                } else if v < (5, 18) {
                    "imbalance <= 2 while the destination runs < 1/4 of its CPUs"
                } else if v < (5, 19) {
                    "imbalance <= 2 while the destination runs < imb_numa_nr"
                } else {
                    "imbalance <= 2 while the destination runs <= imb_numa_nr"
                };
                format!(
                    "v5.7+ task_numa_migrate(): update_numa_stats() node types (has_spare / fully_busy / overloaded) and idle CPU, \
                     moves into spare capacity when adjust_numa_imbalance() allows ({adjust}), preferred-node bias and early stop in \
                     task_numa_compare(), rq->numa_migrate_on with an alternative idle CPU{}{}",
                    if v >= (5, 19) { ", no swap into a node with spare capacity" } else { "" },
                    if v >= (6, 4) { "; task_numa_work()'s VMA filters not modelled (F-776)" } else { "" }
                )
            }
        }
    }

    #[inline]
    fn nm(&self) -> &NumaState {
        self.numa.as_deref().expect("numa state")
    }
    #[inline]
    fn nmm(&mut self) -> &mut NumaState {
        self.numa.as_deref_mut().expect("numa state")
    }

    #[inline]
    fn cpu_node_of(&self, c: usize) -> u32 {
        self.nm().node_of[c]
    }

    #[inline]
    fn task_node(&self, p: TaskId) -> u32 {
        self.cpu_node_of(self.tasks[p.idx()].cpu.idx())
    }

    /// `init_numa_balancing()` (v5.2, called from __sched_fork()), run
    /// lazily at the task's first tick: a new thread starts its scan clock
    /// `delay` after its siblings' (v4.17+ form: min(task_scan_max,
    /// scan_period * mm_users) + 2 ticks), a process's first thread sets
    /// `mm->numa_next_scan` to now + scan_delay.
    // FIDELITY(F-763): init_numa_balancing() runs at a task's first tick, not at fork.
    fn init_numa_balancing(&mut self, p: TaskId, now: u64) {
        let mmid = self.tasks[p.idx()].mm;
        let n = self.nm().nr_nodes;
        let st = self.nmm();
        if st.tasks.len() <= p.idx() {
            // Tasks not started yet have no preferred node (__sched_fork(): NUMA_NO_NODE).
            st.tasks.resize_with(p.idx() + 1, || TaskNuma { preferred_nid: NO_NODE, ..Default::default() });
        }
        let mi = st.mm_of(mmid);
        let delay_ms = st.sysctl.scan_delay_ms;
        let t = &mut st.tasks[p.idx()];
        t.started = true;
        t.mm = mi;
        t.preferred_nid = NO_NODE;
        t.numa_scan_period = delay_ms;
        t.priv_on = vec![0; n];
        let Some(mi) = mi else { return };
        let users = st.mms[mi].slots.len() as u64;
        let slot = st.mms[mi].slots.len();
        st.mms[mi].slots.push(p);
        st.tasks[p.idx()].slot = slot;
        // Private chunks of this slot placed before the thread existed
        // (`initial_node`) count as on their node from the start.
        let (shared, private) = (st.mms[mi].spec.shared_chunks as usize, st.mms[mi].spec.private_chunks as usize);
        for ci in shared + slot * private..shared + (slot + 1) * private {
            if let Some(node) = st.mms[mi].chunks.get(ci).map(|c| c.node).filter(|&n| n != NO_NODE) {
                st.tasks[p.idx()].priv_on[node as usize] += 1;
            }
        }
        if users == 0 {
            st.mms[mi].numa_next_scan = now + delay_ms * 1_000_000;
            st.mms[mi].numa_scan_seq = 0;
        } else {
            // A new thread: the parent's preferred nid is kept (CLONE_VM);
            // node_stamp starts later so threads do not scan together.
            let sib = st.mms[mi].slots[0];
            let (sib_period, sib_pref) = (st.tasks[sib.idx()].numa_scan_period, st.tasks[sib.idx()].preferred_nid);
            let max = st.task_scan_max(sib);
            let delay = max.min(sib_period * users) * 1_000_000 + 2 * st.tick_ns;
            let t = &mut st.tasks[p.idx()];
            t.node_stamp = delay;
            t.preferred_nid = sib_pref;
        }
        st.tasks[p.idx()].numa_scan_seq = st.mms[mi].numa_scan_seq;
        // Patches 1-3: a task of a cgroup with a NUMA group joins it.
        let tg = self.tasks[p.idx()].group as usize;
        let st = self.nmm();
        if let Some(g) = st.tg_group.get(tg).copied().flatten() {
            st.groups[g].nr_tasks += 1;
            st.groups[g].refcount += 1;
            st.tasks[p.idx()].group = Some(g);
        }
    }

    /// The NUMA part of the tick for the running task `curr` of `cpu`:
    /// the memory it touched since the last tick (first touches and hinting
    /// faults), then `task_tick_numa()` (v5.2: queue task_numa_work when
    /// sum_exec_runtime passed node_stamp + scan period and mm->numa_next_scan
    /// is due; the work runs on return to user space, here at once).
    pub(crate) fn numa_tick(&mut self, cpu: CpuId, now: u64) {
        let Some(p) = self.rqs[cpu.idx()].curr else { return };
        let started = self.nm().tasks.get(p.idx()).is_some_and(|t| t.started);
        if !started {
            self.init_numa_balancing(p, now);
        }
        self.nmm().cling_timers(now);
        // Per-node CPU use and preferred-node residency (cpu.numa_stat, patch 3).
        let node = self.cpu_node_of(cpu.idx());
        let tg = self.tasks[p.idx()].group as usize;
        let pref = self.nm().tasks[p.idx()].preferred_nid;
        let st = self.nmm();
        if let Some(c) = st.counters.get_mut(tg) {
            c.ticks_on[node as usize] += 1;
            if pref != NO_NODE {
                c.ticks_with_pref += 1;
                c.ticks_on_pref += (pref == node) as u64;
            }
        }
        if st.tasks[p.idx()].mm.is_none() {
            return;
        }
        self.numa_touch(p, cpu, now);
        if !self.nm().enabled {
            return;
        }
        // task_tick_numa()
        let runtime = self.tasks[p.idx()].se.sum_exec_runtime;
        let st = self.nmm();
        let t = &st.tasks[p.idx()];
        let period = t.numa_scan_period * 1_000_000;
        if runtime > t.node_stamp + period {
            if t.node_stamp == 0 {
                let s = st.task_scan_start(p);
                st.tasks[p.idx()].numa_scan_period = s;
            }
            st.tasks[p.idx()].node_stamp += period;
            let mi = st.tasks[p.idx()].mm.unwrap();
            if now >= st.mms[mi].numa_next_scan {
                self.task_numa_work(p, now);
            }
        }
    }

    /// The task's memory accesses since its last tick, chunk by chunk: a
    /// chunk never touched is allocated on this CPU's node (first touch,
    /// the default policy); a chunk the scanner protected takes a hinting
    /// fault (`do_huge_pmd_numa_page()`).
    fn numa_touch(&mut self, p: TaskId, cpu: CpuId, now: u64) {
        let runtime = self.tasks[p.idx()].se.sum_exec_runtime;
        let st = self.nmm();
        let mi = st.tasks[p.idx()].mm.unwrap();
        let spec = &st.mms[mi].spec;
        let (rate, ppct, shared, private) = (spec.touch_chunks_per_s, spec.private_pct as u64, spec.shared_chunks, spec.private_chunks);
        let t = &mut st.tasks[p.idx()];
        let delta = runtime.saturating_sub(t.touched_runtime);
        t.touched_runtime = runtime;
        let acc = t.touch_carry + delta * rate;
        let n = acc / 1_000_000_000;
        t.touch_carry = acc % 1_000_000_000;
        // At most one pass over the process's memory per tick.
        let n = n.min((shared + private) as u64);
        let slot = t.slot;
        let base_priv = shared as usize + slot * private as usize;
        for k in 0..n {
            // Interleave the two regions by the private share (error diffusion).
            let _ = k;
            let st = self.nmm();
            let t = &mut st.tasks[p.idx()];
            t.mix += ppct;
            let to_private = private > 0 && (shared == 0 || t.mix >= 100);
            if t.mix >= 100 {
                t.mix -= 100;
            }
            let ci = if to_private {
                let c = base_priv + t.priv_cursor as usize;
                t.priv_cursor = (t.priv_cursor + 1) % private;
                c
            } else {
                if shared == 0 {
                    continue;
                }
                // Threads start their walk at different offsets.
                let c = (t.shared_cursor as usize + slot * 7919) % shared as usize;
                t.shared_cursor = (t.shared_cursor + 1) % shared;
                c
            };
            self.touch_chunk(p, cpu, mi, ci, now);
        }
    }

    fn touch_chunk(&mut self, p: TaskId, cpu: CpuId, mi: usize, ci: usize, now: u64) {
        let node = self.cpu_node_of(cpu.idx());
        let st = self.nmm();
        let shared_region = ci < st.mms[mi].spec.shared_chunks as usize;
        let ch = st.mms[mi].chunks[ci];
        if ch.node == NO_NODE {
            st.mms[mi].chunks[ci].node = node;
            st.mms[mi].chunks_on[node as usize] += 1;
            if shared_region {
                st.mms[mi].shared_on[node as usize] += 1;
            } else {
                st.tasks[p.idx()].priv_on[node as usize] += 1;
            }
            return;
        }
        if !ch.marked {
            return;
        }
        st.mms[mi].chunks[ci].marked = false;
        self.do_numa_page(p, cpu, mi, ci, now);
    }

    /// `do_huge_pmd_numa_page()` (mm/huge_memory.c v5.2) for one chunk:
    /// `mpol_misplaced()` (default policy MPOL_F_MORON: the target is this
    /// CPU's node, filtered by should_numa_migrate_memory(), which also
    /// records this fault's cpupid), the migration, then task_numa_fault().
    // FIDELITY(F-764): page migration never fails (no memory pressure on the destination node); no TNF_NO_GROUP for read-only pages, no TNF_SHARED for shared mappings.
    fn do_numa_page(&mut self, p: TaskId, cpu: CpuId, mi: usize, ci: usize, now: u64) {
        let this_nid = self.cpu_node_of(cpu.idx());
        let ch = self.nm().mms[mi].chunks[ci];
        let last = ch.last;
        let page_nid = ch.node;
        let local = page_nid == this_nid;
        let migrate = self.should_numa_migrate_memory(p, mi, ci, page_nid, cpu) && page_nid != this_nid;
        let mut migrated = false;
        if migrate {
            let st = self.nmm();
            let m = &mut st.mms[mi];
            m.chunks[ci].node = this_nid;
            m.chunks_on[page_nid as usize] -= 1;
            m.chunks_on[this_nid as usize] += 1;
            if ci < m.spec.shared_chunks as usize {
                m.shared_on[page_nid as usize] -= 1;
                m.shared_on[this_nid as usize] += 1;
            } else {
                // The private region of the thread owning this slot.
                let owner = m.slots[(ci - m.spec.shared_chunks as usize) / m.spec.private_chunks.max(1) as usize];
                st.tasks[owner.idx()].priv_on[page_nid as usize] -= 1;
                st.tasks[owner.idx()].priv_on[this_nid as usize] += 1;
            }
            migrated = true;
        }
        let mem_node = if migrated { this_nid } else { page_nid };
        let st = self.nmm();
        st.pending_cost[cpu.idx()].0 += 1;
        if migrated {
            st.pending_cost[cpu.idx()].1 += HPAGE_PAGES;
        }
        let tg = self.tasks[p.idx()].group as usize;
        let st = self.nmm();
        if let Some(c) = st.counters.get_mut(tg) {
            c.hint_faults += HPAGE_PAGES;
            c.hint_faults_local += if local { HPAGE_PAGES } else { 0 };
            c.pages_migrated += if migrated { HPAGE_PAGES } else { 0 };
        }
        self.task_numa_fault(p, last, mem_node, HPAGE_PAGES, local || migrated, migrated, now);
    }

    /// `should_numa_migrate_memory()` (kernel/sched/fair.c v4.2-v5.x, with
    /// the cling patch's busy-node rule): exchanges the page's last cpupid
    /// for this fault's, then the two-stage filter.
    fn should_numa_migrate_memory(&mut self, p: TaskId, mi: usize, ci: usize, src_nid: u32, dst_cpu: CpuId) -> bool {
        let dst_nid = self.cpu_node_of(dst_cpu.idx());
        let st = self.nmm();
        let last = st.mms[mi].chunks[ci].last.replace((dst_cpu, p));
        let t = &st.tasks[p.idx()];
        let match_pid = last.is_some_and(|(_, q)| q == p);
        // First faults or private faults migrate at once early in a task's life.
        if (t.preferred_nid == NO_NODE || t.numa_scan_seq <= 4) && (last.is_none() || match_pid) {
            return true;
        }
        // Two-stage filter: the previous fault must have come from dst_nid.
        if let Some((c, _)) = last {
            if st.node_of[c.idx()] != dst_nid {
                return false;
            }
        }
        if match_pid {
            return true;
        }
        let Some(g) = t.group else { return true };
        if st.group_faults_cpu(g, dst_nid) > st.group_faults_cpu(g, src_nid) * ACTIVE_NODE_FRACTION {
            return true;
        }
        if st.groups[g].do_cling {
            if st.busy_node(g, dst_nid) {
                return false;
            }
            if st.busy_node(g, src_nid) {
                return true;
            }
        }
        st.group_faults_cpu(g, dst_nid) * st.group_faults(g, src_nid) * 3
            > st.group_faults_cpu(g, src_nid) * st.group_faults(g, dst_nid) * 4
    }

    /// `task_numa_fault()` (v5.2).
    #[allow(clippy::too_many_arguments)]
    fn task_numa_fault(
        &mut self,
        p: TaskId,
        last: Option<(CpuId, TaskId)>,
        mem_node: u32,
        pages: u64,
        mut local: bool,
        migrated: bool,
        now: u64,
    ) {
        let cpu_node = self.task_node(p);
        let n = self.nm().nr_nodes;
        {
            let t = &mut self.nmm().tasks[p.idx()];
            if t.faults.is_empty() {
                t.faults = vec![0; 8 * n];
                t.total_numa_faults = 0;
                t.faults_locality = [0; 3];
            }
        }
        // First accesses are private; otherwise compare the pids.
        let mut private = match last {
            None => true,
            Some((_, q)) => q == p,
        };
        if !private {
            if let Some((c, q)) = last {
                self.task_numa_group(p, c, q, &mut private);
            }
        }
        let st = self.nmm();
        if let Some(g) = st.tasks[p.idx()].group {
            let ng = &st.groups[g];
            let active = |nid: u32| st.group_faults_cpu(g, nid) * ACTIVE_NODE_FRACTION > ng.max_faults_cpu;
            if !private && !local && ng.active_nodes > 1 && active(cpu_node) && active(mem_node) {
                local = true;
            }
        }
        if now > self.nm().tasks[p.idx()].numa_migrate_retry {
            self.task_numa_placement(p, now);
            self.numa_migrate_preferred(p, now);
        }
        let st = self.nmm();
        let pv = private as usize;
        let (i_mem, i_cpu) = (st.idx(2, mem_node, pv), st.idx(3, cpu_node, pv));
        let t = &mut st.tasks[p.idx()];
        if migrated {
            t.pages_migrated += pages;
        }
        t.faults[i_mem] += pages;
        t.faults[i_cpu] += pages;
        t.faults_locality[local as usize] += pages;
    }

    /// `task_numa_group()` (v5.2): a shared fault on a chunk last faulted by
    /// `q` (still running on `c`) joins the larger of the two groups; a task
    /// without a group first gets its own.
    fn task_numa_group(&mut self, p: TaskId, c: CpuId, q: TaskId, private: &mut bool) {
        let n = self.nm().nr_nodes;
        if self.nm().tasks[p.idx()].group.is_none() {
            let st = self.nmm();
            let t = &st.tasks[p.idx()];
            let mut faults = vec![0; 4 * n];
            faults.copy_from_slice(&t.faults[..4 * n]);
            let g = NumaGroup {
                gid: p.0,
                nr_tasks: 1,
                refcount: 1,
                active_nodes: 1,
                faults,
                total_faults: t.total_numa_faults,
                max_faults_cpu: 0,
                tg: None,
                do_cling: false,
                busiest_nid: NO_NODE,
                mstat: vec![0; 3 * n],
                cling_timer_at: u64::MAX,
                dead: false,
            };
            st.groups.push(g);
            st.tasks[p.idx()].group = Some(st.groups.len() - 1);
        }
        // The last fault's task must still be current on its CPU.
        if self.rqs[c.idx()].curr != Some(q) {
            return;
        }
        let st = self.numa.as_deref().unwrap();
        let Some(grp) = st.tasks.get(q.idx()).and_then(|t| t.group) else { return };
        let my = st.tasks[p.idx()].group.unwrap();
        if grp == my {
            return;
        }
        // Only join the bigger group (ties broken by the address: here the index).
        if st.groups[my].nr_tasks > st.groups[grp].nr_tasks {
            return;
        }
        if st.groups[my].nr_tasks == st.groups[grp].nr_tasks && my > grp {
            return;
        }
        // A cgroup's group is left only when the cgroup is (the patch keeps its tasks).
        if st.groups[my].tg.is_some() {
            return;
        }
        // Threads of one process always join; other tasks need TNF_SHARED,
        // which private (anonymous) memory never has.
        let join = self.tasks[q.idx()].mm == self.tasks[p.idx()].mm;
        *private = !join;
        if !join {
            return;
        }
        let st = self.nmm();
        let pf: Vec<u64> = st.tasks[p.idx()].faults[..4 * n].to_vec();
        let total = st.tasks[p.idx()].total_numa_faults;
        for (i, f) in pf.iter().enumerate() {
            let have = st.groups[my].faults[i];
            st.groups[my].faults[i] = have - (*f).min(have);
            st.groups[grp].faults[i] += f;
        }
        st.groups[my].total_faults = st.groups[my].total_faults.saturating_sub(total);
        st.groups[grp].total_faults += total;
        st.groups[my].nr_tasks -= 1;
        st.groups[my].refcount -= 1;
        if st.groups[my].refcount == 0 {
            st.groups[my].dead = true;
        }
        st.groups[grp].nr_tasks += 1;
        st.groups[grp].refcount += 1;
        st.tasks[p.idx()].group = Some(grp);
    }

    /// `numa_get_avg_runtime()` (v4.2+).
    // FIDELITY(F-765): "now" is the tick time, not se.exec_start; the first placement uses LOAD_AVG_MAX * util_avg / 1024 for load_sum.
    fn numa_get_avg_runtime(&mut self, p: TaskId, now: u64) -> (u64, u64) {
        let runtime = self.tasks[p.idx()].se.sum_exec_runtime;
        let util = self.tasks[p.idx()].se.avg.util_avg;
        let t = &mut self.nmm().tasks[p.idx()];
        let (delta, period) = if t.last_task_numa_placement != 0 {
            (runtime - t.last_sum_exec_runtime, now.saturating_sub(t.last_task_numa_placement))
        } else {
            (LOAD_AVG_MAX * util / 1024, LOAD_AVG_MAX)
        };
        t.last_sum_exec_runtime = runtime;
        t.last_task_numa_placement = now.max(1);
        (delta, period)
    }

    /// `task_numa_placement()` (v5.2; cling patch: a busy node is not preferred).
    #[allow(clippy::needless_range_loop)]
    fn task_numa_placement(&mut self, p: TaskId, now: u64) {
        let mi = self.nm().tasks[p.idx()].mm.unwrap();
        let seq = self.nm().mms[mi].numa_scan_seq;
        if self.nm().tasks[p.idx()].numa_scan_seq == seq {
            return;
        }
        {
            let st = self.nmm();
            st.tasks[p.idx()].numa_scan_seq = seq;
            let m = st.task_scan_max(p);
            st.tasks[p.idx()].numa_scan_period_max = m;
        }
        let (runtime, period) = self.numa_get_avg_runtime(p, now);
        let st = self.nmm();
        let n = st.nr_nodes as u32;
        let ng = st.tasks[p.idx()].group;
        let total_faults = st.tasks[p.idx()].faults_locality[0] + st.tasks[p.idx()].faults_locality[1];
        let mut fault_types = [0u64; 2];
        let (mut max_faults, mut max_nid) = (0u64, NO_NODE);
        for nid in 0..n {
            let (mut faults, mut group_faults) = (0u64, 0u64);
            for pv in 0..2 {
                let (mem, membuf, cpu, cpubuf) = (st.idx(0, nid, pv), st.idx(2, nid, pv), st.idx(1, nid, pv), st.idx(3, nid, pv));
                let t = &mut st.tasks[p.idx()];
                let diff = t.faults[membuf] as i64 - (t.faults[mem] / 2) as i64;
                fault_types[pv] += t.faults[membuf];
                t.faults[membuf] = 0;
                let f_weight = ((runtime << 16) / (period + 1)) as i64;
                let f_weight = f_weight * t.faults[cpubuf] as i64 / (total_faults as i64 + 1);
                let f_diff = f_weight - (t.faults[cpu] / 2) as i64;
                t.faults[cpubuf] = 0;
                t.faults[mem] = (t.faults[mem] as i64 + diff).max(0) as u64;
                t.faults[cpu] = (t.faults[cpu] as i64 + f_diff).max(0) as u64;
                faults += t.faults[mem];
                t.total_numa_faults = (t.total_numa_faults as i64 + diff).max(0) as u64;
                if let Some(g) = ng {
                    let (gm, gc) = (st.idx(0, nid, pv), st.idx(1, nid, pv));
                    let gr = &mut st.groups[g];
                    gr.faults[gm] = (gr.faults[gm] as i64 + diff).max(0) as u64;
                    gr.faults[gc] = (gr.faults[gc] as i64 + f_diff).max(0) as u64;
                    gr.total_faults = (gr.total_faults as i64 + diff).max(0) as u64;
                    group_faults += gr.faults[gm];
                }
            }
            match ng {
                None => {
                    if faults > max_faults {
                        max_faults = faults;
                        max_nid = nid;
                    }
                }
                Some(g) => {
                    let paused = st.groups[g].do_cling && st.busy_node(g, nid);
                    if group_faults > max_faults && !paused {
                        max_faults = group_faults;
                        max_nid = nid;
                    }
                }
            }
        }
        if let Some(g) = ng {
            // numa_group_count_active_nodes()
            let mut maxf = 0;
            for nid in 0..n {
                maxf = maxf.max(st.group_faults_cpu(g, nid));
            }
            let active = (0..n).filter(|&nid| st.group_faults_cpu(g, nid) * ACTIVE_NODE_FRACTION > maxf).count() as u32;
            st.groups[g].max_faults_cpu = maxf;
            st.groups[g].active_nodes = active;
            // preferred_group_nid(): NUMA_DIRECT keeps max_nid.
        }
        if max_faults > 0 && max_nid != st.tasks[p.idx()].preferred_nid {
            // sched_setnuma()
            st.tasks[p.idx()].preferred_nid = max_nid;
        }
        self.update_task_scan_period(p, fault_types[0], fault_types[1]);
    }

    /// `update_task_scan_period()` (v4.2+).
    fn update_task_scan_period(&mut self, p: TaskId, shared: u64, private: u64) {
        let now_ms_next;
        let st = self.nmm();
        let (smin, smax) = (st.task_scan_min(p), st.task_scan_max(p));
        let t = &mut st.tasks[p.idx()];
        let (remote, local) = (t.faults_locality[0], t.faults_locality[1]);
        if local + shared == 0 || t.faults_locality[2] != 0 {
            t.numa_scan_period = t.numa_scan_period_max.max(1).min(t.numa_scan_period << 1);
            now_ms_next = Some(t.numa_scan_period);
        } else {
            let period_slot = t.numa_scan_period.div_ceil(NUMA_PERIOD_SLOTS as u64) as i64;
            let lr_ratio = (local as i64 * NUMA_PERIOD_SLOTS) / (local + remote) as i64;
            let ps_ratio = (private as i64 * NUMA_PERIOD_SLOTS) / (private + shared).max(1) as i64;
            let diff = if ps_ratio >= NUMA_PERIOD_THRESHOLD {
                (ps_ratio - NUMA_PERIOD_THRESHOLD).max(1) * period_slot
            } else if lr_ratio >= NUMA_PERIOD_THRESHOLD {
                (lr_ratio - NUMA_PERIOD_THRESHOLD).max(1) * period_slot
            } else {
                -(NUMA_PERIOD_THRESHOLD - lr_ratio.max(ps_ratio)) * period_slot
            };
            t.numa_scan_period = (t.numa_scan_period as i64 + diff).clamp(smin as i64, smax as i64) as u64;
            t.faults_locality = [0; 3];
            now_ms_next = None;
        }
        if let Some(ms) = now_ms_next {
            // p->mm->numa_next_scan = jiffies + msecs_to_jiffies(period)
            let cur = self.cur_now;
            let st = self.nmm();
            let mi = st.tasks[p.idx()].mm.unwrap();
            st.mms[mi].numa_next_scan = cur + ms * 1_000_000;
        }
    }

    /// `numa_migrate_preferred()` (v5.2; cling patch: update_migrate_stat()).
    fn numa_migrate_preferred(&mut self, p: TaskId, now: u64) {
        let t = &self.nm().tasks[p.idx()];
        if t.preferred_nid == NO_NODE || t.faults.is_empty() {
            return;
        }
        let interval = (1_000_000_000u64).min(t.numa_scan_period * 1_000_000 / 16);
        let target = t.preferred_nid;
        self.nmm().tasks[p.idx()].numa_migrate_retry = now + interval;
        if self.task_node(p) == target {
            return;
        }
        let failed = !self.task_numa_migrate(p);
        // Cling patch update_migrate_stat().
        let st = self.nmm();
        if let Some(g) = st.tasks[p.idx()].group {
            if st.groups[g].do_cling {
                let t = target as usize;
                if failed {
                    st.groups[g].mstat[t] += NUMA_MIGRATE_WEIGHT;
                }
                let n = st.nr_nodes;
                st.groups[g].mstat[n + t] += NUMA_MIGRATE_WEIGHT;
                st.update_failure_ratio(g, t);
                if failed {
                    st.tasks[p.idx()].preferred_nid = NO_NODE;
                }
            }
        }
    }

    /// `update_numa_stats()` for node `nid`, in the profile's form.
    ///
    /// v4.19-v5.6 (`NumaVariant::V4_19`): the node's load (`weighted_cpuload()`
    /// summed) and compute capacity only.
    ///
    /// v5.7+ (`NumaVariant::V5_7`, fb86f5b21192 "sched/numa: Use similar logic
    /// to the load balancer for moving between domains" and ff7db0bf24db
    /// "Prefer using an idle CPU as a migration target"): also the runnable
    /// and utilisation sums, the CFS tasks running (`cfs.h_nr_running`), the
    /// node's CPU count, its `numa_classify()` type and, with `find_idle`, an
    /// idle CPU the task may use and that no NUMA migration is heading to
    /// (`rq->numa_migrate_on` clear); an idle core wins over an idle SMT
    /// sibling when the LLC says it has idle cores (`numa_idle_core()`).
    // FIDELITY(F-766): every CPU's capacity is SCHED_CAPACITY_SCALE (no RT/IRQ pressure).
    fn update_numa_stats(&self, p: TaskId, nid: u32, find_idle: bool, imbalance_pct: u64) -> NumaStats {
        let st = self.nm();
        let cpus = &st.node_cpus[nid as usize];
        let mut ns = NumaStats { weight: cpus.len() as u32, ..Default::default() };
        if self.profile.numa != NumaVariant::V5_7 {
            ns.load = cpus.iter().map(|&c| self.weighted_cpuload(c)).sum::<u64>() as i64;
            ns.compute_capacity = 1024 * cpus.len() as i64;
            return ns;
        }
        let mut idle_core = None;
        for &c in cpus {
            let rq = &self.rqs[c.idx()];
            ns.load += self.weighted_cpuload(c) as i64;
            ns.runnable += rq.cfs.avg.runnable_avg as i64;
            ns.util += self.cpu_util_cfs(c) as i64;
            ns.nr_running += rq.cfs.h_nr_running;
            ns.compute_capacity += 1024;
            if find_idle && idle_core.is_none() && rq.nr_running() == 0 && self.idle_cpu(c) {
                if st.migrate_on[c.idx()] || !self.tasks[p.idx()].allowed(c) {
                    continue;
                }
                if ns.idle_cpu.is_none() {
                    ns.idle_cpu = Some(c);
                }
                idle_core = self.numa_idle_core(idle_core, c);
            }
        }
        ns.node_type = numa_classify(imbalance_pct, &ns);
        if idle_core.is_some() {
            ns.idle_cpu = idle_core;
        }
        ns
    }

    /// `numa_idle_core()` (v5.7+): `cpu` if SMT is active, no idle core was
    /// found yet, the LLC's `has_idle_cores` hint is set (test_idle_cores())
    /// and all of cpu's SMT siblings are idle (is_core_idle()).
    fn numa_idle_core(&self, idle_core: Option<CpuId>, cpu: CpuId) -> Option<CpuId> {
        if !self.smt_active || idle_core.is_some() {
            return idle_core;
        }
        let llc_id = self.sd.sd_llc_id[cpu.idx()] as usize;
        if !self.llc_shared.get(llc_id).is_some_and(|l| l.has_idle_cores) {
            return idle_core;
        }
        let core_idle = self.sd.smt_mask[cpu.idx()].iter().all(|s| s == cpu || self.idle_cpu(s));
        if core_idle {
            Some(cpu)
        } else {
            idle_core
        }
    }

    /// `load_too_imbalanced()` (v4.19+): would the move make the
    /// capacity-corrected load difference of the two nodes worse?
    fn load_too_imbalanced(src_load: i64, dst_load: i64, env: &NumaEnv) -> bool {
        let (sc, dc) = (env.src_stats.compute_capacity, env.dst_stats.compute_capacity);
        let imb = (dst_load * sc - src_load * dc).abs();
        let old_imb = (env.dst_stats.load * sc - env.src_stats.load * dc).abs();
        imb > old_imb
    }

    /// `adjust_numa_imbalance()` as `task_numa_find_cpu()` calls it (v5.7+),
    /// per release: may a move into a node with spare capacity leave the
    /// running-task difference `imbalance` (destination minus source, after
    /// the move) in place? 0 = yes.
    ///  - v5.7-v5.9 (fb86f5b21192): yes while the source runs at most 2
    ///    tasks (`src_running <= imbalance_min`, imbalance_min = 2);
    ///  - v5.10 (233e7aca4c8a, "Use dst group while checking imbalance for
    ///    NUMA balancer"): the same test on the destination's count;
    ///  - v5.11-v5.17 (7d2b5dd0bcc4 "Allow a floating imbalance between NUMA
    ///    nodes"): while the destination runs fewer tasks than a quarter of
    ///    its CPUs (allow_numa_imbalance()) an imbalance of up to
    ///    NUMA_IMBALANCE_MIN = 2 tasks is allowed;
    ///  - v5.18 (e496132ebedd): the quarter becomes `sd->imb_numa_nr` (fewer than);
    ///  - v5.19+ (cb29a5c19d2d "Apply imbalance limitations consistently"):
    ///    at most `imb_numa_nr` tasks.
    pub(crate) fn adjust_numa_imbalance(
        version: (u32, u32),
        imbalance: i64,
        src_running: i64,
        dst_running: i64,
        dst_weight: u32,
        imb_numa_nr: u32,
    ) -> i64 {
        const NUMA_IMBALANCE_MIN: i64 = 2;
        if version < (5, 11) {
            let running = if version < (5, 10) { src_running } else { dst_running };
            return if running <= NUMA_IMBALANCE_MIN { 0 } else { imbalance };
        }
        let allow = if version < (5, 18) {
            dst_running < (dst_weight >> 2) as i64
        } else if version < (5, 19) {
            dst_running < imb_numa_nr as i64
        } else {
            dst_running <= imb_numa_nr as i64
        };
        if allow && imbalance <= NUMA_IMBALANCE_MIN {
            0
        } else {
            imbalance
        }
    }

    /// `task_numa_migrate()` (v4.19-v5.6 and v5.7+ forms): look for a CPU
    /// (idle, or with a task to swap with) on the preferred node, then on
    /// other nodes; returns true when the task moves.
    fn task_numa_migrate(&mut self, p: TaskId) -> bool {
        let src_cpu = self.tasks[p.idx()].cpu;
        let src_nid = self.task_node(p);
        // sd_numa: the lowest domain with SD_NUMA; imbalance_pct halfway to 100.
        let Some(&sd_id) = self.sd.per_cpu[src_cpu.idx()].iter().find(|&&id| self.sd.domains[id as usize].flags & SD_NUMA != 0) else {
            let st = self.nmm();
            st.tasks[p.idx()].preferred_nid = src_nid;
            return false;
        };
        let sd = &self.sd.domains[sd_id as usize];
        let imbalance_pct = 100 + (sd.imbalance_pct as u64).saturating_sub(100) / 2;
        let imb_numa_nr = sd.imb_numa_nr;
        let dst_nid = self.nm().tasks[p.idx()].preferred_nid;
        let st = self.nm();
        let taskweight = st.task_weight(p, src_nid);
        let groupweight = st.group_weight(p, src_nid);
        let taskimp = st.task_weight(p, dst_nid) - taskweight;
        let groupimp = st.group_weight(p, dst_nid) - groupweight;
        let mut env = NumaEnv {
            p,
            src_cpu,
            src_nid,
            dst_cpu: src_cpu,
            dst_nid,
            imbalance_pct,
            imb_numa_nr,
            src_stats: self.update_numa_stats(p, src_nid, false, imbalance_pct),
            dst_stats: self.update_numa_stats(p, dst_nid, true, imbalance_pct),
            best_task: None,
            best_imp: 0,
            best_cpu: None,
        };
        self.task_numa_find_cpu(&mut env, taskimp, groupimp);
        // Other nodes: only with more than two nodes (the loop skips src and preferred).
        let n = self.nm().nr_nodes as u32;
        let multi = self.nm().tasks[p.idx()].group.is_some_and(|g| self.nm().groups[g].active_nodes > 1);
        if env.best_cpu.is_none() || multi {
            for nid in 0..n {
                if nid == src_nid || nid == dst_nid {
                    continue;
                }
                let st = self.nm();
                let ti = st.task_weight(p, nid) - taskweight;
                let gi = st.group_weight(p, nid) - groupweight;
                if ti < 0 && gi < 0 {
                    continue;
                }
                env.dst_nid = nid;
                env.dst_stats = self.update_numa_stats(p, nid, true, env.imbalance_pct);
                self.task_numa_find_cpu(&mut env, ti, gi);
            }
        }
        if self.nm().tasks[p.idx()].group.is_some() {
            let nid = env.best_cpu.map_or(src_nid, |c| self.cpu_node_of(c.idx()));
            if nid != self.nm().tasks[p.idx()].preferred_nid {
                self.nmm().tasks[p.idx()].preferred_nid = nid;
            }
        }
        let tg = self.tasks[p.idx()].group as usize;
        let Some(best) = env.best_cpu else {
            if let Some(c) = self.nmm().counters.get_mut(tg) {
                c.task_migrate_failed += 1;
            }
            return false;
        };
        // best_rq->numa_migrate_on stays set until p's move is done (the
        // kernel clears it when migrate_task_to() / migrate_swap() return,
        // after the stopper ran): numa_stop_queue() hands it to the stopper.
        match env.best_task {
            None => {
                // migrate_task_to(): the stopper of src_cpu moves p.
                self.numa_stop_queue(p, src_cpu, best, true);
                if let Some(c) = self.nmm().counters.get_mut(tg) {
                    c.task_migrated += 1;
                }
            }
            Some(q) => {
                // migrate_swap(): both stoppers; q goes to src_cpu.
                let qcpu = self.tasks[q.idx()].cpu;
                self.numa_stop_queue(p, src_cpu, best, true);
                self.numa_stop_queue(q, qcpu, src_cpu, false);
                if let Some(c) = self.nmm().counters.get_mut(tg) {
                    c.task_swapped += 1;
                }
            }
        }
        true
    }

    /// Queue a stopper move of `p` (on `cpu`) to `dst`: a running task is
    /// preempted first (its CPU reschedules), a queued one moves at once.
    /// `release`: the move holds `dst`'s `rq->numa_migrate_on`, cleared when
    /// the move is done or dropped.
    fn numa_stop_queue(&mut self, p: TaskId, cpu: CpuId, dst: CpuId, release: bool) {
        if self.rqs[cpu.idx()].curr == Some(p) {
            let st = self.nmm();
            if let Some((_, old_dst, true)) = st.stop[cpu.idx()].replace((p, dst, release)) {
                // A move replaced before its stopper ran releases its CPU.
                if old_dst != dst || !release {
                    st.migrate_on[old_dst.idx()] = false;
                }
            }
            self.rqs[cpu.idx()].need_resched = true;
            if cpu != self.cur_this_cpu {
                self.nmm().kicks.push(cpu);
            }
            return;
        }
        if self.tasks[p.idx()].se.on_rq {
            let now = self.cur_now;
            self.migrate_queued_task(p, cpu, dst, now);
            self.nmm().kicks.push(dst);
            self.rqs[dst.idx()].need_resched |= self.rqs[dst.idx()].curr.is_none();
        }
        if release {
            self.nmm().migrate_on[dst.idx()] = false;
        }
    }

    /// The stopper's half of migrate_task_to() / migrate_swap() in
    /// `__schedule()` on `cpu`: move the task it was asked to move (now
    /// put back on the queue). Returns the destination to kick.
    pub(crate) fn numa_stopper(&mut self, cpu: CpuId, now: u64) -> Option<CpuId> {
        let st = self.numa.as_deref_mut()?;
        let (p, dst, release) = st.stop[cpu.idx()].take()?;
        if release {
            // WRITE_ONCE(best_rq->numa_migrate_on, 0) once the stopper ran.
            st.migrate_on[dst.idx()] = false;
        }
        if self.tasks[p.idx()].cpu != cpu || !self.tasks[p.idx()].se.on_rq || self.rqs[cpu.idx()].curr == Some(p) {
            return None;
        }
        if !self.tasks[p.idx()].allowed(dst) {
            return None;
        }
        self.migrate_queued_task(p, cpu, dst, now);
        Some(dst)
    }

    /// `task_numa_find_cpu()`.
    ///
    /// v4.19-v5.6: a move without a swap (`maymove`) is allowed when it does
    /// not make the nodes' load imbalance worse; every CPU of the node is
    /// compared.
    ///
    /// v5.7+ (fb86f5b21192): when the destination node has spare capacity
    /// (node_has_spare), the move is allowed if adjust_numa_imbalance()
    /// accepts the running-task imbalance it leaves, and then the node's
    /// idle CPU is taken at once without comparing tasks; a node that is
    /// fully busy or overloaded is judged by load as before. The CPU walk
    /// stops when task_numa_compare() says so.
    fn task_numa_find_cpu(&mut self, env: &mut NumaEnv, taskimp: i64, groupimp: i64) {
        let maymove = if self.profile.numa == NumaVariant::V5_7 && env.dst_stats.node_type == NumaType::HasSpare {
            // Would the move cause an imbalance the load balancer would undo?
            let src_running = env.src_stats.nr_running as i64 - 1;
            let dst_running = env.dst_stats.nr_running as i64 + 1;
            let imbalance = (dst_running - src_running).max(0);
            let imbalance = Self::adjust_numa_imbalance(
                self.profile.version,
                imbalance,
                src_running,
                dst_running,
                env.dst_stats.weight,
                env.imb_numa_nr,
            );
            if imbalance == 0 {
                if let Some(c) = env.dst_stats.idle_cpu {
                    env.dst_cpu = c;
                    self.task_numa_assign(env, None, 0);
                    return;
                }
                true
            } else {
                false
            }
        } else {
            let load = self.task_h_load(env.p) as i64;
            let dst_load = env.dst_stats.load + load;
            let src_load = env.src_stats.load - load;
            !Self::load_too_imbalanced(src_load, dst_load, env)
        };
        let cpus = self.nm().node_cpus[env.dst_nid as usize].clone();
        for cpu in cpus {
            if !self.tasks[env.p.idx()].allowed(cpu) {
                continue;
            }
            env.dst_cpu = cpu;
            if self.task_numa_compare(env, taskimp, groupimp, maymove) {
                break;
            }
        }
    }

    /// `task_numa_assign()`: make (`cur` or a move, `imp`, `env.dst_cpu`)
    /// the best candidate, holding the destination's `rq->numa_migrate_on`
    /// and releasing the previous best's.
    ///
    /// v4.19-v5.6 (a4739eca4456): give up when the destination's flag is
    /// already set (by another migration, or by this search's best so far).
    /// v5.7+ (5fb52dd93a2f "Find an alternative idle CPU if the CPU is part
    /// of an active NUMA balance"): the best CPU itself may be re-assigned;
    /// a destination another migration holds is replaced by the next idle
    /// CPU of the node (wrapping from dst_cpu + 1) whose flag is free.
    fn task_numa_assign(&mut self, env: &mut NumaEnv, cur: Option<TaskId>, imp: i64) -> bool {
        let v5_7 = self.profile.numa == NumaVariant::V5_7;
        let dst = env.dst_cpu;
        if v5_7 {
            if env.best_cpu != Some(dst) && std::mem::replace(&mut self.nmm().migrate_on[dst.idx()], true) {
                let cpus = &self.nm().node_cpus[env.dst_nid as usize];
                let start = cpus.iter().position(|&c| c.0 > dst.0).unwrap_or(0);
                let order: Vec<CpuId> = cpus[start..].iter().chain(&cpus[..start]).copied().collect();
                let mut found = false;
                for c in order {
                    if Some(c) == env.best_cpu || !self.idle_cpu(c) || !self.tasks[env.p.idx()].allowed(c) {
                        continue;
                    }
                    env.dst_cpu = c;
                    if !std::mem::replace(&mut self.nmm().migrate_on[c.idx()], true) {
                        found = true;
                        break;
                    }
                }
                if !found {
                    return false;
                }
            }
            if let Some(b) = env.best_cpu.filter(|&b| b != env.dst_cpu) {
                self.nmm().migrate_on[b.idx()] = false;
            }
        } else {
            if std::mem::replace(&mut self.nmm().migrate_on[dst.idx()], true) {
                return false;
            }
            if let Some(b) = env.best_cpu {
                self.nmm().migrate_on[b.idx()] = false;
            }
        }
        env.best_task = cur;
        env.best_imp = imp;
        env.best_cpu = Some(env.dst_cpu);
        true
    }

    /// `p->numa_preferred_nid` of any task (NUMA_NO_NODE without NUMA state).
    fn preferred_of(&self, t: TaskId) -> u32 {
        self.nm().tasks.get(t.idx()).filter(|t| t.started).map_or(NO_NODE, |t| t.preferred_nid)
    }

    /// `task_numa_compare()` for `env.dst_cpu`: would moving p there, or
    /// swapping it with the task running there, improve NUMA placement?
    /// Returns the v5.7+ "stop the search" verdict (always false before).
    ///
    /// Both forms: skip a CPU another NUMA migration is heading to
    /// (`rq->numa_migrate_on`, v4.19+); an idle CPU takes a move when
    /// `maymove`; a swap needs an improvement of SMALLIMP over the best so
    /// far and no worse load imbalance.
    /// v5.7+ adds (88cca72c9673 "Bias swapping tasks based on their
    /// preferred node"): a candidate not moving to its preferred node is
    /// skipped when the best one is; a task already on its preferred node
    /// is discouraged (-1/16), one moving to it encouraged (+1/8) and
    /// preferred over a best that is not; a move goes to the node's idle CPU
    /// found by update_numa_stats() instead of select_idle_sibling()
    /// (ff7db0bf24db); the search stops at a move to an idle CPU or, when
    /// only swaps are allowed, at a swap with a task moving to its preferred
    /// node (a0f03b617c3b). v5.19+ (13ede3316393): no swap within a group,
    /// or between tasks of no group, into a node with spare capacity.
    /// The cling patch (v5.2 base): no swap with a task clinging to the destination.
    /// A running task without NUMA state (its process declares no memory)
    /// is a swap candidate of weight 0, as task_weight() of a task without
    /// numa_faults is in the kernel.
    fn task_numa_compare(&mut self, env: &mut NumaEnv, taskimp: i64, groupimp: i64, maymove: bool) -> bool {
        let v5_7 = self.profile.numa == NumaVariant::V5_7;
        let dst_cpu = env.dst_cpu;
        if self.nm().migrate_on[dst_cpu.idx()] {
            return false;
        }
        let st = self.nm();
        let p = env.p;
        let mut imp = if st.tasks[p.idx()].group.is_some() { groupimp } else { taskimp };
        let moveimp = imp;
        let cur = self.rqs[dst_cpu.idx()].curr;
        if cur == Some(p) {
            return v5_7;
        }
        let Some(cur) = cur else {
            if maymove && moveimp >= env.best_imp {
                return self.numa_assign_move(env, moveimp, maymove);
            }
            return false;
        };
        if !self.tasks[cur.idx()].allowed(env.src_cpu) {
            return false;
        }
        let cur_pref = self.preferred_of(cur);
        let best_pref = env.best_task.map_or(NO_NODE, |b| self.preferred_of(b));
        if v5_7 && env.best_task.is_some() && best_pref == env.src_nid && cur_pref != env.src_nid {
            return false;
        }
        // Tasks without NUMA state (other processes) weigh 0.
        let st = self.nm();
        let known = st.tasks.get(cur.idx()).is_some_and(|t| t.started);
        let (cg, pg) = (if known { st.tasks[cur.idx()].group } else { None }, st.tasks[p.idx()].group);
        let wt = |nid: u32| if known { st.task_weight(cur, nid) } else { 0 };
        let wg = |nid: u32| if known { st.group_weight(cur, nid) } else { 0 };
        if cg == pg {
            if v5_7 && self.profile.version >= (5, 19) && env.dst_stats.node_type == NumaType::HasSpare {
                return false;
            }
            imp = taskimp + wt(env.src_nid) - wt(env.dst_nid);
            if cg.is_some() {
                imp -= imp / 16;
            }
        } else if cg.is_some() && pg.is_some() {
            imp += wg(env.src_nid) - wg(env.dst_nid);
        } else {
            imp += wt(env.src_nid) - wt(env.dst_nid);
        }
        if v5_7 {
            if cur_pref == env.dst_nid {
                imp -= imp / 16;
            }
            if cur_pref == env.src_nid {
                imp += imp / 8;
            }
        }
        // Cling patch: do not swap with a task clinging to the destination.
        if known && st.task_numa_cling(cur, env.dst_nid, env.src_nid) {
            return false;
        }
        if maymove && moveimp > imp && moveimp > env.best_imp {
            return self.numa_assign_move(env, moveimp, maymove);
        }
        if v5_7 && env.best_task.is_some() && cur_pref == env.src_nid && best_pref != env.src_nid {
            return self.numa_assign_swap(env, cur, imp, maymove);
        }
        if imp < SMALLIMP || imp <= env.best_imp + SMALLIMP / 2 {
            return false;
        }
        let load = self.task_h_load(p) as i64 - self.task_h_load(cur) as i64;
        if load != 0 {
            let dst_load = env.dst_stats.load + load;
            let src_load = env.src_stats.load - load;
            if Self::load_too_imbalanced(src_load, dst_load, env) {
                return false;
            }
        }
        self.numa_assign_swap(env, cur, imp, maymove)
    }

    /// The `assign:` label of task_numa_compare() for a move (no task to
    /// swap): v4.19-v5.6 let select_idle_sibling() pick a CPU near
    /// dst_cpu; v5.7+ take the idle CPU update_numa_stats() found (else
    /// dst_cpu), or keep the best CPU when that one is idle and this is
    /// not, and stop the search once the best CPU is idle.
    fn numa_assign_move(&mut self, env: &mut NumaEnv, imp: i64, maymove: bool) -> bool {
        if self.profile.numa != NumaVariant::V5_7 {
            let c = self.select_idle_sibling(env.p, env.src_cpu, env.dst_cpu, env.src_cpu);
            env.dst_cpu = c;
            self.task_numa_assign(env, None, imp);
            return false;
        }
        let mut cpu = env.dst_stats.idle_cpu.unwrap_or(env.dst_cpu);
        if !self.idle_cpu(cpu) {
            if let Some(b) = env.best_cpu.filter(|&b| self.idle_cpu(b)) {
                cpu = b;
            }
        }
        env.dst_cpu = cpu;
        self.task_numa_assign(env, None, imp);
        if maymove && env.best_cpu.is_some_and(|b| self.idle_cpu(b)) {
            return true;
        }
        self.numa_swap_stop(env, maymove)
    }

    /// The `assign:` label for a swap with `cur`.
    fn numa_assign_swap(&mut self, env: &mut NumaEnv, cur: TaskId, imp: i64, maymove: bool) -> bool {
        self.task_numa_assign(env, Some(cur), imp);
        self.profile.numa == NumaVariant::V5_7 && self.numa_swap_stop(env, maymove)
    }

    /// v5.7+: when only a swap can do, stop at a best task that moves to its preferred node.
    fn numa_swap_stop(&self, env: &NumaEnv, maymove: bool) -> bool {
        !maymove && env.best_task.is_some_and(|b| self.preferred_of(b) == env.src_nid)
    }

    /// `task_numa_work()` (v5.2): mark the next `scan_size` MB of the
    /// process's resident memory for hinting faults (up to 8x that of
    /// address space), advance `numa_scan_offset`, wrap with numa_scan_seq++.
    // FIDELITY(F-768): the scan itself costs no CPU time; only hinting faults and page copies are charged.
    // FIDELITY(F-776): no VMAs, so none of v6.4+'s per-VMA scan filters (vma_is_accessed(), next_scan).
    fn task_numa_work(&mut self, p: TaskId, now: u64) {
        let st = self.nmm();
        let mi = st.tasks[p.idx()].mm.unwrap();
        if st.tasks[p.idx()].numa_scan_period == 0 {
            st.tasks[p.idx()].numa_scan_period_max = st.task_scan_max(p);
            st.tasks[p.idx()].numa_scan_period = st.task_scan_start(p);
        }
        st.mms[mi].numa_next_scan = now + st.tasks[p.idx()].numa_scan_period * 1_000_000;
        st.tasks[p.idx()].node_stamp += 2 * st.tick_ns;
        let mut pages = (st.sysctl.scan_size_mb << 8) as i64;
        let mut virtpages = pages * 8;
        let m = &mut st.mms[mi];
        let mut i = m.numa_scan_offset;
        let mut updated = 0;
        while i < m.chunks.len() && pages > 0 && virtpages > 0 {
            let c = &mut m.chunks[i];
            if c.node != NO_NODE && !c.marked {
                c.marked = true;
                pages -= HPAGE_PAGES as i64;
                updated += HPAGE_PAGES;
            }
            virtpages -= HPAGE_PAGES as i64;
            i += 1;
        }
        if i >= m.chunks.len() {
            // reset_ptenuma_scan()
            m.numa_scan_seq += 1;
            m.numa_scan_offset = 0;
        } else {
            m.numa_scan_offset = i;
        }
        let tg = self.tasks[p.idx()].group as usize;
        if let Some(c) = self.nmm().counters.get_mut(tg) {
            c.pte_updates += updated;
        }
    }

    /// `migrate_degrades_locality()` (v4.7-v5.x; cling patch: "degrades"
    /// for a task clinging to its node). None = -1 (no opinion),
    /// Some(true) = 1 (hot), Some(false) = 0.
    pub(crate) fn migrate_degrades_locality(&self, p: TaskId, src: CpuId, dst: CpuId, sd_flags: u32, idle_cpu: bool) -> Option<bool> {
        let st = self.numa.as_deref()?;
        if !st.enabled {
            return None;
        }
        let t = st.tasks.get(p.idx())?;
        if t.faults.is_empty() || sd_flags & SD_NUMA == 0 {
            return None;
        }
        let (src_nid, dst_nid) = (st.node_of[src.idx()], st.node_of[dst.idx()]);
        if src_nid == dst_nid {
            return None;
        }
        if st.task_numa_cling(p, src_nid, dst_nid) {
            return Some(true);
        }
        if src_nid == t.preferred_nid {
            let nr = self.rqs[src.idx()].nr_running();
            let pref = self.nr_preferred_running(src);
            return if nr > pref { Some(true) } else { None };
        }
        if dst_nid == t.preferred_nid {
            return Some(false);
        }
        if idle_cpu {
            return None;
        }
        let (sw, dw) = if t.group.is_some() {
            (st.group_weight(p, src_nid), st.group_weight(p, dst_nid))
        } else {
            (st.task_weight(p, src_nid), st.task_weight(p, dst_nid))
        };
        Some(dw < sw)
    }

    /// (`rq->nr_numa_running`, `rq->nr_preferred_running`) as
    /// account_numa_enqueue() keeps them (v3.13+): queued fair tasks with a
    /// preferred node, and those on it; counted on demand.
    pub(crate) fn nr_numa_counts(&self, cpu: CpuId) -> (u32, u32) {
        let Some(st) = self.numa.as_deref() else { return (0, 0) };
        let nid = st.node_of[cpu.idx()];
        let mut numa = 0;
        let mut pref = 0;
        for q in self.rqs[cpu.idx()].cfs_tasks.iter(&self.tasks) {
            if let Some(t) = st.tasks.get(q.idx()) {
                if t.preferred_nid != NO_NODE {
                    numa += 1;
                    pref += (t.preferred_nid == nid) as u32;
                }
            }
        }
        (numa, pref)
    }

    /// `fbq_classify_rq()` (v3.13+, 0ec8aa00f2b4): `Regular` while the
    /// runqueue has a task without a preferred node, `Remote` while it has one
    /// away from its preferred node, else `All`. Without NUMA balancing `All`.
    pub(crate) fn fbq_classify_rq(&self, cpu: CpuId) -> FbqType {
        if !self.numa.as_deref().is_some_and(|st| st.enabled) {
            return FbqType::All;
        }
        let nr = self.rqs[cpu.idx()].nr_running();
        let (numa, pref) = self.nr_numa_counts(cpu);
        fbq_class(nr, numa, pref)
    }

    /// `fbq_classify_group()` (v3.13+): the same over a group's runqueues
    /// (sum_h_nr_running against the group's NUMA counts).
    pub(crate) fn fbq_classify_group(&self, g: &CpuMask) -> FbqType {
        if !self.numa.as_deref().is_some_and(|st| st.enabled) {
            return FbqType::All;
        }
        let (mut nr, mut numa, mut pref) = (0, 0, 0);
        for c in g.iter() {
            nr += self.rqs[c.idx()].nr_running();
            let (n, p) = self.nr_numa_counts(c);
            numa += n;
            pref += p;
        }
        fbq_class(nr, numa, pref)
    }

    /// `rq->nr_preferred_running` (account_numa_enqueue()), counted on demand.
    // FIDELITY(F-769): nr_preferred_running / nr_numa_running are counted when asked rather than kept at enqueue (same values, other cost).
    fn nr_preferred_running(&self, cpu: CpuId) -> u32 {
        let st = self.nm();
        let nid = st.node_of[cpu.idx()];
        // rq->cfs_tasks holds every queued fair task, the running one included.
        self.rqs[cpu.idx()].cfs_tasks.iter(&self.tasks).filter(|q| st.tasks.get(q.idx()).is_some_and(|t| t.preferred_nid == nid)).count()
            as u32
    }

    // FIDELITY(F-773): the three cling points as the issue summarises the final posting.
    /// Cling patch in select_task_rq_fair(): want_affine is cleared when
    /// the waker's node differs from prev's and the wakee clings to prev's.
    #[inline]
    pub(crate) fn numa_cling_wakeup(&self, p: TaskId, prev: CpuId, this_cpu: CpuId) -> bool {
        let Some(st) = self.numa.as_deref() else { return false };
        if !st.enabled || st.tasks.len() <= p.idx() {
            return false;
        }
        let (snid, dnid) = (st.node_of[prev.idx()], st.node_of[this_cpu.idx()]);
        snid != dnid && st.task_numa_cling(p, snid, dnid)
    }
}

/// `enum fbq_type` (v3.13+): which runqueues find_busiest_queue() may take
/// from at an SD_NUMA level, in the kernel's order (a runqueue whose class is
/// above the busiest group's is skipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum FbqType {
    /// Some task has no preferred node.
    Regular,
    /// Some task runs away from its preferred node.
    Remote,
    /// No distinction.
    All,
}

fn fbq_class(nr: u32, numa: u32, pref: u32) -> FbqType {
    if nr > numa {
        FbqType::Regular
    } else if nr > pref {
        FbqType::Remote
    } else {
        FbqType::All
    }
}

/// `struct task_numa_env`, the fields this model uses.
struct NumaEnv {
    p: TaskId,
    src_cpu: CpuId,
    src_nid: u32,
    dst_cpu: CpuId,
    dst_nid: u32,
    /// 100 + half of sd_numa's imbalance_pct above 100 (numa_classify()).
    imbalance_pct: u64,
    /// `sd_numa->imb_numa_nr` (v5.18+; 0 before).
    imb_numa_nr: u32,
    src_stats: NumaStats,
    dst_stats: NumaStats,
    best_task: Option<TaskId>,
    best_imp: i64,
    best_cpu: Option<CpuId>,
}

/// `enum numa_type` (v5.7+): how busy a node is, as the load balancer's
/// group types (group_has_spare / group_fully_busy / group_overloaded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NumaType {
    /// `node_has_spare`: the node could run more tasks.
    #[default]
    HasSpare,
    /// `node_fully_busy`: no spare capacity, not overloaded.
    FullyBusy,
    /// `node_overloaded`: more tasks than CPUs and short of capacity.
    Overloaded,
}

/// `struct numa_stats` (v5.7+; v4.19-v5.6 kept only load and compute_capacity).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NumaStats {
    pub load: i64,
    pub runnable: i64,
    pub util: i64,
    /// Total compute capacity of the node's CPUs.
    pub compute_capacity: i64,
    pub nr_running: u32,
    /// CPUs of the node.
    pub weight: u32,
    pub node_type: NumaType,
    /// An idle CPU the task may use (an idle core preferred); None = -1.
    pub idle_cpu: Option<CpuId>,
}

/// `numa_classify()` (v5.7+): overloaded when it runs more tasks than CPUs
/// and utilisation or runnable time exceed the capacity by imbalance_pct;
/// has spare when it runs fewer tasks than CPUs or both stay below;
/// fully busy otherwise (the balancer's group_classify() on a node).
pub fn numa_classify(imbalance_pct: u64, ns: &NumaStats) -> NumaType {
    let pct = imbalance_pct as i64;
    let (cap, util, runnable) = (ns.compute_capacity, ns.util, ns.runnable);
    if ns.nr_running > ns.weight && (cap * 100 < util * pct || cap * pct < runnable * 100) {
        return NumaType::Overloaded;
    }
    if ns.nr_running < ns.weight || (cap * 100 > util * pct && cap * pct > runnable * 100) {
        return NumaType::HasSpare;
    }
    NumaType::FullyBusy
}

impl NumaState {
    /// Whether `cpu`'s stopper has `p` to move.
    #[inline]
    pub(crate) fn stop_pending(&self, cpu: CpuId, p: TaskId) -> bool {
        self.stop[cpu.idx()].is_some_and(|(q, ..)| q == p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::profile;

    fn kernel(patch: Option<&str>) -> Kernel {
        kernel_on("v5.2", patch)
    }

    fn kernel_on(version: &str, patch: Option<&str>) -> Kernel {
        use schedlab_topology::{CpuInfo, CpuTopology};
        // Two nodes of two CPUs, SLIT 10/21.
        let cpus = (0..4u32).map(|c| CpuInfo { core: c, cluster: c / 2, llc: c / 2, node: c / 2, package: c / 2 }).collect();
        let m = CpuTopology::new(cpus, vec![vec![10, 21], vec![21, 10]]).unwrap();
        let mut p = profile(version).unwrap();
        if let Some(x) = patch {
            p.apply_patches(x).unwrap();
        }
        let mut k = Kernel::new(&m, p);
        let node_of = (0..4).map(|c| c / 2).collect();
        let spec =
            MmSpec { mm: 0, shared_chunks: 4, private_chunks: 1, threads: 2, private_pct: 50, touch_chunks_per_s: 100, initial_node: None };
        k.numa_init(vec![spec], 1, node_of);
        k
    }

    // can_migrate_task() (v5.2): migrate_degrades_locality() speaks before
    // task_hot(): two queued tasks that prefer node 0, on a node-0 rq where one
    // more task runs than prefers the node, are refused to an idle node-1 CPU
    // balancing the NUMA level, and the decision record names NUMA locality
    // (not cache hotness) as the reason.
    #[test]
    fn balance_refusal_names_numa_locality() {
        use crate::core::{SwitchReason, TaskParams};
        use crate::explain::{LbOutcome, Record, Refusal};
        use crate::fair::balance::{BalanceResult, IdleType};
        let mut k = kernel(None);
        k.enable_explain(true);
        let mut ts = Vec::new();
        for _ in 0..3 {
            let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(0)]), ..Default::default() }, None, CpuId(0), 0);
            k.wake_up_new_task(p, CpuId(0), 0, &mut crate::core::Effects::default());
            k.schedule(CpuId(0), SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
            k.tasks[p.idx()].cpus_allowed = None;
            ts.push(p);
        }
        let now = 1_000_000_000; // long after the tasks last ran: cache cold
        let running = k.rqs[0].curr.unwrap();
        let n = k.nm().nr_nodes;
        let st = k.nmm();
        st.enabled = true;
        st.tasks.resize_with(ts.len() + 1, || TaskNuma { preferred_nid: NO_NODE, ..Default::default() });
        for &p in &ts {
            let t = &mut st.tasks[p.idx()];
            t.faults = vec![0; 4 * n * 2];
            t.faults[0] = 100; // memory faults on node 0
            t.total_numa_faults = 100;
            t.preferred_nid = if p == running { NO_NODE } else { 0 };
        }
        let numa_lvl = k.sd.per_cpu[2].len() - 1;
        let mut out = BalanceResult::default();
        k.sched_balance_rq(CpuId(2), numa_lvl, IdleType::Idle, now, &mut out);
        let log = k.explain.as_ref().unwrap().log.as_ref().unwrap();
        let Some(Record::Balance(b)) = log.iter().rev().find(|r| matches!(r, Record::Balance(_))) else { panic!("no balance record") };
        assert_eq!(b.outcome, LbOutcome::Refused, "{b:?}");
        assert_eq!(b.refused[Refusal::NumaLocality as usize], 2, "{b:?}");
        assert_eq!(b.refused[Refusal::Running as usize], 1, "{b:?}");
        assert_eq!(b.refused[Refusal::CacheHot as usize], 0, "{b:?}");
        // With NUMA balancing off the same tasks are cold and one moves.
        k.nmm().enabled = false;
        let mut out = BalanceResult::default();
        k.sched_balance_rq(CpuId(2), numa_lvl, IdleType::Idle, now, &mut out);
        assert!(out.pulled > 0, "cold tasks move when NUMA locality has no say");
    }

    // find_busiest_queue() with fbq_type (v3.13+): node 0's CPU 0 runs three
    // tasks on their preferred node 0, CPU 1 two tasks that prefer node 1.
    // The busiest group classifies `Remote`, so an idle node-1 CPU balancing
    // the NUMA level skips the heavier CPU 0 (class `All`) and takes from
    // CPU 1 (without the classification CPU 0, the heaviest, is the busiest
    // queue and its tasks are refused for locality).
    #[test]
    fn numa_balance_takes_from_runqueues_with_misplaced_tasks() {
        use crate::core::{SwitchReason, TaskParams};
        use crate::fair::balance::{BalanceResult, IdleType};
        let mut k = kernel(None);
        let mut ts = Vec::new();
        for (cpu, nid, count) in [(0u16, 0u32, 3), (1, 1, 2)] {
            for _ in 0..count {
                let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(cpu)]), ..Default::default() }, None, CpuId(cpu), 0);
                k.wake_up_new_task(p, CpuId(cpu), 0, &mut crate::core::Effects::default());
                k.schedule(CpuId(cpu), SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
                k.tasks[p.idx()].cpus_allowed = None;
                ts.push((p, nid));
            }
        }
        let n = k.nm().nr_nodes;
        let st = k.nmm();
        st.enabled = true;
        st.tasks.resize_with(ts.len() + 1, || TaskNuma { preferred_nid: NO_NODE, ..Default::default() });
        for &(p, nid) in &ts {
            let t = &mut st.tasks[p.idx()];
            t.faults = vec![0; 4 * n * 2];
            t.faults[nid as usize] = 100;
            t.total_numa_faults = 100;
            t.preferred_nid = nid;
        }
        assert_eq!(k.fbq_classify_rq(CpuId(0)), FbqType::All);
        assert_eq!(k.fbq_classify_rq(CpuId(1)), FbqType::Remote);
        let node0 = CpuMask::from_cpus(4, [CpuId(0), CpuId(1)]);
        assert_eq!(k.fbq_classify_group(&node0), FbqType::Remote);
        let numa_lvl = k.sd.per_cpu[2].len() - 1;
        let mut out = BalanceResult::default();
        k.sched_balance_rq(CpuId(2), numa_lvl, IdleType::Idle, 1_000_000_000, &mut out);
        assert!(out.pulled > 0, "a misplaced task moves to its node");
        assert_eq!(k.rqs[0].nr_running(), 3, "the ideally placed tasks stay");
        assert!(k.rqs[1].nr_running() < 2);
        // Without NUMA balancing there is no distinction.
        k.nmm().enabled = false;
        assert_eq!(k.fbq_classify_rq(CpuId(1)), FbqType::All);
    }

    // kernel/sysctl.c: the names, ranges and defaults of the NUMA sysctls (v5.2 + the cling patch).
    #[test]
    fn sysctl_parse() {
        let mut s = NumaSysctl::DEFAULT;
        assert_eq!(
            (s.scan_delay_ms, s.scan_period_min_ms, s.scan_period_max_ms, s.scan_size_mb, s.cling_degree),
            (1000, 1000, 60000, 256, 20)
        );
        s.apply("kernel.numa_balancing=0,numa_balancing_scan_size_mb=64").unwrap();
        assert_eq!((s.enabled, s.scan_size_mb), (Some(false), 64));
        assert!(s.apply("numa_balancing=2").unwrap_err().contains("0 (off) or 1"));
        assert!(s.apply("numa_balancing_cling_degree=101").unwrap_err().contains("maximum is 100"));
        assert!(s.apply("numa_balancing_scan_size_mb=0").unwrap_err().contains("at least 1"));
        assert!(s.apply("nosuch=1").unwrap_err().contains("numa_balancing_scan_delay_ms"));
        let mut t = NumaSysctl::DEFAULT;
        assert!(t.apply("numa_balancing_scan_period_min_ms=70000").unwrap_err().contains("above"));
    }

    // The series applies to its v5.2 base only; numa-cling brings patches 1-3 along.
    #[test]
    fn cling_series_on_v5_2() {
        let mut p = profile("v5.2").unwrap();
        p.apply_patches("numa-cling").unwrap();
        assert!(p.has_patch(Patch::NumaGroupCgroup) && p.has_patch(Patch::NumaCling));
        assert!(profile("v6.12").unwrap().apply_patches("numa-group").unwrap_err().contains("v5.2"));
        assert!(Kernel::numa_balancing_modelled(&profile("v5.2").unwrap()));
        assert!(Kernel::numa_balancing_modelled(&profile("v6.12").unwrap()));
        assert!(!Kernel::numa_balancing_modelled(&profile("v3.10").unwrap()));
    }

    /// Start one running task per `(cpu, pref, keep_bound)`: on `cpu` (bound
    /// there while it starts, then free unless `keep_bound`), with NUMA state
    /// whose faults are all on `pref`, its preferred node (none for
    /// NO_NODE); NUMA balancing on. Returns the tasks in that order.
    fn start_tasks(k: &mut Kernel, placed: &[(u16, u32, bool)]) -> Vec<TaskId> {
        use crate::core::{SwitchReason, TaskParams};
        let mut ts = Vec::new();
        for &(cpu, _, keep_bound) in placed {
            let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(cpu)]), ..Default::default() }, None, CpuId(cpu), 0);
            k.wake_up_new_task(p, CpuId(cpu), 0, &mut crate::core::Effects::default());
            k.schedule(CpuId(cpu), SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
            if !keep_bound {
                k.tasks[p.idx()].cpus_allowed = None;
            }
            ts.push(p);
        }
        let n = k.nm().nr_nodes;
        let st = k.nmm();
        st.enabled = true;
        let top = ts.iter().map(|p| p.idx()).max().unwrap() + 1;
        st.tasks.resize_with(top, || TaskNuma { preferred_nid: NO_NODE, ..Default::default() });
        for (&p, &(_, pref, _)) in ts.iter().zip(placed) {
            let t = &mut st.tasks[p.idx()];
            t.started = true;
            t.faults = vec![0; 4 * n * 2];
            if pref != NO_NODE {
                t.faults[2 * pref as usize] = 100; // memory faults (shared) on `pref`
                t.total_numa_faults = 100;
            }
            t.preferred_nid = pref;
            t.numa_scan_period = 1000;
        }
        ts
    }

    // numa_classify() (v5.7+, fb86f5b21192): the node types of a 4-CPU node
    // at imbalance_pct 112 (100 + (125 - 100) / 2, sd_numa of sd_init() v4/v5).
    #[test]
    fn numa_classify_node_types() {
        let ns = |nr: u32, util: i64, runnable: i64| NumaStats {
            nr_running: nr,
            weight: 4,
            compute_capacity: 4096,
            util,
            runnable,
            ..Default::default()
        };
        // Fewer tasks than CPUs: spare, however busy they are.
        assert_eq!(numa_classify(112, &ns(3, 4096, 8000)), NumaType::HasSpare);
        // As many tasks as CPUs, all busy: fully busy.
        assert_eq!(numa_classify(112, &ns(4, 4000, 4000)), NumaType::FullyBusy);
        // As many tasks as CPUs but little utilisation and runnable time: spare.
        assert_eq!(numa_classify(112, &ns(4, 2000, 2000)), NumaType::HasSpare);
        // More tasks than CPUs and util above capacity / 1.12: overloaded.
        assert_eq!(numa_classify(112, &ns(5, 3700, 3000)), NumaType::Overloaded);
        // ... or runnable above capacity x 1.12.
        assert_eq!(numa_classify(112, &ns(5, 3000, 4700)), NumaType::Overloaded);
        // More tasks than CPUs with util and runnable under the thresholds: spare.
        assert_eq!(numa_classify(112, &ns(5, 3600, 4000)), NumaType::HasSpare);
        // As many tasks as CPUs, runnable above capacity x 1.12: fully busy, not overloaded.
        assert_eq!(numa_classify(112, &ns(4, 3000, 4700)), NumaType::FullyBusy);
    }

    // adjust_numa_imbalance() as task_numa_find_cpu() calls it, per release.
    #[test]
    fn adjust_numa_imbalance_per_release() {
        let f = Kernel::adjust_numa_imbalance;
        // v5.7-v5.9: the source's count (src_running <= 2).
        assert_eq!(f((5, 7), 3, 2, 5, 48, 0), 0);
        assert_eq!(f((5, 7), 1, 3, 4, 48, 0), 1);
        // v5.10: the destination's count.
        assert_eq!(f((5, 10), 3, 2, 5, 48, 0), 3);
        assert_eq!(f((5, 10), 2, 0, 2, 48, 0), 0);
        // v5.11-v5.17: imbalance <= 2 while dst runs < a quarter of its CPUs.
        assert_eq!(f((5, 11), 2, 9, 11, 48, 0), 0);
        assert_eq!(f((5, 11), 2, 10, 12, 48, 0), 2, "12 is not < 48 / 4");
        assert_eq!(f((5, 11), 3, 0, 3, 48, 0), 3, "imbalance above NUMA_IMBALANCE_MIN");
        // v5.18: dst_running < imb_numa_nr; v5.19+: <=.
        assert_eq!(f((5, 18), 2, 0, 2, 48, 2), 2);
        assert_eq!(f((6, 12), 2, 0, 2, 48, 2), 0);
        assert_eq!(f((6, 12), 2, 1, 3, 48, 2), 2);
    }

    // update_numa_stats() v5.7+: the node's CFS task count and capacity, its
    // type, and an idle CPU the task may use that no migration is heading
    // to (rq->numa_migrate_on); v4.19-v5.6 keeps only load and capacity.
    #[test]
    fn update_numa_stats_counts_and_idle_cpu() {
        let mut k = kernel_on("v6.12", None);
        let ts = start_tasks(&mut k, &[(0, 1, false), (2, NO_NODE, false)]);
        let p = ts[0];
        let ns = k.update_numa_stats(p, 1, true, 112);
        assert_eq!((ns.nr_running, ns.weight, ns.compute_capacity), (1, 2, 2048));
        assert_eq!(ns.node_type, NumaType::HasSpare);
        assert_eq!(ns.idle_cpu, Some(CpuId(3)), "CPU 2 runs a task");
        k.nmm().migrate_on[3] = true;
        assert_eq!(k.update_numa_stats(p, 1, true, 112).idle_cpu, None, "CPU 3 is another migration's target");
        k.nmm().migrate_on[3] = false;
        k.tasks[p.idx()].cpus_allowed = Some(Box::new(CpuMask::from_cpus(4, [CpuId(0), CpuId(1), CpuId(2)])));
        assert_eq!(k.update_numa_stats(p, 1, true, 112).idle_cpu, None, "p may not run on CPU 3");
        assert_eq!(k.update_numa_stats(p, 1, false, 112).idle_cpu, None, "the source node is not searched");
        let mut k2 = kernel_on("v5.2", None);
        let ts2 = start_tasks(&mut k2, &[(0, 1, false), (2, NO_NODE, false)]);
        let old = k2.update_numa_stats(ts2[0], 1, true, 112);
        assert_eq!((old.nr_running, old.idle_cpu, old.compute_capacity), (0, None, 2048));
    }

    // task_numa_find_cpu() v5.7+ (fb86f5b21192) with v5.19+ adjust_numa_imbalance():
    // p (node 0, alone there) prefers node 1, where q runs bound to node 1.
    // Node 1 has spare capacity (1 task, 2 CPUs); after the move it would run
    // 2 tasks to node 0's 0: an imbalance of 2, allowed as dst_running 2 <=
    // imb_numa_nr 2 — so v6.12 moves p to node 1's idle CPU 3 without
    // comparing tasks. v5.2 (v4.19-v5.6 form) judges by load: the move makes
    // the load imbalance worse, q cannot go to node 0 for a swap, so p stays.
    #[test]
    fn spare_capacity_move_on_v6_12_not_on_v5_2() {
        let mut k = kernel_on("v6.12", None);
        let ts = start_tasks(&mut k, &[(0, 1, false), (2, NO_NODE, true)]);
        let (p, q) = (ts[0], ts[1]);
        k.tasks[q.idx()].cpus_allowed = Some(Box::new(CpuMask::from_cpus(4, [CpuId(2), CpuId(3)])));
        let sd = k.sd.per_cpu[0].iter().map(|&id| &k.sd.domains[id as usize]).find(|d| d.flags & SD_NUMA != 0).unwrap();
        assert_eq!(sd.imb_numa_nr, 2, "two LLCs under the NUMA level");
        assert!(k.task_numa_migrate(p), "v6.12 moves p into node 1's spare capacity");
        assert_eq!(k.nm().stop[0], Some((p, CpuId(3), true)), "the stopper of CPU 0 moves p to the idle CPU 3");
        assert!(k.nm().migrate_on[3], "CPU 3 is held until the move is done");
        assert_eq!(k.numa_stopper(CpuId(0), 0), None, "p is still running: the stopper only releases");
        assert!(!k.nm().migrate_on[3]);

        let mut k = kernel_on("v5.2", None);
        let ts = start_tasks(&mut k, &[(0, 1, false), (2, NO_NODE, true)]);
        let p = ts[0];
        k.tasks[ts[1].idx()].cpus_allowed = Some(Box::new(CpuMask::from_cpus(4, [CpuId(2), CpuId(3)])));
        assert!(!k.task_numa_migrate(p), "v5.2: the move worsens the load imbalance and there is no swap");
        assert_eq!(k.nm().stop[0], None);
        assert!(k.nm().migrate_on.iter().all(|&f| !f));
    }

    // task_numa_compare() v5.7+ (88cca72c9673 "Bias swapping tasks based on
    // their preferred node"): p (node 0) prefers node 1, which is fully busy
    // (2 tasks on 2 CPUs at full utilisation), so only a swap can do. On CPU 2
    // runs c, all of whose faults are on node 0 but which has no preferred
    // node yet (imp 1000 + 1000 - 0 = 2000); on CPU 3 runs b, 60% of its
    // faults on node 0, which prefers node 0 (imp 1000 + 600 - 400 = 1200,
    // +1/8 for moving to its preferred node). v6.12 prefers the swap with the
    // task that moves to its preferred node; v5.2 takes the larger improvement.
    #[test]
    fn swap_prefers_task_moving_to_its_preferred_node_v5_7() {
        let swap_partner = |version: &str| {
            let mut k = kernel_on(version, None);
            let ts = start_tasks(&mut k, &[(0, 1, false), (2, NO_NODE, false), (3, 0, false)]);
            let (p, c, b) = (ts[0], ts[1], ts[2]);
            let st = k.nmm();
            st.tasks[c.idx()].faults[0] = 100;
            st.tasks[c.idx()].total_numa_faults = 100;
            st.tasks[b.idx()].faults[0] = 60;
            st.tasks[b.idx()].faults[2] = 40;
            for cpu in [2, 3] {
                k.rqs[cpu].cfs.avg.util_avg = 1024;
            }
            if k.profile.numa == NumaVariant::V5_7 {
                let ns = k.update_numa_stats(p, 1, true, 112);
                assert_eq!(ns.node_type, NumaType::FullyBusy, "{version}: {ns:?}");
            }
            assert!(k.task_numa_migrate(p), "{version}: a swap");
            let (_, dst, _) = k.nm().stop[0].unwrap();
            let partner = k.rqs[dst.idx()].curr.unwrap();
            assert_eq!(k.nm().stop[dst.idx()], Some((partner, CpuId(0), false)), "{version}: the partner goes to CPU 0");
            (partner, c, b)
        };
        let (partner, _, b) = swap_partner("v6.12");
        assert_eq!(partner, b, "v6.12 swaps with the task moving to its preferred node");
        let (partner, c, _) = swap_partner("v5.2");
        assert_eq!(partner, c, "v5.2 swaps with the larger improvement");
    }

    // rq->numa_migrate_on (v4.19+, a4739eca4456; v5.7+ update_numa_stats()
    // and task_numa_assign()): two tasks of node 0 both prefer the idle node
    // 1. The first takes CPU 2 (update_numa_stats()'s first idle CPU) and
    // holds it until its stopper has run; the second, deciding before that,
    // skips CPU 2 and takes CPU 3. Without the flag both would pick CPU 2.
    #[test]
    fn numa_migrate_on_keeps_two_migrations_apart() {
        let mut k = kernel_on("v6.12", None);
        let ts = start_tasks(&mut k, &[(0, 1, false), (1, 1, false)]);
        assert!(k.task_numa_migrate(ts[0]));
        assert_eq!(k.nm().stop[0], Some((ts[0], CpuId(2), true)));
        assert!(k.task_numa_migrate(ts[1]));
        assert_eq!(k.nm().stop[1], Some((ts[1], CpuId(3), true)), "CPU 2 is taken");
        assert!(k.nm().migrate_on[2] && k.nm().migrate_on[3]);
        k.numa_stopper(CpuId(0), 0);
        assert!(!k.nm().migrate_on[2] && k.nm().migrate_on[3], "each move releases its own CPU");
        // With CPU 2's flag cleared before the second decision, both pick CPU 2.
        let mut k = kernel_on("v6.12", None);
        let ts = start_tasks(&mut k, &[(0, 1, false), (1, 1, false)]);
        assert!(k.task_numa_migrate(ts[0]));
        k.nmm().migrate_on[2] = false;
        assert!(k.task_numa_migrate(ts[1]));
        assert_eq!(k.nm().stop[1], Some((ts[1], CpuId(2), true)));
        // v5.2 holds the flag too (its task_numa_assign() gives up on a held CPU).
        let mut k = kernel_on("v5.2", None);
        let ts = start_tasks(&mut k, &[(0, 1, false), (1, 1, false)]);
        assert!(k.task_numa_migrate(ts[0]));
        assert!(k.task_numa_migrate(ts[1]));
        let (a, b) = (k.nm().stop[0].unwrap().1, k.nm().stop[1].unwrap().1);
        assert_ne!(a, b, "v5.2: the two moves go to different CPUs");
    }

    // Patches 1-3: every cpu cgroup gets a NUMA group; patch 4 sets do_cling.
    // task_numa_cling(): cling to snid only when it is the preferred node,
    // dnid is not, and snid is not busy (busy_node(): scaled failures >= 1024,
    // the busiest node, failure ratio > cling_degree).
    #[test]
    fn cling_and_busy_node() {
        let k = kernel(None);
        assert!(k.numa.as_deref().unwrap().groups.is_empty(), "no cgroup NUMA groups without the patches");
        let mut k = kernel(Some("numa-cling"));
        let st = k.numa.as_deref_mut().unwrap();
        assert_eq!(st.groups.len(), 1);
        assert!(st.groups[0].do_cling);
        st.tasks.resize_with(1, TaskNuma::default);
        st.tasks[0].group = Some(0);
        st.tasks[0].preferred_nid = 1;
        assert!(st.task_numa_cling(TaskId(0), 1, 0));
        assert!(!st.task_numa_cling(TaskId(0), 0, 1), "not clinging to a node it does not prefer");
        // 3 failures of 4 migrations toward node 1, node 1 the busiest: 75% > 20%.
        let n = st.nr_nodes;
        st.groups[0].mstat[1] = 3 * NUMA_MIGRATE_WEIGHT;
        st.groups[0].mstat[n + 1] = 4 * NUMA_MIGRATE_WEIGHT;
        st.update_failure_ratio(0, 1);
        assert_eq!(st.groups[0].mstat[2 * n + 1], 3 * 1024 * 100 / (4 * 1024 + 1));
        assert!(!st.busy_node(0, 1), "busiest_nid not set yet (the timer sets it)");
        st.groups[0].busiest_nid = 1;
        assert!(st.busy_node(0, 1));
        assert!(!st.task_numa_cling(TaskId(0), 1, 0), "no cling to a busy node");
        // cling_timer_func(): halves both counts every scan_period_max / 10.
        let at = st.groups[0].cling_timer_at;
        st.cling_timers(at);
        assert_eq!(st.groups[0].mstat[1], 3 * NUMA_MIGRATE_WEIGHT / 2);
        assert_eq!(st.groups[0].busiest_nid, 1);
        st.cling_timers(at + 6_000_000_000);
        assert!(st.groups[0].mstat[1] < NUMA_MIGRATE_WEIGHT);
        assert!(!st.busy_node(0, 1), "decayed below one failure");
    }

    // update_task_scan_period() (v4.2+): mostly private, local faults slow the
    // scan (+slot periods); mostly remote shared faults speed it up.
    #[test]
    fn scan_period_adapts_to_locality() {
        let mut k = kernel(None);
        let st = k.numa.as_deref_mut().unwrap();
        st.tasks.resize_with(1, TaskNuma::default);
        st.tasks[0].mm = Some(0);
        st.tasks[0].numa_scan_period = 1000;
        st.tasks[0].faults_locality = [0, 100, 0];
        k.update_task_scan_period(TaskId(0), 0, 100);
        // ps_ratio 10 >= 7: diff = 3 slots of 100 ms.
        assert_eq!(k.numa.as_deref().unwrap().tasks[0].numa_scan_period, 1300);
        let st = k.numa.as_deref_mut().unwrap();
        st.tasks[0].faults_locality = [100, 0, 0];
        k.update_task_scan_period(TaskId(0), 100, 0);
        // lr 0, ps 0: diff = -(7 - 0) * 130 → clamped at task_scan_min() (100 ms floor, 1000 / 1 window).
        assert_eq!(k.numa.as_deref().unwrap().tasks[0].numa_scan_period, 1000);
    }
}
