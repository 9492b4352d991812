//! Workloads: what tasks do, never where they run.
//!
//! A [`Workload`] is a fully expanded task graph: task specs (each with its
//! program, its process, nice value and affinity), channels (pipes and
//! sockets), semaphores (futex-style wait/post, also used for poll gates) and
//! the metric to report. Programs are short op lists with loops; the engine
//! interprets them. Built-in benchmarks (`builtin/`) construct workloads from
//! `--set key=value` parameters.
//!
//! Architecture invariant: tasks express intent (run, block, wake, fork, exit);
//! a workload never names a CPU except as user-requested affinity.

pub mod builtin;
pub mod file;
pub mod params;
pub mod rtapp;

pub use params::Params;

/// Index of a task spec in [`Workload::tasks`].
pub type SpecId = u32;

/// One operation of a task program. Costs are CPU time at nominal speed (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Compute for `ns`.
    Run {
        ns: u64,
    },
    /// Compute for a time drawn per execution from a distribution with
    /// median `mid`, 10th..90th spread set by `lo` and `hi` (ns): the inverse
    /// CDF is piecewise linear, `lo` at 0, `mid` at 1/2, `hi` at 1, so the
    /// mean is `(lo + 2 mid + hi) / 4`. What `schedlab import` writes for the
    /// bursts of a long trace's folded loops (a burst that varies, as real
    /// ones do, with the recorded mean and median). `lo <= mid <= hi`.
    RunDist {
        lo: u32,
        mid: u32,
        hi: u32,
    },
    /// Stream `bytes` from/to memory: progress at the bandwidth the machine
    /// model grants (shared per LLC and per node; remote pages slower).
    Mem {
        bytes: u64,
    },
    /// Spend `cost` ns in the syscall, then put one message in the channel;
    /// blocks while the channel is full. Wakes a blocked reader (WF_SYNC if the
    /// channel is sync).
    Write {
        chan: u32,
        cost: u64,
    },
    /// Take one message from the channel (blocking while it is empty), then
    /// spend `cost` ns copying it. Wakes blocked writers as the channel's kind does.
    Read {
        chan: u32,
        cost: u64,
    },
    /// Like `Write`, carrying a tag (e.g. a connection number) with the message.
    WriteTag {
        chan: u32,
        cost: u64,
        tag: u32,
    },
    /// Like `Read`; the message's tag is stored in the task's register.
    ReadTag {
        chan: u32,
        cost: u64,
    },
    /// Like `Write`, to channel `chan_base + register` (reply on the connection
    /// whose message was read last: a poll()-multiplexing client).
    WriteReg {
        chan_base: u32,
        cost: u64,
    },
    /// Block for `ns` (nanosleep(): an hrtimer wakes the task, not WF_SYNC).
    /// The timer fires at its hard expiry, `ns` plus the task's
    /// `TaskSpec::timer_slack_ns`.
    Sleep {
        ns: u64,
    },
    /// Periodic timer (rt-app's `timer`): the task's next activation is its
    /// last one plus `period` (the first: the task's creation plus `period`);
    /// the task sleeps until it with clock_nanosleep(TIMER_ABSTIME), waking
    /// its timer slack after it, as for `Sleep`. A task already past the
    /// activation does not sleep; then `absolute` keeps the grid (the next
    /// activations come back to back until it has caught up, rt-app's
    /// "absolute" mode) and otherwise the activation moves to now (rt-app's
    /// default "relative" mode).
    Timer {
        period: u64,
        absolute: bool,
    },
    /// Take the lock of lock set `set` that belongs to the CPU the task runs
    /// on (schbench's lock_this_cpu(): sched_getcpu(), then
    /// pthread_mutex_trylock() in a loop). While another task holds it the
    /// task spins on its CPU (runnable, burning CPU time) until the holder
    /// releases it; a task that gets it after it migrated releases it and
    /// takes its new CPU's, as schbench re-checks sched_getcpu().
    CpuLock {
        set: u32,
    },
    /// Release the `CpuLock` of `set` the task holds (a spinner waiting for
    /// it takes it).
    CpuUnlock {
        set: u32,
    },
    /// Futex-style wait: take one count of the semaphore or block.
    SemWait {
        sem: u32,
    },
    /// Post `n` counts, waking up to `n` waiters; `n == u32::MAX` opens the
    /// semaphore as a gate (wakes every waiter, later waits pass).
    SemPost {
        sem: u32,
        n: u32,
    },
    /// Spend `cost` ns in fork/clone, then create the task `spec` as a child.
    Fork {
        spec: SpecId,
        cost: u64,
    },
    /// Reap one exited child (`wait()`), blocking until one has exited.
    WaitChild,
    /// Start a loop body executed `count` times (`u64::MAX` = forever); ends at the matching `EndLoop`.
    Loop {
        count: u64,
    },
    EndLoop,
    /// Record the current time under mark `id` (metric start/stop).
    Mark {
        id: u32,
    },
    /// Record the current time under mark `id` at the `nth` execution of a
    /// `MarkNth` with this id, counted over every task (a quorum: e.g. the
    /// median of the tasks that pass this point); later executions change nothing.
    MarkNth {
        id: u32,
        nth: u32,
    },
    /// Add `n` to counter `id`.
    Count {
        id: u32,
        n: u64,
    },
    /// Exit (`do_exit`), after `cost` ns.
    Exit {
        cost: u64,
    },
    /// A reusable barrier (pthread/OpenMP barrier on a futex): block until
    /// `parties` tasks have arrived at barrier `id`; the last one wakes the
    /// others (not WF_SYNC) and continues. Every use of `id` names the same `parties`.
    Barrier {
        id: u32,
        parties: u32,
    },
    /// A barrier whose waiters spin before they block, as libgomp's
    /// gomp_barrier_wait_end() -> do_wait(): an arrival that is not the last
    /// stays on its CPU, running, for up to `spin` ns (GOMP_SPINCOUNT pause
    /// iterations) and goes on without sleeping if the barrier completes
    /// meanwhile; then it blocks on the futex and is woken (not WF_SYNC).
    SpinBarrier {
        id: u32,
        parties: u32,
        spin: u64,
    },
    /// poll()/epoll_wait() on one channel: block while it is empty, without
    /// taking a message (woken like a reader, with the channel's sync flag).
    Poll {
        chan: u32,
    },
    /// One event of an epoll loop on epoll instance `set` (the channels whose
    /// [`ChannelSpec::epoll`] names it): take the next event of the task's
    /// last epoll_wait() result into the register (the member's `data`, as
    /// `epoll_event.data`); when none is left, call epoll_wait() again: block
    /// while no member holds a message (a write to a member wakes one waiter,
    /// with the channel's sync flag), then take every member ready at that
    /// moment, at most `max`, in the order they became ready (level
    /// triggered: a member stays ready while it holds messages). The program
    /// serves each event (e.g. `ReadReg`, `WriteReg`) before the next
    /// `EpollNext`, so a wakeup serves every connection ready at once.
    EpollNext {
        set: u32,
        max: u32,
        /// CPU time (ns) a call that had to sleep costs on top of the
        /// context switch: ep_poll()'s wait-queue entry and timeout, the
        /// blocking schedule() and the wakeup's callback
        /// (ep_poll_callback()). 0: none.
        block_cost: u64,
        /// The part of `block_cost` paid before the sleep, from finding no
        /// event to schedule() (<= `block_cost`); the rest is paid when
        /// woken. An event arriving meanwhile ends the call without a
        /// sleep, as ep_poll()'s check after it queued itself does.
        block_pre: u64,
    },
    /// select()/poll() over every member of instance `set` (a client that
    /// polls all its connections, as pgbench's threadRun() loop does): put
    /// the next connection of the task's last result in the register, in
    /// connection order (ascending `data`, the fd order select() scans);
    /// with none left, call select() again: spend `cost` (the scan of every
    /// descriptor: sock_poll() and its wait-queue entry each), take every
    /// member that holds a message, and block while there is none. A task
    /// woken from that block scans again (`cost` once more) before it takes
    /// its result, as do_select() does after its sleep.
    SelectNext {
        set: u32,
        cost: u64,
    },
    /// Like `Read`, from channel `chan_base + register` (the connection of
    /// the event taken last by `EpollNext`).
    ReadReg {
        chan_base: u32,
        cost: u64,
    },
    /// recv() on a byte stream (TCP): block while the channel is empty, then
    /// take every message queued at that moment (the reader's buffer holds
    /// them all) and spend `cost + per_msg x taken` ns copying them. Wakes
    /// blocked writers as the channel's kind does, once, after the drain.
    ReadAll {
        chan: u32,
        cost: u64,
        per_msg: u64,
    },
    /// A hub's "wake everyone queued" (schbench `xlist_wake_all`): take every
    /// message of `chan` at once (never blocks; none is fine) and stamp their
    /// semaphores `sem_base + tag` with the current time (one timestamp for the
    /// batch); then, last message first, spend `cost` ns and post one count to
    /// its semaphore (waking its waiter, whose wakeup the waker pays before
    /// the next post), one after another.
    WakeQueued {
        chan: u32,
        sem_base: u32,
        cost: u64,
    },
    /// Record `now - (time of the last WakeQueued post of semaphore sem)` in
    /// latency histogram `hist` (schbench's wakeup latency).
    WakeLatency {
        hist: u32,
        sem: u32,
    },
    /// Start a request: push the current time onto this task's stamps for
    /// latency histogram `hist` (several may be in flight: a pipelining client).
    ReqStart {
        hist: u32,
    },
    /// End a request: record `now -` the oldest open `ReqStart` stamp of
    /// `hist` of this task in histogram `hist` (requests end in the order they
    /// started; without an open stamp nothing is recorded).
    ReqEnd {
        hist: u32,
    },
    /// futex_wake / condvar signal: wake up to `n` tasks blocked on semaphore
    /// `sem` (`u32::MAX` = all: a broadcast); nothing is remembered when
    /// none waits (a lost wakeup, as pthread_cond_signal has it).
    SemWake {
        sem: u32,
        n: u32,
    },
}

