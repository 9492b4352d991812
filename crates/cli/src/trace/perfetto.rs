//! Perfetto protobuf traces (`.pftrace`): a `Trace` is a sequence of
//! `TracePacket`s, each written as field 1 (length-delimited) of the
//! top-level message, so the file is the concatenation of those records.
//!
//! Packets written, in order (field numbers from google/perfetto's protos,
//! checked against the `perfetto` Python package's perfetto_trace_pb2):
//! 1. `system_info` with `utsname` (Perfetto decodes prev_state by kernel release);
//! 2. `process_tree` with every process and thread (names before events);
//! 3. per CPU, `ftrace_events` bundles (`FtraceEventBundle{cpu, event[]}`)
//!    of at most [`BUNDLE_EVENTS`] events in time order.
//!
//! Timestamps are simulated nanoseconds, read by Perfetto as the default
//! trace clock (BOOTTIME): no `ftrace_clock`, no clock snapshot needed.

use super::proto::Msg;
use super::Meta;
use schedlab_engine::trace::{Event, EventKind, Trace};

/// protos/perfetto/trace/trace.proto: `Trace.packet`.
const TRACE_PACKET: u32 = 1;

/// protos/perfetto/trace/trace_packet.proto: `TracePacket`.
mod packet {
    pub const FTRACE_EVENTS: u32 = 1;
    pub const PROCESS_TREE: u32 = 2;
    pub const TIMESTAMP: u32 = 8;
    pub const TRUSTED_PACKET_SEQUENCE_ID: u32 = 10;
    pub const SYSTEM_INFO: u32 = 45;
}

/// protos/perfetto/trace/system_info.proto: `SystemInfo` and `Utsname`.
mod system_info {
    pub const UTSNAME: u32 = 1;
    pub const NUM_CPUS: u32 = 8;
    pub const SYSNAME: u32 = 1;
    pub const VERSION: u32 = 2;
    pub const RELEASE: u32 = 3;
}

/// protos/perfetto/trace/ps/process_tree.proto: `ProcessTree`, `.Process`, `.Thread`.
mod process_tree {
    pub const PROCESSES: u32 = 1;
    pub const THREADS: u32 = 2;
    pub const PROCESS_PID: u32 = 1;
    pub const PROCESS_PPID: u32 = 2;
    pub const PROCESS_CMDLINE: u32 = 3;
    pub const THREAD_TID: u32 = 1;
    pub const THREAD_NAME: u32 = 2;
    pub const THREAD_TGID: u32 = 3;
}

/// protos/perfetto/trace/ftrace/ftrace_event_bundle.proto: `FtraceEventBundle`.
mod bundle {
    pub const CPU: u32 = 1;
    pub const EVENT: u32 = 2;
}

/// protos/perfetto/trace/ftrace/ftrace_event.proto: `FtraceEvent` (the
/// event payload is a oneof; each member's number names its type).
mod event {
    pub const TIMESTAMP: u32 = 1;
    pub const PID: u32 = 2;
    pub const SCHED_SWITCH: u32 = 4;
    pub const SCHED_WAKEUP: u32 = 17;
    pub const SCHED_WAKING: u32 = 20;
    pub const SCHED_WAKEUP_NEW: u32 = 114;
    pub const SCHED_PROCESS_EXIT: u32 = 238;
    pub const SCHED_PROCESS_FORK: u32 = 239;
    pub const SCHED_MIGRATE_TASK: u32 = 491;
}

/// protos/perfetto/trace/ftrace/sched.proto: the sched_* event messages.
mod sched {
    // SchedSwitchFtraceEvent
    pub const PREV_COMM: u32 = 1;
    pub const PREV_PID: u32 = 2;
    pub const PREV_PRIO: u32 = 3;
    pub const PREV_STATE: u32 = 4;
    pub const NEXT_COMM: u32 = 5;
    pub const NEXT_PID: u32 = 6;
    pub const NEXT_PRIO: u32 = 7;
    // SchedWaking / SchedWakeup / SchedWakeupNew FtraceEvent (one layout)
    pub const COMM: u32 = 1;
    pub const PID: u32 = 2;
    pub const PRIO: u32 = 3;
    pub const TARGET_CPU: u32 = 5;
    // SchedMigrateTaskFtraceEvent (comm, pid, prio as above)
    pub const ORIG_CPU: u32 = 4;
    pub const DEST_CPU: u32 = 5;
    // SchedProcessExitFtraceEvent (comm, pid as above)
    pub const EXIT_TGID: u32 = 3;
    pub const EXIT_PRIO: u32 = 4;
    // SchedProcessForkFtraceEvent
    pub const PARENT_COMM: u32 = 1;
    pub const PARENT_PID: u32 = 2;
    pub const CHILD_COMM: u32 = 3;
    pub const CHILD_PID: u32 = 4;
}

/// The one packet sequence this writer produces.
const SEQUENCE_ID: u64 = 1;

/// Events per `FtraceEventBundle` (traced_probes also cuts per-CPU data into pages).
pub const BUNDLE_EVENTS: usize = 4096;

