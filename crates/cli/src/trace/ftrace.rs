//! ftrace text in the layout of tracefs' `trace` file (kernel v5.14+,
//! kernel/trace/trace_output.c `trace_print_context()` and the header of
//! `print_trace_header()`), readable by Perfetto's systrace importer and by
//! the usual ftrace text tooling.
//!
//! Line: `%16s-%-7d [%03d] FLAGS %5lu.%06lu: EVENT: PAYLOAD`, where the
//! task is the one running on the CPU when the event fired (`<idle>-0` for
//! the idle task) and the payload is the event's TP_printk output
//! (include/trace/events/sched.h).

use schedlab_engine::trace::{Event, EventKind, Trace};
use std::fmt::Write;

/// The whole file.
pub fn render(tr: &Trace) -> String {
    let n = tr.events.len();
    let mut s = String::with_capacity(160 * n + 1024);
    s.push_str("# tracer: nop\n#\n");
    let _ = writeln!(s, "# entries-in-buffer/entries-written: {n}/{n}   #P:{}", tr.nr_cpus);
    s.push_str(concat!(
        "#\n",
        "#                                _-----=> irqs-off/BH-disabled\n",
        "#                               / _----=> need-resched\n",
        "#                              | / _---=> hardirq/softirq\n",
        "#                              || / _--=> preempt-depth\n",
        "#                              ||| / _-=> migrate-disable\n",
        "#                              |||| /     delay\n",
        "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n",
        "#              | |         |   |||||     |         |\n",
    ));
    for e in &tr.events {
        line(&mut s, tr, e);
    }
    s
}

/// One event line.
// FIDELITY(F-402): latency flags are fixed per event type, not the real irq/preempt state.
pub fn line(s: &mut String, tr: &Trace, e: &Event) {
    let comm = match e.current {
        Some(_) => tr.comm(e.current, e.cpu),
        None => "<idle>".into(),
    };
    let (name, flags) = match e.kind {
        EventKind::Switch { .. } => ("sched_switch", "d..2."),
        EventKind::Waking { .. } => ("sched_waking", "d..3."),
        EventKind::Wakeup { .. } => ("sched_wakeup", "d..3."),
        EventKind::WakeupNew { .. } => ("sched_wakeup_new", "d..3."),
        EventKind::Migrate { .. } => ("sched_migrate_task", "d..3."),
        EventKind::Fork { .. } => ("sched_process_fork", "....."),
        EventKind::Exit { .. } => ("sched_process_exit", "....."),
    };
    // ns clocks print seconds and microseconds (the rest is cut, not rounded).
    let (secs, usecs) = (e.ts / 1_000_000_000, e.ts % 1_000_000_000 / 1000);
    let _ = write!(s, "{comm:>16}-{:<7} [{:03}] {flags} {secs:>5}.{usecs:06}: {name}: ", tr.pid(e.current), e.cpu);
    let task = |t: u32| (tr.comm(Some(t), e.cpu), tr.pid(Some(t)), tr.prio(Some(t)));
    let _ = match e.kind {
        EventKind::Switch { prev, prev_state, next } => writeln!(
            s,
            "prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} next_pid={} next_prio={}",
            tr.comm(prev, e.cpu),
            tr.pid(prev),
            tr.prio(prev),
            prev_state.letters(),
            tr.comm(next, e.cpu),
            tr.pid(next),
            tr.prio(next)
        ),
        EventKind::Waking { task: t, target_cpu } | EventKind::Wakeup { task: t, target_cpu } | EventKind::WakeupNew { task: t, target_cpu } => {
            let (c, p, pr) = task(t);
            writeln!(s, "comm={c} pid={p} prio={pr} target_cpu={target_cpu:03}")
        }
        EventKind::Migrate { task: t, orig_cpu, dest_cpu } => {
            let (c, p, pr) = task(t);
            writeln!(s, "comm={c} pid={p} prio={pr} orig_cpu={orig_cpu} dest_cpu={dest_cpu}")
        }
        EventKind::Fork { parent, child } => {
            let ((pc, pp, _), (cc, cp, _)) = (task(parent), task(child));
            writeln!(s, "comm={pc} pid={pp} child_comm={cc} child_pid={cp}")
        }
        EventKind::Exit { task: t } => {
            let (c, p, pr) = task(t);
            writeln!(s, "comm={c} pid={p} prio={pr}")
        }
    };
}