/// Number of mark, counter and latency-histogram ids the engine keeps.
pub const MAX_IDS: u32 = 8;

/// How a blocked writer is woken when a reader frees space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelKind {
    /// Pages of `msgs_per_page` whole messages in capacity / msgs_per_page
    /// slots: `pipe_write()` merges into the last page while it has room,
    /// else takes a free slot or waits; `pipe_read()` releasing a page while
    /// every slot was taken wakes one exclusive writer, who wakes the next
    /// if a slot is still free.
    Pipe { msgs_per_page: u32 },
    /// AF_UNIX stream: `unix_write_space()` wakes all writers once the send
    /// buffer is at most a quarter full.
    Socket,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelSpec {
    /// Capacity in messages.
    pub capacity: u32,
    /// Wakeups carry WF_SYNC.
    pub sync: bool,
    pub kind: ChannelKind,
    /// Registered in an epoll instance (`Op::EpollNext`), at most one.
    pub epoll: Option<EpollReg>,
}

impl ChannelSpec {
    /// A pipe's page slots (pipe->max_usage): `capacity / msgs_per_page`,
    /// rounded up; 0 for a socket.
    pub fn pipe_slots(&self) -> u32 {
        match self.kind {
            ChannelKind::Pipe { msgs_per_page } => self.capacity.div_ceil(msgs_per_page),
            ChannelKind::Socket => 0,
        }
    }
}

