//! The engine: clock, event queue, PRNGs and the run loop that drives the
//! kernel model, charges the machine model and executes the workload.
//!
//! Architecture invariant: sole owner of simulated time and of randomness.
//! Events are ordered by `(at, seq)`; `seq` is the queue's insertion counter, so
//! simultaneous events run in the order they were scheduled, identically on
//! every run. An operation that neither blocks nor wakes anyone costs no event:
//! the interpreter runs zero-time ops inline and only schedules an event when a
//! task needs CPU time, sleeps, or a remote CPU must react.

mod arrivals;
mod hw;
mod interp;
mod result;
use hw::{wall_for, DivU64};
#[cfg(test)]
use interp::draw_run_dist;
pub use result::{ChanWaits, GroupStat, LatencySummary, RunResult, SwitchRec};
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
use schedlab_kernel::maskvec::MaskVec;
use schedlab_kernel::{CpuId, Effects, Kernel, SwitchReason, TaskId, TaskParams, TaskState, WakeFlags, WakeResult};
use schedlab_machine::cost::{Component, CostModel, ModelSwitches, MsgStamp, SpinlockKind, TaskMem};
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
    /// An interrupt on `cpu` wakes the machine's unbound background task
    /// (machine noise).
    Unbound { cpu: u16 },
}

/// Per-CPU engine state (what the hardware is doing). What every event on the
/// CPU reads comes first, in one cache line (`repr(C)` keeps the order; the
/// alignment starts each CPU on a line).
#[derive(Clone, Debug, Default)]
#[repr(C, align(64))]
struct Cpu {
    running: Option<TaskId>,
    seg_gen: u32,
    tick_gen: u32,
    /// When the running task's current CPU segment started (after switch costs).
    seg_start: u64,
    /// Progress rate of the running task, per mille of nominal speed (SMT),
    /// or bytes per microsecond while it streams memory (`mem`).
    rate: u64,
    tick_armed: bool,
    resched_pending: bool,
    /// The running task is in a memory-bound phase.
    mem: bool,
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
    /// Exit latency charged for the wakeup that is ending the current idle period.
    exit_lat: u64,
}

/// Open `Op::Loop`s of a task, innermost last: (first op of the body,
/// iterations left). The first [`LoopStack::INLINE`] levels live inline in the
/// task's interpreter state (no pointer to chase at every `EndLoop`), deeper
/// ones in `spill`.
#[derive(Clone, Debug, Default)]
#[repr(C)]
struct LoopStack {
    counts: [u64; LoopStack::INLINE],
    pcs: [u32; LoopStack::INLINE],
    len: u32,
    spill: Vec<(u32, u64)>,
}

impl LoopStack {
    const INLINE: usize = 2;

    #[inline]
    fn push(&mut self, (pc, count): (u32, u64)) {
        let n = self.len as usize;
        if n < Self::INLINE {
            self.pcs[n] = pc;
            self.counts[n] = count;
        } else {
            self.spill.push((pc, count));
        }
        self.len += 1;
    }

    /// The innermost loop: its body's first op and its iterations left.
    #[inline]
    fn top(&mut self) -> Option<(u32, &mut u64)> {
        match self.len as usize {
            0 => None,
            n if n <= Self::INLINE => Some((self.pcs[n - 1], &mut self.counts[n - 1])),
            _ => self.spill.last_mut().map(|(pc, count)| (*pc, count)),
        }
    }

    #[inline]
    fn pop(&mut self) {
        if self.len as usize > Self::INLINE {
            self.spill.pop();
        }
        self.len = self.len.saturating_sub(1);
    }
}

/// Per-task interpreter state. The fields every op reads come first, in one
/// cache line (`repr(C)` keeps the order; the alignment starts each task on a line).
#[derive(Clone, Debug, Default)]
#[repr(C, align(64))]
struct TaskRt {
    program: u32,
    pc: u32,
    /// CPU work left in the current segment (ns).
    remaining: u64,
    /// The program's ops are `Sim::code[code_at..code_at + code_len]`.
    code_at: u32,
    code_len: u32,
    /// 0: cost of the current op not yet charged / effect not done; 1: in
    /// progress (2 and 3: an `EpollNext`'s or a `CpuLock`'s later steps);
    /// `interp::STAGE_ADVANCE`: a `Run` or read whose time, once run, ends it.
    stage: u8,
    /// In the middle of a memory-bound `Mem` op (work is bytes, not ns).
    mem: bool,
    /// Blocked in a pipe write and not yet through it: pipe_write() past
    /// its wait takes a fresh page (no merge) and, from v5.5, then wakes the
    /// next writer if a slot is still free; the switch-in refill waits for
    /// the write to get through (`refill_deferred`). This flag and the next
    /// are read at every switch-in and every write: they sit in the first
    /// line, where `mem`'s padding was.
    pipe_waited: bool,
    /// Switched in at a pipe write it waited in, its cache refill not yet
    /// charged: a writer woken to find the slots still full goes back to
    /// sleep from inside pipe_write()'s wait loop without touching its
    /// working set. Socket writers pay at the switch-in (F-025).
    refill_deferred: bool,
    /// Locks (`lock_sems`: mutexes, LWLocks) this task acquired or was
    /// handed and has not posted (read at every switch-in: `Sim::owe_refill`).
    held_locks: u32,
    loops: LoopStack,
    /// Index of the task's spec in the workload.
    spec: u32,
    /// `Op::ReqStart` stamps not yet ended: (histogram, time), oldest first.
    req_stamps: std::collections::VecDeque<(u32, u64)>,
    parent: Option<TaskId>,
    unreaped: u32,
    waiting_child: bool,
    live_children: u32,
    /// Tag of the last `ReadTag` message.
    reg: u32,
    /// Cache refill owed from a switch-in that found the task at or inside a
    /// lock section: paid by its next `Run` outside one (`Sim::owe_refill`).
    owed_refill: u64,
    /// `Op::Timer`: the last period boundary of the task's absolute timer
    /// grid (the task's creation time before its first `Timer`).
    timer_next: u64,
    /// `TaskSpec::timer_slack_ns`, kept here: a sleep reads it, and the
    /// spec is a cache miss on a machine with thousands of tasks.
    timer_slack: u64,
    /// `Op::CpuLock`: the lock (`Sim::cpu_locks` index) the task holds or
    /// spins on; `NO_CPU_LOCK` for none.
    cpu_lock: u32,
}

