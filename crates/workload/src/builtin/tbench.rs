//! tbench (dbench's sockio backend over loopback TCP; benchmark-workloads §5.1).
//!
//! N client processes, each connected to its own forked tbench_srv process.
//! Every SMB operation of client.txt is one synchronous round trip: the client
//! sends the request, the server reads it and replies with the size the
//! client asked for. Loopback delivery runs in softirq on the sender's CPU
//! and wakes the reader with WF_SYNC, in both directions.
//!
//! The 458,344-line client.txt is approximated by a fixed cycle of 11
//! operations with its op mix and payload (5.6 KB of counted payload per op
//! vs 5.4 KB in the real file); see docs/FIDELITY.md F-103.

use super::costs::{tcp_recv_ns, tcp_send_ns};
use super::{push_prog, start_task, Builtin, COUNTER_OPS, HIST_REQUEST};
use crate::params::{ParamDoc, Params};
use crate::{Arrivals, ChannelKind, ChannelSpec, MetricSpec, Op, Workload, WorkloadError};

pub const BUILTIN: Builtin = Builtin {
    name: "tbench",
    summary: "tbench: client/server process pairs over loopback TCP replaying client.txt's op mix",
    metric: "throughput (MB/s of ReadX/WriteX payload, higher is better)",
    params: &[
        ParamDoc { key: "clients", default: "10", help: "client processes = server processes (tbench N)" },
        ParamDoc {
            key: "threads",
            default: "0",
            help: "1: each client and its server are two threads of one process (seed 002's \"client processes with 2 threads\")",
        },
        ParamDoc {
            key: "rate",
            default: "0",
            help: "open loop: operations/s from remote tbench clients (all connections) through the NIC receive path; 0 = on-box client processes",
        },
        ParamDoc { key: "rx_queues", default: "all CPUs", help: "open loop: NIC receive queues, their interrupts on CPUs 0..rx_queues" },
        ParamDoc {
            key: "cpu_pct",
            default: "100",
            help: "per-operation CPU costs (client and server work, socket send and receive) in % of those measured on the guest; a machine slower per operation than the guest takes more (seed 002's case sets it from the published base, docs/CALIBRATION.md)",
        },
    ],
    build,
};

/// Client-side CPU per operation outside the socket calls (load-file parsing,
/// SMB marshalling in sockio.c): measured on the guest, tbench 2 clients
/// without perf counters (1,624 us of client CPU per MB of the whole run,
/// dbench's warmup included: session 22), less the model's socket, copy and
/// switch costs (docs/CALIBRATION.md "dbench's warmup").
pub const CLIENT_OP_NS: u64 = 2_970;
/// Server-side CPU per operation besides the socket calls (tbench_srv just
/// echoes): measured the same way (1,591 us of server CPU per MB).
pub const SERVER_OP_NS: u64 = 2_800;

/// One cycle of the op mix: (what, request bytes, response bytes, counted payload).
/// client.txt counts: ReadX 27%, NTCreateX 17%, QUERY_PATH_INFORMATION 16%,
/// Close 13%, WriteX 9%, FIND_FIRST 6%, others 12% (§5.1).
pub const CYCLE: &[(&str, u64, u64, u64)] = &[
    ("NTCreateX", 110, 87, 0),
    ("ReadX", 59, 59 + 11_900, 11_900),
    ("QUERY_PATH_INFORMATION", 60, 70, 0),
    ("ReadX", 59, 59 + 11_900, 11_900),
    ("WriteX", 59 + 25_700, 55, 25_700),
    ("Close", 45, 39, 0),
    ("FIND_FIRST", 70, 39 + 90 * 4, 0),
    ("NTCreateX", 110, 87, 0),
    ("ReadX", 59, 59 + 11_900, 11_900),
    ("QUERY_PATH_INFORMATION", 60, 70, 0),
    ("Close", 45, 39, 0),
];