/// A channel's registration in an epoll instance (epoll_ctl(EPOLL_CTL_ADD)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpollReg {
    /// The epoll instance: `Op::EpollNext { set }` waits on every channel registered with it.
    pub set: u32,
    /// What an event of this channel puts in the task's register (`epoll_event.data`).
    pub data: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SemSpec {
    pub initial: u32,
    /// Wakeups carry WF_SYNC (a poll() gate woken by a pipe write does; futexes do not).
    pub sync: bool,
    /// How a post reaches a waiter. false: hand-off (the woken waiter owns the
    /// count it waited for: a futex-based semaphore). true: barging, as
    /// PostgreSQL's LWLocks before 9.5 (LWLockRelease() wakes the first waiter
    /// and no other until that one has run again, "releaseOK"; the woken task
    /// re-tries and a running task may take the count first).
    pub barging: bool,
}

/// A task to create: at start (`start == true`) or by a `Fork` op of another task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSpec {
    pub name: String,
    pub program: u32,
    /// Process id: tasks with the same `mm` are threads of one process.
    pub mm: u32,
    pub nice: i8,
    /// Affinity (CPU numbers); None = all CPUs.
    pub cpus: Option<Vec<u16>>,
    /// Created at time 0 rather than forked.
    pub start: bool,
    /// Task group (cpu cgroup): 0 = the root group, `i + 1` = `Workload::groups[i]`.
    pub group: u32,
    /// Private cache working set in KiB (what a switch-in on a cold CPU
    /// refills, and the pages a TLB flush makes it re-walk); None = the
    /// machine model's default (`schedlab_machine::cost::DEFAULT_FOOTPRINT`).
    pub footprint_kib: Option<u32>,
    /// A cache working set shared with every task naming the same set
    /// (program text, shared memory): warm on a CPU where any of them ran
    /// recently. None = none beyond the private one.
    pub shared: Option<SharedSet>,
    /// The task's timer slack (prctl(PR_SET_TIMERSLACK)): how far past its
    /// requested expiry a `Sleep` or `Timer` wakes (the hrtimer's hard
    /// expiry). [`DEFAULT_TIMER_SLACK_NS`] for every task a program creates;
    /// 0 for traced tasks, whose recorded sleeps already contain it.
    pub timer_slack_ns: u64,
}

/// The timer slack a task starts with: init_task's `timer_slack_ns`
/// (50 us, inherited by every fork; hrtimer_nanosleep() drops it only for
/// RT and deadline tasks, which schedlab does not run).
pub const DEFAULT_TIMER_SLACK_NS: u64 = 50_000;

/// A named working set several tasks share (`TaskSpec::shared`); every task
/// naming it gives the same size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedSet {
    pub name: String,
    pub kib: u32,
}

/// How the reported metric is computed.
#[derive(Clone, Debug, PartialEq)]
pub enum MetricSpec {
    /// Seconds between two marks (hackbench "Time:").
    Elapsed { name: String, start: u32, end: u32 },
    /// Counter per second between two marks, or over the whole run when the
    /// marks are absent (time-bounded workloads).
    Rate { name: String, unit: String, counter: u32, start: Option<u32>, end: Option<u32> },
    /// Like `Rate`, with the counter divided by `divisor` (e.g. bytes -> MB/s).
    ScaledRate { name: String, unit: String, counter: u32, divisor: u64, start: Option<u32>, end: Option<u32> },
    /// Quantile `q` (0..1) of latency histogram `hist` (see `Op::WakeLatency`, `Op::ReqEnd`), in us.
    LatencyPercentile { name: String, hist: u32, q: f64 },
    /// Mean of latency histogram `hist`, in us.
    LatencyMean { name: String, hist: u32 },
    /// `amount / divisor` per second over the shortest interval histogram
    /// `hist` recorded (`Op::ReqStart`..`Op::ReqEnd`): STREAM's "Best Rate",
    /// the bytes of one kernel pass over its best time.
    BestRate { name: String, unit: String, hist: u32, amount: u64, divisor: u64 },
}

impl MetricSpec {
    pub fn higher_is_better(&self) -> bool {
        matches!(self, MetricSpec::Rate { .. } | MetricSpec::ScaledRate { .. } | MetricSpec::BestRate { .. })
    }
}

/// A fully expanded workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub name: String,
    /// Parameters as resolved (defaults filled in), for reports.
    pub params: Vec<(String, String)>,
    pub programs: Vec<Vec<Op>>,
    pub tasks: Vec<TaskSpec>,
    pub channels: Vec<ChannelSpec>,
    pub sems: Vec<SemSpec>,
    pub metric: MetricSpec,
    /// Runs until `--duration` rather than to completion.
    pub time_bounded: bool,
    /// Uniform jitter applied to every cost, in percent (+/-), drawn from the seeded RNG.
    pub jitter_pct: u32,
    /// Task groups (cpu cgroups), parents before children.
    pub groups: Vec<GroupSpec>,
    /// Processes that declare their memory (NUMA placement and balancing);
    /// empty = no memory model (no NUMA cost, no NUMA balancing).
    pub memory: Vec<MemSpec>,
    /// Open-loop requests from remote clients through the network path
    /// (`--set rate=...` of the request/response built-ins); None = closed loop.
    pub arrivals: Option<Arrivals>,
}

/// Requests that arrive from the network at a fixed mean rate (Poisson), as
/// from remote load generators: each is delivered by the NET_RX softirq on the
/// CPU that takes its connection's NIC queue interrupt, in the context of
/// whatever runs there, and queued on the connection's channel; a reader
/// blocked on it is woken from that CPU without WF_SYNC (the engine's arrivals.rs).
#[derive(Clone, Debug, PartialEq)]
pub struct Arrivals {
    /// Requests per second over all connections.
    pub rate_per_s: f64,
    /// Remote connections: (channel the request is queued on, tag it carries,
    /// CPU whose receive-queue interrupt delivers it).
    pub conns: Vec<(u32, u32, u16)>,
    /// CPU time of the receive path per request (interrupt, NET_RX softirq,
    /// TCP receive up to the socket queue), taken from the interrupted task.
    pub rx_ns: u64,
    /// Latency histogram opened at arrival; the reader's `ReqEnd` closes it.
    pub hist: u32,
}

