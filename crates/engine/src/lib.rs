//! The engine: clock, event queue, PRNGs and the run loop that drives the
//! kernel model, charges the machine model and executes the workload.
//!
//! Architecture invariant: sole owner of simulated time and of randomness.
//! Events are ordered by `(at, seq)`; `seq` is a global insertion counter, so
//! simultaneous events run in the order they were scheduled, identically on
//! every run. An operation that neither blocks nor wakes anyone costs no event:
//! the interpreter runs zero-time ops inline and only schedules an event when a
//! task needs CPU time, sleeps, or a remote CPU must react.

mod arrivals;
pub mod metrics;
mod noise;
pub mod numa;
pub mod queue;
pub mod rng;
pub mod trace;

pub use arrivals::ArrivalStats;
use metrics::Histogram;
pub use noise::NoiseStats;
use rng::Pcg32;
use schedlab_kernel::{CpuId, Kernel, SwitchReason, TaskId, TaskParams, TaskState, WakeFlags, WakeResult};
use schedlab_machine::cost::{Component, CostModel, ModelSwitches, TaskMem};
use schedlab_machine::Machine;
use schedlab_workload::{ChannelKind, MetricSpec, Op, Workload};

/// Run options.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub seed: u64,
    /// Machine-model components switched on (default: all).
    pub model: ModelSwitches,
    /// Render /proc/schedstat (the modelled kernel's version) at the end of the run.
    pub schedstat: bool,
    /// Stop at this simulated time (required for time-bounded workloads).
    pub duration_ns: Option<u64>,
    /// Record every context switch (`RunResult::switch_log`).
    pub switch_log: bool,
    /// Record the sched tracepoints into `RunResult::trace` (trace.rs).
    pub trace: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum EvKind {
    /// The running task of `cpu` reaches the end of its current CPU segment.
    SegEnd { cpu: u16, gen: u32 },
    /// `cpu` reacts to TIF_NEED_RESCHED (IPI delivered / idle exit done).
    Resched { cpu: u16 },
    /// Scheduler tick on `cpu`.
    Tick { cpu: u16, gen: u32 },
    /// A sleeping task's timer expires.
    Timer { task: u32 },
    /// The wake-list IPI reaches `cpu`: it activates its queued wakeups.
    WakeList { cpu: u16 },
    /// The nohz-balance kick reaches the idle load balancer `cpu`.
    NohzBalance { cpu: u16 },
    /// An interrupt (not the tick) on `cpu` (machine noise).
    Irq { cpu: u16 },
    /// `cpu`'s kernel thread is woken (machine noise).
    Kthread { cpu: u16 },
    /// A request from the network arrives on `cpu` (arrivals.rs).
    Arrival { cpu: u16 },
}

/// Per-CPU engine state (what the hardware is doing).
#[derive(Clone, Debug, Default)]
struct Cpu {
    running: Option<TaskId>,
    /// When the running task's current CPU segment started (after switch costs).
    seg_start: u64,
    seg_gen: u32,
    tick_gen: u32,
    tick_armed: bool,
    /// Busy/idle interval bookkeeping.
    busy_ns: u64,
    idle_ns: u64,
    since: u64,
    /// mm of the last task that ran (lazy TLB across idle).
    last_mm: Option<u32>,
    /// Task group of the last task that ran (idle does not count).
    last_group: Option<u32>,
    /// EWMA of idle interval lengths (menu-governor-like prediction).
    idle_pred_ns: u64,
    resched_pending: bool,
    /// Exit latency charged for the wakeup that is ending the current idle period.
    exit_lat: u64,
    /// Progress rate of the running task, per mille of nominal speed (SMT),
    /// or bytes per microsecond while it streams memory (`mem`).
    rate: u64,
    /// The running task is in a memory-bound phase.
    mem: bool,
}

/// Per-task interpreter state.
#[derive(Clone, Debug)]
struct TaskRt {
    /// Index of the task's spec in the workload.
    spec: u32,
    program: u32,
    pc: u32,
    /// 0: cost of the current op not yet charged / effect not done; 1: in progress.
    stage: u8,
    /// CPU work left in the current segment (ns).
    remaining: u64,
    loops: Vec<(u32, u64)>,
    /// Tag of the last `ReadTag` message.
    reg: u32,
    /// `Op::ReqStart` stamps not yet ended: (histogram, time), oldest first.
    req_stamps: std::collections::VecDeque<(u32, u64)>,
    /// In the middle of a memory-bound `Mem` op (work is bytes, not ns).
    mem: bool,
    parent: Option<TaskId>,
    unreaped: u32,
    waiting_child: bool,
    live_children: u32,
}

#[derive(Clone, Debug)]
struct ChanRt {
    count: u32,
    readers: std::collections::VecDeque<TaskId>,
    writers: std::collections::VecDeque<TaskId>,
    /// Messages carry tags (some program reads them with `ReadTag`).
    tagged: bool,
    tags: std::collections::VecDeque<u32>,
    /// Arrival times of requests queued by arrivals.rs, oldest first.
    stamps: std::collections::VecDeque<u64>,
}

enum ChanOutcome {
    Blocked,
    Done { woke: bool },
}

#[derive(Clone, Debug)]
struct SemRt {
    count: u64,
    waiters: std::collections::VecDeque<TaskId>,
    /// Barging semaphores: the waiter woken by the last post that has not yet
    /// re-tried (PostgreSQL's !releaseOK); no other waiter is woken meanwhile.
    woken: Option<TaskId>,
}

/// Results of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    pub metric_name: String,
    pub metric_value: f64,
    /// Why the run has no valid metric value, if it has none: its marks were
    /// not reached (a run-to-completion workload cut by `--duration`, a
    /// deadlock), or a latency metric has no samples. `metric_value` is then
    /// meaningless and must not be reported as a result.
    pub metric_missing: Option<String>,
    /// Tasks still alive when nothing was left to happen (no event could ever
    /// wake them): a deadlock or a lost wakeup in the workload.
    pub blocked_forever: u64,
    pub metric_unit: String,
    pub higher_is_better: bool,
    pub simulated_ns: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    pub migrations: u64,
    pub wakeups: u64,
    pub run_delay_p50: u64,
    pub run_delay_p90: u64,
    pub run_delay_p99: u64,
    pub run_delay_max: u64,
    /// (busy_ns, idle_ns) per CPU.
    pub cpus: Vec<(u64, u64)>,
    pub events: u64,
    pub tasks_created: u64,
    pub tasks_exited: u64,
    /// Tasks woken but never run by the end (0 unless the run was cut by --duration).
    pub woken_never_ran: u64,
    pub mm_switches: u64,
    /// Switches between tasks of different task groups on a CPU (idle in
    /// between does not count as a group).
    pub group_switches: u64,
    /// Per task group (root first): CPU time and task count.
    pub groups: Vec<GroupStat>,
    /// The per-CPU sched_switch sequence, when `SimConfig::switch_log` is set.
    pub switch_log: Vec<SwitchRec>,
    /// Name (from the workload's task spec) and task group of every task, by task index.
    pub task_names: Vec<(String, u32)>,
    pub idle_exit_ns: u64,
    /// Machine-model counters.
    pub l2_misses: u64,
    pub llc_misses: u64,
    pub dram_bytes: u64,
    pub remote_bytes: u64,
    pub rq_lock_wait_ns: u64,
    /// schedstat: try_to_wake_up() calls and those that woke on the waker's CPU.
    pub ttwu_count: u64,
    pub ttwu_local: u64,
    /// Per domain level bottom-up: wakeup and load-balance schedstat counters.
    pub levels: Vec<schedlab_kernel::stats::LevelStats>,
    /// /proc/schedstat at the end (the modelled kernel's version), when requested.
    pub schedstat: Option<String>,
    /// Latency histograms recorded by `Op::WakeLatency` (those with samples), ns.
    pub latencies: Vec<LatencySummary>,
    /// The sched tracepoints of the run, when `SimConfig::trace` asked for them.
    pub trace: Option<Box<trace::Trace>>,
    /// Memory per node and NUMA balancing, for workloads that declare memory on NUMA machines.
    pub numa: Option<numa::NumaReport>,
    /// The machine's background (tick and interrupt time, kernel threads).
    pub noise: NoiseStats,
    /// Open-loop requests from the network (all zero in closed-loop runs).
    pub arrivals: ArrivalStats,
}

impl RunResult {
    /// Task group names by group id (the root group is "/").
    pub fn group_names(&self) -> Vec<String> {
        self.groups.iter().map(|g| g.name.clone()).collect()
    }
}

/// CPU time of one task group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupStat {
    pub name: String,
    pub shares: u64,
    /// Tasks created in the group.
    pub tasks: u64,
    /// Sum of the tasks' `sum_exec_runtime` (ns).
    pub runtime_ns: u64,
}

/// One context switch: at `t`, `cpu` switched from `prev` to `next` (task
/// index; None = the idle task).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchRec {
    pub t: u64,
    pub cpu: u16,
    pub prev: Option<u32>,
    pub next: Option<u32>,
}

/// Percentiles of one latency histogram (ns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatencySummary {
    pub hist: u32,
    pub count: u64,
    /// Mean of the samples (ns).
    pub mean: u64,
    pub p50: u64,
    pub p90: u64,
    /// sysbench's `--percentile=95` default.
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

