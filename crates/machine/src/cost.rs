//! The cost model: what the hardware charges for the scheduler's decisions.
//!
//! Each component is separate and switchable (`ModelSwitches`, CLI
//! `--machine-model NO_CACHE,NO_SMT,...`): caches (warmth per task and cache
//! instance, refill on switch-in, message transfer between writer and reader),
//! SMT (throughput of a thread whose sibling is busy), memory bandwidth (fluid
//! sharing per LLC and per node), NUMA memory (first-touch home node, distance-
//! scaled DRAM latency), runqueue locks (FIFO hold/wait), wakeup latency (IPI
//! unless the target polls, idle-state exit). Constants come from the
//! `Machine` (docs/CALIBRATION.md); this module never reads scheduler state.

use crate::Machine;
use schedlab_topology::CpuId;

/// Memory-level parallelism assumed for refill misses (machine-calibration §4:
/// "MLP ≈ 6–10"): concurrent outstanding misses per core.
pub const MLP: u64 = 8;
/// L1 refills from the L2 are a switched-in task's first touches of its
/// stacks and its task, file and socket structures: dependent loads [assumed].
pub const L1_MLP: u64 = 1;
/// Bytes one run of a task touches again at its next run (its L1 hot set),
/// for every task: fitted to `perf bench sched pipe` pairs pinned to one vCPU
/// of the EPYC guest (docs/CALIBRATION.md "L1 hot set").
// FIDELITY(F-026): one L1 hot set for every task; the L1 as an LRU stack of tasks.
pub const DEFAULT_L1_HOT: u64 = 11 * 1024;
/// Tasks an L1's recency stack remembers; older ones are cold there.
const L1_STACK: usize = 16;
/// Window between a waker's idle check in select_task_rq() and its
/// ttwu_pending store (wake list), or its enqueue under the target's rq lock
/// (direct path, at least the lock section), becoming visible to other CPUs: about half of the
/// waker-side cost of a remote wakeup (machine-calibration §3, L6: 0.42 us for
/// futex_wake incl. ttwu) [D, L].
pub const TTWU_WINDOW_NS: u64 = 200;
/// Cache line size.
pub const LINE: u64 = 64;
/// TLB refill after an mm switch that flushed the TLB (no PCID): one page walk
/// per page the incoming task touches again, ~8.5 ns each (machine-calibration
/// §3, L5: 512 pages re-walked cost 6.1 us without PCID vs 1.8 us with it) [D].
pub const TLB_WALK_PS_PER_PAGE: u64 = 8_500;
/// Pages a refill can cover: the second-level TLB reach of the L5 measurement (512 pages).
pub const TLB_PAGES: u64 = 512;

/// Cost of re-walking the pages of a `footprint`-byte working set after a
/// TLB flush (ns).
pub fn tlb_refill_ns(footprint: u64) -> u64 {
    footprint.div_ceil(4096).min(TLB_PAGES) * TLB_WALK_PS_PER_PAGE / 1000
}
/// Where a queued message was written (`CostModel::message_stamp`): the
/// writer's CPU and the traffic its L2 and LLC had seen by then.
/// 16 bytes (one per queued message, read once each: the size is the
/// simulator's cache footprint): the CPU in the top 16 bits of the L2
/// counter, which stays below 2^48 bytes (256 TiB through one L2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgStamp {
    cpu_l2: u64,
    llc: u64,
}

impl MsgStamp {
    const L2_BITS: u32 = 48;

    fn new(cpu: CpuId, l2: u64, llc: u64) -> MsgStamp {
        MsgStamp { cpu_l2: (cpu.0 as u64) << Self::L2_BITS | (l2 & ((1 << Self::L2_BITS) - 1)), llc }
    }

    /// The writer's CPU.
    pub fn cpu(&self) -> CpuId {
        CpuId((self.cpu_l2 >> Self::L2_BITS) as u16)
    }

    /// The writer's L2 traffic at the write (mod 2^48).
    fn l2(&self) -> u64 {
        self.cpu_l2 & ((1 << Self::L2_BITS) - 1)
    }
}

/// Cache lines of metadata touched per message besides the payload (pipe
/// buffer / skb head, wait-queue head, the reader's task struct fields).
pub const MSG_META_LINES: u64 = 3;

macro_rules! switches {
    ($( $(#[$m:meta])* $name:ident, )*) => {
        /// A component of the cost model that can be switched off for ablation.
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Component { $( $(#[$m])* $name, )* }
        impl Component {
            pub const ALL: &'static [Component] = &[$(Component::$name),*];
            pub const fn name(self) -> &'static str { match self { $(Component::$name => stringify!($name),)* } }
        }
    };
}

switches! {
    /// Cache warmth and refill on switch-in; message transfer between CPUs.
    CACHE,
    /// The L1 level of CACHE: a task's hot set refilled from the L2 when the
    /// tasks that ran on its core since its last run pushed it out.
    L1,
    /// SMT: a thread runs slower while its sibling is busy.
    SMT,
    /// Memory bandwidth shared per LLC and per node.
    MEMBW,
    /// NUMA memory placement (remote DRAM latency and bandwidth).
    NUMA,
    /// Runqueue lock contention, and the queueing of transfers of the task
    /// groups' `tg->load_avg` lines.
    LOCKS,
    /// IPI and idle-exit latency of wakeups.
    WAKELAT,
    /// Context- and mm-switch costs.
    SWITCH,
    /// Cost of each CPU examined by idle searches and balancing.
    SCAN,
    /// The machine's background: tick and interrupt time, per-CPU kernel threads.
    NOISE,
}

/// Which components are on (all by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelSwitches(u32);

impl Default for ModelSwitches {
    fn default() -> Self {
        ModelSwitches(u32::MAX)
    }
}

impl ModelSwitches {
    #[inline]
    pub fn on(self, c: Component) -> bool {
        self.0 & (1 << c as u32) != 0
    }
    pub fn set(&mut self, c: Component, on: bool) {
        if on {
            self.0 |= 1 << c as u32;
        } else {
            self.0 &= !(1 << c as u32);
        }
    }
    /// Parse `NO_CACHE,NO_SMT` (and `CACHE` to turn one back on).
    pub fn parse(spec: &str) -> Result<ModelSwitches, String> {
        let mut m = ModelSwitches::default();
        for tok in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (name, on) = match tok.strip_prefix("NO_") {
                Some(n) => (n, false),
                None => (tok, true),
            };
            let c = Component::ALL.iter().find(|c| c.name() == name).ok_or_else(|| {
                format!(
                    "unknown machine-model component {tok:?}; valid (prefix NO_ to switch off): {}",
                    Component::ALL.iter().map(|c| c.name()).collect::<Vec<_>>().join(" ")
                )
            })?;
            m.set(*c, on);
        }
        Ok(m)
    }
}

/// A task's cache and memory state as the hardware sees it.
///
/// Packed into one cache line (`CostModel::switch_in` reads all of it at every
/// switch-in): ids and warm byte counts are u32 (`NO_ID` = none; a warm part
/// is at most its cache's size, which the machine's validation keeps below
/// 4 GiB), the traffic stamps and sizes u64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct TaskMem {
    /// Private working set (bytes).
    pub footprint: u64,
    /// Bytes of the shared working set (`shared_set`).
    shared_bytes: u64,
    /// The L2's and the LLC's traffic counters when the warm parts were last updated.
    l2_stamp: u64,
    llc_stamp: u64,
    /// A working set shared with other tasks (program text, shared memory):
    /// its index. Its warmth is kept per cache instance for every task that
    /// touches it (`CostModel::switch_in`).
    shared_set: u32,
    /// The L2 (dense core index) and the bytes of the task warm in it.
    l2_core: u32,
    l2_warm: u32,
    /// The LLC (dense LLC index) and the bytes of the task warm in it.
    llc_id: u32,
    llc_warm: u32,
    /// Node holding the task's pages (first touch).
    home: u32,
}

/// No id: no shared set, not warm in any cache, no home node yet.
const NO_ID: u32 = u32::MAX;

impl Default for TaskMem {
    fn default() -> TaskMem {
        TaskMem::new(0, None)
    }
}

impl TaskMem {
    /// A task with `footprint` private bytes and, optionally, a shared set
    /// (index, bytes), cold everywhere, no home node yet.
    pub fn new(footprint: u64, shared: Option<(u32, u64)>) -> TaskMem {
        let (shared_set, shared_bytes) = shared.map_or((NO_ID, 0), |(s, b)| {
            assert!(s != NO_ID, "shared working set index {s} out of range");
            (s, b)
        });
        TaskMem {
            footprint,
            shared_bytes,
            l2_stamp: 0,
            llc_stamp: 0,
            shared_set,
            l2_core: NO_ID,
            l2_warm: 0,
            llc_id: NO_ID,
            llc_warm: 0,
            home: NO_ID,
        }
    }

    /// The shared working set: (set index, bytes).
    #[inline]
    pub fn shared(&self) -> Option<(u32, u64)> {
        (self.shared_set != NO_ID).then_some((self.shared_set, self.shared_bytes))
    }

    /// Warm bytes in one L2 (dense core index), with the L2's traffic counter when last updated.
    #[inline]
    pub fn l2(&self) -> Option<(u32, u64, u64)> {
        (self.l2_core != NO_ID).then_some((self.l2_core, self.l2_warm as u64, self.l2_stamp))
    }

    /// Warm bytes in one LLC (dense LLC index), likewise.
    #[inline]
    pub fn llc(&self) -> Option<(u32, u64, u64)> {
        (self.llc_id != NO_ID).then_some((self.llc_id, self.llc_warm as u64, self.llc_stamp))
    }

    /// Node holding the task's pages (first touch), once it has run.
    #[inline]
    pub fn home_node(&self) -> Option<u32> {
        (self.home != NO_ID).then_some(self.home)
    }
}

/// What switching a task in cost, and the counters it moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refill {
    pub ns: u64,
    /// Lines of the task's L1 hot set refilled from the L2.
    pub l1_misses: u64,
    pub l2_misses: u64,
    pub llc_misses: u64,
    pub dram_bytes: u64,
    pub remote_bytes: u64,
}

/// Sections remembered per rq lock to count its spinners (`rq_lock`).
const LOCK_RING: usize = 8;

/// How the kernel's spinlocks hand over under contention (`CostModel::rq_lock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinlockKind {
    /// Ticket spinlocks: x86 before v4.2; every waiter polls the lock's line.
    Ticket,
    /// Queued spinlocks (qspinlock, x86 from v4.2): waiters spin on their
    /// own queue nodes, only the head polls the lock word.
    Queued,
}

impl SpinlockKind {
    /// The x86 implementation of kernel `version` (qspinlock from v4.2).
    pub fn for_version(version: (u32, u32)) -> Self {
        if version >= (4, 2) {
            SpinlockKind::Queued
        } else {
            SpinlockKind::Ticket
        }
    }
}

/// What one rq->lock section cost the CPU that took it (`CostModel::rq_lock`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockSection {
    /// Spinning for the CPUs ahead of it.
    pub wait: u64,
    /// The section and the lock line's transfer (held: others wait for it).
    pub hold: u64,
}

