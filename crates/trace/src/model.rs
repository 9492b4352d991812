//! From events to tasks: per task, its CPU bursts, blocks, who ended each
//! block, the wakeups it issued, forks and exit; per role, the counts a
//! profile reports.
//!
//! Inference rules (stated, since a trace does not carry them):
//! - the traced set: with a root pid (`schedlab record`, `--pid`), the root
//!   and every task forked from the set; otherwise every task but the idle tasks;
//! - waker: the task current on the CPU that emits `sched_waking`; a waking
//!   in hardirq/softirq context (the flags column, or between irq/softirq
//!   entry and exit events on that CPU) is attributed to the interrupt path,
//!   one from the idle task to a timer, one from a task outside the set to
//!   that task ("external");
//! - a block: a `sched_switch` whose prev_state is not runnable (S, D, I, ...);
//!   preemption: prev_state R/R+;
//! - sync: a wakeup is taken as WF_SYNC when, within [`SYNC_WINDOW_NS`] of
//!   the waking and without waking anyone else in between, the waker blocks
//!   (the pipe/socket write-then-read pattern) or is preempted by the wakee
//!   (the wakee was placed on the waker's CPU, which is what a sync wakeup
//!   asks for); WF_SYNC itself is not traced.
// FIDELITY(F-700): WF_SYNC is inferred from the waker blocking right after the wakeup; the flag is not in the trace.

use crate::parse::{Kind, Parsed, PrevState};
use std::collections::BTreeMap;

/// A waking followed within this time by the waker blocking counts as sync.
pub const SYNC_WINDOW_NS: u64 = 50_000;

/// What ended a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// A traced task (pid).
    Task(u32),
    /// Hardirq or softirq context (network, timers, devices).
    Irq,
    /// The idle task outside interrupt context (a timer expiring on an idle CPU).
    Idle,
    /// A task outside the traced set (pid).
    External(u32),
    /// No waking event was seen (the task was switched in without one).
    Unseen,
}

/// One step of a task's recorded behaviour, with the time it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// On CPU for `ns` (between switch-in, wakeups it issued, and switch-out).
    Run {
        ns: u64,
        ts: u64,
    },
    /// Woke the traced task with index `to` out of a block.
    Post {
        to: usize,
        ts: u64,
        sync: bool,
    },
    /// Blocked at `ts`; `wake` = (time, source) once something woke it.
    Block {
        ts: u64,
        wake: Option<(u64, Source)>,
    },
    /// Forked the traced task with index `child`.
    Fork {
        child: usize,
        ts: u64,
    },
    Exit {
        ts: u64,
    },
}

#[derive(Clone, Debug, Default)]
pub struct TaskTrace {
    pub pid: u32,
    pub tgid: u32,
    pub comm: String,
    /// Index of the parent in [`Analysis::tasks`] when forked inside the trace.
    pub parent: Option<usize>,
    pub steps: Vec<Step>,
    pub cpu_ns: u64,
    pub voluntary: u64,
    pub involuntary: u64,
    pub migrations: u64,
    /// Wakings of this task (sched_waking), and those inferred sync.
    pub wakeups: u64,
    pub wakeups_sync: u64,
    /// Wakeups this task issued to traced tasks.
    pub wakes_issued: u64,
    /// Runnable-to-running delays (ns): after a wakeup, fork or preemption.
    pub run_delays: Vec<u64>,
}

/// The analysed trace.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub tasks: Vec<TaskTrace>,
    pub nr_cpus: u16,
    pub start_ns: u64,
    pub end_ns: u64,
    /// (waker label, wakee role) -> (wakeups, inferred sync).
    pub edges: BTreeMap<(String, String), (u64, u64)>,
}

/// A task's role: its comm with trailing numbers and separators removed
/// (`kworker/3:1` -> `kworker`, `hackbench` -> `hackbench`).
pub fn role(comm: &str) -> String {
    let r = comm.trim_end_matches(|c: char| c.is_ascii_digit() || "-_.:/ ".contains(c));
    if r.is_empty() {
        comm.to_string()
    } else {
        r.to_string()
    }
}