/// A simulation in progress.
pub struct Sim<'a> {
    pub kernel: Kernel,
    machine: &'a Machine,
    /// Set from outside (another thread) to end the run early (`run_stoppable`).
    stop: Option<&'a std::sync::atomic::AtomicBool>,
    wl: &'a Workload,
    now: u64,
    seq: u64,
    queue: queue::EventQueue,
    nr_cpus_slots: u32,
    /// Number of CPUs: segment-end slots are `0..nr_cpus`.
    nr_cpus: u32,
    cpus: Vec<Cpu>,
    rt: Vec<TaskRt>,
    chans: Vec<ChanRt>,
    sems: Vec<SemRt>,
    marks: Vec<Option<u64>>,
    counters: Vec<u64>,
    rng: Pcg32,
    run_delay: Histogram,
    events: u64,
    alive: u64,
    exited: u64,
    created: u64,
    /// The run stopped at the duration limit with tasks alive.
    cut: bool,
    /// Tasks alive when the event queue ran dry (see [`RunResult::blocked_forever`]).
    blocked_forever: u64,
    mm_switches: u64,
    group_switches: u64,
    switch_log: Option<Vec<SwitchRec>>,
    idle_exit_ns: u64,
    tick_ns: u64,
    jitter_pct: u32,
    want_schedstat: bool,
    /// `Op::Barrier` state by id: (arrived, waiters); grown on first use.
    barriers: Vec<(u32, Vec<TaskId>)>,
    /// `Op::SpinBarrier` arrivals still spinning, by barrier id.
    spinners: Vec<Vec<TaskId>>,
    /// Time of the last `Op::WakeQueued` post per semaphore.
    sem_stamp: Vec<u64>,
    /// Latency histograms of `Op::WakeLatency`.
    lat_hists: Vec<Histogram>,
    /// Sum of the samples of each latency histogram (for the mean), ns.
    lat_sums: Vec<u64>,
    ilb_pending: bool,
    cost: CostModel,
    mem: Vec<TaskMem>,
    smt: bool,
    l2_misses: u64,
    llc_misses: u64,
    dram_bytes: u64,
    remote_bytes: u64,
    rq_lock_wait_ns: u64,
    /// Per channel: the CPU of the last write (where the message data is warm).
    chan_writer: Vec<Option<CpuId>>,
    /// Memory-bound streams running per LLC and per node.
    llc_streams: Vec<u32>,
    node_streams: Vec<u32>,
    /// Tracepoint recorder (None unless `SimConfig::trace`).
    trace: Option<Box<trace::Trace>>,
    /// Reused list of tasks an op wakes (no allocation per wakeup).
    wake_buf: Vec<TaskId>,
    /// Reused list of message tags `Op::WakeQueued` drains.
    tag_buf: Vec<u32>,
    /// Memory behaviour of processes that declare memory (numa.rs).
    numa_mem: Option<Box<numa::EngineNuma>>,
    /// The machine's background (noise.rs).
    noise: noise::NoiseRt,
    /// The kernel threads of noise.rs, in creation order.
    kthread_ids: Vec<TaskId>,
    /// Open-loop requests from the network (arrivals.rs).
    arrivals: Option<Box<arrivals::ArrivalRt>>,
}

const INF: u64 = u64::MAX;

/// Event-queue slots per CPU besides its segment end: Tick, Resched, WakeList,
/// NohzBalance, Irq, Kthread, Arrival.
const PER_CPU_SLOTS: u32 = 7;

/// One draw of `Op::RunDist`: the inverse of a piecewise-linear CDF through
/// (0, lo), (1/2, mid), (1, hi), in integers (the top bit of one 32-bit draw
/// picks the half, the other 31 the point in it). Mean `(lo + 2 mid + hi) / 4`,
/// median `mid`.
#[inline]
fn draw_run_dist(rng: &mut Pcg32, lo: u32, mid: u32, hi: u32) -> u64 {
    let u = rng.next_u32();
    let f = (u & 0x7fff_ffff) as u64;
    let (a, b) = if u >> 31 == 0 { (lo, mid) } else { (mid, hi) };
    a as u64 + (((b - a) as u64 * f) >> 31)
}

/// Wall time to do `work` nominal ns at `rate` per mille (rounded up).
#[inline]
fn wall_for(work: u64, rate: u64) -> u64 {
    if rate == 1000 {
        work
    } else {
        (work * 1000).div_ceil(rate.max(1))
    }
}

/// Payload bytes per channel message for the transfer cost (F-016).
const MSG_BYTES: u64 = 100;

/// Working set assumed for every task until workloads declare footprints
/// (docs/FIDELITY.md F-016).
// FIDELITY(F-016): one working set for every task until workloads declare footprints.
const DEFAULT_FOOTPRINT: u64 = 64 * 1024;