/// A cache line that many CPUs read and write with atomics (a task group's
/// `tg->load_avg`): its last writer, its version (bumped by every write),
/// whether another CPU read it since, and when the transfer in flight ends.
#[derive(Clone, Copy, Debug, Default)]
struct SharedLine {
    owner: Option<u16>,
    last_reader: u16,
    version: u32,
    shared: bool,
    free_at: u64,
}

/// Where [`CostModel::place`]'s entry holds a CPU's LLC and NUMA node
/// (its core is at 0, its package at 2).
const PLACE_LLC: usize = 1;
const PLACE_NODE: usize = 3;

/// Per-machine cost model plus the hardware state it tracks (cache traffic,
/// rq-lock release times).
#[derive(Clone, Debug)]
pub struct CostModel {
    pub sw: ModelSwitches,
    /// `(core, llc, package, node)` of each CPU side by side (`PLACE_*`;
    /// core and LLC dense indexes): a switch or `c2c_ns` reads one entry per
    /// CPU (one cache line) instead of one from each of four arrays.
    place: Vec<[u32; 4]>,
    /// `c2c_ns` by distance: same CPU, SMT siblings, same LLC, same package, other package.
    c2c_by_level: [u64; 5],
    l1_cap: u64,
    l2_cap: u64,
    llc_cap: u64,
    llc_inclusive: bool,
    /// A task's L1 hot set (`DEFAULT_L1_HOT`) and the latency of an L1 miss
    /// served by the L2 (`Costs::l2_hit_ns()`).
    l1_hot: u64,
    l2_hit_ns: u64,
    /// Each core's L2 traffic and L1 recency stack (dense core index).
    cores: Vec<CoreCache>,
    /// Bytes brought into each LLC so far.
    llc_traffic: Vec<u64>,
    /// Shared working sets: warm bytes and traffic stamp per L2 (dense core
    /// index) and per LLC, grown on first use.
    shared: Vec<SharedWarmth>,
    dist: Vec<Vec<u32>>,
    max_dist: u32,
    c: crate::Costs,
    /// Each CPU's rq->lock (and the CPU's own spinning), one block per CPU.
    locks: Vec<RqLock>,
    /// Each task group's `tg->load_avg` line (index = group id), grown on first use.
    tg_lines: Vec<SharedLine>,
    /// The version of each group's line each CPU holds (group * nr_cpus + cpu; 0 = none).
    tg_seen: Vec<u32>,
    spinlock: SpinlockKind,
    idle_states: Vec<crate::IdleState>,
}

/// Ask the CPU to fetch every cache line of `*x` (a hint: it reads nothing
/// architecturally, so it changes no result).
#[inline(always)]
fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = x as *const T as *const i8;
        for off in (0..std::mem::size_of::<T>()).step_by(64) {
            // SAFETY: a prefetch is a hint to the cache: it cannot fault,
            // and the address lies inside `*x`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// One CPU's rq->lock as the cost model keeps it: when it is free, who held
/// it last, the start times of its last `LOCK_RING` sections (a waiter is a
/// section whose start lies after the present) and the next slot of that
/// ring, and when the CPU's own sections (waiting included) end: it spins on
/// one lock at a time, so a request it makes earlier starts no sooner. One
/// block per CPU, two cache lines (the ring the second), where five arrays
/// made a lock section touch five lines.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct RqLock {
    free_at: u64,
    cpu_until: u64,
    owner: u16,
    slot: u8,
    starts: [u64; LOCK_RING],
    /// The CPU that requested each of `starts`' sections.
    by: [u16; LOCK_RING],
}

/// One core's cache state, what a switch-in there reads and writes, in one
/// block: the counter and the stack's first six entries share a cache line
/// (they were a counter array and a heap block per core, behind an array of
/// vector headers: three lines to first-touch on a large machine).
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct CoreCache {
    /// Bytes brought into the core's L2 so far.
    l2_traffic: u64,
    /// Entries of `l1` in use (at most `L1_STACK` between switch-ins).
    l1_len: u32,
    /// The core's L1 as a recency stack, most recent first: (task, bytes it
    /// touched when it last ran there; `NO_ID` for the host's traffic while
    /// the CPU was halted). One more slot than it keeps: a push comes before the trim.
    l1: [(u32, u32); L1_STACK + 1],
}

impl CoreCache {
    fn new() -> CoreCache {
        CoreCache { l2_traffic: 0, l1_len: 0, l1: [(0, 0); L1_STACK + 1] }
    }

    /// The stack's entries in use, most recent first.
    #[inline]
    fn stack(&self) -> &[(u32, u32)] {
        &self.l1[..self.l1_len as usize]
    }

    /// Put `entry` on top of the stack (at most `L1_STACK` entries before:
    /// the slot past them takes the bottom one).
    #[inline]
    fn push_top(&mut self, entry: (u32, u32)) {
        let n = self.l1_len as usize;
        self.l1[..=n].rotate_right(1);
        self.l1[0] = entry;
        self.l1_len += 1;
    }

    /// Drop the entries an L1 no longer holds: those below `cap` bytes of more
    /// recent ones, and any past `L1_STACK`.
    fn trim(&mut self, cap: u64) {
        let mut sum = 0u64;
        let mut keep = 0;
        for &(_, b) in self.stack() {
            if sum >= cap || keep == L1_STACK {
                break;
            }
            sum += b as u64;
            keep += 1;
        }
        self.l1_len = keep as u32;
    }
}

/// Where one shared working set is warm: (warm bytes, traffic stamp) per L2
/// and per LLC instance.
#[derive(Clone, Debug, Default)]
struct SharedWarmth {
    l2: Vec<(u64, u64)>,
    llc: Vec<(u64, u64)>,
}

/// Working set assumed for every task until workloads declare footprints
/// (docs/FIDELITY.md F-016).
// FIDELITY(F-016): one working set for every task until workloads declare footprints.
pub const DEFAULT_FOOTPRINT: u64 = 64 * 1024;

fn dense(v: Vec<u32>) -> Vec<u32> {
    let mut ids: Vec<u32> = v.clone();
    ids.sort_unstable();
    ids.dedup();
    v.iter().map(|x| ids.binary_search(x).unwrap() as u32).collect()
}

impl CostModel {
    pub fn new(m: &Machine, sw: ModelSwitches) -> CostModel {
        let t = &m.topology;
        let cpus = t.cpus();
        let dist: Vec<Vec<u32>> = t.distance_matrix().to_vec();
        let max_dist = dist.iter().flatten().copied().max().unwrap_or(10);
        let core_of = dense(cpus.iter().map(|c| c.core).collect());
        let llc_of = dense(cpus.iter().map(|c| c.llc).collect());
        let nr_cores = core_of.iter().max().map_or(0, |x| x + 1) as usize;
        let nr_llcs = llc_of.iter().max().map_or(0, |x| x + 1) as usize;
        let pkg_of: Vec<u32> = cpus.iter().map(|c| c.package).collect();
        let place = (0..cpus.len()).map(|i| [core_of[i], llc_of[i], pkg_of[i], cpus[i].node]).collect();
        let k = &m.costs;
        CostModel {
            sw,
            place,
            c2c_by_level: [0, k.c2c_smt_ns, k.c2c_llc_ns, k.c2c_cross_llc_ns, k.c2c_cross_package_ns],
            l1_cap: m.caches.l1d_kib as u64 * 1024,
            l2_cap: m.caches.l2_kib as u64 * 1024,
            llc_cap: m.caches.llc_kib as u64 * 1024,
            llc_inclusive: m.caches.llc_inclusive,
            l1_hot: DEFAULT_L1_HOT,
            l2_hit_ns: k.l2_hit_ns(),
            cores: vec![CoreCache::new(); nr_cores],
            llc_traffic: vec![0; nr_llcs],
            shared: Vec::new(),
            dist,
            max_dist,
            c: m.costs.clone(),
            locks: vec![
                RqLock { free_at: 0, cpu_until: 0, owner: u16::MAX, slot: 0, starts: [0; LOCK_RING], by: [u16::MAX; LOCK_RING] };
                t.nr_cpus()
            ],
            tg_lines: Vec::new(),
            tg_seen: Vec::new(),
            spinlock: SpinlockKind::Queued,
            idle_states: m.idle_states.clone(),
        }
    }

