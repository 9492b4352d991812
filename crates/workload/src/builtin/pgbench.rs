//! pgbench (benchmark-workloads §7): `clients` backend processes, one per
//! connection, served by `threads` pgbench client threads that multiplex their
//! connections with poll(). TPC-B-like (7 round trips per transaction, commit
//! serialised on the WAL write lock) or select-only (1 round trip).
//!
//! Wakeups: client -> backend and backend -> client over sockets (WF_SYNC);
//! backend -> backend through the WAL lock's futex and (select-only, pg=9.3,
//! database larger than shared_buffers) BufFreelistLock (not sync).
//!
//! Select-only costs come from the real program measured on a 2-vCPU EPYC
//! guest (crates/workload/tests/data/pgbench-local-*.txt, with the script that
//! recorded them) and are scaled to seed 000's Westmere box by `cpu=x5650`, a
//! calibration on the seed's base column (docs/CALIBRATION.md "pgbench").
//!
//! Open loop (`rate=`): no pgbench threads on the box; remote clients send
//! `rate` transactions/s (Poisson) over the connections, each arriving through
//! the NIC receive path (interrupt and softirq on the receive queue's CPU, a
//! non-sync wakeup of the backend), and the backend's reply costs only its send.
//! A TPC-B transaction arrives as one pipelined request (its statements run
//! back to back, one reply): FIDELITY(F-803).
//!
//! Transaction latency (histogram 1) is taken at each backend from one
//! transaction's final reply to the next one's (`ReqEnd` then `ReqStart`):
//! pgbench's clients start the next transaction as soon as a reply is parsed,
//! so this is the client's latency up to a shift of the client's reply
//! handling (FIDELITY(F-108)). `--set metric=latency_avg` reports pgbench's
//! "latency average" (also `latency_p50` ... `latency_p99.9`).

use super::{pick_metric, Builtin, COUNTER_OPS, HIST_REQUEST};
use crate::params::{ParamDoc, Params};
use crate::{Arrivals, ChannelKind, ChannelSpec, MetricSpec, Op, SemSpec, TaskSpec, Workload, WorkloadError};

pub const BUILTIN: Builtin = Builtin {
    name: "pgbench",
    summary: "pgbench TPC-B-like or select-only: client threads multiplexing connections to one backend process each",
    metric: "tps (transactions per second, higher is better)",
    params: &[
        ParamDoc { key: "clients", default: "1", help: "connections = backend processes (-c)" },
        ParamDoc { key: "threads", default: "1", help: "pgbench client threads (-j); connections are split among them" },
        ParamDoc { key: "mode", default: "tpcb", help: "tpcb (7 round trips) or select (-S, 1 round trip)" },
        ParamDoc { key: "db_size", default: "22", help: "database size in MB (pg_database_size; 22 = -s 1, 7484 = -s 500): pages outside shared_buffers are read from the page cache" },
        ParamDoc { key: "shared_buffers", default: "128", help: "PostgreSQL shared_buffers in MB" },
        ParamDoc { key: "pg", default: "9.3", help: "PostgreSQL major version: 9.1 (8.3-9.1: every relation and virtual-xid lock through the shared lock table under its partition LWLock, and BufFreelistLock), 9.3 (9.2-9.4: fast-path relation locks, BufFreelistLock) or 15 (9.5+: lock-free clock sweep)" },
        ParamDoc { key: "cpu", default: "x5650", help: "per-operation CPU costs of: x5650 (seed 000's Westmere-EP server) or epyc-guest (the 2-vCPU EPYC guest they were measured on)" },
        ParamDoc {
            key: "rate",
            default: "0",
            help: "open loop: transactions/s from remote pgbench clients (all connections) through the NIC receive path; 0 = on-box pgbench threads",
        },
        ParamDoc { key: "rx_queues", default: "all CPUs", help: "open loop: NIC receive queues, their interrupts on CPUs 0..rx_queues" },
        ParamDoc { key: "metric", default: "tps", help: "reported figure: tps or latency_{avg,p50,p90,p95,p99,p99.9}" },
    ],
    build,
};

