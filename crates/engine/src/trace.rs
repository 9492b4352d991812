//! Scheduler trace recording: the sched tracepoints a real kernel would emit
//! for the simulated run, in simulation order (which is time order).
//!
//! Off by default (`SimConfig::trace`); when off, the only cost on the hot
//! path is an `Option::is_some()` test at each hook. The writers (Perfetto
//! protobuf, ftrace text) live in the CLI; this module only records.
//!
//! Task identity: task index `i` (creation order, `TaskId(i)`) has pid
//! [`PID_BASE`]` + i`; the idle task of every CPU is pid 0 (`swapper/N`). A
//! task's tgid is the pid of the first task created with its `mm` (the thread
//! group leader); its comm is its `TaskSpec.name` cut to 15 bytes, as
//! `TASK_COMM_LEN` (16 with the NUL) cuts it in the kernel.
//!
//! Where each event fires mirrors include/trace/events/sched.h and its call
//! sites in kernel/sched/core.c (v5.14+, the layouts every profile is traced in):
//! - `sched_waking`: `try_to_wake_up()`, in the waker's context (the waker's
//!   CPU), `target_cpu = task_cpu(p)` before CPU selection;
//! - `sched_migrate_task`: `set_task_cpu()`, in the context that moved the task;
//! - `sched_wakeup`: `ttwu_do_wakeup()`, on the waker's CPU, or on the target
//!   CPU when the wakeup went through its wake list (`sched_ttwu_pending()`);
//! - `sched_wakeup_new`: `wake_up_new_task()`, in the parent's context;
//! - `sched_process_fork`: `kernel_clone()`, before `wake_up_new_task()`;
//! - `sched_process_exit`: `do_exit()`, before the parent is notified;
//! - `sched_switch`: `__schedule()`, when prev != next.

// FIDELITY(F-400): the sched_* tracepoints only, at the engine's decision instants.
use crate::Sim;
use schedlab_kernel::{CpuId, SwitchReason, SwitchResult, TaskId, WakeResult};

/// pid of task index 0; task `i` is pid `PID_BASE + i`.
// FIDELITY(F-403): synthetic pids, tgids from the workload's mm, ppid 0 for tasks started at time 0.
pub const PID_BASE: u32 = 1000;

/// The kernel's `TASK_COMM_LEN` minus the terminating NUL.
pub const COMM_LEN: usize = 15;

/// `prev_state` of a `sched_switch`, as `__trace_sched_switch_state()` reports
/// it (kernels >= 4.14: TASK_REPORT bits, `TASK_REPORT_MAX` = 0x100 for a
/// preempted task).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrevState {
    /// `R`: runnable (the idle task, or a task switched out while runnable without preemption).
    Running,
    /// `R+`: preempted.
    Preempted,
    /// `S`: TASK_INTERRUPTIBLE sleep (pipe/socket read, futex, nanosleep, wait).
    Sleeping,
    /// `Z`: an exiting thread-group leader (EXIT_ZOMBIE until its parent reaps it).
    Zombie,
    /// `X`: an exiting non-leader thread (self-reaping, EXIT_DEAD).
    Dead,
}

impl PrevState {
    /// The raw `prev_state` field (tracefs binary / Perfetto proto).
    pub fn raw(self) -> i64 {
        match self {
            PrevState::Running => 0,
            PrevState::Preempted => 0x100,
            PrevState::Sleeping => 0x01,
            PrevState::Zombie => 0x20,
            PrevState::Dead => 0x10,
        }
    }

    /// As TP_printk prints it.
    pub fn letters(self) -> &'static str {
        match self {
            PrevState::Running => "R",
            PrevState::Preempted => "R+",
            PrevState::Sleeping => "S",
            PrevState::Zombie => "Z",
            PrevState::Dead => "X",
        }
    }
}

/// What happened. Tasks are task indices (`TaskId.0`); `None` is the CPU's idle task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Switch { prev: Option<u32>, prev_state: PrevState, next: Option<u32> },
    Waking { task: u32, target_cpu: u16 },
    Wakeup { task: u32, target_cpu: u16 },
    WakeupNew { task: u32, target_cpu: u16 },
    Migrate { task: u32, orig_cpu: u16, dest_cpu: u16 },
    Fork { parent: u32, child: u32 },
    Exit { task: u32 },
}

/// One tracepoint hit: at `ts` on `cpu`, while `current` ran there (None: idle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub ts: u64,
    pub cpu: u16,
    pub current: Option<u32>,
    pub kind: EventKind,
}