    /// The idle governor's prediction after an idle period: like the menu
    /// governor it learns from the residency before the wakeup arrived (the
    /// exit latency not counted), as an EWMA with weight 1/8.
    ///
    /// FIDELITY(F-005): the menu/teo governors use timer and history-based
    /// predictions; this is an EWMA of the CPU's past idle intervals.
    #[inline]
    pub fn idle_predict(pred_ns: u64, residency_ns: u64) -> u64 {
        (pred_ns * 7 + residency_ns) / 8
    }

    /// Exit latency of the idle state the governor chooses for a predicted
    /// idle length: the deepest state whose target residency fits.
    pub fn idle_exit_latency(&self, pred_ns: u64) -> u64 {
        let mut lat = self.idle_states.first().map_or(0, |s| s.exit_latency_ns);
        for s in &self.idle_states {
            if s.target_residency_ns <= pred_ns {
                lat = s.exit_latency_ns;
            }
        }
        lat
    }

    /// Direct cost of a context switch (ns), before the runqueue lock wait and
    /// the incoming task's cache refill: switch_to() itself; switch_mm() when
    /// the incoming task's mm is not the CPU's last one (`mm_switch`); and,
    /// without PCID (kernels before v4.14), the CR3 write's TLB flush, after
    /// which the incoming task re-walks the pages of its `footprint`
    /// (switch_mm_irqs_off(); FIDELITY(F-024)). Zero with the SWITCH component off.
    #[inline]
    pub fn switch_cost(&self, mm_switch: bool, pcid: bool, footprint: u64) -> u64 {
        if !self.sw.on(Component::SWITCH) {
            return 0;
        }
        let mut cost = self.c.context_switch_ns;
        if mm_switch {
            cost += self.c.mm_switch_ns;
            if !pcid {
                cost += tlb_refill_ns(footprint);
            }
        }
        cost
    }

    #[inline]
    pub fn node(&self, c: CpuId) -> u32 {
        self.place[c.idx()][PLACE_NODE]
    }

    /// Dense LLC index of a CPU (0..nr_llcs).
    #[inline]
    pub fn llc_index(&self, c: CpuId) -> u32 {
        self.place[c.idx()][PLACE_LLC]
    }

    pub fn nr_llcs(&self) -> usize {
        self.llc_traffic.len()
    }

    /// Per-thread streaming ceiling when a machine does not give
    /// `mem_bw_core_mbps`: one core cannot use a whole LLC's or node's
    /// bandwidth (machine-calibration §4: BW_core ≈ 10–20 GB/s).
    pub const CORE_BW_MBPS: u64 = 15_000;

    /// Warm bytes left of `warm` after `foreign` bytes of other data entered a
    /// cache of `cap` bytes (LRU-like: the oldest lines go first, so survival
    /// falls linearly with foreign traffic and not with time alone).
    #[inline]
    pub fn surviving(warm: u64, foreign: u64, cap: u64) -> u64 {
        if foreign >= cap || cap == 0 {
            return 0;
        }
        if foreign == 0 {
            // warm * cap / cap: no division (a task switched back in with
            // nothing else run on the cache since, as in a ping-pong).
            return warm;
        }
        match warm.checked_mul(cap - foreign) {
            Some(x) => x / cap,
            None => (warm as u128 * (cap - foreign) as u128 / cap as u128) as u64,
        }
    }

    /// DRAM latency from a CPU on `from` to memory on `to`, scaled with SLIT
    /// distance between local and the farthest node.
    pub fn dram_ns(&self, from: u32, to: u32) -> u64 {
        let d = self.dist[from as usize][to as usize];
        if d <= 10 || self.max_dist <= 10 || !self.sw.on(Component::NUMA) {
            return self.c.dram_local_ns;
        }
        let extra = self.c.dram_remote_ns.saturating_sub(self.c.dram_local_ns);
        self.c.dram_local_ns + extra * (d - 10) as u64 / (self.max_dist - 10) as u64
    }

    /// One-way cache-line transfer latency between two CPUs.
    /// The first level (core, LLC, package) the two CPUs share decides, as
    /// in `a == b ? 0 : same core ? smt : same LLC ? llc : same package ?
    /// cross-LLC : cross-package`, computed without branches (which CPUs
    /// talk is unpredictable).
    #[inline]
    pub fn c2c_ns(&self, a: CpuId, b: CpuId) -> u64 {
        let (pa, pb) = (self.place[a.idx()], self.place[b.idx()]);
        let d = |i: usize| (pa[i] != pb[i]) as usize;
        let level = (a != b) as usize * (1 + d(0) * (1 + d(1) * (1 + d(2))));
        self.c2c_by_level[level]
    }

    /// A reader on `reader` consumes a `bytes` message written on `writer`
    /// that is still in the writer's caches: payload and metadata lines move
    /// between them (dependent loads, no MLP).
    pub fn message_ns(&self, writer: CpuId, reader: CpuId, bytes: u64) -> u64 {
        if !self.sw.on(Component::CACHE) {
            return 0;
        }
        let lines = bytes.div_ceil(LINE) + MSG_META_LINES;
        lines * self.c2c_ns(writer, reader)
    }

    /// A message written on `writer` now: its lines are in that CPU's L2 and
    /// LLC, which have seen the traffic counted so far.
    #[inline]
    pub fn message_stamp(&self, writer: CpuId) -> MsgStamp {
        let [core, llc, ..] = self.place[writer.idx()].map(|x| x as usize);
        MsgStamp::new(writer, self.cores[core].l2_traffic, self.llc_traffic[llc])
    }

    /// A reader on `reader` consumes a `bytes` message written as `st` says:
    /// what of its payload and metadata lines survived the traffic through
    /// the writer's L2 and LLC since the write (`surviving()`) moves between
    /// the caches as in `message_ns`; lines the L2 lost but the LLC kept cost
    /// an LLC hit when the reader shares that LLC; the rest come from DRAM.
    /// Dependent loads, no MLP. A message read soon after its write costs
    /// exactly `message_ns`.
    // FIDELITY(F-031): the message's own bytes are not counted as traffic; what evicts it is the tasks' refills.
    #[inline]
    pub fn message_read_ns(&self, st: MsgStamp, reader: CpuId, bytes: u64) -> u64 {
        if !self.sw.on(Component::CACHE) {
            return 0;
        }
        let lines = bytes.div_ceil(LINE) + MSG_META_LINES;
        let w = st.cpu();
        let [core, llc, ..] = self.place[w.idx()].map(|x| x as usize);
        let size = lines * LINE;
        let c2c = self.c2c_ns(w, reader);
        // Lines kept, rounded to the nearest (the expected count).
        let l2_foreign = self.cores[core].l2_traffic.wrapping_sub(st.l2()) & ((1 << MsgStamp::L2_BITS) - 1);
        let l2_lines = (Self::surviving(size, l2_foreign, self.l2_cap) + LINE / 2) / LINE;
        if l2_lines >= lines {
            return lines * c2c;
        }
        let in_llc = (Self::surviving(size, self.llc_traffic[llc] - st.llc, self.llc_cap) + LINE / 2) / LINE;
        let llc_lines = in_llc.max(l2_lines) - l2_lines;
        let dram_lines = lines - l2_lines - llc_lines;
        let llc_ns = if self.llc_index(reader) as usize == llc { self.c.llc_hit_ns } else { c2c };
        let dram = if dram_lines == 0 { 0 } else { self.dram_ns(self.node(reader), self.node(w)) };
        l2_lines * c2c + llc_lines * llc_ns + dram_lines * dram
    }

    /// `cpu` comes back from `idle_ns` of idle: on a machine whose halted CPUs
    /// lose cache contents to other work (`halt_evict_mbps`, a virtual
    /// machine's host), that much foreign data entered its L2 and its LLC, so
    /// the next switch-in finds less of its task warm (`surviving()`).
    // FIDELITY(F-450): host traffic as a constant rate into both levels, whatever the host runs.
    #[inline]
    pub fn halted(&mut self, cpu: CpuId, idle_ns: u64) {
        // Bare metal (no host traffic, every preset but the guests'): no call.
        if self.c.halt_evict_mbps != 0 {
            self.halted_evict(cpu, idle_ns);
        }
    }