/// Backend CPU per statement (us) of the TPC-B-like script: BEGIN, UPDATE
/// accounts, SELECT, UPDATE tellers, UPDATE branches, INSERT history, END.
/// Derived from seed 000's 1-client figure (10.6 ktps ~ 94 us per transaction)
/// less client and switch costs; see docs/CALIBRATION.md.
// FIDELITY(F-682): the TPC-B-like costs are not re-measured (select-only is seed 000's run).
const TPCB_STMT_NS: [u64; 7] = [3_000, 12_000, 6_000, 10_000, 10_000, 8_000, 8_000];
/// WAL write under WALWriteLock at commit.
const WAL_WRITE_NS: u64 = 5_000;
/// Client (pgbench thread) CPU per TPC-B statement: libpq send + result parsing.
const CLIENT_STMT_NS: u64 = 3_000;
/// Socket send/receive syscall costs of one small message (TPC-B mode).
const SEND_NS: u64 = 1_500;
const RECV_NS: u64 = 1_000;

/// Select-only (`-S`) costs as measured on the 2-vCPU EPYC guest
/// (crates/workload/tests/data/pgbench-local-scale1.txt, docs/CALIBRATION.md
/// "pgbench"), in ns of that machine; [`CpuScale`] converts them.
/// Backend: recvfrom of the query (with the EAGAIN retry before it).
const SEL_BE_RECV_NS: u64 = 3_000;
/// Backend: parse, plan, executor start, index scan of pgbench_accounts_pkey
/// and heap fetch, result formatting, commit of the read-only transaction.
// FIDELITY(F-683): the same at any number of concurrent backends (no shared-line contention).
const SEL_BE_QUERY_NS: u64 = 61_000;
/// Backend: sendto of RowDescription + DataRow + CommandComplete + ReadyForQuery.
const SEL_BE_SEND_NS: u64 = 4_000;
/// Backend after the reply: pgstat / idle bookkeeping, recvfrom (EAGAIN) and
/// epoll_wait entry before it blocks (PostgreSQL 9.5+ waits in a WaitEventSet;
/// 9.x before blocked in recv()).
const SEL_BE_POST_NS: u64 = 6_000;
/// Client per transaction: pgbench's state machine, libpq PQsendQuery /
/// PQgetResult parsing, and the poll() call that found the reply.
const SEL_CL_TXN_NS: u64 = 8_000;
// FIDELITY(F-684): one reply handled per poll(); the poll cost is charged per reply.
/// Client poll() cost per connection it scans (sock_poll of one AF_UNIX fd).
/// [assumed] 50 ns: pgbench passes every connection of the thread to poll()/select().
const SEL_CL_POLL_PER_FD_NS: u64 = 50;
/// Client sendto / recvfrom of one query / reply.
const SEL_CL_SEND_NS: u64 = 3_000;
const SEL_CL_RECV_NS: u64 = 2_000;
/// One 8 KiB page read from the OS page cache into shared_buffers (pread
/// syscall + buffer mapping + the copy's CPU part); the copy's memory traffic
/// is an `Op::Mem` the machine model charges. Measured on the guest:
/// pgbench-local-scale50.txt, 2-8 clients (docs/CALIBRATION.md).
const PAGE_READ_EPYC_GUEST_NS: u64 = 28_000;
/// Calibration (base column, 7484 MB, 1 client: 8,951 tps, 1.97 page reads per select).
const PAGE_READ_X5650_NS: u64 = 8_000;
/// Hold time of BufFreelistLock while the clock sweep finds a victim buffer
/// (StrategyGetBuffer() took it exclusively in PostgreSQL 8.3-9.4).
/// [assumed] 1 us: a few buffer-header checks on a 12-CPU box.
const FREELIST_HOLD_NS: u64 = 1_000;
/// PostgreSQL 8.3-9.1 (before 9.2's fast-path locking, commit 3cba8999b34):
/// LockAcquire() of every heavyweight lock, and LockReleaseAll() at commit,
/// hold the lock's partition LWLock of the shared lock table exclusively.
/// A select-only transaction takes three: its virtual xid (ExclusiveLock,
/// VirtualXactLockTableInsert at transaction start) and AccessShareLock on
/// pgbench_accounts and on pgbench_accounts_pkey (parse analysis / planner).
/// The two relation locks have the same tag in every backend, so every
/// backend's transaction goes through the same one or two partitions.
const NUM_LOCK_PARTITIONS: u32 = 16;
/// Partitions of the two relation locks: LockTagHashCode() % 16 of their
/// tags. [assumed] different partitions (the OIDs are not known).
const PART_ACCOUNTS: u32 = 3;
const PART_ACCOUNTS_PKEY: u32 = 11;
/// Hold time of a partition LWLock for one LockAcquire (lock and proclock
/// hash lookups/inserts, grant) or one partition's share of LockReleaseAll.
/// [assumed] 1 us on the X5650 (a few shared hash-table cache misses).
const LOCK_HOLD_NS: u64 = 1_000;
/// Bytes copied per page read.
const PAGE_BYTES: u64 = 8192;
/// Transactions per cycle of the backend program over which page reads are spread evenly.
const READ_CYCLE: u64 = 16;