impl<'a> Sim<'a> {
    pub fn new(machine: &'a Machine, mut kernel: Kernel, wl: &'a Workload, cfg: &SimConfig) -> Sim<'a> {
        let n = machine.topology.nr_cpus();
        kernel.scan_cost_per_cpu_ns = machine.costs.idle_scan_ns_per_cpu;
        if cfg.model.on(Component::WAKELAT) {
            kernel.ttwu_pending_window_ns = schedlab_machine::cost::TTWU_WINDOW_NS;
        }
        let tick_ns = kernel.tun.tick_ns;
        for g in &wl.groups {
            // Workload::validate() checked parents and shares.
            kernel.create_group(&g.name, g.parent, g.shares).expect("validated task group");
        }
        if cfg.trace {
            kernel.migration_log = Some(Vec::new());
        }
        // Channels some op reads tags from (one pass over the ops: a scan per
        // channel was quadratic in the size of hackbench-like workloads).
        let mut tagged = vec![false; wl.channels.len()];
        for op in wl.programs.iter().flatten() {
            if let Op::ReadTag { chan, .. } | Op::WakeQueued { chan, .. } = *op {
                if let Some(t) = tagged.get_mut(chan as usize) {
                    *t = true;
                }
            }
        }
        let mut s = Sim {
            stop: None,
            kernel,
            machine,
            wl,
            now: 0,
            seq: 0,
            // Segment ends (slots 0..n) go to the queue's tournament tree.
            queue: queue::EventQueue::new((1 + PER_CPU_SLOTS as usize) * n + wl.tasks.len(), n),
            nr_cpus_slots: (1 + PER_CPU_SLOTS) * n as u32,
            nr_cpus: n as u32,
            cpus: vec![Cpu::default(); n],
            rt: Vec::with_capacity(wl.tasks.len()),
            chans: (0..wl.channels.len())
                .map(|i| ChanRt {
                    count: 0,
                    readers: Default::default(),
                    writers: Default::default(),
                    tagged: tagged[i],
                    tags: Default::default(),
                    stamps: Default::default(),
                })
                .collect(),
            sems: wl.sems.iter().map(|s| SemRt { count: s.initial as u64, waiters: Default::default(), woken: None }).collect(),
            marks: vec![None; 8],
            counters: vec![0; 8],
            rng: Pcg32::new(cfg.seed, 0x5c4ed1ab),
            run_delay: Histogram::default(),
            events: 0,
            alive: 0,
            exited: 0,
            cut: false,
            blocked_forever: 0,
            created: 0,
            mm_switches: 0,
            group_switches: 0,
            switch_log: cfg.switch_log.then(Vec::new),
            idle_exit_ns: 0,
            tick_ns,
            jitter_pct: wl.jitter_pct,
            want_schedstat: cfg.schedstat,
            barriers: Vec::new(),
            spinners: Vec::new(),
            sem_stamp: vec![0; wl.sems.len()],
            lat_hists: Vec::new(),
            lat_sums: Vec::new(),
            ilb_pending: false,
            cost: CostModel::new(machine, cfg.model),
            mem: Vec::with_capacity(wl.tasks.len()),
            smt: machine.topology.threads_per_core() > 1,
            l2_misses: 0,
            llc_misses: 0,
            dram_bytes: 0,
            remote_bytes: 0,
            rq_lock_wait_ns: 0,
            chan_writer: vec![None; wl.channels.len()],
            llc_streams: Vec::new(),
            node_streams: vec![0; machine.topology.nr_nodes()],
            trace: cfg.trace.then(|| Box::new(trace::Trace::new(n))),
            wake_buf: Vec::new(),
            tag_buf: Vec::new(),
            numa_mem: None,
            noise: noise::NoiseRt::new(machine, cfg),
            kthread_ids: Vec::new(),
            arrivals: wl.arrivals.as_ref().map(|a| Box::new(arrivals::ArrivalRt::new(a, n, cfg))),
        };
        s.llc_streams = vec![0; s.cost.nr_llcs()];
        for cpu in &mut s.cpus {
            cpu.rate = 1000;
        }
        s.numa_setup(wl);
        // Tasks that exist at time 0 are started from CPU 0, as a shell would fork them.
        for (i, t) in wl.tasks.iter().enumerate() {
            if t.start {
                s.create_task(i as u32, None, CpuId(0));
            }
        }
        s.noise_start();
        s.arrivals_start();
        s
    }

    #[inline]
    fn slot_of(&self, kind: EvKind) -> u32 {
        match kind {
            EvKind::SegEnd { cpu, .. } => cpu as u32,
            EvKind::Tick { cpu, .. } => self.nr_cpus + PER_CPU_SLOTS * cpu as u32,
            EvKind::Resched { cpu } => self.nr_cpus + PER_CPU_SLOTS * cpu as u32 + 1,
            EvKind::WakeList { cpu } => self.nr_cpus + PER_CPU_SLOTS * cpu as u32 + 2,
            EvKind::NohzBalance { cpu } => self.nr_cpus + PER_CPU_SLOTS * cpu as u32 + 3,
            EvKind::Irq { cpu } => self.nr_cpus + PER_CPU_SLOTS * cpu as u32 + 4,
            EvKind::Kthread { cpu } => self.nr_cpus + PER_CPU_SLOTS * cpu as u32 + 5,
            EvKind::Arrival { cpu } => self.nr_cpus + PER_CPU_SLOTS * cpu as u32 + 6,
            EvKind::Timer { task } => self.nr_cpus_slots + task,
        }
    }

    /// The event a popped slot stands for (gens are current: a rescheduled
    /// slot replaced its old event, a cancelled one is gone).
    #[inline]
    fn kind_of(&self, slot: u32) -> EvKind {
        if slot >= self.nr_cpus_slots {
            return EvKind::Timer { task: slot - self.nr_cpus_slots };
        }
        if slot < self.nr_cpus {
            return EvKind::SegEnd { cpu: slot as u16, gen: self.cpus[slot as usize].seg_gen };
        }
        let cpu = ((slot - self.nr_cpus) / PER_CPU_SLOTS) as u16;
        match (slot - self.nr_cpus) % PER_CPU_SLOTS {
            0 => EvKind::Tick { cpu, gen: self.cpus[cpu as usize].tick_gen },
            1 => EvKind::Resched { cpu },
            2 => EvKind::WakeList { cpu },
            3 => EvKind::NohzBalance { cpu },
            4 => EvKind::Irq { cpu },
            5 => EvKind::Kthread { cpu },
            _ => EvKind::Arrival { cpu },
        }
    }

    #[inline]
    fn push(&mut self, at: u64, kind: EvKind) {
        self.seq += 1;
        let slot = self.slot_of(kind);
        self.queue.schedule(slot, at);
    }

    #[inline]
    fn jitter(&mut self, ns: u64) -> u64 {
        if self.jitter_pct == 0 || ns == 0 {
            return ns;
        }
        let span = 2 * self.jitter_pct + 1;
        let pct = 100 - self.jitter_pct + self.rng.below(span);
        ns * pct as u64 / 100
    }

    /// Run to completion (every task exited) or to the duration limit.
    pub fn run(&mut self, cfg: &SimConfig) -> RunResult {
        let limit = cfg.duration_ns.unwrap_or(INF);
        let mut cut = false;
        // Only the machine's background left (noise.rs re-arms one event per
        // source and CPU forever): nothing can wake the workload any more.
        while self.queue.len() > self.noise.armed {
            let Some((slot, at)) = self.queue.pop() else { break };
            if at > limit {
                cut = true;
                break;
            }
            self.now = at;
            self.events += 1;
            if self.events & 0x3fff == 0 && self.stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
                break; // stopped from outside: the caller discards this result
            }
            match self.kind_of(slot) {
                EvKind::SegEnd { cpu, gen } => {
                    let c = CpuId(cpu);
                    if self.cpus[c.idx()].seg_gen != gen {
                        continue;
                    }
                    if let Some(t) = self.cpus[c.idx()].running {
                        self.rt[t.idx()].remaining = 0;
                        self.run_ops(c, t);
                    }
                }
                EvKind::Resched { cpu } => {
                    let c = CpuId(cpu);
                    self.cpus[c.idx()].resched_pending = false;
                    if self.kernel.need_resched(c) {
                        self.do_schedule(c, SwitchReason::Preempt);
                    }
                }
                EvKind::Tick { cpu, gen } => {
                    let c = CpuId(cpu);
                    if self.cpus[c.idx()].tick_gen != gen {
                        continue;
                    }
                    self.cpus[c.idx()].tick_armed = false;
                    if self.cpus[c.idx()].running.is_none() {
                        continue; // NOHZ: an idle CPU stops its tick
                    }
                    let tr = self.kernel.scheduler_tick(c, self.now);
                    if let Some(t) = self.cpus[c.idx()].running {
                        self.noise_tick(c, t);
                    }
                    if self.numa_mem.is_some() {
                        self.numa_charge(c);
                    }
                    if self.trace.is_some() {
                        self.tr_migrations(c);
                    }
                    let lb_wait = self.lb_locks(c);
                    if lb_wait > 0 {
                        if let Some(t) = self.cpus[c.idx()].running {
                            self.rt[t.idx()].remaining += lb_wait;
                            self.reschedule_segment(c, t);
                        }
                    }
                    if tr.balance_examined > 0 {
                        // The balancing softirq runs on this CPU, in the running task's time.
                        if let Some(t) = self.cpus[c.idx()].running {
                            self.rt[t.idx()].remaining += tr.balance_examined * self.scan_ns();
                            self.reschedule_segment(c, t);
                        }
                    }
                    for k in tr.kicks {
                        self.kick_remote(k);
                    }
                    if let Some(ilb) = tr.nohz_kick {
                        self.kick_ilb(ilb);
                    }
                    if tr.resched {
                        self.do_schedule(c, SwitchReason::Preempt);
                    }
                    if self.cpus[c.idx()].running.is_some() {
                        self.arm_tick(c);
                    }
                }
                EvKind::Timer { task } => {
                    // FIDELITY(F-015): the task running on the timer's CPU is `current` for record_wakee().
                    // The hrtimer fires on the CPU the task slept on; `current`
                    // there (if any) is the waker as far as record_wakee() is concerned.
                    let p = TaskId(task);
                    let cpu = self.kernel.task_cpu(p);
                    let current = self.cpus[cpu.idx()].running;
                    self.wake(p, cpu, current, WakeFlags::default());
                }
                EvKind::NohzBalance { cpu } => {
                    let c = CpuId(cpu);
                    self.ilb_pending = false;
                    if self.cpus[c.idx()].running.is_none() {
                        let r = self.kernel.nohz_idle_balance(c, self.now);
                        if self.trace.is_some() {
                            self.tr_migrations(c);
                        }
                        // An idle CPU's balancing time is its own (idle) time.
                        self.lb_locks(c);
                        for k in r.kicks {
                            self.kick_remote(k);
                        }
                        // Idle CPUs that received tasks are woken to run them.
                        for i in 0..self.cpus.len() {
                            let ci = CpuId(i as u16);
                            if self.cpus[i].running.is_none() && self.kernel.need_resched(ci) {
                                self.kick_remote(ci);
                            }
                        }
                    }
                }
                EvKind::Irq { cpu } => self.noise_irq(CpuId(cpu)),
                EvKind::Kthread { cpu } => self.noise_kthread(CpuId(cpu)),
                EvKind::Arrival { cpu } => self.arrival(CpuId(cpu)),
                EvKind::WakeList { cpu } => {
                    let c = CpuId(cpu);
                    // sched_ttwu_pending() takes this CPU's own rq lock.
                    let hold = self.machine.costs.rq_lock_hold_ns;
                    self.rq_lock_wait_ns += self.cost.rq_lock(c, c, self.now, hold);
                    let woken = self.trace.as_ref().map(|_| self.kernel.rqs[c.idx()].wake_list.clone());
                    let resched = self.kernel.sched_ttwu_pending(c, self.now);
                    if let Some(w) = woken {
                        self.tr_wake_list(c, &w);
                    }
                    if resched {
                        self.do_schedule(c, SwitchReason::Preempt);
                    }
                }
            }
            if self.alive == 0 {
                break;
            }
        }
        let end = if self.alive == 0 { self.now } else { limit.min(self.now.max(if limit == INF { self.now } else { limit })) };
        // The queue ran dry with tasks alive: none of them can ever wake.
        self.blocked_forever = if !cut && self.alive > 0 { self.alive } else { 0 };
        self.cut = cut && self.alive > 0;
        self.finish(end)
    }

    // FIDELITY(F-009): aligned ticks at HZ, stopped on idle CPUs (NO_HZ_IDLE, no NO_HZ_FULL).
    fn arm_tick(&mut self, c: CpuId) {
        let cpu = &mut self.cpus[c.idx()];
        if cpu.tick_armed {
            return;
        }
        cpu.tick_armed = true;
        cpu.tick_gen = cpu.tick_gen.wrapping_add(1);
        let gen = cpu.tick_gen;
        // Ticks are aligned to jiffies on every CPU (sched_skew_tick = 0).
        let at = (self.now / self.tick_ns + 1) * self.tick_ns;
        self.push(at, EvKind::Tick { cpu: c.0, gen });
    }

    // ------------------------------------------------------------ tasks

    fn create_task(&mut self, spec: u32, parent: Option<TaskId>, cpu: CpuId) -> WakeResult {
        let ts = &self.wl.tasks[spec as usize];
        let params = TaskParams {
            nice: ts.nice,
            policy: Default::default(),
            mm: ts.mm,
            cpus_allowed: ts.cpus.as_ref().map(|v| v.iter().map(|&c| CpuId(c)).collect()),
            group: ts.group,
        };
        let p = self.kernel.sched_fork(&params, parent, cpu, self.now);
        debug_assert_eq!(p.idx(), self.rt.len());
        // A timer slot for every task (a spec forked more than once, kernel threads first).
        self.queue.ensure_slots(self.nr_cpus_slots as usize + p.idx() + 1);
        self.mem.push(TaskMem { footprint: DEFAULT_FOOTPRINT, ..Default::default() });
        self.rt.push(TaskRt {
            spec,
            program: ts.program,
            pc: 0,
            stage: 0,
            remaining: 0,
            loops: Vec::new(),
            reg: 0,
            req_stamps: Default::default(),
            mem: false,
            parent,
            unreaped: 0,
            waiting_child: false,
            live_children: 0,
        });
        if let Some(pp) = parent {
            self.rt[pp.idx()].live_children += 1;
        }
        self.alive += 1;
        self.created += 1;
        let r = self.kernel.wake_up_new_task(p, cpu, self.now);
        if self.trace.is_some() {
            self.tr_new_task(p, spec, parent, cpu, &r);
        }
        self.after_wake(r, cpu);
        r
    }

    /// Wake `p` from `this_cpu` (waker = the task running there, if any).
    fn wake(&mut self, p: TaskId, this_cpu: CpuId, waker: Option<TaskId>, wf: WakeFlags) {
        let r = self.kernel.try_to_wake_up(p, this_cpu, waker, wf, self.now);
        if self.trace.is_some() {
            self.tr_wake(p, this_cpu, &r);
        }
        self.after_wake(r, this_cpu);
    }

    /// The hardware side of a wakeup: a remote CPU that must reschedule gets an
    /// IPI (and leaves its idle state); the local CPU reschedules at the next
    /// op boundary of its running task.
    fn after_wake(&mut self, r: WakeResult, this_cpu: CpuId) {
        let waker = self.cpus[this_cpu.idx()].running;
        if let Some(w) = waker {
            // The waker pays for the CPUs its idle search examined...
            let mut extra = r.scanned * self.scan_ns();
            if !r.queued {
                // FIDELITY(F-017): lock sections for enqueue, wake-list activation and pick only.
                // ...and for the enqueue under the target rq's lock (spinning while
                // another CPU holds it), plus the lock line's transfer.
                let hold = self.cost.rq_lock_hold(this_cpu, r.cpu);
                let wait = self.cost.rq_lock(r.cpu, this_cpu, self.now, hold);
                self.rq_lock_wait_ns += wait;
                extra += wait + hold;
            }
            self.rt[w.idx()].remaining += extra;
        }
        if r.queued {
            if r.ipi {
                let lat = self.wake_latency(r.cpu, true);
                self.push(self.now + lat, EvKind::WakeList { cpu: r.cpu.0 });
            }
            return;
        }
        if !r.resched {
            return;
        }
        let target = r.cpu;
        let cpu = &self.cpus[target.idx()];
        if cpu.resched_pending {
            return;
        }
        let idle = cpu.running.is_none();
        if target == this_cpu && !idle {
            return; // handled by the interpreter after the current op
        }
        let lat = self.wake_latency(target, target != this_cpu);
        self.cpus[target.idx()].resched_pending = true;
        self.push(self.now + lat, EvKind::Resched { cpu: target.0 });
    }

    /// Cost of examining one CPU's runqueue in a search (SCAN component).
    #[inline]
    fn scan_ns(&self) -> u64 {
        if self.cost.sw.on(Component::SCAN) {
            self.machine.costs.idle_scan_ns_per_cpu
        } else {
            0
        }
    }

    /// IPI + idle-exit latency to get `target` running (WAKELAT component);
    /// a CPU polling in the POLL state needs no IPI (TIF_POLLING_NRFLAG).
    fn wake_latency(&mut self, target: CpuId, ipi: bool) -> u64 {
        if !self.cost.sw.on(Component::WAKELAT) {
            return 0;
        }
        let mut lat = 0;
        let idle = self.cpus[target.idx()].running.is_none();
        let exit = if idle { self.idle_exit_latency(target) } else { 0 };
        let polling = idle && exit == 0;
        if ipi && !polling {
            lat += self.machine.costs.ipi_ns;
        }
        if idle {
            self.idle_exit_ns += exit;
            lat += exit;
            self.cpus[target.idx()].exit_lat = lat;
        }
        lat
    }

    /// Send a reschedule IPI to `target` (it leaves idle first if idle).
    fn kick_remote(&mut self, target: CpuId) {
        if self.cpus[target.idx()].resched_pending {
            return;
        }
        let lat = self.wake_latency(target, true);
        self.cpus[target.idx()].resched_pending = true;
        self.push(self.now + lat, EvKind::Resched { cpu: target.0 });
    }

    /// Kick the idle load balancer (an IPI; it balances after leaving idle).
    fn kick_ilb(&mut self, ilb: CpuId) {
        if self.ilb_pending {
            return;
        }
        self.ilb_pending = true;
        let lat = self.wake_latency(ilb, true);
        self.push(self.now + lat, EvKind::NohzBalance { cpu: ilb.0 });
    }

    /// The running task's remaining work changed: move its segment end.
    fn reschedule_segment(&mut self, c: CpuId, t: TaskId) {
        let rate = self.cpus[c.idx()].rate;
        self.retime_segment(c, t, rate);
    }

    /// Settle the progress of `t` (running on `c`) at the old rate, switch to
    /// `rate` and move the segment's end event accordingly.
    fn retime_segment(&mut self, c: CpuId, t: TaskId, rate: u64) {
        let done = self.seg_done(c);
        let r = &mut self.rt[t.idx()];
        r.remaining = r.remaining.saturating_sub(done);
        let cpu = &mut self.cpus[c.idx()];
        cpu.seg_start = self.now.max(cpu.seg_start);
        cpu.rate = rate;
        cpu.seg_gen = cpu.seg_gen.wrapping_add(1);
        let gen = cpu.seg_gen;
        let at = cpu.seg_start + wall_for(self.rt[t.idx()].remaining, rate);
        self.push(at, EvKind::SegEnd { cpu: c.0, gen });
    }

    /// A memory-bound phase starts on `c`: every stream of its node gets a new share.
    fn mem_start(&mut self, c: CpuId) {
        let (llc, node) = (self.cost.llc_index(c) as usize, self.cost.node(c) as usize);
        self.cpus[c.idx()].mem = true;
        self.llc_streams[llc] += 1;
        self.node_streams[node] += 1;
        self.mem_rates(node as u32);
    }

    /// A memory-bound phase on `c` ends or is switched out.
    fn mem_stop(&mut self, c: CpuId) {
        let (llc, node) = (self.cost.llc_index(c) as usize, self.cost.node(c) as usize);
        // Settle the stream's progress at its old rate before the rates change.
        if let Some(t) = self.cpus[c.idx()].running {
            let done = self.seg_done(c);
            let r = &mut self.rt[t.idx()];
            r.remaining = r.remaining.saturating_sub(done);
            self.cpus[c.idx()].seg_start = self.now.max(self.cpus[c.idx()].seg_start);
        }
        self.cpus[c.idx()].mem = false;
        self.llc_streams[llc] -= 1;
        self.node_streams[node] -= 1;
        let busy_sib = self.kernel.sd.smt_mask[c.idx()].iter().any(|o| o != c && self.cpus[o.idx()].running.is_some());
        self.cpus[c.idx()].rate = self.cost.smt_rate(busy_sib);
        self.mem_rates(node as u32);
    }

    /// Fluid bandwidth sharing: recompute the rate of every stream on `node`
    /// and move the end of those whose rate changed.
    fn mem_rates(&mut self, node: u32) {
        for i in 0..self.cpus.len() {
            let ci = CpuId(i as u16);
            if !self.cpus[i].mem || self.cost.node(ci) != node {
                continue;
            }
            let Some(t) = self.cpus[i].running else { continue };
            let home = self.mem[t.idx()].home_node.unwrap_or(node);
            let rate =
                self.cost.mem_rate(self.llc_streams[self.cost.llc_index(ci) as usize], self.node_streams[node as usize], home != node);
            if rate == self.cpus[i].rate {
                continue;
            }
            self.retime_segment(ci, t, rate);
        }
    }

    /// Work (nominal ns) the running task of `c` has done in its current segment.
    #[inline]
    fn seg_done(&self, c: CpuId) -> u64 {
        let cpu = &self.cpus[c.idx()];
        self.now.saturating_sub(cpu.seg_start) * cpu.rate / 1000
    }

    /// SMT: `c` became busy or idle; its siblings' running tasks change speed.
    fn smt_changed(&mut self, c: CpuId) {
        if !self.smt {
            return;
        }
        let mut sibs = [CpuId(0); 8];
        let mut n = 0;
        for s in self.kernel.sd.smt_mask[c.idx()].iter().take(8) {
            sibs[n] = s;
            n += 1;
        }
        for &s in &sibs[..n] {
            if self.cpus[s.idx()].mem {
                continue; // a streaming task's rate is set by the bandwidth model
            }
            let busy_sib = self.kernel.sd.smt_mask[s.idx()].iter().any(|o| o != s && self.cpus[o.idx()].running.is_some());
            let rate = self.cost.smt_rate(busy_sib);
            if rate == self.cpus[s.idx()].rate {
                continue;
            }
            match self.cpus[s.idx()].running {
                Some(t) if s != c => self.retime_segment(s, t, rate),
                _ => self.cpus[s.idx()].rate = rate,
            }
        }
    }

    /// Exit latency of the idle state the governor chose for `c`: the deepest
    /// state whose target residency fits the predicted idle length.
    ///
    /// FIDELITY(F-005): the menu/teo governors use timer and history-based
    /// predictions; we use an EWMA of this CPU's past idle intervals.
    fn idle_exit_latency(&self, c: CpuId) -> u64 {
        let pred = self.cpus[c.idx()].idle_pred_ns;
        let mut lat = self.machine.idle_states.first().map_or(0, |s| s.exit_latency_ns);
        for s in &self.machine.idle_states {
            if s.target_residency_ns <= pred {
                lat = s.exit_latency_ns;
            }
        }
        lat
    }

    /// Call `__schedule()` on `c` and switch to whatever it picks.
    fn do_schedule(&mut self, c: CpuId, reason: SwitchReason) {
        let now = self.now;
        // Account the progress of the running task up to now.
        if let Some(t) = self.cpus[c.idx()].running {
            if reason == SwitchReason::Preempt {
                let done = self.seg_done(c);
                let r = &mut self.rt[t.idx()];
                r.remaining = r.remaining.saturating_sub(done);
            }
        }
        let res = self.kernel.schedule(c, reason, now);
        if self.trace.is_some() {
            self.tr_schedule(c, reason, &res);
        }
        if let Some(d) = res.next_run_delay {
            if !res.next.is_some_and(|nx| self.is_kthread(nx)) {
                self.run_delay.record(d);
            }
        }
        if let Some(dst) = res.kick {
            self.kick_remote(dst);
        }
        for &k in &res.balance_kicks {
            self.kick_remote(k);
        }
        if res.balance_examined > 0 {
            if let Some(nx) = res.next {
                // Newly-idle balancing ran before the switch to the pulled task.
                self.rt[nx.idx()].remaining += res.balance_examined * self.scan_ns();
            }
        }
        let lb_wait = self.lb_locks(c);
        if let Some(nx) = res.next {
            self.rt[nx.idx()].remaining += lb_wait;
        }
        self.switch_to(c, res.prev, res.next);
    }

    /// Lock sections of the load-balance passes `c` just ran: each detach held
    /// the busiest rq's lock (after waiting for it). Returns the time `c`
    /// spent waiting and holding.
    fn lb_locks(&mut self, c: CpuId) -> u64 {
        if self.kernel.lb_locked.is_empty() {
            return 0;
        }
        let mut spent = 0;
        let locked = std::mem::take(&mut self.kernel.lb_locked);
        for &src in &locked {
            let hold = self.cost.rq_lock_hold(c, src);
            let wait = self.cost.rq_lock(src, c, self.now, hold);
            self.rq_lock_wait_ns += wait;
            spent += wait + hold;
        }
        let mut l = locked;
        l.clear();
        self.kernel.lb_locked = l;
        spent
    }

    fn switch_to(&mut self, c: CpuId, prev: Option<TaskId>, next: Option<TaskId>) {
        let now = self.now;
        if prev != next {
            if let Some(log) = &mut self.switch_log {
                log.push(SwitchRec { t: now, cpu: c.0, prev: prev.map(|p| p.0), next: next.map(|p| p.0) });
            }
        }
        let was_idle = self.cpus[c.idx()].running.is_none();
        if self.cpus[c.idx()].mem {
            // The outgoing task stops streaming here (it resumes wherever it runs next).
            self.mem_stop(c);
        }
        let cpu = &mut self.cpus[c.idx()];
        cpu.seg_gen = cpu.seg_gen.wrapping_add(1);
        match next {
            None => {
                if !was_idle {
                    cpu.busy_ns += now - cpu.since;
                    cpu.since = now;
                }
                cpu.running = None;
                cpu.tick_gen = cpu.tick_gen.wrapping_add(1);
                cpu.tick_armed = false;
                self.queue.cancel(self.slot_of(EvKind::SegEnd { cpu: c.0, gen: 0 }));
                self.queue.cancel(self.slot_of(EvKind::Tick { cpu: c.0, gen: 0 }));
            }
            Some(nx) => {
                if was_idle {
                    let idle_len = now - cpu.since;
                    cpu.idle_ns += idle_len;
                    // Like the menu governor, learn from the residency before the
                    // wakeup arrived, not counting the exit latency itself.
                    let residency = idle_len.saturating_sub(std::mem::take(&mut cpu.exit_lat));
                    cpu.idle_pred_ns = (cpu.idle_pred_ns * 7 + residency) / 8;
                    cpu.since = now;
                }
                let mut cost = 0;
                let switch_on = self.cost.sw.on(Component::SWITCH);
                if prev != next {
                    if switch_on {
                        cost += self.machine.costs.context_switch_ns;
                    }
                    let mm = self.kernel.tasks[nx.idx()].mm;
                    // A kernel thread borrows the last mm (lazy TLB): no switch.
                    if mm != noise::KTHREAD_MM && cpu.last_mm != Some(mm) {
                        if switch_on {
                            cost += self.machine.costs.mm_switch_ns;
                            // Before v4.14 the kernel does not use PCID: the CR3
                            // write flushes the TLB and the incoming task re-walks
                            // its pages (switch_mm_irqs_off(); FIDELITY(F-024)).
                            if self.kernel.profile.version < (4, 14) {
                                cost += schedlab_machine::cost::tlb_refill_ns(self.mem[nx.idx()].footprint);
                            }
                        }
                        if cpu.last_mm.is_some() {
                            self.mm_switches += 1;
                        }
                        cpu.last_mm = Some(mm);
                    }
                    // Switches between the workload's task groups: the machine's
                    // kernel threads (noise.rs) are not in the workload's groups.
                    if self.rt[nx.idx()].program != noise::KTHREAD_PROGRAM {
                        let group = self.kernel.tasks[nx.idx()].group;
                        if cpu.last_group.is_some_and(|g| g != group) {
                            self.group_switches += 1;
                        }
                        cpu.last_group = Some(group);
                    }
                    // __schedule() takes this rq's lock before the pick and
                    // releases it in finish_task_switch(), after switch_mm()
                    // and switch_to(): the section covers the switch itself.
                    // FIDELITY(F-440): fixed hold times; no slowdown with the number of spinners.
                    let hold = self.machine.costs.rq_lock_hold_ns + cost;
                    let wait = self.cost.rq_lock(c, c, now, hold);
                    self.rq_lock_wait_ns += wait;
                    cost += wait;
                    // The incoming task refills what it lost from this CPU's caches.
                    let refill = self.cost.switch_in(&mut self.mem[nx.idx()], c);
                    self.l2_misses += refill.l2_misses;
                    self.llc_misses += refill.llc_misses;
                    self.dram_bytes += refill.dram_bytes;
                    self.remote_bytes += refill.remote_bytes;
                    self.rt[nx.idx()].remaining += refill.ns;
                }
                self.cpus[c.idx()].running = Some(nx);
                if self.rt[nx.idx()].mem {
                    self.mem_start(c);
                }
                let cpu = &mut self.cpus[c.idx()];
                cpu.seg_start = now + cost;
                let gen = cpu.seg_gen;
                let rate = cpu.rate;
                let at = cpu.seg_start + wall_for(self.rt[nx.idx()].remaining, rate);
                self.push(at, EvKind::SegEnd { cpu: c.0, gen });
                self.arm_tick(c);
            }
        }
        if was_idle != next.is_none() {
            self.smt_changed(c);
        }
    }

    /// Block the running task of `c` and reschedule.
    fn block(&mut self, c: CpuId) {
        self.do_schedule(c, SwitchReason::Block);
    }

    /// Interpret the program of `t`, running on `c`, from its current state.
    fn run_ops(&mut self, c: CpuId, t: TaskId) {
        let wl = self.wl;
        loop {
            if self.rt[t.idx()].remaining > 0 {
                let gen = self.cpus[c.idx()].seg_gen;
                self.cpus[c.idx()].seg_start = self.now;
                let at = self.now + wall_for(self.rt[t.idx()].remaining, self.cpus[c.idx()].rate);
                self.push(at, EvKind::SegEnd { cpu: c.0, gen });
                return;
            }
            let r = &self.rt[t.idx()];
            if r.program == noise::KTHREAD_PROGRAM {
                if self.kthread_step(c, t) {
                    continue;
                }
                return;
            }
            let prog = &wl.programs[r.program as usize];
            let Some(&op) = prog.get(r.pc as usize) else {
                // Falling off the end of a program is an exit.
                self.exit_task(c, t);
                return;
            };
            let stage = r.stage;
            match op {
                Op::Run { .. } | Op::RunDist { .. } => {
                    if stage == 0 {
                        let mut j = match op {
                            Op::Run { ns } => self.jitter(ns),
                            Op::RunDist { lo, mid, hi } => draw_run_dist(&mut self.rng, lo, mid, hi),
                            _ => unreachable!(),
                        };
                        if self.numa_mem.is_some() {
                            j = self.numa_run_ns(t, c, j);
                        }
                        let r = &mut self.rt[t.idx()];
                        r.remaining = j;
                        r.stage = 1;
                    } else {
                        self.advance(t);
                    }
                }
                Op::Mem { bytes } => {
                    if stage == 0 {
                        // The phase's time varies as a Run's does (DRAM refresh,
                        // page placement, prefetch): its effective bytes are jittered.
                        // FIDELITY(F-801): uniform +-jitter_pct per phase, no measured distribution.
                        let j = self.jitter(bytes);
                        let r = &mut self.rt[t.idx()];
                        r.remaining = j;
                        r.stage = 1;
                        r.mem = true;
                        self.mem_start(c);
                    } else {
                        self.rt[t.idx()].mem = false;
                        self.mem_stop(c);
                        self.advance(t);
                    }
                }
                Op::Write { chan, cost } | Op::WriteTag { chan, cost, .. } | Op::WriteReg { chan_base: chan, cost } => {
                    if stage == 0 {
                        let j = self.jitter(cost);
                        let r = &mut self.rt[t.idx()];
                        r.remaining = j;
                        r.stage = 1;
                        continue;
                    }
                    let (chan, tag) = match op {
                        Op::WriteTag { tag, .. } => (chan, tag),
                        Op::WriteReg { .. } => (chan + self.rt[t.idx()].reg, 0),
                        _ => (chan, 0),
                    };
                    match self.chan_write(c, t, chan, tag) {
                        ChanOutcome::Blocked => return,
                        ChanOutcome::Done { woke } => {
                            if woke && self.preempt_point(c) {
                                return;
                            }
                        }
                    }
                }
                Op::Read { chan, cost } | Op::ReadTag { chan, cost } => {
                    if stage == 0 {
                        match self.chan_read(c, t, chan, matches!(op, Op::ReadTag { .. })) {
                            ChanOutcome::Blocked => return,
                            ChanOutcome::Done { woke } => {
                                // The message's lines come from the writer's caches.
                                let xfer = self.chan_writer[chan as usize].map_or(0, |w| self.cost.message_ns(w, c, MSG_BYTES));
                                let j = self.jitter(cost) + xfer;
                                let r = &mut self.rt[t.idx()];
                                r.remaining = j;
                                r.stage = 1;
                                if woke && self.preempt_point(c) {
                                    return;
                                }
                            }
                        }
                    } else {
                        self.advance(t);
                    }
                }
                Op::Sleep { ns } => {
                    self.advance(t);
                    let at = self.now + ns;
                    self.push(at, EvKind::Timer { task: t.0 });
                    self.block(c);
                    return;
                }
                Op::SemWait { sem } => {
                    let s = &mut self.sems[sem as usize];
                    if s.woken == Some(t) {
                        s.woken = None; // LWLockAcquire re-try: releaseOK again
                    }
                    if s.count > 0 {
                        s.count -= 1;
                        self.advance(t);
                    } else {
                        s.waiters.push_back(t);
                        self.block(c);
                        return;
                    }
                }
                Op::SemPost { sem, n } => {
                    self.advance(t);
                    let sync = if wl.sems[sem as usize].sync { WakeFlags::SYNC } else { WakeFlags::default() };
                    let s = &mut self.sems[sem as usize];
                    if wl.sems[sem as usize].barging {
                        // LWLockRelease() before 9.5: release, then wake the first
                        // waiter unless one woken earlier has not re-tried yet; the
                        // woken task runs its SemWait again (no hand-off).
                        s.count += n.min(u32::MAX / 2) as u64;
                        let w = if s.woken.is_none() { s.waiters.pop_front() } else { None };
                        if let Some(w) = w {
                            s.woken = Some(w);
                            self.wake(w, c, Some(t), sync);
                            if self.preempt_point(c) {
                                return;
                            }
                        }
                        continue;
                    }
                    let mut ws = std::mem::take(&mut self.wake_buf);
                    if n == u32::MAX {
                        s.count = u64::MAX / 2;
                        ws.extend(s.waiters.drain(..));
                    } else {
                        let k = (n as usize).min(s.waiters.len());
                        s.count += (n as usize - k) as u64;
                        ws.extend(s.waiters.drain(..k));
                    }
                    let woke = !ws.is_empty();
                    for &w in &ws {
                        // futex/semaphore hand-off: the woken waiter owns the count it waited for.
                        self.advance(w);
                        self.wake(w, c, Some(t), sync);
                    }
                    ws.clear();
                    self.wake_buf = ws;
                    if woke && self.preempt_point(c) {
                        return;
                    }
                }
                Op::Fork { spec, cost } => {
                    if stage == 0 {
                        let j = self.jitter(cost);
                        let r = &mut self.rt[t.idx()];
                        r.remaining = j;
                        r.stage = 1;
                        continue;
                    }
                    self.advance(t);
                    self.create_task(spec, Some(t), c);
                    if self.preempt_point(c) {
                        return;
                    }
                }
                Op::WaitChild => {
                    let r = &mut self.rt[t.idx()];
                    if r.unreaped > 0 {
                        r.unreaped -= 1;
                        self.advance(t);
                    } else if r.live_children == 0 {
                        // wait() with no children returns ECHILD.
                        self.advance(t);
                    } else {
                        r.waiting_child = true;
                        self.block(c);
                        return;
                    }
                }
                Op::Loop { count } => {
                    let r = &mut self.rt[t.idx()];
                    r.pc += 1;
                    r.loops.push((r.pc, count));
                }
                Op::EndLoop => {
                    let r = &mut self.rt[t.idx()];
                    let top = r.loops.last_mut().expect("validated loops");
                    if top.1 != u64::MAX {
                        top.1 -= 1;
                    }
                    if top.1 == 0 {
                        r.loops.pop();
                        r.pc += 1;
                    } else {
                        r.pc = top.0;
                    }
                }
                Op::Mark { id } => {
                    self.marks[id as usize] = Some(self.now);
                    self.advance(t);
                }
                Op::Count { id, n } => {
                    self.counters[id as usize] += n;
                    self.advance(t);
                }
                Op::Exit { cost } => {
                    if stage == 0 {
                        let r = &mut self.rt[t.idx()];
                        r.remaining = cost;
                        r.stage = 1;
                        continue;
                    }
                    self.exit_task(c, t);
                    return;
                }
                Op::Barrier { id, parties } => {
                    if self.barrier_arrive(c, t, id, parties) {
                        return;
                    }
                }
                Op::SpinBarrier { id, parties, spin } => {
                    if stage == 0 {
                        if self.barrier_arrive_spin(c, t, id, parties, spin) {
                            return;
                        }
                    } else {
                        // The spin ran out before the last arrival: futex_wait.
                        let sp = &mut self.spinners[id as usize];
                        if let Some(k) = sp.iter().position(|&x| x == t) {
                            sp.swap_remove(k);
                        }
                        self.rt[t.idx()].stage = 0;
                        self.barriers[id as usize].1.push(t);
                        self.block(c);
                        return;
                    }
                }
                Op::Poll { chan } => {
                    if self.chans[chan as usize].count > 0 {
                        self.advance(t);
                    } else {
                        self.chans[chan as usize].readers.push_back(t);
                        self.block(c);
                        return;
                    }
                }
                Op::WakeQueued { chan, sem_base, cost } => {
                    if stage == 0 {
                        let k = self.wake_queued(c, t, chan, sem_base);
                        let j = self.jitter(cost * k);
                        let r = &mut self.rt[t.idx()];
                        r.remaining = j;
                        r.stage = 1;
                        if k > 0 && self.preempt_point(c) {
                            return;
                        }
                    } else {
                        self.advance(t);
                    }
                }
                Op::SemWake { sem, n } => {
                    self.advance(t);
                    if self.sem_wake(c, t, sem, n) && self.preempt_point(c) {
                        return;
                    }
                }
                Op::WakeLatency { hist, sem } => {
                    let d = self.now.saturating_sub(self.sem_stamp[sem as usize]);
                    self.record_latency(hist, d);
                    self.advance(t);
                }
                Op::ReqStart { hist } => {
                    let now = self.now;
                    self.rt[t.idx()].req_stamps.push_back((hist, now));
                    self.advance(t);
                }
                Op::ReqEnd { hist } => {
                    self.req_end(t, hist);
                    self.advance(t);
                }
            }
        }
    }

    /// The effect of a write of one message: block while full, else queue it
    /// and wake a blocked reader (and, for pipes, the next blocked writer).
    fn chan_write(&mut self, c: CpuId, t: TaskId, chan: u32, tag: u32) -> ChanOutcome {
        let spec = &self.wl.channels[chan as usize];
        let ch = &mut self.chans[chan as usize];
        if ch.count >= spec.capacity {
            ch.writers.push_back(t);
            self.block(c);
            return ChanOutcome::Blocked;
        }
        ch.count += 1;
        if ch.tagged {
            ch.tags.push_back(tag);
        }
        self.chan_writer[chan as usize] = Some(c);
        let reader = (!ch.readers.is_empty()).then(|| ch.readers.pop_front().expect("not empty"));
        // pipe_write(): a woken writer wakes the next one if space remains.
        let next_writer = (matches!(spec.kind, ChannelKind::Pipe { .. }) && ch.count < spec.capacity && !ch.writers.is_empty())
            .then(|| ch.writers.pop_front().expect("not empty"));
        let wf = if spec.sync { WakeFlags::SYNC } else { WakeFlags::default() };
        self.advance(t);
        let mut woke = false;
        for w in reader.into_iter().chain(next_writer) {
            self.wake(w, c, Some(t), wf);
            woke = true;
        }
        ChanOutcome::Done { woke }
    }

    /// The effect of a read of one message: block while empty, else take it and
    /// wake blocked writers as the channel kind does.
    // FIDELITY(F-010): pipe/socket wake rules with capacity counted in messages.
    fn chan_read(&mut self, c: CpuId, t: TaskId, chan: u32, tagged: bool) -> ChanOutcome {
        let spec = &self.wl.channels[chan as usize];
        let ch = &mut self.chans[chan as usize];
        if ch.count == 0 {
            ch.readers.push_back(t);
            self.block(c);
            return ChanOutcome::Blocked;
        }
        ch.count -= 1;
        if ch.tagged {
            let tag = ch.tags.pop_front().unwrap_or(0);
            if tagged {
                self.rt[t.idx()].reg = tag;
            }
        }
        // A request from the network: its latency runs from its arrival.
        if let Some(at) = self.chans[chan as usize].stamps.pop_front() {
            let hist = self.arrivals.as_ref().map_or(0, |a| a.hist);
            self.rt[t.idx()].req_stamps.push_back((hist, at));
        }
        let ch = &mut self.chans[chan as usize];
        let wf = if spec.sync { WakeFlags::SYNC } else { WakeFlags::default() };
        let mut woken = std::mem::take(&mut self.wake_buf);
        match spec.kind {
            // pipe_read(): one exclusive writer once a page's worth of space is free.
            ChannelKind::Pipe { msgs_per_page } if !ch.writers.is_empty() && ch.count + msgs_per_page <= spec.capacity => {
                woken.push(ch.writers.pop_front().expect("not empty"));
            }
            // unix_write_space(): every writer once the buffer is at most a quarter full.
            ChannelKind::Socket if !ch.writers.is_empty() && ch.count * 4 <= spec.capacity => woken.extend(ch.writers.drain(..)),
            _ => {}
        }
        let woke = !woken.is_empty();
        for &w in &woken {
            self.wake(w, c, Some(t), wf);
        }
        woken.clear();
        self.wake_buf = woken;
        ChanOutcome::Done { woke }
    }

    #[inline]
    fn advance(&mut self, t: TaskId) {
        let r = &mut self.rt[t.idx()];
        r.pc += 1;
        r.stage = 0;
    }

    /// After an op that woke someone: preempt the current task if the kernel
    /// set need_resched on this CPU (return to user space is a preemption point).
    fn preempt_point(&mut self, c: CpuId) -> bool {
        if self.kernel.need_resched(c) {
            self.do_schedule(c, SwitchReason::Preempt);
            return true;
        }
        false
    }

    fn exit_task(&mut self, c: CpuId, t: TaskId) {
        if self.trace.is_some() {
            self.tr_exit(c, t);
        }
        self.alive -= 1;
        self.exited += 1;
        let parent = self.rt[t.idx()].parent;
        if let Some(pp) = parent {
            let pr = &mut self.rt[pp.idx()];
            pr.live_children -= 1;
            pr.unreaped += 1;
            if pr.waiting_child {
                pr.waiting_child = false;
                pr.unreaped -= 1;
                pr.pc += 1;
                pr.stage = 0;
                // do_notify_parent() wakes the parent with a sync wakeup.
                self.kernel_wake_parent(pp, c, t);
            }
        }
        self.do_schedule(c, SwitchReason::Exit);
    }

    fn kernel_wake_parent(&mut self, pp: TaskId, c: CpuId, t: TaskId) {
        self.wake(pp, c, Some(t), WakeFlags::SYNC);
    }

    fn finish(&mut self, end: u64) -> RunResult {
        let mut groups: Vec<GroupStat> =
            self.kernel.groups().iter().map(|g| GroupStat { name: g.name.clone(), shares: g.shares, tasks: 0, runtime_ns: 0 }).collect();
        for t in &self.kernel.tasks {
            if self.is_kthread(t.id) {
                continue; // the machine's, not the workload's (noise.rs)
            }
            let g = &mut groups[t.group as usize];
            g.tasks += 1;
            // sum_exec_runtime, plus what the running task ran since its last update_curr().
            let running = self.cpus[t.cpu.idx()].running == Some(t.id);
            g.runtime_ns += t.se.sum_exec_runtime + if running { end.saturating_sub(t.se.exec_start) } else { 0 };
        }
        // Close the busy/idle intervals.
        for cpu in &mut self.cpus {
            let d = end.saturating_sub(cpu.since);
            if cpu.running.is_some() {
                cpu.busy_ns += d;
            } else {
                cpu.idle_ns += d;
            }
            cpu.since = end;
        }
        let mut vol = 0;
        let mut invol = 0;
        let mut migr = 0;
        let mut never_ran = 0;
        let mut noise = self.noise.stats;
        for t in &self.kernel.tasks {
            if self.is_kthread(t.id) {
                noise.switches += t.nvcsw + t.nivcsw;
                noise.migrations += t.nr_migrations;
                continue;
            }
            vol += t.nvcsw;
            invol += t.nivcsw;
            migr += t.nr_migrations;
            if t.state == TaskState::Runnable && t.last_queued.is_some() {
                never_ran += 1;
            }
            // Waits still open at the end count up to the end.
        }
        // Run delay samples: each task's waits are summarised by the kernel's
        // sched_info; per-wait samples are recorded by the engine.
        // The kernel threads' wakeups (their first activation is a fork) are not the workload's.
        let kthread_ttwu = noise.kthread_wakeups - self.kthread_ids.len() as u64;
        let wakeups = self.kernel.rqs.iter().map(|r| r.ttwu_count).sum::<u64>() - kthread_ttwu;
        let (ttwu_count, ttwu_local, levels) = self.kernel.level_stats();
        let busy: Vec<u64> = self.cpus.iter().map(|c| c.busy_ns).collect();
        let schedstat = self.want_schedstat.then(|| self.kernel.schedstat(end, &busy));
        let mark = |id: u32| self.marks[id as usize];
        // Why marks that were asked for are missing: the run did not get there.
        let not_reached = |what: &str, id: u32| -> String {
            let why = if self.cut && !self.wl.time_bounded {
                format!(
                    "--duration {} cut the run before it completed ({} of {} tasks exited); {} runs to completion: raise --duration or drop it",
                    fmt_dur(end),
                    self.exited,
                    self.wl.nr_tasks(),
                    self.wl.name
                )
            } else if self.blocked_forever > 0 {
                format!(
                    "the run ended with {} tasks blocked forever (deadlock or lost wakeup: nothing was left that could wake them); fix the workload's waits and wakeups",
                    self.blocked_forever
                )
            } else {
                format!("no task executed `mark id={id}` before the run ended; check the workload's program")
            };
            format!("the metric's {what} mark (mark id={id}) was not reached: {why}")
        };
        let mut missing: Option<String> = None;
        let span = |s: Option<u32>, e: Option<u32>, missing: &mut Option<String>| -> (u64, u64) {
            let sv = match s {
                None => 0,
                Some(id) => mark(id).unwrap_or_else(|| {
                    missing.get_or_insert_with(|| not_reached("start", id));
                    0
                }),
            };
            let ev = match e {
                None => end,
                Some(id) => mark(id).unwrap_or_else(|| {
                    missing.get_or_insert_with(|| not_reached("end", id));
                    end
                }),
            };
            if ev < sv && missing.is_none() {
                *missing = Some(format!(
                    "the metric's end mark (mark id={}) was last reached before its start mark (mark id={}); the workload must mark the start first",
                    e.unwrap_or(0),
                    s.unwrap_or(0)
                ));
            }
            (sv, ev)
        };
        let (name, value, unit) = match &self.wl.metric {
            MetricSpec::Elapsed { name, start, end: e } => {
                let (s, f) = span(Some(*start), Some(*e), &mut missing);
                (name.clone(), f.saturating_sub(s) as f64 / 1e9, "s".to_string())
            }
            MetricSpec::Rate { name, unit, counter, start, end: e } => {
                let (s, f) = span(*start, *e, &mut missing);
                let secs = (f.saturating_sub(s)) as f64 / 1e9;
                let v = if secs > 0.0 { self.counters[*counter as usize] as f64 / secs } else { 0.0 };
                (name.clone(), v, unit.clone())
            }
            MetricSpec::ScaledRate { name, unit, counter, divisor, start, end: e } => {
                let (s, f) = span(*start, *e, &mut missing);
                let secs = (f.saturating_sub(s)) as f64 / 1e9;
                let v = if secs > 0.0 { self.counters[*counter as usize] as f64 / *divisor as f64 / secs } else { 0.0 };
                (name.clone(), v, unit.clone())
            }
            MetricSpec::LatencyPercentile { name, hist, q } => {
                let v = self.lat_hists.get(*hist as usize).map_or(0, |h| h.quantile(*q));
                (name.clone(), v as f64 / 1e3, "us".to_string())
            }
            MetricSpec::LatencyMean { name, hist } => (name.clone(), self.latency_mean(*hist as usize) as f64 / 1e3, "us".to_string()),
        };
        if let MetricSpec::LatencyPercentile { hist, .. } | MetricSpec::LatencyMean { hist, .. } = &self.wl.metric {
            if self.lat_hists.get(*hist as usize).is_none_or(|h| h.count() == 0) {
                missing = Some(format!(
                    "{name}: latency histogram {hist} has no samples (no request or wakeup completed within the run); run longer (--duration) or check the workload's req_start/req_end or wake_latency ops"
                ));
            }
        }
        // A run-to-completion workload cut short has no result even when its
        // metric has no marks (e.g. a rate over the whole run).
        if missing.is_none() && self.cut && !self.wl.time_bounded {
            missing = Some(format!(
                "--duration {} cut the run before it completed ({} of {} tasks exited); {} runs to completion: raise --duration or drop it",
                fmt_dur(end),
                self.exited,
                self.wl.nr_tasks(),
                self.wl.name
            ));
        }
        let latencies = self
            .lat_hists
            .iter()
            .enumerate()
            .filter(|(_, h)| h.count() > 0)
            .map(|(i, h)| LatencySummary {
                hist: i as u32,
                count: h.count(),
                mean: self.latency_mean(i),
                p50: h.quantile(0.50),
                p90: h.quantile(0.90),
                p95: h.quantile(0.95),
                p99: h.quantile(0.99),
                p999: h.quantile(0.999),
                max: h.max(),
            })
            .collect();
        RunResult {
            metric_name: name,
            metric_value: value,
            metric_missing: missing,
            metric_unit: unit,
            higher_is_better: self.wl.metric.higher_is_better(),
            simulated_ns: end,
            voluntary_switches: vol,
            involuntary_switches: invol,
            migrations: migr,
            wakeups,
            run_delay_p50: self.run_delay.quantile(0.50),
            run_delay_p90: self.run_delay.quantile(0.90),
            run_delay_p99: self.run_delay.quantile(0.99),
            run_delay_max: self.run_delay.max(),
            cpus: self.cpus.iter().map(|c| (c.busy_ns, c.idle_ns)).collect(),
            events: self.events,
            tasks_created: self.created,
            tasks_exited: self.exited,
            blocked_forever: self.blocked_forever,
            woken_never_ran: never_ran,
            mm_switches: self.mm_switches,
            group_switches: self.group_switches,
            groups,
            switch_log: self.switch_log.take().unwrap_or_default(),
            task_names: self
                .rt
                .iter()
                .zip(&self.kernel.tasks)
                .map(|(rt, t)| match self.wl.tasks.get(rt.spec as usize) {
                    Some(ts) => (ts.name.clone(), t.group),
                    None => (format!("kthread/{}", t.cpu.0), t.group),
                })
                .collect(),
            idle_exit_ns: self.idle_exit_ns,
            l2_misses: self.l2_misses,
            llc_misses: self.llc_misses,
            dram_bytes: self.dram_bytes,
            remote_bytes: self.remote_bytes,
            rq_lock_wait_ns: self.rq_lock_wait_ns,
            ttwu_count,
            ttwu_local,
            levels,
            schedstat,
            latencies,
            trace: self.trace.take(),
            numa: self.numa_report(end),
            noise,
            arrivals: self.arrivals.as_ref().map_or_else(ArrivalStats::default, |a| a.stats),
        }
    }
}