    fn halted_evict(&mut self, cpu: CpuId, idle_ns: u64) {
        let rate = self.c.halt_evict_mbps;
        if !self.sw.on(Component::CACHE) {
            return;
        }
        let bytes = idle_ns.saturating_mul(rate) / 1000;
        let [core, llc, ..] = self.place[cpu.idx()].map(|x| x as usize);
        let cc = &mut self.cores[core];
        cc.l2_traffic = cc.l2_traffic.saturating_add(bytes);
        self.llc_traffic[llc] = self.llc_traffic[llc].saturating_add(bytes);
        if bytes > 0 && self.sw.on(Component::L1) {
            let cc = &mut self.cores[core];
            cc.push_top((NO_ID, bytes.min(self.l1_cap) as u32));
            cc.trim(self.l1_cap);
        }
    }

    /// What of a `bytes`-byte part of a working set must come from the LLC and
    /// from DRAM, given what survived of it in this L2 and LLC, and what of it
    /// the caches hold at most (`in_l2`, `in_llc`): (from LLC, from DRAM).
    fn cold_part(&self, warm_l2: u64, warm_llc: u64, in_l2: u64, in_llc: u64) -> (u64, u64) {
        let warm_llc = if self.llc_inclusive {
            warm_llc.max(warm_l2)
        } else {
            // Victim LLC: what left the L2 landed in the LLC.
            (warm_llc + warm_l2).min(in_llc.max(warm_l2))
        };
        // Bytes of the working set not present in this LLC come from DRAM; of
        // those missing from the L2, the rest are served by the LLC.
        let from_dram = in_llc.saturating_sub(warm_llc.max(warm_l2));
        let need_l2 = in_l2.saturating_sub(warm_l2);
        (need_l2 - need_l2.min(from_dram), from_dram)
    }

    /// Switch task `m` in on `cpu`: the cold part of its working set is refilled
    /// from the LLC or from DRAM (local or remote), then it is warm there. A
    /// shared part (`TaskMem::shared`) is cold only where no task touching it
    /// ran recently; private and shared parts split the caches in proportion.
    // FIDELITY(F-018): warmth kept for the last L2 and the last LLC only (per instance for shared sets).
    pub fn switch_in(&mut self, m: &mut TaskMem, task: u32, cpu: CpuId) -> Refill {
        let [core, llc, _, node] = self.place[cpu.idx()];
        if m.home == NO_ID {
            m.home = node;
        }
        let home = m.home;
        let shared = m.shared().filter(|&(_, b)| b > 0);
        if !self.sw.on(Component::CACHE) || (m.footprint == 0 && shared.is_none()) {
            return Refill::default();
        }
        let fp = m.footprint;
        let total = fp + shared.map_or(0, |(_, b)| b);
        // The part of a cache a set of `bytes` gets: all of it when everything fits.
        let share = |bytes: u64, cap: u64| if total <= cap { bytes } else { (bytes as u128 * cap as u128 / total as u128) as u64 };
        let (in_l2, in_llc) = match shared {
            // Private only (every built-in): the set is capped by each cache.
            None => (fp.min(self.l2_cap), fp.min(self.llc_cap)),
            Some(_) => (share(fp, self.l2_cap), share(fp, self.llc_cap)),
        };
        let warm_l2 = if m.l2_core == core {
            Self::surviving(m.l2_warm as u64, self.cores[core as usize].l2_traffic - m.l2_stamp, self.l2_cap)
        } else {
            0
        };
        let warm_llc = if m.llc_id == llc {
            Self::surviving(m.llc_warm as u64, self.llc_traffic[llc as usize] - m.llc_stamp, self.llc_cap)
        } else {
            0
        };
        let (mut from_llc, mut from_dram) = self.cold_part(warm_l2, warm_llc, in_l2, in_llc);
        let private_refill = from_llc + from_dram;
        let mut sh_in = (0, 0);
        if let Some((set, bytes)) = shared {
            let (nc, nl) = (self.cores.len(), self.llc_traffic.len());
            if self.shared.len() <= set as usize {
                self.shared.resize_with(set as usize + 1, SharedWarmth::default);
            }
            let w = &mut self.shared[set as usize];
            if w.l2.is_empty() {
                w.l2 = vec![(0, 0); nc];
                w.llc = vec![(0, 0); nl];
            }
            let (wl2, sl2) = w.l2[core as usize];
            let (wllc, sllc) = w.llc[llc as usize];
            let warm_l2 = Self::surviving(wl2, self.cores[core as usize].l2_traffic - sl2, self.l2_cap);
            let warm_llc = Self::surviving(wllc, self.llc_traffic[llc as usize] - sllc, self.llc_cap);
            sh_in = (share(bytes, self.l2_cap), share(bytes, self.llc_cap));
            let (a, b) = self.cold_part(warm_l2, warm_llc, sh_in.0, sh_in.1);
            from_llc += a;
            from_dram += b;
        }
        let l1_lines = if self.sw.on(Component::L1) {
            let hot = fp.min(self.l1_hot).min(self.l1_cap);
            self.l1_switch_in(core as usize, task, hot, private_refill, from_llc + from_dram).div_ceil(LINE)
        } else {
            0
        };
        let llc_lines = from_llc.div_ceil(LINE);
        let dram_lines = from_dram.div_ceil(LINE);
        // (No line from DRAM, the usual warm switch-in: no distance lookup.)
        let dram_lat = if dram_lines == 0 { 0 } else { self.dram_ns(node, home) };
        let ns = (llc_lines * self.c.llc_hit_ns + dram_lines * dram_lat) / MLP + l1_lines * self.l2_hit_ns / L1_MLP;
        // The refill is traffic in these caches; the task is now warm there.
        self.cores[core as usize].l2_traffic += from_llc + from_dram;
        self.llc_traffic[llc as usize] += from_dram;
        let (t2, tl) = (self.cores[core as usize].l2_traffic, self.llc_traffic[llc as usize]);
        // At most the cache's size, which validation keeps below 4 GiB.
        (m.l2_core, m.l2_warm, m.l2_stamp) = (core, in_l2 as u32, t2);
        (m.llc_id, m.llc_warm, m.llc_stamp) = (llc, in_llc as u32, tl);
        if let Some((set, _)) = shared {
            let w = &mut self.shared[set as usize];
            w.l2[core as usize] = (sh_in.0, t2);
            w.llc[llc as usize] = (sh_in.1, tl);
        }
        Refill {
            ns,
            l1_misses: l1_lines,
            l2_misses: llc_lines + dram_lines,
            llc_misses: dram_lines,
            dram_bytes: dram_lines * LINE,
            remote_bytes: if home != node { dram_lines * LINE } else { 0 },
        }
    }

    /// The L1 part of a switch-in of `task` on `core` (`Component::L1`): its
    /// `hot` bytes are warm as far as the bytes touched on the core by the
    /// tasks that ran there since its last run (its LRU stack distance) leave
    /// room for them in the L1; the rest comes from the L2, except what the L2
    /// refill of its private set (`l2_refill`) brings through the L1 anyway.
    /// The task is then the most recent entry, with what it touched: its hot
    /// set, or everything it refilled (`touched`) when that is more. Returns
    /// the bytes refilled from the L2.
    fn l1_switch_in(&mut self, core: usize, task: u32, hot: u64, l2_refill: u64, touched: u64) -> u64 {
        let cap = self.l1_cap;
        let cc = &mut self.cores[core];
        let mut above = 0u64;
        let mut found = None;
        for (i, &(t, b)) in cc.stack().iter().enumerate() {
            if t == task {
                found = Some(i);
                break;
            }
            above += b as u64;
        }
        // At most the L1's size, which validation keeps below 4 GiB.
        let entry = (task, hot.max(touched).min(cap) as u32);
        let warm = match found {
            Some(i) => {
                // Move it to the top: the entries above it shift down by one.
                cc.l1[..=i].rotate_right(1);
                cc.l1[0] = entry;
                hot.min(cap.saturating_sub(above))
            }
            None => {
                cc.push_top(entry);
                0
            }
        };
        cc.trim(cap);
        (hot - warm).saturating_sub(l2_refill)
    }

    /// Throughput factor (per mille) of a thread whose SMT sibling is busy or not.
    #[inline]
    // FIDELITY(F-020): one SMT factor per machine, whatever the code.
    pub fn smt_rate(&self, sibling_busy: bool) -> u64 {
        if sibling_busy && self.sw.on(Component::SMT) {
            self.c.smt_factor_pct as u64 * 10
        } else {
            1000
        }
    }

    /// Bandwidth (MB/s, i.e. bytes per microsecond) of one memory-bound task
    /// when `llc_users` tasks stream from its LLC and `node_users` from its
    /// node; `remote` when its pages are on another node.
    // FIDELITY(F-019): fluid shares; no loaded-latency growth.
    pub fn mem_rate(&self, llc_users: u32, node_users: u32, remote: bool) -> u64 {
        if !self.sw.on(Component::MEMBW) {
            return self.c.mem_bw_core_mbps;
        }
        let per_llc = self.c.mem_bw_llc_mbps / llc_users.max(1) as u64;
        let per_node = self.c.mem_bw_node_mbps / node_users.max(1) as u64;
        let mut r = per_llc.min(per_node).min(self.c.mem_bw_core_mbps);
        if remote && self.sw.on(Component::NUMA) {
            // Remote streams are latency-bound: scale by local/remote latency.
            r = r * self.c.dram_local_ns / self.c.dram_remote_ns.max(1);
        }
        r.max(1)
    }