/// Per-machine CPU scale of the measured costs (per mille of the EPYC-guest
/// figure), separately for the backend and the pgbench client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuScale {
    pub backend_pm: u64,
    pub client_pm: u64,
    /// One page read from the page cache (pread + buffer replacement), ns.
    pub page_read_ns: u64,
}

/// `cpu=` values. x5650: calibrated on seed 000's base (unpatched) column only:
/// the backend scale from the 1-client point and the client scale from the
/// 8-client peak, where one pgbench thread is saturated (docs/CALIBRATION.md).
// FIDELITY(F-680): per-operation costs follow a `cpu=` parameter, not `--machine`.
pub fn cpu_scale(name: &str) -> Result<CpuScale, WorkloadError> {
    match name {
        "x5650" => Ok(CpuScale { backend_pm: BACKEND_X5650_PM, client_pm: CLIENT_X5650_PM, page_read_ns: PAGE_READ_X5650_NS }),
        "epyc-guest" => Ok(CpuScale { backend_pm: 1000, client_pm: 1000, page_read_ns: PAGE_READ_EPYC_GUEST_NS }),
        c => Err(WorkloadError(format!("cpu={c:?}: expected x5650 (seed 000's server) or epyc-guest (where the costs were measured)"))),
    }
}
/// Calibration (seed 000 base column, 22 MB, 1 client: 10,598 tps): the
/// backend's work takes 0.72 x the guest-measured time on the X5650.
const BACKEND_X5650_PM: u64 = 720;
/// Calibration (base column, 22 MB, 8 clients: 51,253 tps, the peak, where the
/// one pgbench thread is saturated): the client's work takes 1.4 x.
const CLIENT_X5650_PM: u64 = 1400;

/// Expected pages read from the page cache per select: the index leaf and the
/// heap page of a random aid, each found in shared_buffers with probability
/// shared_buffers / db_size (a uniformly random cached subset).
// FIDELITY(F-681): buffer hits as a uniform random subset; no usage-count preference for index pages.
pub fn page_reads_per_select(db_size_mb: u64, shared_buffers_mb: u64) -> f64 {
    let hit = (shared_buffers_mb as f64 / db_size_mb as f64).min(1.0);
    2.0 * (1.0 - hit)
}