// The switch-in and the write read these with the first line's fields.
const _: () = assert!(std::mem::offset_of!(TaskRt, refill_deferred) < 64 && std::mem::offset_of!(TaskRt, pipe_waited) < 64);

#[derive(Clone, Debug)]
pub(crate) struct ChanRt {
    count: u32,
    readers: std::collections::VecDeque<TaskId>,
    writers: std::collections::VecDeque<TaskId>,
    /// Messages carry tags (some program reads them with `ReadTag`).
    tagged: bool,
    tags: std::collections::VecDeque<u32>,
    /// Arrival times of requests queued by arrivals.rs, oldest first.
    stamps: std::collections::VecDeque<u64>,
    /// Where and when (in cache traffic) each queued message was written,
    /// oldest first (`CostModel::message_read_ns`).
    sent: std::collections::VecDeque<MsgStamp>,
    /// On its epoll instance's ready list (`EpollRt::ready`).
    ep_queued: bool,
    /// Pipes: messages written into each occupied page slot, the tail page
    /// first (pipe->bufs[tail..head]); at most `pipe_slots` entries.
    pages: std::collections::VecDeque<u32>,
    /// Pipes: messages already read from the tail page.
    tail_read: u32,
    /// Pipes: `ChannelSpec::pipe_slots()`, kept here so that the hot path
    /// does not divide.
    pipe_slots: u32,
    /// Pipes: a page was released from full slots by `Op::ReadAll`'s bulk
    /// take; the read that completes it wakes the writer.
    wake_writer: bool,
}

/// An epoll instance (`Op::EpollNext`; its channels name it in `ChannelSpec::epoll`).
#[derive(Clone, Debug, Default)]
struct EpollRt {
    /// Tasks blocked on it, woken one per ready event, each with whether it
    /// waits in select() (`Op::SelectNext`: pollwake() passes the waker's
    /// WF_SYNC on in every kernel) rather than in epoll_wait() (v6.13+ only,
    /// `KernelProfile::epoll_sync_wakeup`).
    waiters: std::collections::VecDeque<(TaskId, bool)>,
    /// Member channels that became ready, in order (some may have been
    /// emptied since: dropped when a harvest finds them so).
    ready: std::collections::VecDeque<u32>,
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
    /// A lock (`lock_sems`): its holder owes a switch-in's refill until it posts (F-025).
    lock: bool,
}

/// Which semaphores are locks: an initial count of 1, and every program that
/// waits on it also posts it (a mutex or LWLock taken and released by the same
/// task), so a consumer that only waits on a gate never counts as a holder.
fn lock_sems(wl: &Workload) -> Vec<bool> {
    let mut waits = vec![false; wl.sems.len()];
    let mut lock: Vec<bool> = wl.sems.iter().map(|s| s.initial == 1).collect();
    for prog in &wl.programs {
        waits.iter_mut().for_each(|w| *w = false);
        let mut posts = vec![false; wl.sems.len()];
        for op in prog {
            match *op {
                Op::SemWait { sem } => waits[sem as usize] = true,
                Op::SemPost { sem, .. } => posts[sem as usize] = true,
                _ => {}
            }
        }
        for (s, l) in lock.iter_mut().enumerate() {
            *l &= !waits[s] || posts[s];
        }
    }
    lock
}