    /// Ask the CPU to fetch what a switch on `cpu` reads of the model (its
    /// core's cache state, its rq-lock) at once, ahead of the reads. A hint
    /// only: no effect on any result.
    #[inline]
    pub fn prefetch_cpu(&self, cpu: CpuId) {
        if let (Some(l), Some(&[core, ..])) = (self.locks.get(cpu.idx()), self.place.get(cpu.idx())) {
            prefetch(l);
            if let Some(c) = self.cores.get(core as usize) {
                prefetch(c);
            }
        }
    }

    /// When `cpu`'s last rq-lock section (waiting included) ends: an idle
    /// CPU that balanced is spinning or holding until then.
    pub fn lock_busy_until(&self, cpu: CpuId) -> u64 {
        self.locks[cpu.idx()].cpu_until
    }

    /// The kernel's spinlock implementation (the engine sets it from the
    /// profile's version): it decides how a contended hand-over grows with
    /// the number of spinning CPUs (`rq_lock`).
    pub fn set_spinlock(&mut self, kind: SpinlockKind) {
        self.spinlock = kind;
    }

    /// CPU `who` takes `cpu`'s rq->lock at `now` for a critical section of
    /// `section` ns. FIFO: the lock is granted in request order; back-to-back
    /// sections of the same CPU do not contend with themselves.
    ///
    /// The lock's cache line comes from the CPU that held it last (the rq's
    /// own CPU before anyone took it): one transfer (`c2c_ns`) added to the
    /// section, which the lock cannot serve anyone else during. Under
    /// contention a ticket lock (x86 before v4.2) hands over more slowly the
    /// more CPUs spin on it: the release invalidates every spinner's copy of
    /// the one line they all poll, and the next owner's re-read is served
    /// among all of theirs, on average after half of them; a queued spinlock
    /// (qspinlock, v4.2+) has only the queue's head polling the lock word,
    /// so a hand-over is one transfer whatever the queue's length.
    // FIDELITY(F-440): spinners counted at request time, at most LOCK_RING - 1; the data lines of the section are not transferred separately.
    pub fn rq_lock(&mut self, cpu: CpuId, who: CpuId, now: u64, section: u64) -> LockSection {
        let i = cpu.idx();
        let last = self.locks[i].owner;
        if last == who.0 {
            // The CPU that took the lock last takes it again (a CPU's own
            // switch after its wake-list activation, most sections): the
            // line is in its cache (`c2c_ns(who, who)` is 0) and it does
            // not wait for its own earlier section. What the general path
            // below gives then, without the distance lookup.
            if !self.sw.on(Component::LOCKS) {
                return LockSection { wait: 0, hold: section };
            }
            self.lock_section(i, who, now, section);
            return LockSection { wait: 0, hold: section };
        }
        let from = if last == u16::MAX { cpu } else { CpuId(last) };
        let mut transfer = self.c2c_ns(from, who);
        self.locks[i].owner = who.0;
        if !self.sw.on(Component::LOCKS) {
            return LockSection { wait: 0, hold: section + transfer };
        }
        // A CPU still in an earlier section (an idle CPU's balancing, whose
        // time the engine does not charge) cannot start spinning for this
        // one before it ends: without this an idle CPU could queue sections
        // faster than any lock serves them.
        let wait = now.max(self.locks[who.idx()].cpu_until).max(self.locks[i].free_at) - now;
        let l = &mut self.locks[i];
        if wait > 0 && self.spinlock == SpinlockKind::Ticket {
            // CPUs queued ahead of this one that have not got the lock yet:
            // they spin beside it until the hand-over it waits for.
            // Its own earlier section, if still queued, is not a spinner.
            let others = l.starts.iter().zip(&l.by).filter(|&(&s, &c)| s > now && c != who.0).count() as u64;
            transfer += transfer * others / 2;
        }
        let hold = section + transfer;
        self.lock_section(i, who, now + wait, hold);
        LockSection { wait, hold }
    }

    /// Record that `who` holds lock `i` from `start` for `hold` ns (the
    /// lock's free time, its ring of section starts, `who`'s own busy time).
    #[inline(always)]
    fn lock_section(&mut self, i: usize, who: CpuId, start: u64, hold: u64) {
        let l = &mut self.locks[i];
        l.free_at = start + hold;
        let slot = l.slot as usize;
        l.starts[slot] = start;
        l.by[slot] = who.0;
        l.slot = ((slot + 1) % LOCK_RING) as u8;
        self.locks[who.idx()].cpu_until = start + hold;
    }

    /// `cpu` reads (`write` false: `calc_group_shares()`) or atomically
    /// updates (`update_tg_load_avg()`) task group `group`'s `tg->load_avg`
    /// line at `now`. A read finds its copy current unless another CPU wrote
    /// the line since it last had it; a write needs the line exclusive. A miss
    /// moves the line from its last writer (c2c), for a write whose CPU wrote
    /// last but others have read since, the invalidation reaches the last
    /// reader. Transfers that need the line exclusive (writes, and the first
    /// read after a write, which downgrades the writer's copy) are served one
    /// at a time: a miss waits for the one in flight. Returns the wait
    /// (`LOCKS` off: none) and the transfer; a hit costs nothing beyond the
    /// operation's own cost.
    // FIDELITY(F-023): one line per group, MESI-like states; the later readers of a version are not queued.
    pub fn tg_line(&mut self, group: u32, cpu: CpuId, now: u64, write: bool) -> LockSection {
        let g = group as usize;
        let n = self.place.len();
        if self.tg_lines.len() <= g {
            self.tg_lines.resize(g + 1, SharedLine::default());
            self.tg_seen.resize((g + 1) * n, 0);
        }
        let held = self.tg_seen[g * n + cpu.idx()];
        let l = &mut self.tg_lines[g];
        let hit = if write { l.owner == Some(cpu.0) && !l.shared } else { held == l.version };
        let first = l.owner.is_none();
        let mut cost = LockSection::default();
        if !hit && !first {
            let from = match l.owner {
                Some(o) if o != cpu.0 => CpuId(o),
                _ => CpuId(l.last_reader),
            };
            let exclusive = write || !l.shared;
            let wait = if self.sw.on(Component::LOCKS) { l.free_at.saturating_sub(now) } else { 0 };
            let transfer = self.c2c_ns(from, cpu);
            let l = &mut self.tg_lines[g];
            if exclusive {
                l.free_at = now + wait + transfer;
            }
            cost = LockSection { wait, hold: transfer };
        }
        let l = &mut self.tg_lines[g];
        if write {
            l.version = l.version.wrapping_add(1).max(1);
            l.owner = Some(cpu.0);
            l.shared = false;
        } else {
            if l.owner.is_none() {
                l.owner = Some(cpu.0);
                l.version = l.version.max(1);
            }
            if l.owner != Some(cpu.0) {
                l.shared = true;
                l.last_reader = cpu.0;
            }
        }
        let v = l.version;
        self.tg_seen[g * n + cpu.idx()] = v;
        cost
    }

    pub fn costs(&self) -> &crate::Costs {
        &self.c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task id for the cost model's L1 stacks, one per variable name.
    fn tid(name: &str) -> u32 {
        name.bytes().fold(17u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32))
    }

