//! sysbench `oltp_read_write` against a mysqld-like server (benchmark-workloads §8).
//!
//! `threads` sysbench client threads (one process), each with its own
//! connection served by its own mysqld connection thread (one process,
//! thread-per-connection). One event = one transaction of 20 statements, each
//! a synchronous round trip over a socket (WF_SYNC both ways): BEGIN, 10
//! point SELECTs, 4 range SELECTs, 2 UPDATEs, DELETE, INSERT, COMMIT. Inside
//! mysqld, the writes take a short InnoDB lock-system mutex and COMMIT writes
//! the redo log under the log mutex: futex waits, woken without WF_SYNC.
//!
//! Each client records its event (transaction) latency in histogram 1
//! (`ReqStart`/`ReqEnd`); `--set metric=latency_p95` reports it as
//! `sysbench --percentile=95` does (also `latency_avg`, `latency_p99`, ...).

use super::costs::{TCP_RECV_NS, TCP_SEND_NS};
use super::{pick_metric, push_prog, start_task, Builtin, COUNTER_OPS, HIST_REQUEST};
use crate::params::{ParamDoc, Params};
use crate::{ChannelKind, ChannelSpec, MetricSpec, Op, SemSpec, Workload, WorkloadError};

pub const BUILTIN: Builtin = Builtin {
    name: "sysbench",
    summary: "sysbench oltp_read_write: client threads, one mysqld thread per connection, 20 round trips per event",
    metric: "events/s (transactions per second, higher is better)",
    params: &[
        ParamDoc { key: "threads", default: "1", help: "client threads = connections = mysqld connection threads (--threads)" },
        ParamDoc { key: "metric", default: "events", help: "reported figure: events (per second) or latency_{avg,p50,p90,p95,p99,p99.9}" },
    ],
    build,
};

/// mysqld CPU per statement of one event, in order [inferred: tens of us per
/// query, §0.1; point selects by primary key on a 10,000-row in-memory table].
pub const STATEMENTS: [(&str, u64); 20] = [
    ("BEGIN", 3_000),
    ("point_select", 15_000),
    ("point_select", 15_000),
    ("point_select", 15_000),
    ("point_select", 15_000),
    ("point_select", 15_000),
    ("point_select", 15_000),
    ("point_select", 15_000),
    ("point_select", 15_000),
    ("point_select", 15_000),
    ("point_select", 15_000),
    ("simple_range", 30_000),
    ("sum_range", 30_000),
    ("order_range", 45_000),
    ("distinct_range", 55_000),
    ("index_update", 30_000),
    ("non_index_update", 25_000),
    ("delete", 25_000),
    ("insert", 25_000),
    ("COMMIT", 10_000),
];
/// sysbench client CPU per statement (Lua event(), libmysqlclient marshalling) [inferred].
pub const CLIENT_STMT_NS: u64 = 4_000;
/// Time a write holds the InnoDB lock-system mutex [inferred].
pub const LOCK_SYS_NS: u64 = 2_000;
/// Redo-log write under the log mutex at COMMIT (innodb_flush_log_at_trx_commit=1, page cache) [inferred].
pub const LOG_WRITE_NS: u64 = 8_000;

const LOG_MUTEX: u32 = 0;
const LOCK_SYS: u32 = 1;

// FIDELITY(F-106): no mysqld background threads or row-lock waits.
fn build(p: &Params, _nr_cpus: usize, _cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let n = p.u64_in("threads", 1, 1, 50_000)? as u32;
    let sock = ChannelSpec { capacity: 64, sync: true, kind: ChannelKind::Socket };
    let events = MetricSpec::Rate { name: "events".into(), unit: "events/s".into(), counter: COUNTER_OPS, start: None, end: None };
    let (metric_key, metric) = pick_metric(p, "events", events, &[("latency", HIST_REQUEST)])?;
    let mut w = Workload {
        name: "sysbench".into(),
        params: vec![("threads".into(), n.to_string()), ("metric".into(), metric_key)],
        programs: Vec::new(),
        tasks: Vec::new(),
        channels: Vec::new(),
        sems: vec![SemSpec { initial: 1, sync: false, barging: false }, SemSpec { initial: 1, sync: false, barging: false }],
        metric,
        time_bounded: true,
        groups: Vec::new(),
        jitter_pct: 10,
    };
    if p.get("metric").is_none() {
        w.params.retain(|(k, _)| k != "metric");
    }
    let mut servers = Vec::new();
    for i in 0..n {
        let req = w.channels.len() as u32;
        w.channels.push(sock.clone());
        w.channels.push(sock.clone());
        let resp = req + 1;
        let mut client = vec![Op::Loop { count: u64::MAX }, Op::ReqStart { hist: HIST_REQUEST }];
        let mut server = vec![Op::Loop { count: u64::MAX }];
        for &(what, ns) in &STATEMENTS {
            client.extend([
                Op::Run { ns: CLIENT_STMT_NS },
                Op::Write { chan: req, cost: TCP_SEND_NS },
                Op::Read { chan: resp, cost: TCP_RECV_NS },
            ]);
            server.push(Op::Read { chan: req, cost: TCP_RECV_NS });
            server.push(Op::Run { ns });
            let lock = match what {
                "COMMIT" => Some((LOG_MUTEX, LOG_WRITE_NS)),
                "index_update" | "non_index_update" | "delete" | "insert" => Some((LOCK_SYS, LOCK_SYS_NS)),
                _ => None,
            };
            if let Some((sem, hold)) = lock {
                server.extend([Op::SemWait { sem }, Op::Run { ns: hold }, Op::SemPost { sem, n: 1 }]);
            }
            server.push(Op::Write { chan: resp, cost: TCP_SEND_NS });
        }
        client.push(Op::ReqEnd { hist: HIST_REQUEST });
        client.push(Op::Count { id: COUNTER_OPS, n: 1 });
        client.push(Op::EndLoop);
        server.push(Op::EndLoop);
        // Client programs first, then server programs (compact workload files).
        let cp = push_prog(&mut w, client);
        servers.push(server);
        w.tasks.push(start_task(format!("sysbench-{i}"), cp, 0));
        w.tasks.push(start_task(format!("mysqld-conn{i}"), u32::MAX, 1));
    }
    super::push_server_programs(&mut w, servers);
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn task_graph() {
        let w = crate::build("sysbench", &Params::parse("threads=3").unwrap(), 12, &[]).unwrap();
        assert_eq!(w.tasks.len(), 6);
        assert!(w.channels.iter().all(|c| c.sync), "socket round trips are WF_SYNC");
        assert!(w.sems.iter().all(|s| !s.sync), "mysqld mutexes are futexes");
        assert_eq!(w.tasks[0].mm, w.tasks[2].mm, "client threads share a process");
        assert_eq!(w.tasks[1].mm, w.tasks[3].mm, "mysqld threads share a process");
        assert_ne!(w.tasks[0].mm, w.tasks[1].mm);
        let c = &w.programs[w.tasks[0].program as usize];
        let round_trips = c.iter().filter(|o| matches!(o, Op::Write { .. })).count();
        assert_eq!(round_trips, 20);
        let s = &w.programs[w.tasks[1].program as usize];
        assert_eq!(s.iter().filter(|o| matches!(o, Op::SemWait { .. })).count(), 5);
    }
}