/// A task as the trace names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceTask {
    pub pid: u32,
    pub tgid: u32,
    /// Parent's pid; 0 for tasks that exist at time 0 (started by no simulated task).
    pub ppid: u32,
    pub comm: String,
    /// `p->prio` as the tracepoints report it: 120 + nice for fair tasks.
    pub prio: i32,
}

/// The recorded trace of one run.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Trace {
    pub nr_cpus: u16,
    /// Indexed by task index.
    pub tasks: Vec<TraceTask>,
    /// In simulation order: timestamps never decrease.
    pub events: Vec<Event>,
    /// mm → tgid of the processes seen so far.
    tgids: std::collections::BTreeMap<u32, u32>,
}

impl Trace {
    pub fn new(nr_cpus: usize) -> Trace {
        Trace { nr_cpus: nr_cpus as u16, ..Default::default() }
    }

    /// pid of a task index (0 = idle).
    pub fn pid(&self, task: Option<u32>) -> u32 {
        task.map_or(0, |t| self.tasks[t as usize].pid)
    }

    /// comm of a task index; the idle task of `cpu` is `swapper/cpu`.
    pub fn comm(&self, task: Option<u32>, cpu: u16) -> std::borrow::Cow<'_, str> {
        match task {
            Some(t) => self.tasks[t as usize].comm.as_str().into(),
            None => format!("swapper/{cpu}").into(),
        }
    }

    /// prio of a task index (the idle task reports 120).
    pub fn prio(&self, task: Option<u32>) -> i32 {
        task.map_or(120, |t| self.tasks[t as usize].prio)
    }

    /// Counts of sched_switch and sched_waking events (the two Perfetto needs).
    pub fn count(&self, f: impl Fn(&EventKind) -> bool) -> usize {
        self.events.iter().filter(|e| f(&e.kind)).count()
    }
}

/// `name` cut to [`COMM_LEN`] bytes at a character boundary (`__set_task_comm()`
/// keeps TASK_COMM_LEN - 1 = 15 bytes), then with control characters escaped.
pub fn comm_of(name: &str) -> String {
    let mut end = name.len().min(COMM_LEN);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    escape_name(&name[..end])
}

/// A task name with backslashes and control characters escaped as
/// /proc/PID/status shows a comm (`proc_task_name()`, fs/proc/array.c:
/// `string_escape_str(..., ESCAPE_SPACE | ESCAPE_SPECIAL, "\n\\")`): `\n`,
/// `\t`, `\\`, other control bytes as octal `\ooo`. A name can then never
/// split a line of the ftrace text or the switch log.
pub fn escape_name(name: &str) -> String {
    if !name.chars().any(|c| c.is_control() || c == '\\') {
        return name.to_string();
    }
    let mut o = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        match c {
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            '\r' => o.push_str("\\r"),
            '\\' => o.push_str("\\\\"),
            c if c.is_control() => {
                let mut b = [0u8; 4];
                for x in c.encode_utf8(&mut b).bytes() {
                    o.push_str(&format!("\\{x:03o}"));
                }
            }
            c => o.push(c),
        }
    }
    o
}