    // A core's recency stack in its fixed block keeps the order a vector
    // with insert-at-front, move-to-front and truncate keeps (what it
    // replaced), over random switch-ins and halts; the counter and the
    // stack's top share the block's first line.
    #[test]
    fn core_cache_stack_matches_a_vector_model() {
        assert_eq!(std::mem::align_of::<CoreCache>(), 64);
        assert_eq!(std::mem::offset_of!(CoreCache, l1), 12);
        let cap = 32 * 1024u64;
        let mut cc = CoreCache::new();
        let mut model: Vec<(u32, u32)> = Vec::new();
        let mut x = 7u64;
        let mut full = 0;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let task = ((x >> 33) % 24) as u32;
            // Mostly small sets, so the stack also fills to its entry limit.
            let bytes = ((x >> 13) % if x >> 62 == 0 { 12_000 } else { 2_500 }) as u32;
            let entry = if task == 23 { (NO_ID, bytes) } else { (task, bytes) };
            match model.iter().position(|&(t, _)| t == entry.0 && t != NO_ID) {
                Some(i) => {
                    model.remove(i);
                    model.insert(0, entry);
                    let j = cc.stack().iter().position(|&(t, _)| t == entry.0).expect("the model's entry");
                    assert_eq!(i, j);
                    cc.l1[..=j].rotate_right(1);
                    cc.l1[0] = entry;
                }
                None => {
                    model.insert(0, entry);
                    cc.push_top(entry);
                }
            }
            let (mut sum, mut keep) = (0u64, 0);
            for &(_, b) in &model {
                if sum >= cap || keep == L1_STACK {
                    break;
                }
                sum += b as u64;
                keep += 1;
            }
            model.truncate(keep);
            cc.trim(cap);
            assert_eq!(cc.stack(), &model[..]);
            full += (model.len() == L1_STACK) as u32;
        }
        assert!(full > 100, "the entry limit was reached {full} times");
    }

    // switch_in() reads all of a task's TaskMem at every switch-in: one line.
    #[test]
    fn task_mem_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<TaskMem>(), 64);
        assert_eq!(std::mem::align_of::<TaskMem>(), 64);
        let t = TaskMem::new(4096, Some((3, 1 << 20)));
        assert_eq!((t.shared(), t.l2(), t.llc(), t.home_node()), (Some((3, 1 << 20)), None, None, None));
        assert_eq!(TaskMem::default().shared(), None);
    }

    fn model(name: &str) -> CostModel {
        CostModel::new(&crate::load(name).unwrap(), ModelSwitches::default())
    }

    // Warmth decays with foreign traffic and not with time alone.
    #[test]
    fn warmth_decays_with_traffic_only() {
        assert_eq!(CostModel::surviving(1000, 0, 4000), 1000);
        assert_eq!(CostModel::surviving(1000, 2000, 4000), 500);
        assert_eq!(CostModel::surviving(1000, 4000, 4000), 0);
        let mut cm = model("x86-12");
        let mut t = TaskMem::new(128 * 1024, None);
        let first = cm.switch_in(&mut t, tid("t"), CpuId(0));
        assert!(first.ns > 0);
        // Same CPU again, no foreign traffic in between (however long ago): free.
        assert_eq!(cm.switch_in(&mut t, tid("t"), CpuId(0)).ns, 0);
        // Another task streams 4 MB through cpu0's caches: t is colder.
        let mut other = TaskMem::new(4 << 20, None);
        cm.switch_in(&mut other, tid("other"), CpuId(0));
        assert!(cm.switch_in(&mut t, tid("t"), CpuId(0)).ns > 0);
    }

    // A shared set (program text) stays warm on a core for every task that
    // touches it: the second of two tasks sharing it refills only its private
    // part there; on a core in another LLC the set is cold again; a task
    // without a shared set refills exactly what it did before sets existed.
    #[test]
    fn a_shared_set_is_warm_for_every_task_that_touches_it() {
        let mut cm = model("x86-12"); // 256 KiB L2, 12 MB LLC per socket of 6 cores
        let (p, s) = (32 * 1024, 128 * 1024);
        let mut a = TaskMem::new(p, Some((0, s)));
        let mut b = TaskMem::new(p, Some((0, s)));
        let cold = cm.switch_in(&mut a, tid("a"), CpuId(0));
        assert_eq!(cold.l2_misses, (p + s) / LINE, "first touch: both parts");
        let second = cm.switch_in(&mut b, tid("b"), CpuId(0));
        assert_eq!(second.l2_misses, p / LINE, "the set is warm on core 0: b refills only its private part");
        // Core 6 is on the other socket (another LLC): the set is cold there.
        let far = cm.switch_in(&mut b, tid("b"), CpuId(6));
        assert_eq!((far.l2_misses, far.llc_misses), ((p + s) / LINE, (p + s) / LINE));
        // Without a set, the private refill is the old one.
        let mut old = TaskMem::new(p, None);
        let mut fresh = model("x86-12");
        assert_eq!(fresh.switch_in(&mut old, tid("old"), CpuId(0)).l2_misses, p / LINE);
        // Private and shared parts split a cache they overflow in proportion.
        let mut big = TaskMem::new(256 * 1024, Some((1, 256 * 1024)));
        fresh.switch_in(&mut big, tid("big"), CpuId(1));
        assert_eq!(big.l2().map(|(_, w, _)| w), Some(fresh.l2_cap / 2), "the L2 holds half of each part");
        assert_eq!(big.llc().map(|(_, w, _)| w), Some(256 * 1024), "the LLC holds all of it");
    }

    // The L1 level (F-026): a task's hot set survives one partner running
    // between its runs (a ping-pong pair), not three others (two pairs
    // interleaved on one core): LRU stack distance, not traffic. Two others
    // of 11 KiB leave room for 10 of its 11 KiB. NO_L1 turns the level off
    // and leaves the rest of the refill as it was.
    #[test]
    fn l1_hot_set_survives_a_partner_but_not_two_pairs() {
        let hot = DEFAULT_L1_HOT;
        let run = |sw: &str, order: &[usize], rounds: usize| {
            let mut cm = CostModel::new(&crate::load("x86-12").unwrap(), ModelSwitches::parse(sw).unwrap());
            // 16 KiB each: four of them stay warm in the 256 KiB L2.
            let mut t = [TaskMem::new(16 << 10, None); 4];
            let mut last = Refill::default();
            for _ in 0..rounds {
                for &i in order {
                    last = cm.switch_in(&mut t[i], i as u32, CpuId(0));
                }
            }
            (last, cm.l2_hit_ns)
        };
        let (pair, _) = run("", &[0, 1], 3);
        let (pair_off, _) = run("NO_L1", &[0, 1], 3);
        assert_eq!(pair.l1_misses, 0, "a partner's run leaves the hot set warm");
        assert_eq!(pair, pair_off, "so the L1 level adds nothing to a pair");
        let (two_pairs, l2_hit) = run("", &[0, 2, 1, 3], 3);
        let (off, _) = run("NO_L1", &[0, 2, 1, 3], 3);
        assert_eq!(l2_hit, 4, "x86-12: Westmere's 10-cycle L2 at 2.67 GHz");
        assert_eq!(two_pairs.l1_misses, hot / LINE, "three others since: all of it from the L2");
        assert_eq!(two_pairs.ns - off.ns, hot / LINE * l2_hit / L1_MLP);
        assert_eq!((off.l1_misses, two_pairs.l2_misses), (0, off.l2_misses), "the L2 part is the same with and without");
        // Two others between runs: 22 KiB above it in a 32 KiB L1.
        let (three, _) = run("", &[0, 1, 2], 3);
        assert_eq!(three.l1_misses, (3 * hot - (32 << 10)).div_ceil(LINE));
    }

    // A halt evicts only where the machine says its halted CPUs lose their
    // caches (a VM's host): bare metal keeps the task warm however long the
    // CPU idled; at 7,000 MB/s a 50 us halt costs part of the L2 copy (refill
    // from the LLC), a 10 ms halt the LLC copy too (refill from DRAM).
    #[test]
    fn halt_evicts_only_on_machines_that_say_so() {
        let fp = 256 * 1024;
        let mut bare = model("x86-12");
        let mut t = TaskMem::new(fp, None);
        bare.switch_in(&mut t, tid("t"), CpuId(0));
        bare.halted(CpuId(0), 10_000_000);
        assert_eq!(bare.switch_in(&mut t, tid("t"), CpuId(0)).ns, 0, "bare metal: an idle core keeps its contents");
        let mut m = crate::load("x86-12").unwrap();
        m.costs.halt_evict_mbps = 7_000;
        let refill_after = |halt_ns: u64| {
            let mut cm = CostModel::new(&m, ModelSwitches::default());
            let mut t = TaskMem::new(fp, None);
            cm.switch_in(&mut t, tid("t"), CpuId(0));
            cm.halted(CpuId(0), halt_ns);
            cm.switch_in(&mut t, tid("t"), CpuId(0))
        };
        let (short, long) = (refill_after(50_000), refill_after(10_000_000));
        // 50 us x 7,000 MB/s = 350 KB into a 256 KiB L2: all of the L2 copy
        // gone, the LLC copy (12 MiB) nearly intact: refilled from the LLC.
        let lines = fp / LINE;
        assert!(short.l2_misses >= lines && short.l2_misses <= lines + 1, "{short:?}");
        let lost_llc = lines * 350_000 / (12 << 20); // 2.8 % of the LLC copy
        assert!(short.llc_misses >= lost_llc && short.llc_misses <= lost_llc + 1, "{short:?}");
        // 10 ms = 70 MB: more than the LLC; everything comes from DRAM.
        assert!(long.llc_misses >= lines, "{long:?}");
        assert!(long.ns > short.ns);
        // Without the CACHE component nothing is tracked.
        let mut off = CostModel::new(&m, ModelSwitches::parse("NO_CACHE").unwrap());
        off.halted(CpuId(0), 10_000_000);
        assert_eq!(off.cores[0].l2_traffic, 0);
    }

    // Cost is monotonic in footprint and in distance (same core < same LLC < other socket).
    #[test]
    fn refill_monotonic_in_footprint_and_distance() {
        let mut prev = 0;
        for kib in [16u64, 64, 256, 1024, 8192] {
            let mut cm = model("skylake-2s");
            let mut t = TaskMem::new(kib * 1024, None);
            let r = cm.switch_in(&mut t, tid("t"), CpuId(0));
            assert!(r.ns >= prev, "{kib} KiB: {} < {prev}", r.ns);
            prev = r.ns;
        }
        let cost_after_move = |to: u16| {
            let mut cm = model("x86-12");
            let mut t = TaskMem::new(512 * 1024, None);
            cm.switch_in(&mut t, tid("t"), CpuId(0));
            cm.switch_in(&mut t, tid("t"), CpuId(to)).ns
        };
        let (same, llc, remote) = (cost_after_move(0), cost_after_move(1), cost_after_move(6));
        assert!(same < llc && llc < remote, "same cpu {same}, same LLC {llc}, other socket {remote}");
        let cm = model("zen3-2s-nps4");
        assert!(cm.c2c_ns(CpuId(0), CpuId(128)) < cm.c2c_ns(CpuId(0), CpuId(1)));
        assert!(cm.c2c_ns(CpuId(0), CpuId(1)) < cm.c2c_ns(CpuId(0), CpuId(8)));
        assert!(cm.c2c_ns(CpuId(0), CpuId(8)) < cm.c2c_ns(CpuId(0), CpuId(64)));
        assert!(cm.dram_ns(0, 0) < cm.dram_ns(0, 1) && cm.dram_ns(0, 1) < cm.dram_ns(0, 4));
    }

    /// CPU 0, the first CPU of another core in its package, and the first
    /// CPU of another package.
    fn near_and_far(m: &crate::Machine) -> (CpuId, CpuId, CpuId) {
        let cpus = m.topology.cpus();
        let near = (1..cpus.len()).find(|&i| cpus[i].package == cpus[0].package && cpus[i].core != cpus[0].core).unwrap();
        let far = (1..cpus.len()).find(|&i| cpus[i].package != cpus[0].package).unwrap();
        (CpuId(0), CpuId(near as u16), CpuId(far as u16))
    }

    /// A queued message (`message_stamp` / `message_read_ns`, F-031): read
    /// before anything else passed through the writer's caches it costs the
    /// transfer `message_ns` charges; once other tasks' refills have pushed it
    /// out of the writer's L2 a reader in that LLC pays LLC hits, and once
    /// out of the LLC too, DRAM; with the cache model off, nothing.
    #[test]
    fn a_queued_message_goes_cold_through_the_writers_caches() {
        let m = crate::load("skylake-2s").unwrap();
        let k = &m.costs;
        let cpus = m.topology.cpus();
        let (w, r, x) = near_and_far(&m);
        let lines = 100u64.div_ceil(LINE) + MSG_META_LINES;
        let mut cm = CostModel::new(&m, ModelSwitches::default());
        let st = cm.message_stamp(w);
        for reader in [w, r, x] {
            assert_eq!(cm.message_read_ns(st, reader, 100), cm.message_ns(w, reader, 100), "warm: the transfer");
        }
        // Another task's refill on the writer's CPU: its whole L2, little of the LLC.
        let l2 = m.caches.l2_kib as u64 * 1024;
        let mut other = TaskMem::new(l2, None);
        cm.switch_in(&mut other, 7, w);
        assert_eq!(cm.message_read_ns(st, r, 100), lines * k.llc_hit_ns, "out of the L2, in the LLC");
        assert_eq!(cm.message_read_ns(st, w, 100), lines * k.llc_hit_ns, "the writer's CPU reads it from its LLC");
        assert_eq!(cm.message_read_ns(st, x, 100), lines * cm.c2c_ns(w, x), "another LLC: a transfer from the writer's");
        // Enough foreign data through the LLC: from DRAM.
        let llc = m.caches.llc_kib as u64 * 1024;
        let mut big = TaskMem::new(llc, None);
        cm.switch_in(&mut big, 8, w);
        let node = |c: CpuId| cpus[c.idx()].node;
        assert_eq!(cm.message_read_ns(st, r, 100), lines * cm.dram_ns(node(r), node(w)));
        assert_eq!(cm.message_read_ns(st, x, 100), lines * cm.dram_ns(node(x), node(w)), "remote DRAM");
        assert!(cm.message_read_ns(st, x, 100) > cm.message_read_ns(st, r, 100));
        // A message written now is warm again.
        let fresh = cm.message_stamp(w);
        assert_eq!(cm.message_read_ns(fresh, r, 100), cm.message_ns(w, r, 100));
        let mut off = ModelSwitches::default();
        off.set(Component::CACHE, false);
        assert_eq!(CostModel::new(&m, off).message_read_ns(st, r, 100), 0);
    }

    /// A task group's `tg->load_avg` line (`tg_line`): a CPU's own write after
    /// its own write hits; another CPU's read moves the line from the writer;
    /// a second read of the same version hits; the writer's next write after
    /// that read invalidates the reader's copy (a transfer to the reader's
    /// distance); a write from across the package queues behind the
    /// exclusive transfer in flight (`LOCKS`), and not with `NO_LOCKS`.
    #[test]
    fn tg_line_moves_from_the_last_writer_and_queues_exclusive_transfers() {
        let m = crate::load("skylake-2s").unwrap();
        let k = &m.costs;
        let (a, b, c) = near_and_far(&m);
        for locks in [true, false] {
            let mut sw = ModelSwitches::default();
            if !locks {
                sw.set(Component::LOCKS, false);
            }
            let mut cm = CostModel::new(&m, sw);
            let t = 1_000_000;
            assert_eq!(cm.tg_line(3, a, t, true), LockSection::default(), "the first touch");
            assert_eq!(cm.tg_line(3, a, t + 10, true), LockSection::default(), "the owner's second write");
            assert_eq!(cm.tg_line(3, b, t + 20, false), LockSection { wait: 0, hold: k.c2c_llc_ns });
            assert_eq!(cm.tg_line(3, b, t + 30, false), LockSection::default(), "the same version again");
            // The writer's next write must invalidate b's copy.
            let w = cm.tg_line(3, a, t + 1000, true);
            assert_eq!(w, LockSection { wait: 0, hold: k.c2c_llc_ns });
            // c writes from the other package at once: it waits for a's transfer.
            let x = cm.tg_line(3, c, t + 1000, true);
            let wait = if locks { k.c2c_llc_ns } else { 0 };
            assert_eq!(x, LockSection { wait, hold: k.c2c_cross_package_ns }, "locks {locks}");
            // Another group's line is its own.
            assert_eq!(cm.tg_line(4, c, t + 1000, false), LockSection::default());
        }
    }

    /// `c2c_ns` is the first level the CPUs share, for every pair of CPUs of
    /// machines with SMT, several LLCs per package and several packages.
    #[test]
    fn c2c_ns_is_the_first_shared_level() {
        for name in ["zen3-2s-nps4", "skylake-2s", "x86-12", "laptop-4c8t"] {
            let m = crate::load(name).unwrap();
            let cm = CostModel::new(&m, ModelSwitches::default());
            let cpus = m.topology.cpus();
            let k = &m.costs;
            let mut seen = [false; 5];
            for a in 0..cpus.len() {
                for b in 0..cpus.len() {
                    let (x, y) = (&cpus[a], &cpus[b]);
                    let (want, level) = if a == b {
                        (0, 0)
                    } else if x.core == y.core {
                        (k.c2c_smt_ns, 1)
                    } else if x.llc == y.llc {
                        (k.c2c_llc_ns, 2)
                    } else if x.package == y.package {
                        (k.c2c_cross_llc_ns, 3)
                    } else {
                        (k.c2c_cross_package_ns, 4)
                    };
                    seen[level] = true;
                    assert_eq!(cm.c2c_ns(CpuId(a as u16), CpuId(b as u16)), want, "{name}: CPUs {a} and {b}");
                }
            }
            if name == "zen3-2s-nps4" {
                assert_eq!(seen, [true; 5], "every level met");
            }
        }
    }

    // Skylake-SP's victim L3: after a move within the socket the data is found in L3.
    #[test]
    fn non_inclusive_llc_keeps_evicted_l2_data() {
        let mut cm = model("skylake-2s");
        let mut t = TaskMem::new(512 * 1024, None);
        cm.switch_in(&mut t, tid("t"), CpuId(0));
        let r = cm.switch_in(&mut t, tid("t"), CpuId(1));
        assert_eq!(r.llc_misses, 0, "within the socket: all from L3");
        assert!(r.l2_misses > 0);
    }

    // Bandwidth shares sum to the available bandwidth; a co-runner lowers each share.
    #[test]
    fn bandwidth_shares() {
        let cm = model("zen3-2s-nps4");
        let c = cm.costs().clone();
        for n in 1..=8u32 {
            let each = cm.mem_rate(n, n, false);
            let cap = c.mem_bw_llc_mbps.min(c.mem_bw_node_mbps).min(c.mem_bw_core_mbps * n as u64);
            assert!(each * n as u64 <= cap, "{n} streams: {each} each");
            assert!(each * n as u64 + n as u64 > cap - n as u64, "{n} streams use the available bandwidth");
        }
        assert!(cm.mem_rate(4, 4, false) < cm.mem_rate(1, 1, false), "co-runners lower each share");
        assert!(cm.mem_rate(1, 1, true) < cm.mem_rate(1, 1, false));
    }

    // The idle governor: the deepest state whose target residency fits the
    // prediction; the prediction is an EWMA (1/8) of past residencies.
    #[test]
    fn idle_governor_picks_the_deepest_fitting_state() {
        let mut m = crate::load("x86-12").unwrap();
        m.idle_states = [("POLL", 0, 0), ("C1", 2_000, 2_000), ("C6", 100_000, 400_000)]
            .iter()
            .map(|&(n, e, t)| crate::IdleState { name: n.into(), exit_latency_ns: e, target_residency_ns: t })
            .collect();
        let cm = CostModel::new(&m, ModelSwitches::default());
        assert_eq!(cm.idle_exit_latency(0), 0);
        assert_eq!(cm.idle_exit_latency(3_000), 2_000);
        assert_eq!(cm.idle_exit_latency(399_999), 2_000);
        assert_eq!(cm.idle_exit_latency(1_000_000), 100_000);
        assert_eq!(CostModel::idle_predict(800, 0), 700);
        assert_eq!(CostModel::idle_predict(0, 8_000), 1_000);
        m.idle_states.clear();
        assert_eq!(CostModel::new(&m, ModelSwitches::default()).idle_exit_latency(1 << 40), 0, "no states: no exit latency");
    }

    // A switch costs switch_to(); a new mm adds switch_mm(), and without PCID
    // the TLB re-walk of the incoming footprint (capped at the TLB's reach).
    #[test]
    fn switch_cost_by_mm_and_pcid() {
        let cm = model("x86-12");
        let (cs, mm) = (cm.costs().context_switch_ns, cm.costs().mm_switch_ns);
        assert!(cs > 0 && mm > 0);
        assert_eq!(cm.switch_cost(false, true, 1 << 20), cs, "same mm: switch_to() only");
        assert_eq!(cm.switch_cost(false, false, 1 << 20), cs, "same mm: no CR3 write, no flush");
        assert_eq!(cm.switch_cost(true, true, 1 << 20), cs + mm, "PCID: no re-walk");
        assert_eq!(cm.switch_cost(true, false, 64 * 1024), cs + mm + 16 * TLB_WALK_PS_PER_PAGE / 1000);
        let cap = cs + mm + TLB_PAGES * TLB_WALK_PS_PER_PAGE / 1000;
        assert_eq!(cm.switch_cost(true, false, 1 << 30), cap, "re-walk capped at the TLB's reach");
        assert!(cm.switch_cost(true, false, 4096) < cm.switch_cost(true, false, 8192));
        let off = CostModel::new(&crate::load("x86-12").unwrap(), ModelSwitches::parse("NO_SWITCH").unwrap());
        assert_eq!(off.switch_cost(true, false, 1 << 20), 0, "NO_SWITCH: free");
    }

    // Lock waits grow with the number of contenders (FIFO).
    #[test]
    fn rq_lock_fifo() {
        let mut cm = model("spr-112");
        let (a, b, c) = (CpuId(1), CpuId(2), CpuId(3));
        let x = cm.c2c_ns(a, c);
        assert!(x > 0);
        // a's section: the line comes from c, the lock's CPU, where nobody took it yet.
        assert_eq!(cm.rq_lock(c, a, 1000, 300), LockSection { wait: 0, hold: 300 + x });
        // b waits for a's whole section, transfer included, and fetches the line from a.
        let ab = cm.c2c_ns(a, b);
        assert_eq!(cm.rq_lock(c, b, 1000, 300), LockSection { wait: 300 + x, hold: 300 + ab });
        let free = 1000 + 300 + x + 300 + ab;
        assert_eq!(cm.rq_lock(c, a, 1100, 300).wait, free - 1100, "a queues behind b");
        let free = free + 300 + ab;
        assert_eq!(cm.rq_lock(c, c, free + 10, 300), LockSection { wait: 0, hold: 300 + x }, "free again; the line comes back from a");
        assert_eq!(
            cm.rq_lock(c, c, free + 20, 300),
            LockSection { wait: 0, hold: 300 },
            "own back-to-back sections do not contend or transfer"
        );
        let mut off = CostModel::new(&crate::load("spr-112").unwrap(), ModelSwitches::parse("NO_LOCKS").unwrap());
        off.rq_lock(c, a, 0, 300);
        assert_eq!(off.rq_lock(c, b, 0, 300), LockSection { wait: 0, hold: 300 + ab }, "NO_LOCKS: no waiting, the line still moves");
    }

    // A CPU taking again the lock it took last (its own switch after its
    // wake-list activation) neither waits nor moves the line, and its
    // section still holds off the next CPU.
    #[test]
    fn rq_lock_retaken_by_its_last_owner() {
        let mut cm = model("spr-112");
        let (a, b, c) = (CpuId(1), CpuId(2), CpuId(3));
        let x = cm.c2c_ns(c, a);
        assert_eq!(cm.rq_lock(c, a, 1000, 300), LockSection { wait: 0, hold: 300 + x });
        // a again before its first section ends: no wait for its own section.
        assert_eq!(cm.rq_lock(c, a, 1100, 300), LockSection { wait: 0, hold: 300 });
        assert_eq!(cm.lock_busy_until(a), 1400);
        // b waits for a's second section and fetches the line from a.
        assert_eq!(cm.rq_lock(c, b, 1200, 300), LockSection { wait: 200, hold: 300 + cm.c2c_ns(a, b) });
        let mut off = CostModel::new(&crate::load("spr-112").unwrap(), ModelSwitches::parse("NO_LOCKS").unwrap());
        off.rq_lock(c, a, 0, 300);
        assert_eq!(off.rq_lock(c, a, 0, 300), LockSection { wait: 0, hold: 300 }, "NO_LOCKS: no transfer either");
    }

    // A CPU spins on one lock at a time: a request it makes while an earlier
    // section of its own is still under way starts when that one ends, so
    // CPUs whose lock time nobody charges (idle balancers) cannot pile up a
    // queue without bound: 8 CPUs asking for one lock 1,000 times each at
    // the same instant wait no more than the sections they all queue for.
    #[test]
    fn a_cpu_spins_for_one_lock_at_a_time() {
        let mut cm = model("spr-112");
        let (a, x, y) = (CpuId(1), CpuId(2), CpuId(3));
        let first = cm.rq_lock(x, a, 0, 300);
        let second = cm.rq_lock(y, a, 100, 300);
        assert_eq!(second.wait, first.hold - 100, "y's lock is free, but a is still in x's section");
        let mut cm = model("spr-112");
        let mut waited = 0;
        let mut held = 0;
        for _ in 0..1000 {
            for w in 1..=8 {
                let l = cm.rq_lock(CpuId(0), CpuId(w), 5000, 300);
                waited += l.wait;
                held += l.hold;
            }
        }
        // Every section waits at most for all the others: the sum of waits
        // is bounded by (sections x total hold), not growing faster.
        assert!(waited <= 8000 * held, "{waited} {held}");
        let per_cpu_span = held / 8 * 2;
        for w in 1..=8u16 {
            let l = cm.rq_lock(CpuId(0), CpuId(w), 5000, 300);
            assert!(l.wait <= held + per_cpu_span, "CPU {w}: {}", l.wait);
        }
    }

    // Four CPUs arrive at one rq lock at once. With queued spinlocks each
    // hand-over is one transfer; with ticket spinlocks the k-th arrival
    // finds k - 1 CPUs spinning ahead of it and its hand-over costs
    // (1 + (k - 1) / 2) transfers, so the queue drains more slowly.
    #[test]
    fn ticket_hand_over_grows_with_spinners_queued_does_not() {
        let drain = |kind: SpinlockKind| {
            let mut cm = model("spr-112");
            cm.set_spinlock(kind);
            let lock = CpuId(0);
            // The line moves 0 -> 1 -> 2 -> 3 -> 4.
            let t: Vec<u64> = (1..=4u16).map(|w| cm.c2c_ns(CpuId(w - 1), CpuId(w))).collect();
            let holds: Vec<u64> = (1..=4).map(|w| cm.rq_lock(lock, CpuId(w), 1000, 300).hold).collect();
            (t, holds)
        };
        let (t, queued) = drain(SpinlockKind::Queued);
        assert!(t.iter().all(|&x| x > 0));
        assert_eq!(queued, (0..4).map(|k| 300 + t[k]).collect::<Vec<_>>());
        let (_, ticket) = drain(SpinlockKind::Ticket);
        assert_eq!(ticket[0], 300 + t[0], "uncontended: one transfer");
        assert_eq!(ticket[1], 300 + t[1], "nobody spins ahead of the first waiter");
        assert_eq!(ticket[2], 300 + t[2] + t[2] / 2);
        assert_eq!(ticket[3], 300 + t[3] + t[3]);
        assert_eq!(SpinlockKind::for_version((3, 10)), SpinlockKind::Ticket);
        assert_eq!(SpinlockKind::for_version((4, 2)), SpinlockKind::Queued);
    }

    // A CPU that requests a lock again while its earlier request still
    // waits does not spin beside itself: only other CPUs' queued sections
    // slow a ticket hand-over.
    #[test]
    fn ticket_spinners_exclude_the_requester_itself() {
        let mut cm = model("spr-112");
        cm.set_spinlock(SpinlockKind::Ticket);
        let lock = CpuId(0);
        cm.rq_lock(lock, CpuId(1), 1000, 300); // holds
        cm.rq_lock(lock, CpuId(2), 1000, 300); // spins
        cm.rq_lock(lock, CpuId(1), 1000, 300); // CPU 1 again: spins behind 2
        cm.rq_lock(lock, CpuId(3), 1000, 300); // spins behind 2 and 1
                                               // CPU 1's third request: ahead of it spin CPU 2, CPU 3 and its own
                                               // second request; two of them are other CPUs.
        let t = cm.c2c_ns(CpuId(3), CpuId(1));
        let third = cm.rq_lock(lock, CpuId(1), 1000, 300);
        assert!(third.wait > 0);
        assert_eq!(third.hold, 300 + t + t * 2 / 2);
    }

    #[test]
    fn smt_and_switches() {
        let cm = model("laptop-4c8t");
        assert_eq!(cm.smt_rate(false), 1000);
        assert_eq!(cm.smt_rate(true), 600);
        let sw = ModelSwitches::parse("NO_SMT,NO_CACHE").unwrap();
        assert!(!sw.on(Component::SMT) && sw.on(Component::LOCKS));
        assert!(ModelSwitches::parse("NO_FOO").unwrap_err().contains("CACHE"));
    }
}