/// One process's memory, for the NUMA memory model and NUMA balancing
/// (the engine's numa module, the kernel's fair/numa.rs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemSpec {
    /// The process (`TaskSpec::mm`).
    pub mm: u32,
    /// Memory all threads share, MiB.
    pub shared_mib: u64,
    /// Memory each thread uses alone, MiB.
    pub private_mib: u64,
    /// Of a thread's memory accesses, the percentage to its private memory.
    pub private_pct: u32,
    /// Share of a `Run` op's time that is DRAM access at local latency, in
    /// percent: remote pages stretch that share by the remote/local latency.
    pub stall_pct: u32,
    /// Distinct memory a thread touches per second of CPU time, MiB/s.
    pub touch_mib_per_s: u64,
    /// Node the pages already sit on at the start; None = first touch.
    pub initial_node: Option<u32>,
}

/// cgroup v2 `cpu.weight` (1..10000, default 100) to shares
/// (`sched_weight_from_cgroup()`: weight * 1024 / 100, rounded to nearest).
pub fn shares_from_cpu_weight(weight: u64) -> Result<u64, String> {
    if !(1..=10000).contains(&weight) {
        return Err(format!("cpu.weight {weight} out of range: cgroup v2 accepts 1..10000 (default 100)"));
    }
    Ok((weight * 1024 + 50) / 100)
}

/// cgroup v1 `cpu.shares` (2..262144, default 1024), clamped as the kernel does.
pub fn shares_from_cpu_shares(shares: u64) -> Result<u64, String> {
    if shares == 0 {
        return Err("cpu.shares 0 is not a weight: the kernel clamps to 2..262144 (default 1024)".into());
    }
    Ok(shares.clamp(2, 1 << 18))
}

/// A task group (cpu cgroup) of a workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSpec {
    pub name: String,
    /// Parent: 0 = the root group, `i + 1` = `Workload::groups[i]` (which must come earlier).
    pub parent: u32,
    /// `cpu.shares` scale (1024 = default; cgroup v2 cpu.weight 100).
    pub shares: u64,
}

/// A workload that cannot be built; names the parameter and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadError(pub String);

impl std::fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for WorkloadError {}

impl Workload {
    /// A workload with no program, task, channel, semaphore, group or memory
    /// yet, and no open-loop arrivals: what every built-in starts from.
    pub fn new(name: &str, params: Vec<(String, String)>, metric: MetricSpec, time_bounded: bool, jitter_pct: u32) -> Self {
        Workload {
            name: name.into(),
            params,
            programs: Vec::new(),
            tasks: Vec::new(),
            channels: Vec::new(),
            sems: Vec::new(),
            metric,
            time_bounded,
            jitter_pct,
            groups: Vec::new(),
            memory: Vec::new(),
            arrivals: None,
        }
    }