/// Build the kernel for `machine` and run `wl` under `cfg`.
/// A duration limit for messages: `10ms`, `1s`, `250us`, `7ns`.
fn fmt_dur(ns: u64) -> String {
    match ns {
        n if n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

pub fn run(machine: &Machine, profile: schedlab_kernel::profile::KernelProfile, wl: &Workload, cfg: &SimConfig) -> RunResult {
    let kernel = Kernel::new(&machine.topology, profile);
    Sim::new(machine, kernel, wl, cfg).run(cfg)
}

/// `run`, checking `stop` every 16k events: once it is set (e.g. by a Ctrl-C
/// handler on another thread) the run ends early and returns `None`. A run
/// that is not stopped returns exactly what `run` returns.
pub fn run_stoppable(
    machine: &Machine,
    profile: schedlab_kernel::profile::KernelProfile,
    wl: &Workload,
    cfg: &SimConfig,
    stop: &std::sync::atomic::AtomicBool,
) -> Option<RunResult> {
    let kernel = Kernel::new(&machine.topology, profile);
    let mut sim = Sim::new(machine, kernel, wl, cfg);
    sim.stop = Some(stop);
    let res = sim.run(cfg);
    (!stop.load(std::sync::atomic::Ordering::Relaxed)).then_some(res)
}

impl Sim<'_> {
    /// `Op::Barrier`: arrive at barrier `id`. The last of `parties` arrivals
    /// releases the waiters with futex (non-sync) wakeups and continues; the
    /// others block; spinners of `Op::SpinBarrier` at the same id are released
    /// without a wakeup. Returns true when the caller must stop interpreting.
    fn barrier_arrive(&mut self, c: CpuId, t: TaskId, id: u32, parties: u32) -> bool {
        if self.barriers.len() <= id as usize {
            self.barriers.resize_with(id as usize + 1, Default::default);
        }
        let b = &mut self.barriers[id as usize];
        b.0 += 1;
        if b.0 < parties {
            b.1.push(t);
            self.block(c);
            return true;
        }
        b.0 = 0;
        self.advance(t);
        // `Op::SpinBarrier` arrivals still spinning see the generation change:
        // they go on without a futex wakeup; a running spinner's segment ends now.
        if let Some(sp) = self.spinners.get_mut(id as usize) {
            let mut sp = std::mem::take(sp);
            for &s in &sp {
                self.advance(s);
                self.rt[s.idx()].remaining = 0;
                let cpu = self.kernel.tasks[s.idx()].cpu;
                if self.cpus[cpu.idx()].running == Some(s) {
                    self.reschedule_segment(cpu, s);
                }
            }
            sp.clear();
            self.spinners[id as usize] = sp; // keeps its capacity: no allocation per barrier
        }
        let mut ws = std::mem::take(&mut self.wake_buf);
        ws.append(&mut self.barriers[id as usize].1);
        let woke = !ws.is_empty();
        for &w in &ws {
            self.advance(w);
            self.wake(w, c, Some(t), WakeFlags::default());
        }
        ws.clear();
        self.wake_buf = ws;
        woke && self.preempt_point(c)
    }

    /// `Op::SpinBarrier`: as [`Self::barrier_arrive`], but an arrival that is
    /// not the last spins for `spin` ns (CPU time, on its CPU) before it
    /// blocks; the last arrival releases the spinners (they go on without a
    /// wakeup, a running spinner's segment ends now) and wakes the sleepers.
    /// libgomp gomp_barrier_wait_end() / do_wait() (config/linux/wait.h).
    fn barrier_arrive_spin(&mut self, c: CpuId, t: TaskId, id: u32, parties: u32, spin: u64) -> bool {
        if self.barriers.len() <= id as usize {
            self.barriers.resize_with(id as usize + 1, Default::default);
        }
        if self.spinners.len() <= id as usize {
            self.spinners.resize_with(id as usize + 1, Default::default);
        }
        let b = &mut self.barriers[id as usize];
        if b.0 + 1 < parties && spin > 0 {
            b.0 += 1;
            self.spinners[id as usize].push(t);
            let r = &mut self.rt[t.idx()];
            r.stage = 1;
            r.remaining = spin;
            return false; // the run loop starts the spin segment
        }
        self.barrier_arrive(c, t, id, parties)
    }

    /// `Op::WakeQueued`: drain `chan`, posting `sem_base + tag` per message
    /// (stamped now) and waking blocked writers; returns the number drained.
    fn wake_queued(&mut self, c: CpuId, t: TaskId, chan: u32, sem_base: u32) -> u64 {
        let ch = &mut self.chans[chan as usize];
        let k = ch.count as u64;
        ch.count = 0;
        let mut tags = std::mem::take(&mut self.tag_buf);
        tags.extend(ch.tags.drain(..));
        let mut writers = std::mem::take(&mut self.wake_buf);
        writers.extend(ch.writers.drain(..));
        let wf = if self.wl.channels[chan as usize].sync { WakeFlags::SYNC } else { WakeFlags::default() };
        for &w in &writers {
            self.wake(w, c, Some(t), wf);
        }
        writers.clear();
        self.wake_buf = writers;
        for &tag in &tags {
            let sem = (sem_base + tag) as usize;
            self.sem_stamp[sem] = self.now;
            let sf = if self.wl.sems[sem].sync { WakeFlags::SYNC } else { WakeFlags::default() };
            let s = &mut self.sems[sem];
            if s.waiters.is_empty() {
                s.count += 1;
            } else {
                let w = s.waiters.pop_front().expect("not empty");
                self.advance(w);
                self.wake(w, c, Some(t), sf);
            }
        }
        tags.clear();
        self.tag_buf = tags;
        k
    }

    /// `Op::SemWake`: wake up to `n` current waiters of `sem` (futex_wake);
    /// returns whether anyone was woken.
    fn sem_wake(&mut self, c: CpuId, t: TaskId, sem: u32, n: u32) -> bool {
        let s = &mut self.sems[sem as usize];
        let k = (n as usize).min(s.waiters.len());
        let mut ws = std::mem::take(&mut self.wake_buf);
        ws.extend(s.waiters.drain(..k));
        let wf = if self.wl.sems[sem as usize].sync { WakeFlags::SYNC } else { WakeFlags::default() };
        for &w in &ws {
            self.advance(w);
            self.wake(w, c, Some(t), wf);
        }
        let woke = !ws.is_empty();
        ws.clear();
        self.wake_buf = ws;
        woke
    }

    /// Record `d` ns in latency histogram `hist` (grown on first use).
    fn record_latency(&mut self, hist: u32, d: u64) {
        let h = hist as usize;
        if self.lat_hists.len() <= h {
            self.lat_hists.resize_with(h + 1, Histogram::default);
        }
        if self.lat_sums.len() <= h {
            self.lat_sums.resize(h + 1, 0);
        }
        self.lat_hists[h].record(d);
        self.lat_sums[h] = self.lat_sums[h].saturating_add(d);
    }

    /// `Op::ReqEnd`: record `now -` the oldest open `Op::ReqStart` stamp of
    /// `hist` of task `t` (requests in flight complete in order); none: no sample.
    fn req_end(&mut self, t: TaskId, hist: u32) {
        let st = &mut self.rt[t.idx()].req_stamps;
        if let Some(k) = st.iter().position(|&(h, _)| h == hist) {
            let (_, t0) = st.remove(k).expect("position is in range");
            let d = self.now.saturating_sub(t0);
            self.record_latency(hist, d);
        }
    }

    /// Mean of latency histogram `h` in ns (0 without samples).
    fn latency_mean(&self, h: usize) -> u64 {
        match self.lat_hists.get(h) {
            Some(x) if x.count() > 0 => self.lat_sums[h] / x.count(),
            _ => 0,
        }
    }

    /// Like [`Sim::run`] but also hands back the kernel state (tests, tools).
    pub fn run_keep_kernel(mut self, cfg: &SimConfig) -> (RunResult, Kernel) {
        let r = self.run(cfg);
        (r, self.kernel)
    }
}

#[cfg(test)]
mod tests;
