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

/// Writes the whole file to `out`, line by line.
pub fn write(tr: &Trace, out: &mut impl std::io::Write) -> std::io::Result<()> {
    let n = tr.events.len();
    let mut s = String::with_capacity(2048);
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
    out.write_all(s.as_bytes())?;
    for e in &tr.events {
        s.clear();
        line(&mut s, tr, e);
        out.write_all(s.as_bytes())?;
    }
    Ok(())
}

/// The whole file as a string.
#[cfg(test)]
pub fn render(tr: &Trace) -> String {
    let mut v = Vec::new();
    write(tr, &mut v).expect("writing to a Vec cannot fail");
    String::from_utf8(v).expect("the trace is UTF-8")
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
        EventKind::Waking { task: t, target_cpu }
        | EventKind::Wakeup { task: t, target_cpu }
        | EventKind::WakeupNew { task: t, target_cpu } => {
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use schedlab_engine::trace::{PrevState, TraceTask};

    pub(crate) fn tiny() -> Trace {
        let mut tr = Trace::new(2);
        tr.tasks.push(TraceTask { pid: 1000, tgid: 1000, ppid: 0, comm: "sched-pipe".into(), prio: 120 });
        tr.tasks.push(TraceTask { pid: 1001, tgid: 1000, ppid: 1000, comm: "worker".into(), prio: 125 });
        let ev = |ts, cpu, current, kind| Event { ts, cpu, current, kind };
        tr.events = vec![
            ev(0, 0, None, EventKind::WakeupNew { task: 0, target_cpu: 0 }),
            ev(0, 0, None, EventKind::Switch { prev: None, prev_state: PrevState::Running, next: Some(0) }),
            ev(1_500, 0, Some(0), EventKind::Fork { parent: 0, child: 1 }),
            ev(1_500, 0, Some(0), EventKind::WakeupNew { task: 1, target_cpu: 1 }),
            ev(2_000_999, 1, None, EventKind::Switch { prev: None, prev_state: PrevState::Running, next: Some(1) }),
            ev(3_000_000_000, 1, Some(1), EventKind::Waking { task: 0, target_cpu: 0 }),
            ev(3_000_000_000, 1, Some(1), EventKind::Migrate { task: 0, orig_cpu: 0, dest_cpu: 1 }),
            ev(12_345_678_901, 0, Some(0), EventKind::Switch { prev: Some(0), prev_state: PrevState::Preempted, next: None }),
            ev(12_345_678_901, 1, Some(1), EventKind::Exit { task: 1 }),
            ev(12_345_678_901, 1, Some(1), EventKind::Switch { prev: Some(1), prev_state: PrevState::Dead, next: None }),
        ];
        tr
    }

    /// The kernel's layout (ecosystem reference §1.1): `%16s-%-7d [%03d] flags %5lu.%06lu: event: payload`.
    #[test]
    fn lines_have_the_kernel_layout() {
        let text = render(&tiny());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# tracer: nop");
        assert_eq!(lines[2], "# entries-in-buffer/entries-written: 10/10   #P:2");
        assert_eq!(lines[10], "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION");
        let body: Vec<&str> = lines.iter().copied().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            body,
            [
                "          <idle>-0       [000] d..3.     0.000000: sched_wakeup_new: comm=sched-pipe pid=1000 prio=120 target_cpu=000",
                "          <idle>-0       [000] d..2.     0.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sched-pipe next_pid=1000 next_prio=120",
                "      sched-pipe-1000    [000] .....     0.000001: sched_process_fork: comm=sched-pipe pid=1000 child_comm=worker child_pid=1001",
                "      sched-pipe-1000    [000] d..3.     0.000001: sched_wakeup_new: comm=worker pid=1001 prio=125 target_cpu=001",
                "          <idle>-0       [001] d..2.     0.002000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=worker next_pid=1001 next_prio=125",
                "          worker-1001    [001] d..3.     3.000000: sched_waking: comm=sched-pipe pid=1000 prio=120 target_cpu=000",
                "          worker-1001    [001] d..3.     3.000000: sched_migrate_task: comm=sched-pipe pid=1000 prio=120 orig_cpu=0 dest_cpu=1",
                "      sched-pipe-1000    [000] d..2.    12.345678: sched_switch: prev_comm=sched-pipe prev_pid=1000 prev_prio=120 prev_state=R+ ==> next_comm=swapper/0 next_pid=0 next_prio=120",
                "          worker-1001    [001] .....    12.345678: sched_process_exit: comm=worker pid=1001 prio=125",
                "          worker-1001    [001] d..2.    12.345678: sched_switch: prev_comm=worker prev_pid=1001 prev_prio=125 prev_state=X ==> next_comm=swapper/1 next_pid=0 next_prio=120",
            ]
        );
    }
}