/// The whole trace file.
pub fn encode(tr: &Trace, meta: &Meta) -> Vec<u8> {
    let mut out = Vec::new();
    let mut put = |p: &Msg| {
        let mut rec = Msg::new();
        rec.msg(TRACE_PACKET, p);
        out.extend_from_slice(&rec.buf);
    };

    let mut p = Msg::new();
    p.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, SEQUENCE_ID).with(packet::SYSTEM_INFO, |si| {
        si.with(system_info::UTSNAME, |u| {
            u.string(system_info::SYSNAME, "Linux").string(system_info::VERSION, &meta.version).string(system_info::RELEASE, &meta.release);
        })
        .uint(system_info::NUM_CPUS, tr.nr_cpus as u64);
    });
    put(&p);

    let mut p = Msg::new();
    p.uint(packet::TIMESTAMP, 0).uint(packet::TRUSTED_PACKET_SEQUENCE_ID, SEQUENCE_ID).with(packet::PROCESS_TREE, |pt| {
        for t in tr.tasks.iter().filter(|t| t.pid == t.tgid) {
            pt.with(process_tree::PROCESSES, |m| {
                m.int(process_tree::PROCESS_PID, t.pid as i64)
                    .int(process_tree::PROCESS_PPID, t.ppid as i64)
                    .string(process_tree::PROCESS_CMDLINE, &t.comm);
            });
        }
        for t in &tr.tasks {
            pt.with(process_tree::THREADS, |m| {
                m.int(process_tree::THREAD_TID, t.pid as i64)
                    .string(process_tree::THREAD_NAME, &t.comm)
                    .int(process_tree::THREAD_TGID, t.tgid as i64);
            });
        }
    });
    put(&p);

    let mut per_cpu: Vec<Vec<&Event>> = vec![Vec::new(); tr.nr_cpus as usize];
    for e in &tr.events {
        per_cpu[e.cpu as usize].push(e);
    }
    for (cpu, evs) in per_cpu.iter().enumerate() {
        // An empty bundle still tells Perfetto the CPU exists.
        let chunks: Vec<&[&Event]> = if evs.is_empty() { vec![&[]] } else { evs.chunks(BUNDLE_EVENTS).collect() };
        for chunk in chunks {
            let mut p = Msg::new();
            p.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, SEQUENCE_ID).with(packet::FTRACE_EVENTS, |b| {
                b.uint(bundle::CPU, cpu as u64);
                for e in chunk {
                    b.with(bundle::EVENT, |m| ftrace_event(m, tr, e));
                }
            });
            put(&p);
        }
    }
    out
}

/// One `FtraceEvent`: common fields, then the sched payload.
fn ftrace_event(m: &mut Msg, tr: &Trace, e: &Event) {
    m.uint(event::TIMESTAMP, e.ts).uint(event::PID, tr.pid(e.current) as u64);
    let who = |m: &mut Msg, t: u32| {
        let t = Some(t);
        m.string(sched::COMM, &tr.comm(t, e.cpu)).int(sched::PID, tr.pid(t) as i64).int(sched::PRIO, tr.prio(t) as i64);
    };
    match e.kind {
        EventKind::Switch { prev, prev_state, next } => {
            m.with(event::SCHED_SWITCH, |s| {
                s.string(sched::PREV_COMM, &tr.comm(prev, e.cpu))
                    .int(sched::PREV_PID, tr.pid(prev) as i64)
                    .int(sched::PREV_PRIO, tr.prio(prev) as i64)
                    .int(sched::PREV_STATE, prev_state.raw())
                    .string(sched::NEXT_COMM, &tr.comm(next, e.cpu))
                    .int(sched::NEXT_PID, tr.pid(next) as i64)
                    .int(sched::NEXT_PRIO, tr.prio(next) as i64);
            });
        }
        EventKind::Waking { task, target_cpu } | EventKind::Wakeup { task, target_cpu } | EventKind::WakeupNew { task, target_cpu } => {
            let field = match e.kind {
                EventKind::Waking { .. } => event::SCHED_WAKING,
                EventKind::Wakeup { .. } => event::SCHED_WAKEUP,
                _ => event::SCHED_WAKEUP_NEW,
            };
            m.with(field, |s| {
                // No `success`: v4.3+ kernels dropped it from the tracepoint.
                who(s, task);
                s.int(sched::TARGET_CPU, target_cpu as i64);
            });
        }
        EventKind::Migrate { task, orig_cpu, dest_cpu } => {
            m.with(event::SCHED_MIGRATE_TASK, |s| {
                who(s, task);
                s.int(sched::ORIG_CPU, orig_cpu as i64).int(sched::DEST_CPU, dest_cpu as i64);
            });
        }
        EventKind::Fork { parent, child } => {
            m.with(event::SCHED_PROCESS_FORK, |s| {
                let (p, c) = (Some(parent), Some(child));
                s.string(sched::PARENT_COMM, &tr.comm(p, e.cpu))
                    .int(sched::PARENT_PID, tr.pid(p) as i64)
                    .string(sched::CHILD_COMM, &tr.comm(c, e.cpu))
                    .int(sched::CHILD_PID, tr.pid(c) as i64);
            });
        }
        EventKind::Exit { task } => {
            m.with(event::SCHED_PROCESS_EXIT, |s| {
                let t = Some(task);
                s.string(sched::COMM, &tr.comm(t, e.cpu))
                    .int(sched::PID, tr.pid(t) as i64)
                    .int(sched::EXIT_TGID, tr.tasks[task as usize].tgid as i64)
                    .int(sched::EXIT_PRIO, tr.prio(t) as i64);
            });
        }
    }
}
