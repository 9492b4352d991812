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
#[cfg(test)]
pub fn encode(tr: &Trace, meta: &Meta) -> Vec<u8> {
    let mut v = Vec::new();
    write(tr, meta, &mut v).expect("writing to a Vec cannot fail");
    v
}

/// Writes the trace to `out`, packet by packet.
pub fn write(tr: &Trace, meta: &Meta, out: &mut impl std::io::Write) -> std::io::Result<()> {
    let mut put = |p: &Msg| -> std::io::Result<()> {
        let mut rec = Msg::new();
        rec.msg(TRACE_PACKET, p);
        out.write_all(&rec.buf)
    };

    let mut p = Msg::new();
    p.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, SEQUENCE_ID).with(packet::SYSTEM_INFO, |si| {
        si.with(system_info::UTSNAME, |u| {
            u.string(system_info::SYSNAME, "Linux").string(system_info::VERSION, &meta.version).string(system_info::RELEASE, &meta.release);
        })
        .uint(system_info::NUM_CPUS, tr.nr_cpus as u64);
    });
    put(&p)?;

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
    put(&p)?;

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
            put(&p)?;
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A field as read back: (number, varint value or bytes).
    #[derive(Debug, PartialEq)]
    enum F<'a> {
        V(u32, u64),
        B(u32, &'a [u8]),
    }

    fn varint(b: &[u8], i: &mut usize) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let x = b[*i];
            *i += 1;
            v |= ((x & 0x7f) as u64) << shift;
            if x < 0x80 {
                return v;
            }
            shift += 7;
        }
    }

    /// Splits a message into its fields (wire types 0 and 2 only, as written here).
    fn fields(b: &[u8]) -> Vec<F<'_>> {
        let (mut i, mut out) = (0, Vec::new());
        while i < b.len() {
            let key = varint(b, &mut i);
            let n = (key >> 3) as u32;
            match key & 7 {
                0 => out.push(F::V(n, varint(b, &mut i))),
                2 => {
                    let len = varint(b, &mut i) as usize;
                    out.push(F::B(n, &b[i..i + len]));
                    i += len;
                }
                w => panic!("wire type {w} at field {n}"),
            }
        }
        out
    }

    fn sub<'a>(fs: &[F<'a>], n: u32) -> Vec<&'a [u8]> {
        fs.iter().filter_map(|f| if let F::B(m, b) = f { (*m == n).then_some(*b) } else { None }).collect()
    }

    fn val(fs: &[F<'_>], n: u32) -> Option<u64> {
        fs.iter().find_map(|f| if let F::V(m, v) = f { (*m == n).then_some(*v) } else { None })
    }

    #[test]
    fn packets_carry_the_documented_field_numbers() {
        let tr = crate::trace::ftrace::tests::tiny();
        let meta = Meta { release: "6.12.0-schedlab".into(), version: "#1".into() };
        let bytes = encode(&tr, &meta);
        let packets = sub(&fields(&bytes), TRACE_PACKET);
        // system_info, process_tree, one bundle per CPU.
        assert_eq!(packets.len(), 4);
        let p0 = fields(packets[0]);
        assert_eq!(val(&p0, 10), Some(1), "trusted_packet_sequence_id = 10");
        let si = fields(sub(&p0, 45)[0]);
        assert_eq!(val(&si, 8), Some(2), "SystemInfo.num_cpus = 8");
        let uts = fields(sub(&si, 1)[0]);
        assert_eq!(uts, [F::B(1, b"Linux"), F::B(2, b"#1"), F::B(3, b"6.12.0-schedlab")]);

        let pt = fields(sub(&fields(packets[1]), 2)[0]);
        let procs = sub(&pt, 1);
        assert_eq!(procs.len(), 1, "one process: 1001 is a thread of 1000");
        assert_eq!(fields(procs[0]), [F::V(1, 1000), F::V(2, 0), F::B(3, b"sched-pipe")]);
        let threads = sub(&pt, 2);
        assert_eq!(fields(threads[1]), [F::V(1, 1001), F::B(2, b"worker"), F::V(3, 1000)]);

        // CPU 0's bundle: cpu = 1, events = 2, in time order.
        let b0 = fields(sub(&fields(packets[2]), 1)[0]);
        assert_eq!(val(&b0, 1), Some(0));
        let evs = sub(&b0, 2);
        assert_eq!(evs.len(), 5);
        // The preemption at 12.345678901 s: FtraceEvent{timestamp=1, pid=2, sched_switch=4{...}}.
        let e = fields(evs[4]);
        assert_eq!(val(&e, 1), Some(12_345_678_901));
        assert_eq!(val(&e, 2), Some(1000));
        let sw = fields(sub(&e, 4)[0]);
        assert_eq!(
            sw,
            [F::B(1, b"sched-pipe"), F::V(2, 1000), F::V(3, 120), F::V(4, 0x100), F::B(5, b"swapper/0"), F::V(6, 0), F::V(7, 120)]
        );
        // CPU 1: sched_waking = 20 {comm, pid, prio, target_cpu = 5}; sched_migrate_task = 491.
        let b1 = fields(sub(&fields(packets[3]), 1)[0]);
        assert_eq!(val(&b1, 1), Some(1));
        let evs = sub(&b1, 2);
        let waking = fields(sub(&fields(evs[1]), 20)[0]);
        assert_eq!(waking, [F::B(1, b"sched-pipe"), F::V(2, 1000), F::V(3, 120), F::V(5, 0)]);
        let migrate = fields(sub(&fields(evs[2]), 491)[0]);
        assert_eq!(migrate, [F::B(1, b"sched-pipe"), F::V(2, 1000), F::V(3, 120), F::V(4, 0), F::V(5, 1)]);
        assert_eq!(sub(&fields(evs[3]), 238).len(), 1, "sched_process_exit = 238");
    }

    #[test]
    fn release_follows_the_profile_from_4_14() {
        let p = |n| schedlab_kernel::profile::profile(n).unwrap();
        assert_eq!(super::super::release_of(&p("v6.12")), "6.12.0-schedlab");
        assert_eq!(super::super::release_of(&p("v5.11")), "5.11.0-schedlab");
        assert_eq!(super::super::release_of(&p("v3.10")), "4.14.0-schedlab-v3.10");
    }
}
