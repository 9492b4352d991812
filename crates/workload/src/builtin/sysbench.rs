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
//! `instances=N` runs N such pairs, each a mysqld process (its connection
//! threads and its buffer pool) and a sysbench process, each pair in its own
//! cpu cgroup `instK` (Michael Wang's 2019 cling tests: X mysqld instances in
//! X cgroups, a sysbench instance attached to each). Both processes declare
//! their memory (the buffer pool of `db_mib` MiB shared by the mysqld threads,
//! a few MiB per thread), so on NUMA machines where the pages sit matters and
//! NUMA balancing moves them and the threads.
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
        ParamDoc { key: "instances", default: "1", help: "mysqld + sysbench pairs, each in its own cpu cgroup instK (without it: one pair in the root group)" },
        ParamDoc { key: "db_mib", default: "1024", help: "database (InnoDB buffer pool) size per instance, MiB; with instances or db_mib the processes declare memory (NUMA cost and balancing)" },
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

/// Per mysqld connection thread: private memory (stack, sort and join buffers), MiB [inferred].
pub const MYSQLD_THREAD_MIB: u64 = 2;
/// Share of a mysqld thread's memory accesses to its private memory, % [inferred:
/// most of an OLTP statement walks shared B-tree pages in the buffer pool].
pub const MYSQLD_PRIVATE_PCT: u32 = 20;
/// Share of mysqld statement time stalled on DRAM at local latency, % [inferred:
/// in-memory OLTP is pointer chasing through index pages].
pub const MYSQLD_STALL_PCT: u32 = 30;
/// Distinct memory a mysqld thread touches per CPU second, MiB/s [inferred].
pub const MYSQLD_TOUCH_MIB_S: u64 = 2048;
/// sysbench client process: shared memory (Lua state, libmysqlclient), MiB [inferred].
pub const CLIENT_SHARED_MIB: u64 = 64;
pub const CLIENT_THREAD_MIB: u64 = 2;
pub const CLIENT_PRIVATE_PCT: u32 = 50;
pub const CLIENT_STALL_PCT: u32 = 10;
pub const CLIENT_TOUCH_MIB_S: u64 = 256;

// FIDELITY(F-106): no mysqld background threads or row-lock waits.
fn build(p: &Params, _nr_cpus: usize, _cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let n = p.u64_in("threads", 1, 1, 50_000)? as u32;
    let instances = p.u64_in("instances", 1, 1, 64)? as u32;
    let grouped = p.get("instances").is_some();
    let db_mib = p.u64_in("db_mib", 1024, 2, 1 << 20)?;
    if (instances as u64) * (n as u64) > 50_000 {
        return Err(WorkloadError(format!("sysbench: instances x threads = {} connections; at most 50000", instances * n)));
    }
    let sock = ChannelSpec { capacity: 64, sync: true, kind: ChannelKind::Socket, epoll: None };
    let events = MetricSpec::Rate { name: "events".into(), unit: "events/s".into(), counter: COUNTER_OPS, start: None, end: None };
    let (metric_key, metric) = pick_metric(p, "events", events, &[("latency", HIST_REQUEST)])?;
    let mut w = Workload::new("sysbench", vec![("threads".into(), n.to_string())], metric, true, 10);
    if grouped {
        w.params.push(("instances".into(), instances.to_string()));
    }
    if p.get("db_mib").is_some() {
        w.params.push(("db_mib".into(), db_mib.to_string()));
    }
    if p.get("metric").is_some() {
        w.params.push(("metric".into(), metric_key));
    }
    let mut servers = Vec::new();
    for k in 0..instances {
        let group = if grouped {
            w.groups.push(crate::GroupSpec { name: format!("inst{k}"), parent: 0, shares: 1024 });
            w.groups.len() as u32
        } else {
            0
        };
        let (client_mm, server_mm) = (2 * k, 2 * k + 1);
        let sem0 = w.sems.len() as u32;
        w.sems.extend([SemSpec { initial: 1, sync: false, barging: false }, SemSpec { initial: 1, sync: false, barging: false }]);
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
                    "COMMIT" => Some((sem0 + LOG_MUTEX, LOG_WRITE_NS)),
                    "index_update" | "non_index_update" | "delete" | "insert" => Some((sem0 + LOCK_SYS, LOCK_SYS_NS)),
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
            let (cname, sname) = if instances > 1 {
                (format!("sysbench{k}-{i}"), format!("mysqld{k}-conn{i}"))
            } else {
                (format!("sysbench-{i}"), format!("mysqld-conn{i}"))
            };
            let mut ct = start_task(cname, cp, client_mm);
            ct.group = group;
            let mut st = start_task(sname, u32::MAX, server_mm);
            st.group = group;
            w.tasks.push(ct);
            w.tasks.push(st);
        }
        // FIDELITY(F-775): memory sizes and access shares are inferred.
        // Memory is declared with `instances` or `db_mib` only: the one-pair
        // default keeps its memory-less results.
        if !grouped && p.get("db_mib").is_none() {
            continue;
        }
        w.memory.push(crate::MemSpec {
            mm: server_mm,
            shared_mib: db_mib,
            private_mib: MYSQLD_THREAD_MIB,
            private_pct: MYSQLD_PRIVATE_PCT,
            stall_pct: MYSQLD_STALL_PCT,
            touch_mib_per_s: MYSQLD_TOUCH_MIB_S,
            initial_node: None,
        });
        w.memory.push(crate::MemSpec {
            mm: client_mm,
            shared_mib: CLIENT_SHARED_MIB,
            private_mib: CLIENT_THREAD_MIB,
            private_pct: CLIENT_PRIVATE_PCT,
            stall_pct: CLIENT_STALL_PCT,
            touch_mib_per_s: CLIENT_TOUCH_MIB_S,
            initial_node: None,
        });
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

    #[test]
    fn instances_each_in_a_cgroup_with_memory() {
        let w = crate::build("sysbench", &Params::parse("instances=3,threads=2,db_mib=512").unwrap(), 12, &[]).unwrap();
        assert_eq!(w.groups.len(), 3);
        assert_eq!(w.tasks.len(), 12);
        // Instance 1: its mysqld threads share one process in cgroup inst1, apart from instance 0.
        let m1: Vec<_> = w.tasks.iter().filter(|t| t.name.starts_with("mysqld1-")).collect();
        assert_eq!(m1.len(), 2);
        assert!(m1.iter().all(|t| t.group == 2 && t.mm == m1[0].mm));
        assert_ne!(m1[0].mm, w.tasks.iter().find(|t| t.name.starts_with("mysqld0-")).unwrap().mm);
        let db = w.memory.iter().find(|m| m.mm == m1[0].mm).unwrap();
        assert_eq!(db.shared_mib, 512);
        // Each instance has its own mutexes.
        assert_eq!(w.sems.len(), 6);
        w.validate().unwrap();
        // Without `instances` the task graph is the one-pair, root-group one.
        let one = crate::build("sysbench", &Params::parse("threads=2").unwrap(), 12, &[]).unwrap();
        assert!(one.groups.is_empty() && one.tasks.iter().all(|t| t.group == 0));
        assert!(one.memory.is_empty(), "the one-pair default declares no memory");
    }
}