/// The hooks the engine calls (only when tracing is on; cold and out of line
/// so that the untraced hot path stays as it was).
impl Sim<'_> {
    #[inline]
    fn tr_push(&mut self, cpu: CpuId, current: Option<TaskId>, kind: EventKind) {
        let ts = self.now;
        if let Some(tr) = self.trace.as_deref_mut() {
            tr.events.push(Event { ts, cpu: cpu.0, current: current.map(|t| t.0), kind });
        }
    }

    /// A task was created by `create_task()` (spec `spec`, forked by `parent`
    /// on `cpu`) and placed by `wake_up_new_task()` as `r` says.
    #[cold]
    #[inline(never)]
    pub(crate) fn tr_new_task(&mut self, p: TaskId, spec: u32, parent: Option<TaskId>, cpu: CpuId, r: &WakeResult) {
        let wl = self.wl;
        let ts = &wl.tasks[spec as usize];
        let nice = self.kernel.tasks[p.idx()].nice;
        let Some(tr) = self.trace.as_deref_mut() else { return };
        let pid = PID_BASE + p.0;
        let tgid = *tr.tgids.entry(ts.mm).or_insert(pid);
        let ppid = parent.map_or(0, |pp| tr.tasks[pp.idx()].pid);
        debug_assert_eq!(tr.tasks.len(), p.idx());
        tr.tasks.push(TraceTask { pid, tgid, ppid, comm: comm_of(&ts.name), prio: 120 + nice as i32 });
        if let Some(pp) = parent {
            self.tr_push(cpu, Some(pp), EventKind::Fork { parent: pp.0, child: p.0 });
        }
        self.tr_push(cpu, parent, EventKind::WakeupNew { task: p.0, target_cpu: r.cpu.0 });
    }

    /// A kernel thread of the machine's noise (noise.rs) was created on `cpu`.
    #[cold]
    #[inline(never)]
    pub(crate) fn tr_new_kthread(&mut self, p: TaskId, cpu: CpuId, r: &WakeResult) {
        let Some(tr) = self.trace.as_deref_mut() else { return };
        let pid = PID_BASE + p.0;
        debug_assert_eq!(tr.tasks.len(), p.idx());
        let name = self.noise.unbound_name(p).unwrap_or_else(|| format!("kthread/{}", cpu.0));
        tr.tasks.push(TraceTask { pid, tgid: pid, ppid: 0, comm: comm_of(&name), prio: 120 });
        // Woken from the timer softirq, in the context of what runs on `cpu`.
        let current = self.cpus[cpu.idx()].running;
        self.tr_push(cpu, current, EventKind::WakeupNew { task: p.0, target_cpu: r.cpu.0 });
    }

    /// The migrations the kernel did since the last drain, in the context of
    /// `cpu` (what runs there now).
    #[cold]
    #[inline(never)]
    pub(crate) fn tr_migrations(&mut self, cpu: CpuId) {
        if self.fx.migrations.is_empty() {
            return;
        }
        let mut log = std::mem::take(&mut self.fx.migrations);
        let current = self.cpus[cpu.idx()].running;
        for &(t, from, to) in &log {
            self.tr_push(cpu, current, EventKind::Migrate { task: t.0, orig_cpu: from.0, dest_cpu: to.0 });
        }
        // Hand the buffer back so the log does not reallocate.
        log.clear();
        self.fx.migrations = log;
    }

    /// `try_to_wake_up(p)` called from `this_cpu` returned `r`.
    #[cold]
    #[inline(never)]
    pub(crate) fn tr_wake(&mut self, p: TaskId, this_cpu: CpuId, r: &WakeResult) {
        let current = self.cpus[this_cpu.idx()].running;
        // sched_waking fires before select_task_rq(): target_cpu is the CPU
        // the task had then (the migration's origin if it moved).
        let moved = self.fx.migrations.iter().find(|m| m.0 == p).map(|m| m.1);
        let old = moved.unwrap_or(r.cpu);
        self.tr_push(this_cpu, current, EventKind::Waking { task: p.0, target_cpu: old.0 });
        self.tr_migrations(this_cpu);
        if !r.queued {
            self.tr_push(this_cpu, current, EventKind::Wakeup { task: p.0, target_cpu: r.cpu.0 });
        }
    }

    /// The target CPU activated the tasks of its wake list (`sched_ttwu_pending()`).
    #[cold]
    #[inline(never)]
    pub(crate) fn tr_wake_list(&mut self, cpu: CpuId, woken: &[TaskId]) {
        let current = self.cpus[cpu.idx()].running;
        for &p in woken {
            self.tr_push(cpu, current, EventKind::Wakeup { task: p.0, target_cpu: cpu.0 });
        }
    }

    /// `__schedule()` on `cpu` for `reason` returned `res` (before the engine switches).
    #[cold]
    #[inline(never)]
    pub(crate) fn tr_schedule(&mut self, cpu: CpuId, reason: SwitchReason, res: &SwitchResult) {
        // Newly-idle pulls and active-balance pushes happen before the switch.
        self.tr_migrations(cpu);
        if res.prev == res.next {
            return;
        }
        let prev_state = match (res.prev, reason) {
            (None, _) => PrevState::Running,
            (Some(_), SwitchReason::Preempt) => PrevState::Preempted,
            // FIDELITY(F-400): every block is an interruptible sleep (S), never D.
            (Some(_), SwitchReason::Block) => PrevState::Sleeping,
            (Some(pv), SwitchReason::Exit) => {
                let tr = self.trace.as_deref().expect("tracing is on");
                let t = &tr.tasks[pv.idx()];
                if t.pid == t.tgid {
                    PrevState::Zombie
                } else {
                    PrevState::Dead
                }
            }
        };
        self.tr_push(cpu, res.prev, EventKind::Switch { prev: res.prev.map(|t| t.0), prev_state, next: res.next.map(|t| t.0) });
    }

    /// `t` exits on `cpu` (`do_exit()`).
    #[cold]
    #[inline(never)]
    pub(crate) fn tr_exit(&mut self, cpu: CpuId, t: TaskId) {
        self.tr_push(cpu, Some(t), EventKind::Exit { task: t.0 });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{run, RunResult, SimConfig};
    use schedlab_kernel::profile::profile;
    use schedlab_workload::{build, Params};

    fn traced(machine: &str, kernel: &str, workload: &str, set: &str, duration_ns: Option<u64>, trace: bool) -> RunResult {
        let m = schedlab_machine::load(machine).unwrap();
        let w = build(workload, &Params::parse(set).unwrap(), m.topology.nr_cpus(), &m.topology.core_groups()).unwrap();
        run(
            &m,
            profile(kernel).unwrap(),
            &w,
            &SimConfig { seed: 5, duration_ns, schedstat: false, model: Default::default(), trace, switch_log: false },
        )
    }

    /// What a kernel trace guarantees: time order; per CPU, each switch's prev
    /// is the previous switch's next; no task on two CPUs; a task is switched
    /// in only while runnable; every waking has its wakeup; and the counts equal
    /// the run's own counters.
    fn check(r: &RunResult) {
        let tr = r.trace.as_deref().expect("tracing was on");
        let n = tr.nr_cpus as usize;
        let mut running: Vec<Option<u32>> = vec![None; n];
        // Tasks woken (or new) and not yet switched in / waking not yet matched by a wakeup.
        let mut runnable = std::collections::BTreeSet::new();
        let mut awaiting_wakeup = std::collections::BTreeSet::new();
        let mut last = 0;
        for e in &tr.events {
            assert!(e.ts >= last, "time goes back at {e:?}");
            last = e.ts;
            assert!((e.cpu as usize) < n);
            assert_eq!(e.current, running[e.cpu as usize], "event context is not the CPU's running task: {e:?}");
            match e.kind {
                EventKind::Switch { prev, prev_state, next } => {
                    assert_eq!(prev, running[e.cpu as usize], "switch prev is not what ran: {e:?}");
                    assert_ne!(prev, next);
                    if let Some(nx) = next {
                        assert!(!running.contains(&Some(nx)), "task {nx} switched in on cpu {} while running elsewhere", e.cpu);
                        assert!(runnable.remove(&nx), "task {nx} switched in without being runnable: {e:?}");
                    }
                    if let (Some(pv), PrevState::Preempted | PrevState::Running) = (prev, prev_state) {
                        runnable.insert(pv);
                    }
                    running[e.cpu as usize] = next;
                }
                EventKind::Waking { task, target_cpu } => {
                    assert!((target_cpu as usize) < n);
                    assert!(awaiting_wakeup.insert(task), "task {task} woken twice: {e:?}");
                }
                EventKind::Wakeup { task, .. } => {
                    assert!(awaiting_wakeup.remove(&task), "sched_wakeup without sched_waking: {e:?}");
                    assert!(runnable.insert(task));
                }
                EventKind::WakeupNew { task, .. } => {
                    assert!(runnable.insert(task));
                }
                EventKind::Migrate { orig_cpu, dest_cpu, .. } => assert_ne!(orig_cpu, dest_cpu),
                EventKind::Fork { parent, .. } => assert_eq!(e.current, Some(parent)),
                EventKind::Exit { task } => assert_eq!(e.current, Some(task)),
            }
        }
        let count = |f: fn(&EventKind) -> bool| tr.count(f) as u64;
        // The machine's kernel threads (noise.rs) are traced but are not the workload's.
        let n = &r.noise;
        let kthreads = tr.tasks.iter().filter(|t| t.comm.starts_with("kthread/")).count() as u64;
        let task_switches = count(|k| matches!(k, EventKind::Switch { prev: Some(_), .. }));
        assert_eq!(task_switches, r.voluntary_switches + r.involuntary_switches + n.switches);
        assert!(count(|k| matches!(k, EventKind::Switch { prev_state: PrevState::Preempted, .. })) >= r.involuntary_switches);
        assert_eq!(count(|k| matches!(k, EventKind::Waking { .. })), r.wakeups + n.kthread_wakeups - kthreads);
        assert_eq!(count(|k| matches!(k, EventKind::Migrate { .. })), r.migrations + n.migrations);
        assert_eq!(count(|k| matches!(k, EventKind::WakeupNew { .. })), r.tasks_created + kthreads);
        assert_eq!(count(|k| matches!(k, EventKind::Exit { .. })), r.tasks_exited);
        assert_eq!(tr.tasks.len() as u64, r.tasks_created + kthreads);
    }

    #[test]
    fn traces_satisfy_the_kernel_trace_invariants() {
        for (machine, kernel, workload, set, dur) in [
            ("x86-12", "v6.12", "pipe", "loops=300", None),
            ("x86-12", "v6.12", "pipe", "loops=300,threads=1", None),
            ("zen3-2s-nps1", "v6.6", "hackbench", "groups=2,loops=30", None),
            ("zen3-2s-nps1", "v3.10", "hackbench", "groups=2,loops=30", None),
            ("skylake-2s", "v5.13", "schbench", "", Some(30_000_000)),
            ("laptop-4c8t", "v6.12", "context_switch1", "pairs=6", Some(5_000_000)),
        ] {
            let r = traced(machine, kernel, workload, set, dur, true);
            let tr = r.trace.as_deref().unwrap();
            assert!(tr.count(|k| matches!(k, EventKind::Switch { .. })) > 0, "{workload}: no switches");
            check(&r);
        }
    }

    #[test]
    fn tracing_changes_nothing_but_the_trace() {
        let on = traced("zen3-2s-nps1", "v6.6", "hackbench", "groups=2,loops=20", None, true);
        let mut off = traced("zen3-2s-nps1", "v6.6", "hackbench", "groups=2,loops=20", None, false);
        assert!(off.trace.is_none());
        assert!(on.trace.as_ref().is_some_and(|t| t.count(|k| matches!(k, EventKind::Migrate { .. })) > 0));
        off.trace = on.trace.clone();
        assert_eq!(on, off);
    }

    #[test]
    fn identities_follow_the_kernel_conventions() {
        // pipe with threads=1: both tasks share an mm, so the child is a thread of the parent.
        for (threads, child_tgid, child_exit) in [(0, 1001, PrevState::Zombie), (1, 1000, PrevState::Dead)] {
            let r = traced("x86-12", "v6.12", "pipe", &format!("loops=5,threads={threads}"), None, true);
            let tr = r.trace.as_deref().unwrap();
            assert_eq!(tr.tasks[0], TraceTask { pid: 1000, tgid: 1000, ppid: 0, comm: "sched-pipe".into(), prio: 120 });
            // TASK_COMM_LEN: "sched-pipe-child" is cut to 15 bytes.
            assert_eq!(tr.tasks[1], TraceTask { pid: 1001, tgid: child_tgid, ppid: 1000, comm: "sched-pipe-chil".into(), prio: 120 });
            let exit_state = tr.events.iter().find_map(|e| match e.kind {
                EventKind::Switch { prev: Some(1), prev_state, .. } if prev_state != PrevState::Sleeping => Some(prev_state),
                _ => None,
            });
            assert_eq!(exit_state, Some(child_exit));
            assert_eq!(tr.comm(None, 3), "swapper/3");
            assert_eq!((tr.pid(None), tr.prio(None)), (0, 120));
        }
    }

    #[test]
    fn names_are_escaped_so_they_cannot_split_lines() {
        assert_eq!(escape_name("cli\nent ==> x"), "cli\\nent ==> x");
        assert_eq!(escape_name("a\tb\\c\u{1}"), "a\\tb\\\\c\\001");
        assert_eq!(comm_of("cli\nent"), "cli\\nent");
        assert!(!comm_of("x\ny\rz").contains(['\n', '\r']));
    }

    #[test]
    fn comm_is_cut_at_a_character_boundary() {
        assert_eq!(comm_of("short"), "short");
        assert_eq!(comm_of("0123456789abcdefgh"), "0123456789abcde");
        // 'é' is two bytes at offsets 14..16: cutting at 15 would split it.
        assert_eq!(comm_of("01234567890123é"), "01234567890123");
    }

    #[test]
    fn prev_state_encodings_are_the_kernels() {
        // TASK_REPORT bits (>= 4.14): R = 0, S = 1, X = 0x10, Z = 0x20, TASK_REPORT_MAX = 0x100 → "R+".
        let all = [PrevState::Running, PrevState::Preempted, PrevState::Sleeping, PrevState::Zombie, PrevState::Dead];
        let got: Vec<(i64, &str)> = all.iter().map(|s| (s.raw(), s.letters())).collect();
        assert_eq!(got, [(0, "R"), (0x100, "R+"), (1, "S"), (0x20, "Z"), (0x10, "X")]);
    }
}