/// A simulation in progress.
pub struct Sim<'a> {
    pub kernel: Kernel,
    /// What the kernel's entry points did besides their answers (locked
    /// runqueues, group-line accesses, migrations when tracing), appended by
    /// each call and taken out by what charges (`entry_lock_time`) or records
    /// (`tr_migrations`) them.
    fx: Effects,
    machine: &'a Machine,
    /// Set from outside (another thread) to end the run early (`run_stoppable`).
    stop: Option<&'a std::sync::atomic::AtomicBool>,
    wl: &'a Workload,
    now: u64,
    /// The simulated time `run` stops at (`SimConfig::duration_ns`).
    limit: u64,
    queue: queue::EventQueue,
    nr_cpus_slots: u32,
    /// Number of CPUs: segment-end slots are `0..nr_cpus`.
    nr_cpus: u32,
    cpus: MaskVec<Cpu>,
    rt: MaskVec<TaskRt>,
    /// Every program's ops, one program after the other (`TaskRt::code_at`):
    /// an op is one load from the task's state, not two through the program's `Vec`.
    code: MaskVec<Op>,
    /// Per program: where its ops start in `code`, and how many.
    code_of: Vec<(u32, u32)>,
    /// Per task: the semaphores an `Op::WakeQueued` splice has still to post,
    /// in queue order (posted from the back: the list is a LIFO stack). Grown
    /// for the hubs that use it, so that `TaskRt` stays small.
    posts: Vec<Vec<u32>>,
    /// Epoll instances by set id (`Op::EpollNext`).
    epolls: Vec<EpollRt>,
    /// Per task: the epoll set of its last epoll_wait() and the events of it
    /// not yet taken (their `data`), in order. Grown for the tasks that use one.
    ep_events: Vec<(u32, std::collections::VecDeque<u32>)>,
    /// Per task spec: its shared working set as (set index, bytes), sets
    /// numbered in order of first appearance (`TaskSpec::shared`).
    shared_of: Vec<Option<(u32, u64)>>,
    chans: Vec<ChanRt>,
    sems: Vec<SemRt>,
    /// Some semaphore is a lock (`lock_sems`): switch-ins check whether the task resumes at one.
    has_locks: bool,
    marks: Vec<Option<u64>>,
    /// Executions so far of `Op::MarkNth` per mark id.
    mark_hits: [u32; 8],
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
    /// Blocking channel reads and writes (`RunResult::chan_waits`).
    chan_waits: result::ChanWaits,
    switch_log: Option<Vec<SwitchRec>>,
    idle_exit_ns: u64,
    tick_ns: u64,
    /// The jiffy boundary `arm_tick` computed last (0 before the first):
    /// the next tick for every time in `next_tick - tick_ns .. next_tick`,
    /// so that most arms skip the division.
    next_tick: u64,
    jitter_pct: u32,
    want_schedstat: bool,
    /// `Op::Barrier` state by id: (arrived, waiters); grown on first use.
    barriers: Vec<(u32, Vec<TaskId>)>,
    /// `Op::SpinBarrier` arrivals still spinning, by barrier id.
    spinners: Vec<Vec<TaskId>>,
    /// `Op::CpuLock` locks, `set * nr_cpus + cpu`; grown on first use.
    cpu_locks: Vec<interp::CpuLockRt>,
    /// Time of the last `Op::WakeQueued` post per semaphore.
    sem_stamp: Vec<u64>,
    /// Latency histograms of `Op::WakeLatency`.
    lat_hists: Vec<Histogram>,
    /// Sum of the samples of each latency histogram (for the mean), ns.
    lat_sums: Vec<u64>,
    /// Shortest sample of each latency histogram (exact; `u64::MAX` before
    /// the first), for `MetricSpec::BestRate`.
    lat_mins: Vec<u64>,
    ilb_pending: bool,
    cost: CostModel,
    mem: MaskVec<TaskMem>,
    smt: bool,
    l1_refills: u64,
    l2_misses: u64,
    llc_misses: u64,
    dram_bytes: u64,
    remote_bytes: u64,
    rq_lock_wait_ns: u64,
    /// Time spent on task groups' `tg->load_avg` lines (`Sim::tg_lines`).
    tg_line_ns: u64,
    /// The stamp of the message the last `chan_read` took (`ChanRt::sent`).
    msg_read: Option<MsgStamp>,
    /// Memory-bound streams running per LLC and per node.
    llc_streams: Vec<u32>,
    node_streams: Vec<u32>,
    /// Tracepoint recorder (None unless `SimConfig::trace`).
    trace: Option<Box<trace::Trace>>,
    /// Reused list of tasks an op wakes (no allocation per wakeup).
    wake_buf: Vec<TaskId>,
    /// Memory behaviour of processes that declare memory (numa.rs).
    numa_mem: Option<Box<numa::EngineNuma>>,
    /// The machine's background (noise.rs).
    noise: noise::NoiseRt,
    /// The kernel threads of noise.rs, in creation order.
    kthread_ids: Vec<TaskId>,
    /// Open-loop requests from the network (arrivals.rs).
    arrivals: Option<Box<arrivals::ArrivalRt>>,
    /// `run_ops` handles a segment end that is the next event in place
    /// (`EventQueue::pop_if_next`) instead of returning it to `run`'s loop.
    /// Always on; tests switch it off to check that both paths give the same run.
    inline_seg_ends: bool,
    /// Each event asks for the state of the next one (`EventQueue::peek_next`,
    /// `Sim::prefetch_event`) and a segment end for its task's: on a large
    /// machine (`Kernel::prefetch`) whose tasks' state exceeds
    /// [`EVENT_PREFETCH_MIN_BYTES`]. With less, that state mostly stays in
    /// the host's L2 and the peek and the hints cost more than they save
    /// (hackbench-g16 on 256 CPUs, 641 tasks: 9% of its time).
    prefetch_events: bool,
    /// Division by the SMT-shared progress rate (`wall_for`).
    smt_div: DivU64,
    /// Segment ends not next in a row (saturating at `INLINE_MISSES`): past
    /// it, `run_ops` tries the in-place path only on one event in
    /// `INLINE_PROBE`, so that a machine whose other CPUs' events nearly
    /// always come first (hackbench on 256 CPUs) does not pay the check on
    /// every segment. Which path is taken never changes the run.
    inline_misses: u32,
    /// Segment ends handled in place (tests check that the path is taken).
    #[cfg(test)]
    inline_hits: u64,
}

const INF: u64 = u64::MAX;

/// Event-queue slots per CPU besides its segment end: Tick, Resched, WakeList,
/// NohzBalance, Arrival, Irq, Kthread, Unbound.
const PER_CPU_SLOTS: u32 = 8;