// FIDELITY(F-102): loopback TCP as sync channels. FIDELITY(F-103): client.txt as an 11-op cycle.
// FIDELITY(F-661): per-op costs are constants; nothing grows with the number of clients
// (loopback shared state, copy bandwidth, all-core turbo), so throughput scales to the CPU count.
fn build(p: &Params, nr_cpus: usize, _cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let clients = p.u64_in("clients", 10, 1, 50_000)? as u32;
    let threads = p.flag("threads", false)?;
    let rate = p.u64_in("rate", 0, 0, 100_000_000)?;
    if rate == 0 && p.get("rx_queues").is_some() {
        return Err(WorkloadError("tbench: rx_queues applies to the open loop only; add rate=OPS_PER_S or drop rx_queues".into()));
    }
    // FIDELITY(F-680): one factor scales every per-operation cost to another machine.
    let cpu_pct = p.u64_in("cpu_pct", 100, 10, 10_000)?;
    let scaled = |ns: u64| ns * cpu_pct / 100;
    let (client_op, server_op) = (scaled(CLIENT_OP_NS), scaled(SERVER_OP_NS));
    let (send_ns, recv_ns) = (|b: u64| scaled(tcp_send_ns(b)), |b: u64| scaled(tcp_recv_ns(b)));
    let sock = ChannelSpec { capacity: if rate > 0 { 1024 } else { 64 }, sync: rate == 0, kind: ChannelKind::Socket, epoll: None };
    let mut params = vec![("clients".into(), clients.to_string()), ("threads".into(), (threads as u8).to_string())];
    if cpu_pct != 100 {
        params.push(("cpu_pct".into(), cpu_pct.to_string()));
    }
    let metric = MetricSpec::ScaledRate {
        name: "throughput".into(),
        unit: "MB/s".into(),
        counter: COUNTER_OPS,
        divisor: 1_000_000,
        start: None,
        end: None,
    };
    let mut w = Workload::new("tbench", params, metric, true, 10);
    if rate > 0 {
        // Open loop: only the tbench_srv processes run here; each connection
        // gets rate / clients operations per second of client.txt's mix from a
        // remote tbench (the ops of one connection cycle through CYCLE).
        let queues = p.u64_in("rx_queues", nr_cpus as u64, 1, nr_cpus.max(1) as u64)?;
        w.params.push(("rate".into(), rate.to_string()));
        w.params.push(("rx_queues".into(), queues.to_string()));
        let mut conns = Vec::new();
        for i in 0..clients {
            let req = w.channels.len() as u32;
            w.channels.push(sock.clone());
            let mut server = vec![Op::Loop { count: u64::MAX }];
            for &(_, send, recv, payload) in CYCLE {
                server.extend([
                    Op::Read { chan: req, cost: recv_ns(send) },
                    Op::Run { ns: server_op },
                    Op::Run { ns: send_ns(recv) },
                    Op::ReqEnd { hist: HIST_REQUEST },
                ]);
                if payload > 0 {
                    server.push(Op::Count { id: COUNTER_OPS, n: payload });
                }
            }
            server.push(Op::EndLoop);
            let sp = push_prog(&mut w, server);
            let smm = if threads { 1 + i } else { 2 + 2 * i };
            w.tasks.push(start_task(format!("tbench_srv-{i}"), sp, smm));
            conns.push((req, i, super::rss_queue(i, queues)));
        }
        w.arrivals = Some(Arrivals { rate_per_s: rate as f64, conns, rx_ns: super::memcached::RX_NS, hist: HIST_REQUEST });
        return Ok(w);
    }
    let mut servers = Vec::new();
    for i in 0..clients {
        let req = w.channels.len() as u32;
        w.channels.push(sock.clone());
        w.channels.push(sock.clone());
        let resp = req + 1;
        let mut client = vec![Op::Loop { count: u64::MAX }];
        let mut server = vec![Op::Loop { count: u64::MAX }];
        for &(_, send, recv, payload) in CYCLE {
            client.extend([
                Op::Run { ns: client_op },
                Op::Write { chan: req, cost: send_ns(send) },
                Op::Read { chan: resp, cost: recv_ns(recv) },
            ]);
            if payload > 0 {
                client.push(Op::Count { id: COUNTER_OPS, n: payload });
            }
            server.extend([
                Op::Read { chan: req, cost: recv_ns(send) },
                Op::Run { ns: server_op },
                Op::Write { chan: resp, cost: send_ns(recv) },
            ]);
        }
        client.push(Op::EndLoop);
        server.push(Op::EndLoop);
        // Client programs first, then server programs (compact workload files).
        let cp = push_prog(&mut w, client);
        servers.push(server);
        let (cmm, smm) = if threads { (1 + i, 1 + i) } else { (1 + 2 * i, 2 + 2 * i) };
        w.tasks.push(start_task(format!("tbench-{i}"), cp, cmm));
        w.tasks.push(start_task(format!("tbench_srv-{i}"), u32::MAX, smm));
    }
    super::push_server_programs(&mut w, servers);
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn task_graph() {
        let w = crate::build("tbench", &Params::parse("clients=3").unwrap(), 12, &[]).unwrap();
        assert_eq!(w.tasks.len(), 6);
        assert_eq!(w.channels.len(), 6);
        assert!(w.channels.iter().all(|c| c.sync), "loopback TCP wakeups are WF_SYNC");
        let mut mms: Vec<u32> = w.tasks.iter().map(|t| t.mm).collect();
        mms.sort();
        mms.dedup();
        assert_eq!(mms.len(), 6, "every client and server is its own process");
        // client 1 writes channel 2 and reads channel 3; its server the reverse
        let c = &w.programs[w.tasks[2].program as usize];
        let s = &w.programs[w.tasks[3].program as usize];
        assert!(matches!(c[2], Op::Write { chan: 2, .. }) && matches!(c[3], Op::Read { chan: 3, .. }));
        assert!(matches!(s[1], Op::Read { chan: 2, .. }) && matches!(s[3], Op::Write { chan: 3, .. }));
        let payload: u64 = CYCLE.iter().map(|c| c.3).sum();
        let per_op = payload / CYCLE.len() as u64;
        assert!((5_000..6_000).contains(&per_op), "{per_op} B/op vs 5.4 KB in client.txt");
    }

    #[test]
    fn cpu_pct_scales_every_per_operation_cost() {
        let costs = |set: &str| -> Vec<u64> {
            let w = crate::build("tbench", &Params::parse(set).unwrap(), 12, &[]).unwrap();
            w.programs
                .iter()
                .flatten()
                .filter_map(|op| match *op {
                    Op::Run { ns } => Some(ns),
                    Op::Read { cost, .. } | Op::Write { cost, .. } => Some(cost),
                    _ => None,
                })
                .collect()
        };
        let (base, slow) = (costs("clients=2"), costs("clients=2,cpu_pct=300"));
        assert_eq!(base.len(), slow.len());
        assert!(base.contains(&CLIENT_OP_NS) && slow.contains(&(3 * CLIENT_OP_NS)));
        for (b, s) in base.iter().zip(&slow) {
            assert!(s.abs_diff(3 * b) <= 3, "{b} -> {s}");
        }
        let w = crate::build("tbench", &Params::parse("clients=2,cpu_pct=300").unwrap(), 12, &[]).unwrap();
        assert!(w.params.iter().any(|(k, v)| k == "cpu_pct" && v == "300"), "a scaled run says so in its parameters");
        let e = crate::build("tbench", &Params::parse("cpu_pct=0").unwrap(), 12, &[]).unwrap_err();
        assert!(e.0.contains("cpu_pct"), "{}", e.0);
    }
}