    /// Structural checks: ids in range, loops balanced, forks of non-start specs.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let err = |s: String| Err(WorkloadError(format!("workload {}: {s}", self.name)));
        if !self.tasks.iter().any(|t| t.start) {
            return err("no task starts at time 0".into());
        }
        for (k, g) in self.groups.iter().enumerate() {
            if g.parent as usize > k {
                return err(format!("group {} ({:?}): parent {} must be 0 (root) or an earlier group", k + 1, g.name, g.parent));
            }
            if !(2..=1 << 18).contains(&g.shares) {
                return err(format!("group {} ({:?}): shares {} out of range 2..262144", k + 1, g.name, g.shares));
            }
        }
        let mut sets: Vec<&SharedSet> = Vec::new();
        for (i, t) in self.tasks.iter().enumerate() {
            if let Some(sh) = &t.shared {
                if sh.kib == 0 {
                    return err(format!("task {i} ({:?}): shared set {:?} of 0 KiB", t.name, sh.name));
                }
                match sets.iter().find(|o| o.name == sh.name) {
                    Some(o) if o.kib != sh.kib => {
                        return err(format!(
                            "task {i} ({:?}): shared set {:?} is {} KiB here and {} KiB on an earlier task; one set has one size",
                            t.name, sh.name, sh.kib, o.kib
                        ))
                    }
                    Some(_) => {}
                    None => sets.push(sh),
                }
            }
        }
        for (i, m) in self.memory.iter().enumerate() {
            if !self.tasks.iter().any(|t| t.mm == m.mm) {
                return err(format!("memory {i}: process {} has no task", m.mm));
            }
            if m.shared_mib + m.private_mib == 0 {
                return err(format!("memory {i}: process {} declares no memory (shared_mib and private_mib are 0)", m.mm));
            }
            if m.private_pct > 100 || m.stall_pct > 100 {
                return err(format!("memory {i}: private_pct and stall_pct are percentages (0..100)"));
            }
            if m.shared_mib + m.private_mib > (1 << 22) {
                return err(format!("memory {i}: more than 4 TiB per process"));
            }
            if self.memory[..i].iter().any(|o| o.mm == m.mm) {
                return err(format!("memory {i}: process {} declared twice", m.mm));
            }
        }
        if let Some(a) = &self.arrivals {
            if !a.rate_per_s.is_finite() || a.rate_per_s <= 0.0 || a.rate_per_s > 1e9 {
                return err(format!("arrivals: rate {} requests/s; give a rate above 0 and at most 1e9", a.rate_per_s));
            }
            if a.conns.is_empty() {
                return err("arrivals: no connections".into());
            }
            if let Some(&(c, _, _)) = a.conns.iter().find(|&&(c, _, _)| c as usize >= self.channels.len()) {
                return err(format!("arrivals: channel {c} does not exist"));
            }
            if a.hist >= MAX_IDS {
                return err(format!("arrivals: latency histogram {} out of range 0..{MAX_IDS}", a.hist));
            }
        }
        if let Some(t) = self.tasks.iter().find(|t| t.group as usize > self.groups.len()) {
            return err(format!("task {:?}: group {} does not exist ({} groups defined)", t.name, t.group, self.groups.len()));
        }
        let mut barrier_parties = std::collections::BTreeMap::new();
        // Epoll sets some channel is registered with. Set ids index the
        // engine's epoll instances: each needs a channel, so fewer than channels.
        let mut set_used = vec![false; self.channels.len()];
        for (i, c) in self.channels.iter().enumerate() {
            if let Some(e) = c.epoll {
                match set_used.get_mut(e.set as usize) {
                    Some(u) => *u = true,
                    None => {
                        return err(format!(
                            "channel {i}: epoll set {} out of range (0..{}: one set per channel at most)",
                            e.set,
                            self.channels.len()
                        ))
                    }
                }
            }
        }
        for (pi, prog) in self.programs.iter().enumerate() {
            let mut depth = 0i32;
            // The per-CPU lock held at this point of the program, in op order:
            // one at a time, released by the program before it ends.
            let mut cpu_lock_held: Option<u32> = None;
            for op in prog {
                match (*op, cpu_lock_held) {
                    (Op::CpuLock { set }, Some(h)) => {
                        return err(format!("program {pi}: cpu_lock set={set} while it holds set {h}; one per-CPU lock at a time"));
                    }
                    (Op::CpuLock { set }, None) => cpu_lock_held = Some(set),
                    (Op::CpuUnlock { set }, h) if h != Some(set) => {
                        return err(format!("program {pi}: cpu_unlock set={set} without a cpu_lock set={set} before it"));
                    }
                    (Op::CpuUnlock { .. }, _) => cpu_lock_held = None,
                    (Op::Exit { .. }, Some(h)) => {
                        return err(format!("program {pi}: exit while it holds per-CPU lock set {h}; cpu_unlock it first"));
                    }
                    _ => {}
                }
                match *op {
                    Op::Loop { count } => {
                        if count == 0 {
                            return err(format!("program {pi}: a loop with count 0"));
                        }
                        depth += 1
                    }
                    Op::EndLoop => {
                        depth -= 1;
                        if depth < 0 {
                            return err(format!("program {pi}: EndLoop without Loop"));
                        }
                    }
                    Op::Write { chan, .. }
                    | Op::Read { chan, .. }
                    | Op::ReadAll { chan, .. }
                    | Op::WriteTag { chan, .. }
                    | Op::ReadTag { chan, .. }
                    | Op::WriteReg { chan_base: chan, .. }
                        if chan as usize >= self.channels.len() =>
                    {
                        return err(format!("program {pi}: channel {chan} does not exist"));
                    }
                    Op::SemWait { sem } | Op::SemPost { sem, .. } | Op::SemWake { sem, .. } if sem as usize >= self.sems.len() => {
                        return err(format!("program {pi}: semaphore {sem} does not exist"));
                    }
                    Op::Poll { chan } | Op::WakeQueued { chan, .. } | Op::ReadReg { chan_base: chan, .. }
                        if chan as usize >= self.channels.len() =>
                    {
                        return err(format!("program {pi}: channel {chan} does not exist"));
                    }
                    Op::MarkNth { nth: 0, .. } => {
                        return err(format!("program {pi}: mark_nth with nth=0 never records its mark: count executions from 1"));
                    }
                    Op::WakeLatency { sem, .. } if sem as usize >= self.sems.len() => {
                        return err(format!("program {pi}: semaphore {sem} does not exist"));
                    }
                    Op::Mark { id }
                    | Op::MarkNth { id, .. }
                    | Op::Count { id, .. }
                    | Op::WakeLatency { hist: id, .. }
                    | Op::ReqStart { hist: id }
                    | Op::ReqEnd { hist: id }
                        if id >= MAX_IDS =>
                    {
                        return err(format!("program {pi}: mark/counter/histogram id {id} is out of range (0..{MAX_IDS})"));
                    }
                    Op::CpuLock { set } | Op::CpuUnlock { set } if set >= MAX_IDS => {
                        return err(format!("program {pi}: per-CPU lock set {set} is out of range (0..{MAX_IDS})"));
                    }
                    Op::Barrier { id, parties } | Op::SpinBarrier { id, parties, .. } => {
                        if parties == 0 || parties as usize > self.tasks.len().max(1) {
                            return err(format!(
                                "program {pi}: barrier {id} with {parties} parties, but the workload has {} tasks",
                                self.tasks.len()
                            ));
                        }
                        if id >= 1 << 16 {
                            return err(format!("program {pi}: barrier id {id} is too large (max 65535)"));
                        }
                        match barrier_parties.get(&id) {
                            Some(&p) if p != parties => {
                                return err(format!("program {pi}: barrier {id} is used with {parties} and with {p} parties"));
                            }
                            _ => {
                                barrier_parties.insert(id, parties);
                            }
                        }
                    }
                    Op::SelectNext { set, .. } if !set_used.get(set as usize).copied().unwrap_or(false) => {
                        return err(format!("program {pi}: select_next on set {set}, which no channel is registered with"));
                    }
                    Op::EpollNext { set, max, block_cost, block_pre } => {
                        if max == 0 {
                            return err(format!("program {pi}: epoll_next on set {set} with max 0 (epoll_wait needs maxevents >= 1)"));
                        }
                        if block_pre > block_cost {
                            return err(format!(
                                "program {pi}: epoll_next on set {set} with block_pre {block_pre} ns above block_cost {block_cost} ns (block_pre is the part of block_cost paid before the sleep)"
                            ));
                        }
                        if !set_used.get(set as usize).copied().unwrap_or(false) {
                            return err(format!("program {pi}: epoll_next on set {set}, which no channel is registered with"));
                        }
                    }
                    Op::RunDist { lo, mid, hi } if !(lo <= mid && mid <= hi) => {
                        return err(format!("program {pi}: run_dist lo={lo} mid={mid} hi={hi}: needs lo <= mid <= hi (ns)"));
                    }
                    Op::Fork { spec, .. } if spec as usize >= self.tasks.len() || self.tasks[spec as usize].start => {
                        return err(format!("program {pi}: fork of task spec {spec}, which is not a forkable spec"));
                    }
                    _ => {}
                }
            }
            if depth != 0 {
                return err(format!("program {pi}: Loop without EndLoop"));
            }
            if let Some(h) = cpu_lock_held {
                return err(format!("program {pi}: ends while it holds per-CPU lock set {h}; cpu_unlock it first"));
            }
        }
        for t in &self.tasks {
            if t.program as usize >= self.programs.len() {
                return err(format!("task {}: program {} does not exist", t.name, t.program));
            }
            if let Some(c) = &t.cpus {
                if c.is_empty() {
                    return err(format!("task {}: empty CPU affinity", t.name));
                }
            }
        }
        for (i, c) in self.channels.iter().enumerate() {
            if c.capacity == 0 {
                return err(format!("channel {i}: capacity 0"));
            }
            if let ChannelKind::Pipe { msgs_per_page: 0 } = c.kind {
                return err(format!("channel {i}: a pipe with 0 messages per page"));
            }
        }
        self.validate_tags()?;
        self.validate_metric()?;
        self.validate_reachable()
    }

    /// `WakeQueued` posts semaphore `sem_base + tag`: every tag written to its
    /// channel must name an existing semaphore.
    fn validate_tags(&self) -> Result<(), WorkloadError> {
        // Largest tag written to each channel (and the program writing it), in one pass.
        let mut max_tag: Vec<Option<(u32, usize)>> = vec![None; self.channels.len()];
        for (pj, prog) in self.programs.iter().enumerate() {
            for op in prog {
                let (c, tag) = match *op {
                    Op::WriteTag { chan, tag, .. } => (chan, tag),
                    Op::Write { chan, .. } => (chan, 0),
                    _ => continue,
                };
                let m = &mut max_tag[c as usize];
                if !matches!(*m, Some((t, _)) if t >= tag) {
                    *m = Some((tag, pj));
                }
            }
        }
        for (pi, prog) in self.programs.iter().enumerate() {
            for op in prog {
                let Op::WakeQueued { chan, sem_base, .. } = *op else { continue };
                if let Some((tag, pj)) = max_tag[chan as usize] {
                    if sem_base as u64 + tag as u64 >= self.sems.len() as u64 {
                        return Err(WorkloadError(format!(
                            "workload {}: program {pj} writes tag {tag} to channel {chan}, which program {pi} turns into a post of semaphore {}, which does not exist",
                            self.name,
                            sem_base as u64 + tag as u64
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    fn validate_metric(&self) -> Result<(), WorkloadError> {
        let bad =
            |what: &str, id: u32| Err(WorkloadError(format!("workload {}: metric {what} {id} is out of range (0..{MAX_IDS})", self.name)));
        match &self.metric {
            MetricSpec::Elapsed { start, end, .. } => {
                for &m in [start, end] {
                    if m >= MAX_IDS {
                        return bad("mark", m);
                    }
                }
            }
            MetricSpec::Rate { counter, start, end, .. } | MetricSpec::ScaledRate { counter, start, end, .. } => {
                if *counter >= MAX_IDS {
                    return bad("counter", *counter);
                }
                for m in [start, end].into_iter().flatten() {
                    if *m >= MAX_IDS {
                        return bad("mark", *m);
                    }
                }
                if let MetricSpec::ScaledRate { divisor: 0, .. } = self.metric {
                    return Err(WorkloadError(format!("workload {}: metric divisor 0", self.name)));
                }
            }
            MetricSpec::LatencyMean { hist, .. } => {
                if *hist >= MAX_IDS {
                    return bad("histogram", *hist);
                }
            }
            MetricSpec::BestRate { hist, divisor, .. } => {
                if *hist >= MAX_IDS {
                    return bad("histogram", *hist);
                }
                if *divisor == 0 {
                    return Err(WorkloadError(format!("workload {}: metric divisor 0", self.name)));
                }
            }
            MetricSpec::LatencyPercentile { hist, q, .. } => {
                if *hist >= MAX_IDS {
                    return bad("histogram", *hist);
                }
                if !(*q >= 0.0 && *q <= 1.0) {
                    return Err(WorkloadError(format!("workload {}: metric quantile {q} must be between 0 and 1", self.name)));
                }
            }
        }
        self.validate_metric_sources()
    }

    /// The marks, counter and histogram the metric reads are written by some
    /// op, and an elapsed interval's end mark does not come before its start.
    fn validate_metric_sources(&self) -> Result<(), WorkloadError> {
        let err = |s: String| Err(WorkloadError(format!("workload {}: {s}", self.name)));
        let has = |f: &dyn Fn(&Op) -> bool| self.programs.iter().any(|p| p.iter().any(f));
        let (start, end) = match &self.metric {
            MetricSpec::Elapsed { start, end, .. } => (Some(*start), Some(*end)),
            MetricSpec::Rate { start, end, .. } | MetricSpec::ScaledRate { start, end, .. } => (*start, *end),
            _ => (None, None),
        };
        for (what, m) in [("start", start), ("end", end)] {
            if let Some(id) = m {
                if !has(&|op| matches!(op, Op::Mark { id: x } | Op::MarkNth { id: x, .. } if *x == id)) {
                    return err(format!(
                        "the metric's {what} mark {id} is never recorded: add a \"mark id={id}\" op where the measured interval {what}s"
                    ));
                }
            }
        }
        if let (Some(s), Some(e)) = (start, end) {
            if s == e {
                return err(format!("the metric's start and end are the same mark {s}; give the end its own mark id"));
            }
            for (pi, prog) in self.programs.iter().enumerate() {
                let first_s = prog.iter().position(|op| matches!(op, Op::Mark { id } | Op::MarkNth { id, .. } if *id == s));
                let last_e = prog.iter().rposition(|op| matches!(op, Op::Mark { id } | Op::MarkNth { id, .. } if *id == e));
                if let (Some(fs), Some(le)) = (first_s, last_e) {
                    if le < fs {
                        return err(format!(
                            "program {pi}: the metric's end mark {e} (op {}) comes before its start mark {s} (op {}); swap start and end in [metric]",
                            le + 1,
                            fs + 1
                        ));
                    }
                }
            }
        }
        match &self.metric {
            MetricSpec::Rate { counter, .. } | MetricSpec::ScaledRate { counter, .. } => {
                let c = *counter;
                if !has(&|op| matches!(op, Op::Count { id, .. } if *id == c)) {
                    return err(format!("the metric's counter {c} is never counted: add a \"count id={c} n=1\" op per unit of work"));
                }
            }
            MetricSpec::LatencyMean { hist, .. } | MetricSpec::LatencyPercentile { hist, .. } | MetricSpec::BestRate { hist, .. } => {
                let h = *hist;
                if !has(&|op| matches!(op, Op::WakeLatency { hist, .. } | Op::ReqEnd { hist } if *hist == h)) {
                    return err(format!(
                        "the metric's latency histogram {h} is never recorded: add req_start/req_end hist={h} or wake_latency hist={h} ops"
                    ));
                }
            }
            MetricSpec::Elapsed { .. } => {}
        }
        Ok(())
    }

    /// A wait that nothing can ever end is an error: a semaphore waited on
    /// with initial count 0 that no op posts, a channel read or polled that no
    /// op writes.
    fn validate_reachable(&self) -> Result<(), WorkloadError> {
        let n_s = self.sems.len();
        let n_c = self.channels.len();
        let mut posted = vec![false; n_s];
        let mut written = vec![false; n_c];
        let mut post_from = usize::MAX; // SemPost-by-tag from this base on
        let mut write_from = usize::MAX;
        for op in self.programs.iter().flatten() {
            match *op {
                Op::SemPost { sem, .. } | Op::SemWake { sem, .. } => posted[sem as usize] = true,
                Op::WakeQueued { sem_base, .. } => post_from = post_from.min(sem_base as usize),
                Op::Write { chan, .. } | Op::WriteTag { chan, .. } => written[chan as usize] = true,
                Op::WriteReg { chan_base, .. } => write_from = write_from.min(chan_base as usize),
                _ => {}
            }
        }
        // Requests from the network are written by the receive path.
        for &(chan, _, _) in self.arrivals.iter().flat_map(|a| &a.conns) {
            if let Some(w) = written.get_mut(chan as usize) {
                *w = true;
            }
        }
        // Epoll sets with a member channel something writes.
        let mut set_fed = vec![false; n_c];
        for (c, spec) in self.channels.iter().enumerate() {
            if let Some(e) = spec.epoll {
                set_fed[e.set as usize] |= written[c] || c >= write_from;
            }
        }
        for (pi, prog) in self.programs.iter().enumerate() {
            for op in prog {
                match *op {
                    Op::SemWait { sem } => {
                        let s = sem as usize;
                        if self.sems[s].initial == 0 && !posted[s] && s < post_from {
                            return Err(WorkloadError(format!(
                                "workload {}: program {pi} waits on semaphore {sem}, but its initial count is 0 and nothing posts it",
                                self.name
                            )));
                        }
                    }
                    Op::Read { chan, .. } | Op::ReadTag { chan, .. } | Op::ReadAll { chan, .. } | Op::Poll { chan } => {
                        let c = chan as usize;
                        if !written[c] && c < write_from {
                            return Err(WorkloadError(format!(
                                "workload {}: program {pi} reads channel {chan}, but nothing writes to it",
                                self.name
                            )));
                        }
                    }
                    Op::EpollNext { set, .. } | Op::SelectNext { set, .. } if !set_fed.get(set as usize).copied().unwrap_or(false) => {
                        return Err(WorkloadError(format!(
                            "workload {}: program {pi} waits on epoll set {set}, but nothing writes to any of its channels",
                            self.name
                        )));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Number of task specs (the tasks that will exist over the run).
    pub fn nr_tasks(&self) -> usize {
        self.tasks.len()
    }
}

/// Build a built-in workload by name with `--set` parameters.
pub fn build(name: &str, params: &Params, nr_cpus: usize, cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let b = builtin::find(name).ok_or_else(|| {
        WorkloadError(format!(
            "unknown workload {name:?}; built-ins: {} (see `schedlab workloads`)",
            builtin::BUILTINS.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
        ))
    })?;
    let mut docs = b.params.to_vec();
    docs.extend_from_slice(GENERIC_PARAMS);
    params.check_known(b.name, &docs)?;
    let mut w = (b.build)(params, nr_cpus, cores)?;
    apply_generic(&mut w, params, nr_cpus)?;
    w.validate()?;
    Ok(w)
}

/// Parameters every built-in takes: cpu cgroups and pinning.
pub const GENERIC_PARAMS: &[params::ParamDoc] = &[
    params::ParamDoc {
        key: "cgroups",
        default: "0",
        help: "put the tasks into N cpu cgroups under the root (contiguous blocks of the task list); 0 = all in the root group",
    },
    params::ParamDoc {
        key: "cgroup_shares",
        default: "1024",
        help: "cpu.shares per cgroup, colon-separated (e.g. 1024:2048); one value for all",
    },
    params::ParamDoc {
        key: "cgroup_process",
        default: "0",
        help: "1: the tasks of each cgroup are threads of one process (one mm per cgroup, as in seed 002)",
    },
    params::ParamDoc { key: "pin", default: "", help: "pin every task to these CPUs (e.g. 0, 0-3 or 0:2); empty = no pinning" },
];

/// Apply the generic parameters to a built workload.
fn apply_generic(w: &mut Workload, p: &Params, nr_cpus: usize) -> Result<(), WorkloadError> {
    let n = w.tasks.len() as u64;
    let k = p.u64_in("cgroups", 0, 0, u32::MAX as u64)?;
    if k > n {
        return Err(WorkloadError(format!("cgroups={k}: the workload has {n} tasks; give at most one cgroup per task")));
    }
    if k > 0 {
        let shares_s = p.get("cgroup_shares").unwrap_or("1024");
        let mut shares = Vec::new();
        for s in shares_s.split(':') {
            let v: u64 = s.trim().parse().map_err(|_| {
                WorkloadError(format!("cgroup_shares={shares_s:?}: {s:?} is not a whole number; e.g. cgroup_shares=1024:2048"))
            })?;
            shares.push(shares_from_cpu_shares(v).map_err(WorkloadError)?);
        }
        if shares.len() != 1 && shares.len() as u64 != k {
            return Err(WorkloadError(format!(
                "cgroup_shares={shares_s:?} gives {} values for cgroups={k}; give one value or {k}",
                shares.len()
            )));
        }
        for g in 0..k {
            let s = shares[if shares.len() == 1 { 0 } else { g as usize }];
            w.groups.push(GroupSpec { name: format!("{}-cg{}", w.name, g), parent: 0, shares: s });
        }
        for (i, t) in w.tasks.iter_mut().enumerate() {
            t.group = 1 + (i as u64 * k / n) as u32;
        }
        w.params.push(("cgroups".into(), k.to_string()));
        w.params.push(("cgroup_shares".into(), shares_s.to_string()));
        if p.flag("cgroup_process", false)? {
            // One new process per cgroup, numbered after the workload's own.
            let base = w.tasks.iter().map(|t| t.mm).max().unwrap_or(0) + 1;
            for t in &mut w.tasks {
                t.mm = base + t.group - 1;
            }
            w.params.push(("cgroup_process".into(), "1".into()));
        }
    } else if p.get("cgroup_shares").is_some() || p.get("cgroup_process").is_some() {
        return Err(WorkloadError("cgroup_shares and cgroup_process need cgroups=N (N >= 1)".into()));
    }
    if let Some(pin) = p.get("pin").filter(|s| !s.is_empty()) {
        let mut cpus = Vec::new();
        for part in pin.split(':') {
            let bad = || WorkloadError(format!("pin={pin:?}: {part:?} is not a CPU or range; e.g. pin=0 or pin=0-3:8-11"));
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a.trim().parse::<u16>().map_err(|_| bad())?, b.trim().parse::<u16>().map_err(|_| bad())?),
                None => {
                    let a = part.trim().parse::<u16>().map_err(|_| bad())?;
                    (a, a)
                }
            };
            if a > b {
                return Err(WorkloadError(format!("pin={pin:?}: the range {a}-{b} is reversed; write the lower CPU first: {b}-{a}")));
            }
            if b as usize >= nr_cpus {
                return Err(WorkloadError(format!("pin={pin:?}: CPUs {a}-{b} are not within 0-{} of this machine", nr_cpus - 1)));
            }
            cpus.extend(a..=b);
        }
        cpus.sort_unstable();
        cpus.dedup();
        for t in &mut w.tasks {
            t.cpus = Some(cpus.clone());
        }
        w.params.push(("pin".into(), pin.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod group_tests {
    use super::*;

    #[test]
    fn cgroup_weight_conversions() {
        assert_eq!(shares_from_cpu_weight(100).unwrap(), 1024);
        assert_eq!(shares_from_cpu_weight(200).unwrap(), 2048);
        assert_eq!(shares_from_cpu_weight(1).unwrap(), 10);
        assert!(shares_from_cpu_weight(0).is_err());
        assert!(shares_from_cpu_weight(10001).is_err());
        assert_eq!(shares_from_cpu_shares(1).unwrap(), 2);
        assert_eq!(shares_from_cpu_shares(1 << 20).unwrap(), 1 << 18);
        assert!(shares_from_cpu_shares(0).is_err());
    }
}

#[cfg(test)]
mod arrival_tests {
    use super::*;

    #[test]
    fn arrivals_are_validated_with_the_fix_named() {
        let w = build("memcached", &Params::parse("rate=1000").unwrap(), 4, &[]).unwrap();
        assert!(w.validate().is_ok());
        let bad = |f: &dyn Fn(&mut Arrivals)| {
            let mut w = w.clone();
            f(w.arrivals.as_mut().unwrap());
            w.validate().unwrap_err().to_string()
        };
        assert!(bad(&|a| a.rate_per_s = 0.0).contains("rate above 0"));
        assert!(bad(&|a| a.rate_per_s = f64::NAN).contains("rate"));
        assert!(bad(&|a| a.conns.clear()).contains("no connections"));
        assert!(bad(&|a| a.conns[0].0 = 99).contains("channel 99 does not exist"));
        assert!(bad(&|a| a.hist = MAX_IDS).contains("histogram"));
    }
}

#[cfg(test)]
mod shared_set_tests {
    use super::*;

    // A workload built in code is held to the file's rule: one size per set.
    #[test]
    fn one_shared_set_has_one_size() {
        let mut w = build("pipe", &Params::default(), 4, &[]).unwrap();
        let set = |kib| Some(SharedSet { name: "text".into(), kib });
        for t in w.tasks.iter_mut() {
            t.shared = set(256);
        }
        assert!(w.validate().is_ok());
        w.tasks.last_mut().unwrap().shared = set(128);
        let e = w.validate().unwrap_err().to_string();
        assert!(e.contains("\"text\"") && e.contains("one set has one size"), "{e}");
        w.tasks.last_mut().unwrap().shared = set(0);
        assert!(w.validate().unwrap_err().to_string().contains("0 KiB"));
    }
}