/// Event-queue slots by kind: slot `n * K + cpu` is kind `K`'s slot of `cpu`
/// (`n` CPUs; segment ends are `0..n`), task timers follow from `n * (1 +
/// PER_CPU_SLOTS)`. Each kind's slots are one range, so that the queue keeps
/// each kind where it costs least (`queue_layout`).
mod slot_kind {
    pub const TICK: u32 = 1;
    pub const RESCHED: u32 = 2;
    pub const WAKE_LIST: u32 = 3;
    pub const NOHZ_BALANCE: u32 = 4;
    pub const ARRIVAL: u32 = 5;
    pub const IRQ: u32 = 6;
    pub const KTHREAD: u32 = 7;
    pub const UNBOUND: u32 = 8;
}

/// Where the event queue keeps each kind of event for `n` CPUs: segment ends
/// in its tournament tree; the machine's background (rare, far ahead) in its
/// cold tree, out of the heap's paths; ticks (armed for the next jiffy, so in
/// time order), the IPIs (Resched, WakeList, NohzBalance: a short latency
/// after their sender) and task timers in lanes of their own, which take
/// every event scheduled after the lane's last; arrivals, and lane events
/// out of order, in the heap.
fn queue_layout(n: u32) -> queue::Layout {
    use slot_kind::*;
    let mut lanes = vec![(0, 0); 3];
    lanes[LANE_TICK] = (n * TICK, n * (TICK + 1));
    lanes[LANE_IPI] = (n * RESCHED, n * (NOHZ_BALANCE + 1));
    lanes[LANE_TIMER] = (n * (1 + PER_CPU_SLOTS), u32::MAX);
    queue::Layout { leaves: n, cold: (n * IRQ, n * (UNBOUND + 1)), lanes }
}

/// The queue's lanes (`queue_layout`): `push` and the cancels name them, so
/// that each kind's usual case is an inlined append or removal
/// (`EventQueue::schedule_lane`).
const LANE_TICK: usize = 0;
const LANE_IPI: usize = 1;
const LANE_TIMER: usize = 2;

/// What the engine and the kernel keep per task and an event about it
/// reads: the kernel's `Task`, the interpreter's `TaskRt`, the cost
/// model's `TaskMem`.
const TASK_STATE_BYTES: usize =
    std::mem::size_of::<schedlab_kernel::sched::Task>() + std::mem::size_of::<TaskRt>() + std::mem::size_of::<TaskMem>();
/// Tasks' state from which the engine's per-event prefetches pay
/// (`Sim::prefetch_events`): 1.5 MiB, more than a host core's L2 keeps of
/// it beside the runqueues. Measured on a 1 MiB-L2 host: sleepwake on 1024
/// CPUs (4096 tasks, 2 MiB) gains 2%; on 256 and 512 CPUs (1 and 2 thousand
/// tasks) and hackbench on 1024 (2624 tasks, 1.3 MiB) it loses 3-8%.
const EVENT_PREFETCH_MIN_BYTES: usize = 3 << 19;

/// Misses in a row after which `run_ops` probes the in-place path only on
/// one event in `INLINE_PROBE` (`Sim::inline_misses`).
const INLINE_MISSES: u32 = 8;
const INLINE_PROBE: u64 = 32;

/// Payload bytes per channel message for the transfer cost (F-016).
const MSG_BYTES: u64 = 100;

use schedlab_machine::cost::DEFAULT_FOOTPRINT;