fn build(p: &Params, nr_cpus: usize, _cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let clients = p.u64_in("clients", 1, 1, 10_000)? as u32;
    let threads = p.u64_in("threads", 1, 1, 10_000)? as u32;
    let rate = p.u64_in("rate", 0, 0, 100_000_000)?;
    let open = rate > 0;
    if !open && p.get("rx_queues").is_some() {
        return Err(WorkloadError("pgbench: rx_queues applies to the open loop only; add rate=TPS or drop rx_queues".into()));
    }
    if open && p.get("threads").is_some() {
        return Err(WorkloadError(
            "pgbench: threads= is the number of on-box pgbench threads; the open loop (rate=) has remote clients only: drop threads".into(),
        ));
    }
    let threads = if open { 0 } else { threads };
    if threads > clients && !open {
        return Err(WorkloadError(format!("threads={threads} is more than clients={clients}; pgbench requires -j <= -c")));
    }
    let mode = p.get("mode").unwrap_or("tpcb");
    let select_only = match mode {
        "tpcb" => false,
        "select" => true,
        m => return Err(WorkloadError(format!("mode={m:?}: expected tpcb or select"))),
    };
    let db_size = p.u64_in("db_size", 22, 1, 1 << 24)?;
    let shared_buffers = p.u64_in("shared_buffers", 128, 1, 1 << 24)?;
    let pg = p.get("pg").unwrap_or("9.3");
    let (freelist_lock, shared_lock_table) = match pg {
        "9.1" => (true, true),
        "9.3" => (true, false),
        "15" => (false, false),
        v => {
            return Err(WorkloadError(format!(
                "pg={v:?}: expected 9.1 (shared lock table for every lock, PostgreSQL 8.3-9.1), 9.3 (fast-path locks and BufFreelistLock, 9.2-9.4) or 15 (lock-free clock sweep, 9.5+)"
            )))
        }
    };
    let cpu = p.get("cpu").unwrap_or("x5650");
    let scale = cpu_scale(cpu)?;
    let be = |ns: u64| ns * scale.backend_pm / 1000;
    let cl = |ns: u64| ns * scale.client_pm / 1000;
    let tps = MetricSpec::Rate { name: "tps".into(), unit: "tps".into(), counter: COUNTER_OPS, start: None, end: None };
    let (metric_key, metric) = pick_metric(p, "tps", tps, &[("latency", HIST_REQUEST)])?;
    let sock = ChannelSpec { capacity: 256, sync: !open, kind: ChannelKind::Socket };
    let mut w = Workload {
        memory: Vec::new(),
        arrivals: None,
        name: "pgbench".into(),
        params: vec![
            ("clients".into(), clients.to_string()),
            ("threads".into(), threads.to_string()),
            ("mode".into(), mode.to_string()),
            ("db_size".into(), db_size.to_string()),
            ("shared_buffers".into(), shared_buffers.to_string()),
            ("pg".into(), pg.to_string()),
            ("cpu".into(), cpu.to_string()),
            ("metric".into(), metric_key),
        ],
        programs: Vec::new(),
        tasks: Vec::new(),
        channels: Vec::new(),
        // sem 0: WALWriteLock, sem 1: BufFreelistLock, sems 2..2+16: the lock
        // manager's partition LWLocks (semaphore sleeps/wakeups: not sync)
        // FIDELITY(F-800): WALWriteLock and BufFreelistLock stay hand-off semaphores.
        sems: (0..2 + NUM_LOCK_PARTITIONS).map(|k| SemSpec { initial: 1, sync: false, barging: k >= 2 }).collect(),
        metric,
        time_bounded: true,
        groups: Vec::new(),
        jitter_pct: 10,
    };
    if p.get("metric").is_none() {
        w.params.retain(|(k, _)| k != "metric");
    }
    if open {
        w.params.retain(|(k, _)| k != "threads");
        w.params.push(("rate".into(), rate.to_string()));
    }
    // Channels: req[i] = client -> backend i; resp[t] = backends of thread t -> thread t.
    let req0 = 0u32;
    for _ in 0..clients {
        w.channels.push(sock.clone());
    }
    let resp0 = clients;
    for _ in 0..threads {
        w.channels.push(sock.clone());
    }
    // Page reads per READ_CYCLE transactions (select-only), spread evenly.
    let cycle_reads = (page_reads_per_select(db_size, shared_buffers) * READ_CYCLE as f64).round() as u64;
    // Backends. A backend wakes only its pgbench thread and, with pg=9.3 and
    // page reads, BufFreelistLock waiters.
    // FIDELITY(F-685): no stats-collector messages or interrupt-context wakeups.
    // FIDELITY(F-660): so under v3.10 vs wakee-flips seed 000's base collapse and gain do not appear.
    // The reply: a write to the pgbench thread's socket, or (open loop) the
    // send to the remote client only; the arrival opens the latency stamp.
    let reply_to = |t: u32, cost: u64, i: u32| if open { Op::Run { ns: cost } } else { Op::WriteTag { chan: resp0 + t, cost, tag: i } };
    let restart: &[Op] = if open { &[] } else { &[Op::ReqStart { hist: HIST_REQUEST }] };
    for i in 0..clients {
        let t = if open { 0 } else { i % threads };
        let mut prog = restart.to_vec();
        prog.push(Op::Loop { count: u64::MAX });
        if select_only {
            let reply = reply_to(t, be(SEL_BE_SEND_NS), i);
            let txns = if cycle_reads == 0 { 1 } else { READ_CYCLE };
            // With the shared lock table the program cycles over the 16 vxid
            // partitions: the vxid's partition differs from one transaction to the next.
            let txns = if shared_lock_table { txns.max(NUM_LOCK_PARTITIONS as u64) } else { txns };
            for k in 0..txns {
                prog.push(Op::Read { chan: req0 + i, cost: be(SEL_BE_RECV_NS) });
                if shared_lock_table {
                    // FIDELITY(F-800): partition LWLocks as barging semaphores; hold times and partitions assumed.
                    let vxid = 2 + ((i as u64 * 7 + k) % NUM_LOCK_PARTITIONS as u64) as u32;
                    let lock = |prog: &mut Vec<Op>, sem: u32| {
                        prog.extend([Op::SemWait { sem }, Op::Run { ns: LOCK_HOLD_NS }, Op::SemPost { sem, n: 1 }])
                    };
                    lock(&mut prog, vxid);
                    prog.push(Op::Run { ns: be(SEL_BE_QUERY_NS) / 4 });
                    lock(&mut prog, 2 + PART_ACCOUNTS);
                    lock(&mut prog, 2 + PART_ACCOUNTS_PKEY);
                    prog.push(Op::Run { ns: be(SEL_BE_QUERY_NS) - be(SEL_BE_QUERY_NS) / 4 });
                    // CommitTransaction -> LockReleaseAll: each partition holding one of ours.
                    for sem in [vxid, 2 + PART_ACCOUNTS, 2 + PART_ACCOUNTS_PKEY] {
                        lock(&mut prog, sem);
                    }
                } else {
                    prog.push(Op::Run { ns: be(SEL_BE_QUERY_NS) });
                }
                let reads = (k + 1) * cycle_reads / READ_CYCLE - k * cycle_reads / READ_CYCLE;
                for _ in 0..reads {
                    // ReadBuffer miss: BufferAlloc -> StrategyGetBuffer (under
                    // BufFreelistLock before 9.5), then smgrread (pread from the page cache).
                    if freelist_lock {
                        prog.extend([Op::SemWait { sem: 1 }, Op::Run { ns: be(FREELIST_HOLD_NS) }, Op::SemPost { sem: 1, n: 1 }]);
                    } else {
                        prog.push(Op::Run { ns: be(FREELIST_HOLD_NS) });
                    }
                    prog.extend([Op::Run { ns: scale.page_read_ns }, Op::Mem { bytes: PAGE_BYTES }]);
                }
                prog.extend([reply, Op::ReqEnd { hist: HIST_REQUEST }]);
                prog.extend_from_slice(restart);
                prog.extend([Op::Count { id: COUNTER_OPS, n: 1 }, Op::Run { ns: be(SEL_BE_POST_NS) }]);
            }
        } else {
            let reply = reply_to(t, SEND_NS, i);
            if open {
                // FIDELITY(F-803): the transaction's statements arrive as one pipelined request.
                prog.push(Op::Read { chan: req0 + i, cost: RECV_NS });
            }
            for (k, &c) in TPCB_STMT_NS.iter().enumerate() {
                if !open {
                    prog.push(Op::Read { chan: req0 + i, cost: RECV_NS });
                }
                if k == TPCB_STMT_NS.len() - 1 {
                    // COMMIT: XLogFlush under WALWriteLock; the releaser wakes the next waiter.
                    prog.extend([Op::SemWait { sem: 0 }, Op::Run { ns: WAL_WRITE_NS }, Op::SemPost { sem: 0, n: 1 }]);
                }
                prog.push(Op::Run { ns: c });
                if !open {
                    prog.push(reply);
                }
            }
            if open {
                prog.push(reply);
            }
            prog.push(Op::ReqEnd { hist: HIST_REQUEST });
            prog.extend_from_slice(restart);
            prog.push(Op::Count { id: COUNTER_OPS, n: 1 });
        }
        prog.push(Op::EndLoop);
        w.programs.push(prog);
        w.tasks.push(TaskSpec {
            name: format!("postgres-{i}"),
            program: w.programs.len() as u32 - 1,
            mm: 1 + i,
            nice: 0,
            cpus: None,
            start: true,
            group: 0,
        });
    }
    // Client threads: send the first statement on each own connection, then
    // for every reply: parse it and send the next statement on that connection.
    for t in 0..threads {
        let conns = (0..clients).filter(|i| i % threads == t).count() as u64;
        let (stmt, send, recv) = if select_only {
            (cl(SEL_CL_TXN_NS + SEL_CL_POLL_PER_FD_NS * conns), cl(SEL_CL_SEND_NS), cl(SEL_CL_RECV_NS))
        } else {
            (CLIENT_STMT_NS, SEND_NS, RECV_NS)
        };
        let mut prog = Vec::new();
        for i in (0..clients).filter(|i| i % threads == t) {
            prog.push(Op::Run { ns: stmt });
            prog.push(Op::Write { chan: req0 + i, cost: send });
        }
        prog.extend([
            Op::Loop { count: u64::MAX },
            Op::ReadTag { chan: resp0 + t, cost: recv },
            Op::Run { ns: stmt },
            Op::WriteReg { chan_base: req0, cost: send },
            Op::EndLoop,
        ]);
        w.programs.push(prog);
        w.tasks.push(TaskSpec {
            name: format!("pgbench-{t}"),
            program: w.programs.len() as u32 - 1,
            mm: 0,
            nice: 0,
            cpus: None,
            start: true,
            group: 0,
        });
    }
    if open {
        // RSS: a hash of the connection's 4-tuple picks its receive queue;
        // queue q's interrupt is on CPU q.
        let queues = p.u64_in("rx_queues", nr_cpus as u64, 1, nr_cpus.max(1) as u64)?;
        w.params.push(("rx_queues".into(), queues.to_string()));
        let conns = (0..clients).map(|i| (req0 + i, i, super::rss_queue(i, queues))).collect();
        w.arrivals = Some(Arrivals { rate_per_s: rate as f64, conns, rx_ns: super::memcached::RX_NS, hist: HIST_REQUEST });
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn task_graph() {
        let w = crate::build("pgbench", &Params::parse("clients=4,threads=2").unwrap(), 12, &[]).unwrap();
        assert_eq!(w.tasks.len(), 6);
        assert_eq!(w.channels.len(), 6);
        assert!(w.channels.iter().all(|c| c.sync));
        assert!(!w.sems[0].sync, "the WAL lock is a futex: no WF_SYNC");
        // backends are separate processes; client threads share one mm
        assert_eq!(w.tasks[4].mm, w.tasks[5].mm);
        assert_ne!(w.tasks[0].mm, w.tasks[1].mm);
        assert!(crate::build("pgbench", &Params::parse("clients=2,threads=3").unwrap(), 12, &[]).is_err());
        assert!(crate::build("pgbench", &Params::parse("mode=x").unwrap(), 12, &[]).is_err());
    }

    #[test]
    fn open_loop_has_remote_clients_only() {
        for mode in ["select", "tpcb"] {
            let w = crate::build("pgbench", &Params::parse(&format!("clients=6,rate=20000,mode={mode}")).unwrap(), 12, &[]).unwrap();
            assert_eq!(w.tasks.len(), 6, "backends only");
            assert!(w.tasks.iter().all(|t| t.name.starts_with("postgres-")));
            let a = w.arrivals.as_ref().expect("arrivals");
            assert_eq!((a.rate_per_s, a.conns.len()), (20_000.0, 6));
            assert!(w.channels.iter().all(|c| !c.sync), "requests come from the network path");
            for prog in &w.programs {
                // The arrival opens the latency stamp; the backend closes it once per transaction.
                assert_eq!(count(prog, |o| matches!(o, Op::ReqStart { .. })), 0);
                assert_eq!(count(prog, |o| matches!(o, Op::WriteTag { .. })), 0, "no on-box client to write to");
                let reads = count(prog, |o| matches!(o, Op::Read { .. }));
                assert_eq!(reads, count(prog, |o| matches!(o, Op::ReqEnd { .. })), "{mode}: one request per transaction");
            }
            assert!(w.params.iter().any(|(k, v)| k == "rx_queues" && v == "12"));
        }
        let e = |set: &str| crate::build("pgbench", &Params::parse(set).unwrap(), 12, &[]).unwrap_err().0;
        assert!(e("clients=4,rate=100,threads=2").contains("drop threads"));
        assert!(e("clients=4,rx_queues=2").contains("open loop only"));
    }

    fn programs(set: &str) -> Workload {
        crate::build("pgbench", &Params::parse(set).unwrap(), 12, &[]).unwrap()
    }
    fn count(prog: &[Op], f: impl Fn(&Op) -> bool) -> usize {
        prog.iter().filter(|o| f(o)).count()
    }

    #[test]
    fn page_reads_follow_db_size_over_shared_buffers() {
        assert_eq!(page_reads_per_select(22, 128), 0.0);
        assert_eq!(page_reads_per_select(128, 128), 0.0);
        assert!((page_reads_per_select(256, 128) - 1.0).abs() < 1e-9);
        assert!(page_reads_per_select(7484, 128) > 1.95 && page_reads_per_select(15000, 128) < 2.0);
        // 22 MB: one transaction per loop, no page read, no lock.
        let w = programs("clients=2,mode=select");
        assert_eq!(count(&w.programs[0], |o| matches!(o, Op::Count { .. })), 1);
        assert_eq!(count(&w.programs[0], |o| matches!(o, Op::Mem { .. } | Op::SemWait { .. })), 0);
        // 7484 MB: round(16 * 1.966) = 31 page reads per 16 transactions, each
        // under BufFreelistLock with an 8 KiB copy.
        let w = programs("clients=2,mode=select,db_size=7484");
        let be = &w.programs[0];
        assert_eq!(count(be, |o| matches!(o, Op::Count { .. })), 16);
        assert_eq!(count(be, |o| matches!(o, Op::Mem { bytes: 8192 })), 31);
        assert_eq!(count(be, |o| matches!(o, Op::SemWait { sem: 1 })), 31);
        // PostgreSQL 15: the clock sweep takes no lock (9.5+).
        let w = programs("clients=2,mode=select,db_size=7484,pg=15");
        assert_eq!(count(&w.programs[0], |o| matches!(o, Op::SemWait { .. })), 0);
        assert_eq!(count(&w.programs[0], |o| matches!(o, Op::Mem { .. })), 31);
        assert!(crate::build("pgbench", &Params::parse("pg=12").unwrap(), 12, &[]).is_err());
    }

    #[test]
    fn pg91_takes_every_lock_through_the_shared_lock_table() {
        // 8.3-9.1: per select-only transaction three LockAcquire() (vxid, table,
        // index) and LockReleaseAll() over the same three partitions, each under
        // a barging partition LWLock; both relation partitions are the same in
        // every backend, the vxid partition changes from one transaction to the next.
        let w = programs("clients=2,mode=select,pg=9.1");
        let be = &w.programs[0];
        let txns = count(be, |o| matches!(o, Op::Count { .. }));
        assert_eq!(txns, NUM_LOCK_PARTITIONS as usize);
        assert_eq!(count(be, |o| matches!(o, Op::SemWait { .. })), 6 * txns);
        for part in [PART_ACCOUNTS, PART_ACCOUNTS_PKEY] {
            // acquire + release in every transaction, plus the one transaction
            // of the cycle whose vxid falls into the same partition
            let n = count(be, |o| matches!(o, Op::SemWait { sem } if *sem == 2 + part));
            assert_eq!(n, 2 * txns + 2, "partition {part}");
        }
        assert!(w.sems[2..].iter().all(|s| s.barging) && !w.sems[0].barging && !w.sems[1].barging);
        assert_eq!(w.sems.len(), 2 + NUM_LOCK_PARTITIONS as usize);
        // 9.2+ (fast-path relation locks, vxid locks in the PGPROC): no lock-table LWLock.
        let w = programs("clients=2,mode=select,pg=9.3");
        assert_eq!(count(&w.programs[0], |o| matches!(o, Op::SemWait { .. })), 0);
    }

    #[test]
    fn client_cost_grows_with_the_connections_it_polls() {
        let run_of = |w: &Workload| {
            let cl = w.programs.last().unwrap();
            let l = cl.iter().position(|o| matches!(o, Op::Loop { .. })).unwrap();
            match cl[l + 2] {
                Op::Run { ns } => ns,
                ref o => panic!("expected the client's per-reply Run, found {o:?}"),
            }
        };
        let (one, many) = (run_of(&programs("clients=1,mode=select")), run_of(&programs("clients=32,mode=select")));
        assert_eq!(many - one, 31 * SEL_CL_POLL_PER_FD_NS * CLIENT_X5650_PM / 1000);
        // Two threads split the connections: each polls half.
        assert_eq!(run_of(&programs("clients=32,threads=2,mode=select")), one + 15 * SEL_CL_POLL_PER_FD_NS * CLIENT_X5650_PM / 1000);
    }

    #[test]
    fn cpu_scale_converts_the_measured_costs() {
        let be_query = |set: &str| {
            let w = programs(set);
            w.programs[0]
                .iter()
                .find_map(|o| match o {
                    Op::Run { ns } => Some(*ns),
                    _ => None,
                })
                .unwrap()
        };
        assert_eq!(be_query("mode=select,cpu=epyc-guest"), SEL_BE_QUERY_NS);
        assert_eq!(be_query("mode=select"), SEL_BE_QUERY_NS * BACKEND_X5650_PM / 1000);
        let e = crate::build("pgbench", &Params::parse("cpu=m1").unwrap(), 12, &[]).unwrap_err();
        assert!(e.0.contains("x5650") && e.0.contains("epyc-guest"), "{e}");
    }
}