#[derive(Default, Clone)]
struct Live {
    on_cpu: bool,
    run_mark: u64,
    runnable_since: Option<u64>,
    open_block: Option<usize>,
    /// The last Post this task issued, while it may still turn out sync.
    sync_candidate: Option<usize>,
}

impl Analysis {
    /// Build from parsed events; `root` restricts to that process tree.
    pub fn new(p: &Parsed, root: Option<u32>) -> Analysis {
        let mut a = Analysis { nr_cpus: p.nr_cpus, ..Default::default() };
        a.start_ns = p.events.first().map_or(0, |e| e.ts);
        a.end_ns = p.events.last().map_or(0, |e| e.ts);
        let mut index: BTreeMap<u32, usize> = BTreeMap::new();
        let mut live: Vec<Live> = Vec::new();
        let mut irq_depth = vec![0i32; p.nr_cpus as usize];
        let in_set = |pid: u32, index: &BTreeMap<u32, usize>| pid != 0 && (root.is_none() || index.contains_key(&pid));
        let add = |a: &mut Analysis, live: &mut Vec<Live>, index: &mut BTreeMap<u32, usize>, pid: u32| -> usize {
            *index.entry(pid).or_insert_with(|| {
                a.tasks.push(TaskTrace {
                    pid,
                    tgid: p.tgids.get(&pid).copied().unwrap_or(pid),
                    comm: p.comms.get(&pid).cloned().unwrap_or_else(|| format!("pid{pid}")),
                    ..Default::default()
                });
                live.push(Live::default());
                a.tasks.len() - 1
            })
        };
        if let Some(r) = root {
            add(&mut a, &mut live, &mut index, r);
        }
        let emit_run = |t: &mut TaskTrace, l: &mut Live, ts: u64| {
            if l.on_cpu && ts > l.run_mark {
                let ns = ts - l.run_mark;
                t.cpu_ns += ns;
                match t.steps.last_mut() {
                    Some(Step::Run { ns: n, .. }) => *n += ns,
                    _ => t.steps.push(Step::Run { ns, ts: l.run_mark }),
                }
            }
            l.run_mark = ts;
        };
        for e in &p.events {
            let ts = e.ts;
            let cpu = e.cpu as usize;
            match e.kind {
                Kind::IrqEntry | Kind::SoftirqEntry => irq_depth[cpu] += 1,
                Kind::IrqExit | Kind::SoftirqExit => irq_depth[cpu] = (irq_depth[cpu] - 1).max(0),
                Kind::Switch { prev, prev_state, next } => {
                    if in_set(prev, &index) {
                        let i = add(&mut a, &mut live, &mut index, prev);
                        let (t, l) = (&mut a.tasks[i], &mut live[i]);
                        emit_run(t, l, ts);
                        l.on_cpu = false;
                        match prev_state {
                            PrevState::Runnable | PrevState::Blocked => {
                                let blocked = prev_state == PrevState::Blocked;
                                if blocked {
                                    t.voluntary += 1;
                                } else {
                                    t.involuntary += 1;
                                    l.runnable_since = Some(ts);
                                }
                                if let Some(k) = l.sync_candidate {
                                    if let Step::Post { ts: pts, to, .. } = t.steps[k] {
                                        if ts - pts <= SYNC_WINDOW_NS && (blocked || a.tasks[to].pid == next) {
                                            if let Step::Post { sync, .. } = &mut a.tasks[i].steps[k] {
                                                *sync = true;
                                            }
                                            a.tasks[to].wakeups_sync += 1;
                                            let key = (role(&a.tasks[i].comm), role(&a.tasks[to].comm));
                                            a.edges.entry(key).or_default().1 += 1;
                                        }
                                    }
                                }
                                if blocked {
                                    let t = &mut a.tasks[i];
                                    t.steps.push(Step::Block { ts, wake: None });
                                    l.open_block = Some(t.steps.len() - 1);
                                }
                            }
                            PrevState::Dead => {}
                        }
                        l.sync_candidate = None;
                    }
                    if in_set(next, &index) {
                        let i = add(&mut a, &mut live, &mut index, next);
                        let (t, l) = (&mut a.tasks[i], &mut live[i]);
                        if let Some(k) = l.open_block.take() {
                            if let Step::Block { wake, .. } = &mut t.steps[k] {
                                *wake = Some((ts, Source::Unseen));
                            }
                        }
                        if let Some(r) = l.runnable_since.take() {
                            t.run_delays.push(ts - r);
                        }
                        l.on_cpu = true;
                        l.run_mark = ts;
                    }
                }
                Kind::Waking { pid, .. } => {
                    if !in_set(pid, &index) {
                        continue;
                    }
                    let ti = add(&mut a, &mut live, &mut index, pid);
                    let w = e.pid;
                    let irq = e.irq_flag.unwrap_or(false) || irq_depth[cpu] > 0;
                    let src = if irq {
                        Source::Irq
                    } else if w == 0 {
                        Source::Idle
                    } else if in_set(w, &index) {
                        Source::Task(w)
                    } else {
                        Source::External(w)
                    };
                    a.tasks[ti].wakeups += 1;
                    if live[ti].runnable_since.is_none() && !live[ti].on_cpu {
                        live[ti].runnable_since = Some(ts);
                    }
                    let label = match src {
                        Source::Task(w) => role(&p.comms.get(&w).cloned().unwrap_or_default()),
                        Source::Irq => "[irq/softirq]".into(),
                        Source::Idle => "[timer]".into(),
                        Source::External(w) => format!("[external {}]", role(p.comms.get(&w).map_or("?", |s| s))),
                        Source::Unseen => "[unseen]".into(),
                    };
                    a.edges.entry((label, role(&a.tasks[ti].comm))).or_default().0 += 1;
                    let Some(k) = live[ti].open_block.take() else { continue };
                    if let Step::Block { wake, .. } = &mut a.tasks[ti].steps[k] {
                        *wake = Some((ts, src));
                    }
                    if let Source::Task(w) = src {
                        let wi = add(&mut a, &mut live, &mut index, w);
                        let (t, l) = (&mut a.tasks[wi], &mut live[wi]);
                        emit_run(t, l, ts);
                        t.steps.push(Step::Post { to: ti, ts, sync: false });
                        t.wakes_issued += 1;
                        l.sync_candidate = Some(t.steps.len() - 1);
                    }
                }
                Kind::Wakeup { pid } | Kind::WakeupNew { pid, .. } => {
                    if in_set(pid, &index) {
                        let i = add(&mut a, &mut live, &mut index, pid);
                        if live[i].runnable_since.is_none() && !live[i].on_cpu {
                            live[i].runnable_since = Some(ts);
                        }
                    }
                }
                Kind::Migrate { pid, .. } => {
                    if in_set(pid, &index) {
                        let i = add(&mut a, &mut live, &mut index, pid);
                        a.tasks[i].migrations += 1;
                    }
                }
                Kind::Fork { parent, child } => {
                    if in_set(parent, &index) {
                        let pi = add(&mut a, &mut live, &mut index, parent);
                        let ci = add(&mut a, &mut live, &mut index, child);
                        a.tasks[ci].parent = Some(pi);
                        let (t, l) = (&mut a.tasks[pi], &mut live[pi]);
                        emit_run(t, l, ts);
                        t.steps.push(Step::Fork { child: ci, ts });
                    }
                }
                Kind::Exit { pid } => {
                    if in_set(pid, &index) {
                        let i = add(&mut a, &mut live, &mut index, pid);
                        let (t, l) = (&mut a.tasks[i], &mut live[i]);
                        emit_run(t, l, ts);
                        t.steps.push(Step::Exit { ts });
                    }
                }
            }
        }
        a
    }
}