impl<'a> Sim<'a> {
    pub fn new(machine: &'a Machine, mut kernel: Kernel, wl: &'a Workload, cfg: &SimConfig) -> Sim<'a> {
        let spinlock = SpinlockKind::for_version(kernel.profile.version);
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
            kernel.record_migrations(true);
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
            fx: Effects::default(),
            machine,
            wl,
            now: 0,
            limit: INF,
            queue: queue::EventQueue::with_layout((1 + PER_CPU_SLOTS as usize) * n + wl.tasks.len(), &queue_layout(n as u32)),
            nr_cpus_slots: (1 + PER_CPU_SLOTS) * n as u32,
            nr_cpus: n as u32,
            cpus: MaskVec::from_vec(vec![Cpu::default(); n]),
            rt: MaskVec::new(TaskRt::default()),
            code: MaskVec::from_vec_or(wl.programs.iter().flatten().copied().collect(), Op::Run { ns: 0 }),
            posts: Vec::new(),
            epolls: vec![EpollRt::default(); wl.channels.iter().filter_map(|c| c.epoll).map(|e| e.set as usize + 1).max().unwrap_or(0)],
            ep_events: Vec::new(),
            shared_of: {
                let mut names: Vec<&str> = Vec::new();
                wl.tasks
                    .iter()
                    .map(|t| {
                        t.shared.as_ref().map(|sh| {
                            let i = names.iter().position(|n| *n == sh.name).unwrap_or_else(|| {
                                names.push(&sh.name);
                                names.len() - 1
                            });
                            (i as u32, sh.kib as u64 * 1024)
                        })
                    })
                    .collect()
            },
            code_of: wl
                .programs
                .iter()
                .scan(0u32, |at, p| {
                    let start = *at;
                    *at += p.len() as u32;
                    Some((start, p.len() as u32))
                })
                .collect(),
            chans: (0..wl.channels.len())
                .map(|i| ChanRt {
                    count: 0,
                    readers: Default::default(),
                    writers: Default::default(),
                    tagged: tagged[i],
                    tags: Default::default(),
                    stamps: Default::default(),
                    sent: Default::default(),
                    ep_queued: false,
                    pages: std::collections::VecDeque::with_capacity(wl.channels[i].pipe_slots() as usize),
                    tail_read: 0,
                    wake_writer: false,
                    pipe_slots: wl.channels[i].pipe_slots(),
                })
                .collect(),
            sems: wl
                .sems
                .iter()
                .zip(lock_sems(wl))
                .map(|(s, lock)| SemRt { count: s.initial as u64, waiters: Default::default(), woken: None, lock })
                .collect(),
            has_locks: false,
            marks: vec![None; 8],
            mark_hits: [0; 8],
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
            chan_waits: Default::default(),
            switch_log: cfg.switch_log.then(Vec::new),
            idle_exit_ns: 0,
            tick_ns,
            next_tick: 0,
            jitter_pct: wl.jitter_pct,
            want_schedstat: cfg.schedstat,
            barriers: Vec::new(),
            spinners: Vec::new(),
            cpu_locks: Vec::new(),
            sem_stamp: vec![0; wl.sems.len()],
            lat_hists: Vec::new(),
            lat_sums: Vec::new(),
            lat_mins: Vec::new(),
            ilb_pending: false,
            cost: {
                let mut c = CostModel::new(machine, cfg.model);
                c.set_spinlock(spinlock);
                c
            },
            mem: MaskVec::new(TaskMem::default()),
            smt: machine.topology.threads_per_core() > 1,
            l1_refills: 0,
            l2_misses: 0,
            llc_misses: 0,
            dram_bytes: 0,
            remote_bytes: 0,
            rq_lock_wait_ns: 0,
            tg_line_ns: 0,
            msg_read: None,
            llc_streams: Vec::new(),
            node_streams: vec![0; machine.topology.nr_nodes()],
            trace: cfg.trace.then(|| Box::new(trace::Trace::new(n))),
            wake_buf: Vec::new(),
            numa_mem: None,
            noise: noise::NoiseRt::new(machine, cfg),
            kthread_ids: Vec::new(),
            arrivals: wl.arrivals.as_ref().map(|a| Box::new(arrivals::ArrivalRt::new(a, n, cfg))),
            inline_seg_ends: true,
            prefetch_events: false,
            smt_div: DivU64::new(1000),
            inline_misses: 0,
            #[cfg(test)]
            inline_hits: 0,
        };
        s.has_locks = s.sems.iter().any(|x| x.lock);
        s.prefetch_events = s.kernel.prefetch && wl.tasks.len() * TASK_STATE_BYTES >= EVENT_PREFETCH_MIN_BYTES;
        s.smt_div = DivU64::new(s.cost.smt_rate(true).max(1));
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
        let n = self.nr_cpus;
        match kind {
            EvKind::SegEnd { cpu, .. } => cpu as u32,
            EvKind::Tick { cpu, .. } => n * slot_kind::TICK + cpu as u32,
            EvKind::Resched { cpu } => n * slot_kind::RESCHED + cpu as u32,
            EvKind::WakeList { cpu } => n * slot_kind::WAKE_LIST + cpu as u32,
            EvKind::NohzBalance { cpu } => n * slot_kind::NOHZ_BALANCE + cpu as u32,
            EvKind::Arrival { cpu } => n * slot_kind::ARRIVAL + cpu as u32,
            EvKind::Irq { cpu } => n * slot_kind::IRQ + cpu as u32,
            EvKind::Kthread { cpu } => n * slot_kind::KTHREAD + cpu as u32,
            EvKind::Unbound { cpu } => n * slot_kind::UNBOUND + cpu as u32,
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
        let n = self.nr_cpus;
        if slot < n {
            return EvKind::SegEnd { cpu: slot as u16, gen: self.cpus[slot as usize].seg_gen };
        }
        // Kinds in slot order, the frequent ones first (no division).
        let (kind, base) = if slot < n * (slot_kind::TICK + 1) {
            (slot_kind::TICK, n * slot_kind::TICK)
        } else if slot < n * (slot_kind::RESCHED + 1) {
            (slot_kind::RESCHED, n * slot_kind::RESCHED)
        } else if slot < n * (slot_kind::WAKE_LIST + 1) {
            (slot_kind::WAKE_LIST, n * slot_kind::WAKE_LIST)
        } else {
            let k = slot / n;
            (k, n * k)
        };
        let cpu = (slot - base) as u16;
        match kind {
            slot_kind::TICK => EvKind::Tick { cpu, gen: self.cpus[cpu as usize].tick_gen },
            slot_kind::RESCHED => EvKind::Resched { cpu },
            slot_kind::WAKE_LIST => EvKind::WakeList { cpu },
            slot_kind::NOHZ_BALANCE => EvKind::NohzBalance { cpu },
            slot_kind::ARRIVAL => EvKind::Arrival { cpu },
            slot_kind::IRQ => EvKind::Irq { cpu },
            slot_kind::KTHREAD => EvKind::Kthread { cpu },
            _ => EvKind::Unbound { cpu },
        }
    }

    /// Schedule `kind`'s event at `at`, through the queue's entry point for
    /// the part that holds the kind's slots (`queue_layout`; the kind is a
    /// constant at each call site, so the choice costs nothing: inlined
    /// always, so that it is resolved there).
    #[inline(always)]
    fn push(&mut self, at: u64, kind: EvKind) {
        let slot = self.slot_of(kind);
        match kind {
            EvKind::SegEnd { .. } => self.queue.schedule_leaf(slot, at),
            EvKind::Tick { .. } => self.queue.schedule_lane(LANE_TICK, slot, at),
            EvKind::Resched { .. } | EvKind::WakeList { .. } | EvKind::NohzBalance { .. } => self.queue.schedule_lane(LANE_IPI, slot, at),
            EvKind::Timer { .. } => self.queue.schedule_lane(LANE_TIMER, slot, at),
            _ => self.queue.schedule(slot, at),
        }
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
        self.limit = limit;
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
            if self.prefetch_events {
                if let Some(next) = self.queue.peek_next() {
                    self.prefetch_event(next);
                }
            }
            if self.events & 0x3fff == 0 && self.stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
                break; // stopped from outside: the caller discards this result
            }
            if slot < self.nr_cpus {
                // A segment end, nearly every event: handled without the
                // dispatch on `EvKind` (its gen is current: a moved or
                // cancelled segment end replaced or removed its event).
                let c = CpuId(slot as u16);
                let now = self.now;
                let cpu = &mut self.cpus[c.idx()];
                if let Some(t) = cpu.running {
                    // The segment is done: a preemption at this op boundary
                    // (do_schedule() -> seg_done()) must not take it again
                    // off the costs the next ops add (a waker's enqueue).
                    cpu.seg_start = now;
                    if self.prefetch_events {
                        // (The CPU's own state was asked for ahead: `prefetch_event`.)
                        self.prefetch_task(t);
                    }
                    self.rt[t.idx()].remaining = 0;
                    self.run_ops(c, t);
                }
                if self.alive == 0 {
                    break;
                }
                continue;
            }
            match self.kind_of(slot) {
                EvKind::SegEnd { .. } => unreachable!("segment-end slots are below nr_cpus"),
                EvKind::Resched { cpu } => {
                    // FIDELITY(F-029): a remote resched preempts at once, as a full-
                    // preemption kernel (or any kernel in user mode) does.
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
                    // FIDELITY(F-028): the tick is where a running task's slice end is
                    // noticed; update_curr() from task_sched_runtime() (a thread reading
                    // its own CPU clock) is not modelled.
                    let tr = self.kernel.scheduler_tick(c, self.now, &mut self.fx);
                    if let Some(t) = self.cpus[c.idx()].running {
                        self.noise_tick(c, t);
                    }
                    if self.numa_mem.is_some() {
                        self.numa_charge(c);
                    }
                    if self.trace.is_some() {
                        self.tr_migrations(c);
                    }
                    let lb_wait = self.entry_lock_time(c);
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
                    if self.kernel.prefetch {
                        self.prefetch_cpu(cpu);
                    }
                    let current = self.cpus[cpu.idx()].running;
                    self.wake(p, cpu, current, WakeFlags::default());
                    // hrtimer_interrupt() -> try_to_wake_up(): the return from the
                    // interrupt is a preemption point for the interrupted task.
                    self.irq_exit_preempt(cpu);
                }
                EvKind::NohzBalance { cpu } => {
                    let c = CpuId(cpu);
                    self.ilb_pending = false;
                    if self.cpus[c.idx()].running.is_none() {
                        let r = self.kernel.nohz_idle_balance(c, self.now, &mut self.fx);
                        if self.trace.is_some() {
                            self.tr_migrations(c);
                        }
                        // An idle CPU's balancing time is its own (idle) time.
                        self.entry_lock_time(c);
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
                EvKind::Unbound { cpu } => self.noise_unbound(CpuId(cpu)),
                EvKind::Arrival { cpu } => self.arrival(CpuId(cpu)),
                EvKind::WakeList { cpu } => {
                    let c = CpuId(cpu);
                    if self.kernel.prefetch {
                        for &p in &self.kernel.rqs[c.idx()].wake_list {
                            self.prefetch_task(p);
                        }
                    }
                    // sched_ttwu_pending() takes this CPU's own rq lock.
                    let hold = self.machine.costs.rq_lock_hold_ns;
                    self.rq_lock_wait_ns += self.cost.rq_lock(c, c, self.now, hold).wait;
                    let woken = self.trace.as_ref().map(|_| self.kernel.rqs[c.idx()].wake_list.clone());
                    let resched = self.kernel.sched_ttwu_pending(c, self.now, &mut self.fx);
                    if let Some(w) = woken {
                        self.tr_wake_list(c, &w);
                    }
                    // The activations' group-line accesses: time of the task
                    // running here after them (the interrupted one, or a wakee
                    // picked on an idle CPU).
                    let lines = self.tg_lines(c, self.now);
                    if resched {
                        self.do_schedule(c, SwitchReason::Preempt);
                    }
                    if lines > 0 {
                        if let Some(t) = self.cpus[c.idx()].running {
                            self.rt[t.idx()].remaining += lines;
                            self.reschedule_segment(c, t);
                        }
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
        // Ticks are aligned to jiffies on every CPU (sched_skew_tick = 0):
        // the first boundary after now, `(now / tick_ns + 1) * tick_ns`.
        let at =
            if self.now < self.next_tick && self.now >= self.next_tick - self.tick_ns { self.next_tick } else { self.next_tick_after() };
        self.push(at, EvKind::Tick { cpu: c.0, gen });
    }

    /// The first jiffy boundary after now, kept for the next `arm_tick`s.
    #[cold]
    #[inline(never)]
    fn next_tick_after(&mut self) -> u64 {
        self.next_tick = (self.now / self.tick_ns + 1) * self.tick_ns;
        self.next_tick
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
        let footprint = ts.footprint_kib.map_or(DEFAULT_FOOTPRINT, |k| k as u64 * 1024);
        self.mem.push(TaskMem::new(footprint, self.shared_of[spec as usize]));
        self.rt.push(TaskRt {
            spec,
            program: ts.program,
            code_at: self.code_of[ts.program as usize].0,
            code_len: self.code_of[ts.program as usize].1,
            pc: 0,
            stage: 0,
            remaining: 0,
            loops: LoopStack::default(),
            reg: 0,
            req_stamps: Default::default(),
            mem: false,
            parent,
            unreaped: 0,
            waiting_child: false,
            live_children: 0,
            held_locks: 0,
            owed_refill: 0,
            pipe_waited: false,
            refill_deferred: false,
            timer_next: self.now,
            timer_slack: ts.timer_slack_ns,
            cpu_lock: interp::NO_CPU_LOCK,
        });
        if let Some(pp) = parent {
            self.rt[pp.idx()].live_children += 1;
        }
        self.alive += 1;
        self.created += 1;
        let r = self.kernel.wake_up_new_task(p, cpu, self.now, &mut self.fx);
        if self.trace.is_some() {
            self.tr_new_task(p, spec, parent, cpu, &r);
        }
        self.after_wake(r, cpu);
        r
    }

    /// Ask the CPU to fetch what an event about task `p` reads of it (the
    /// kernel's task, the interpreter's state, its cache warmth) at once,
    /// instead of one line after the other as the handling reaches them.
    /// A hint only: no effect on any result.
    #[inline]
    fn prefetch_task(&self, p: TaskId) {
        self.kernel.prefetch_task(p);
        if let (Some(r), Some(m)) = (self.rt.get(p.idx()), self.mem.get(p.idx())) {
            schedlab_kernel::prefetch::all(r);
            schedlab_kernel::prefetch::all(m);
        }
    }

    /// [`Self::prefetch_task`] for CPU `c`: its runqueue and the engine's state.
    #[inline]
    fn prefetch_cpu(&self, c: CpuId) {
        self.kernel.prefetch_rq(c);
        if let Some(x) = self.cpus.get(c.idx()) {
            schedlab_kernel::prefetch::all(x);
        }
    }

    /// Ask the CPU to fetch what the handler of `slot`'s event reads first
    /// (the task of a timer; the CPU of the others), while the current event
    /// is handled: the state of a large machine's next event is rarely in
    /// the cache. A hint only: no effect on any result.
    #[inline]
    fn prefetch_event(&self, slot: u32) {
        if slot >= self.nr_cpus_slots {
            self.prefetch_task(TaskId(slot - self.nr_cpus_slots));
        } else {
            // The slot's CPU: `slot % nr_cpus`, without the division for
            // the kinds that come next most often (segment ends, ticks).
            let n = self.nr_cpus;
            let cpu = if slot < n {
                slot
            } else if slot < 2 * n {
                slot - n
            } else {
                slot % n
            };
            self.prefetch_cpu(CpuId(cpu as u16));
        }
    }

    /// Wake `p` from `this_cpu` (waker = the task running there, if any).
    fn wake(&mut self, p: TaskId, this_cpu: CpuId, waker: Option<TaskId>, wf: WakeFlags) {
        let r = self.kernel.try_to_wake_up(p, this_cpu, waker, wf, self.now, &mut self.fx);
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
        let mut extra = 0;
        // The group lines the wakeup's enqueue touched (its time is the
        // waker's; an idle CPU's own).
        let lines = self.tg_lines(this_cpu, self.now);
        if waker.is_some() {
            // The waker pays for the CPUs its idle search examined...
            extra = r.scanned * self.scan_ns() + lines;
            if !r.queued {
                // FIDELITY(F-017): lock sections for enqueue, wake-list activation and pick only.
                // ...and for the enqueue under the target rq's lock (spinning while
                // another CPU holds it), plus the lock line's transfer.
                let l = self.cost.rq_lock(r.cpu, this_cpu, self.now, self.machine.costs.rq_lock_hold_ns);
                self.rq_lock_wait_ns += l.wait;
                extra += l.wait + l.hold;
                // The enqueue onto an idle CPU is seen once the section ends.
                if r.cpu != this_cpu {
                    self.kernel.enq_visible_no_sooner(r.cpu, this_cpu, self.now + l.wait + l.hold);
                }
            }
        }
        // ...and for sending the IPI the wakeup needs (wake-list or reschedule;
        // a VM exit in a guest). FIDELITY(F-448): only wakeups charge the sender.
        let mut sent = false;
        if r.queued {
            if r.ipi {
                let (lat, s) = self.wake_latency_ipi(r.cpu, true);
                sent = s;
                self.push(self.now + lat, EvKind::WakeList { cpu: r.cpu.0 });
            }
        } else if r.resched {
            let target = r.cpu;
            let cpu = &self.cpus[target.idx()];
            let idle = cpu.running.is_none();
            if !cpu.resched_pending && (target != this_cpu || idle) {
                // (A busy local CPU is rescheduled by the interpreter after the current op.)
                let (lat, s) = self.wake_latency_ipi(target, target != this_cpu);
                sent = s;
                self.cpus[target.idx()].resched_pending = true;
                self.push(self.now + lat, EvKind::Resched { cpu: target.0 });
            }
        }
        if let Some(w) = waker {
            if sent {
                extra += self.machine.costs.ipi_send_ns;
            }
            self.rt[w.idx()].remaining += extra;
        }
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
        if self.kernel.prefetch {
            self.cost.prefetch_cpu(c);
        }
        let res = self.kernel.schedule(c, reason, now, &mut self.fx);
        if let Some(nx) = res.next.filter(|_| self.kernel.prefetch) {
            if let (Some(r), Some(m)) = (self.rt.get(nx.idx()), self.mem.get(nx.idx())) {
                schedlab_kernel::prefetch::all(r);
                schedlab_kernel::prefetch::all(m);
            }
        }
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
        let lb_wait = self.entry_lock_time(c);
        if let Some(nx) = res.next {
            self.rt[nx.idx()].remaining += lb_wait;
        }
        self.switch_to(c, res.prev, res.next);
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
                self.queue.cancel_leaf(self.slot_of(EvKind::SegEnd { cpu: c.0, gen: 0 }));
                self.queue.cancel_lane(LANE_TICK, self.slot_of(EvKind::Tick { cpu: c.0, gen: 0 }));
            }
            Some(nx) => {
                if was_idle {
                    let idle_len = now - cpu.since;
                    cpu.idle_ns += idle_len;
                    let residency = idle_len.saturating_sub(std::mem::take(&mut cpu.exit_lat));
                    cpu.idle_pred_ns = schedlab_machine::cost::CostModel::idle_predict(cpu.idle_pred_ns, residency);
                    cpu.since = now;
                    self.cost.halted(c, idle_len);
                }
                let mut cost = 0;
                if prev != next {
                    let mm = self.kernel.tasks[nx.idx()].mm;
                    // A kernel thread borrows the last mm (lazy TLB): no switch.
                    let mm_switch = mm != noise::KTHREAD_MM && cpu.last_mm != Some(mm);
                    // Before v4.14 the kernel does not use PCID (the machine model charges the re-walk).
                    let pcid = self.kernel.at_least(4, 14);
                    // The TLB re-walk covers the shared pages too (mapped in each process).
                    let m = &self.mem[nx.idx()];
                    cost = self.cost.switch_cost(mm_switch, pcid, m.footprint + m.shared().map_or(0, |(_, b)| b));
                    if mm_switch {
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
                    // The lock line comes back from the CPU that took it last
                    // (a remote waker or balancer): its transfer adds to the switch.
                    let section = self.machine.costs.rq_lock_hold_ns + cost;
                    let l = self.cost.rq_lock(c, c, now, section);
                    self.rq_lock_wait_ns += l.wait;
                    cost += l.wait + (l.hold - section);
                    // The incoming task refills what it lost from this CPU's
                    // caches; a writer back from a wait on a full pipe does
                    // once its write gets through (interp.rs, `Op::Write`).
                    if self.rt[nx.idx()].pipe_waited {
                        self.rt[nx.idx()].refill_deferred = true;
                    } else {
                        let ns = self.refill(c, nx);
                        self.owe_refill(nx, ns);
                    }
                }
                self.cpus[c.idx()].running = Some(nx);
                if self.rt[nx.idx()].mem {
                    self.mem_start(c);
                }
                let cpu = &mut self.cpus[c.idx()];
                cpu.seg_start = now + cost;
                let gen = cpu.seg_gen;
                let rate = cpu.rate;
                let at = cpu.seg_start + wall_for(self.rt[nx.idx()].remaining, rate, &self.smt_div);
                self.push(at, EvKind::SegEnd { cpu: c.0, gen });
                self.arm_tick(c);
            }
        }
        if was_idle != next.is_none() {
            self.smt_changed(c);
        }
    }

    /// `t`, switched in on `c`, refills what it lost from `c`'s caches: the
    /// machine's counters move and the time is returned.
    // FIDELITY(F-025): a pipe writer woken to find the slots still full pays no refill; a socket writer does.
    pub(crate) fn refill(&mut self, c: CpuId, t: TaskId) -> u64 {
        let refill = self.cost.switch_in(&mut self.mem[t.idx()], t.0, c);
        self.l1_refills += refill.l1_misses;
        self.l2_misses += refill.l2_misses;
        self.llc_misses += refill.llc_misses;
        self.dram_bytes += refill.dram_bytes;
        self.remote_bytes += refill.remote_bytes;
        refill.ns
    }

    /// Charge a switch-in's cache refill. A real task misses on its working
    /// set while it computes, not before its first instruction: a task at a
    /// lock (`lock_sems`: a woken LWLock waiter re-trying, a mutex waiter) takes the lock word and its own wait entry
    /// first, and a task inside a lock section (it holds the lock, taken or
    /// handed over) touches the section's few lines, so for those the refill
    /// is owed and paid by the task's next `Run` outside any lock (interp.rs);
    /// every other switch-in pays it at once, in the op it resumes.
    // FIDELITY(F-025): a refill is one lump of CPU time, paid at the switch-in or at the next compute outside a lock.
    fn owe_refill(&mut self, t: TaskId, ns: u64) {
        let r = &self.rt[t.idx()];
        let at_lock = self.has_locks
            && r.pc < r.code_len
            && matches!(self.code[(r.code_at + r.pc) as usize], Op::SemWait { sem } if self.sems[sem as usize].lock);
        let r = &mut self.rt[t.idx()];
        if at_lock || r.held_locks > 0 {
            r.owed_refill += ns;
        } else {
            r.remaining += ns;
        }
    }

    /// Block the running task of `c` and reschedule.
    fn block(&mut self, c: CpuId) {
        self.do_schedule(c, SwitchReason::Block);
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
}

/// Build the kernel for `machine` and run `wl` under `cfg`.
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
    /// Like [`Sim::run`] but also hands back the kernel state (tests, tools).
    pub fn run_keep_kernel(mut self, cfg: &SimConfig) -> (RunResult, Kernel) {
        let r = self.run(cfg);
        (r, self.kernel)
    }
}

#[cfg(test)]
mod tests;
