//! A memcached-like server under memtier_benchmark-like load (benchmark-workloads §9).
//!
//! The server has `threads` worker threads (memcached -t, default 4), each
//! running an epoll loop over the connections it was given. The client has
//! `client_threads` threads (memtier -t, default 4) with `connections` each
//! (memtier -c, default 50), pipeline depth 1, each thread an epoll loop over
//! its connections (scripts/calib-src/memload.c, the client measured on the
//! guest). Every connection is a pair of channels, each registered in the
//! epoll instance of the side that reads it with the connection's number as
//! its data. A request wakes the worker through epoll, and the response
//! wakes the client thread the same way: WF_SYNC from v6.13, whose
//! ep_poll_callback() passes the socket's sync wakeup on (900bbaae67e9), a
//! plain wakeup before (the engine decides, per kernel). A wakeup takes every connection ready at that moment and
//! serves each (read, answer on the same connection) before the next
//! epoll_wait() (`Op::EpollNext`): libevent's event_base_loop() running
//! memcached's drive_machine() per ready connection, memload.c's loop over
//! the events epoll_wait() returned.
//!
//! Each client thread records the latency of every request (sent -> reply
//! read) in histogram 1. FIDELITY(F-109): `ReqEnd` pairs with the thread's
//! oldest open `ReqStart` although replies come back in the order their
//! connections became ready (the mean is exact, percentiles are smoothed);
//! epoll_wait() has no cost of its own (it is inside the per-request costs).
//! `--set metric=latency_p99` (or `latency_avg`, `latency_p50`, ...) reports
//! the latency instead of requests/s.
//!
//! Connections are dispatched to the workers round robin in connection order
//! (memcached's dispatch_conn_new() hands each accepted connection to the next
//! worker): connection j of client thread t is served by worker
//! (t x connections + j) mod threads, for good (F-105, closed in session 11).

use super::costs::{TCP_RECV_NS, TCP_SEND_NS};
use super::{pick_metric, push_prog, start_task, Builtin, COUNTER_OPS, HIST_REQUEST};
use crate::params::{ParamDoc, Params};
use crate::{Arrivals, ChannelKind, ChannelSpec, EpollReg, MetricSpec, Op, Workload, WorkloadError};

pub const BUILTIN: Builtin = Builtin {
    name: "memcached",
    summary: "memcached-like server: epoll worker threads, memtier-like client threads with many connections",
    metric: "requests/s (higher is better)",
    params: &[
        ParamDoc { key: "threads", default: "4", help: "server worker threads (memcached -t)" },
        ParamDoc { key: "client_threads", default: "4", help: "client threads (memtier -t)" },
        ParamDoc { key: "connections", default: "50", help: "connections per client thread, one request in flight each (memtier -c)" },
        ParamDoc {
            key: "rate",
            default: "0",
            help: "open loop: requests/s from remote clients through the NIC receive path (0 = closed loop with on-box memtier threads)",
        },
        ParamDoc {
            key: "rx_queues",
            default: "all CPUs",
            help: "open loop: NIC receive queues, their interrupts on CPUs 0..rx_queues (RSS spreads connections)",
        },
        ParamDoc {
            key: "metric",
            default: "requests",
            help: "reported figure: requests (per second) or latency_{avg,p50,p90,p95,p99,p99.9}",
        },
    ],
    build,
};

/// Worker CPU per request besides the socket calls: epoll bookkeeping, parse,
/// hash lookup, item copy of a 32-byte value. Measured on the guest
/// (memcached -t 2, 2 client threads x 8 connections, without perf counters,
/// session 13): 6.49 us of worker CPU per request with 0.04 switches, less
/// the socket costs (3.5 us) and those switches (docs/CALIBRATION.md).
pub const SERVE_NS: u64 = 2_900;
/// Client CPU per request besides the socket calls: build the command, parse
/// the reply, latency accounting. Measured as `SERVE_NS` (session 29, from the
/// same session 13 runs): the client threads' 6.285 us of CPU per request with
/// 0.038 switches, less the socket costs (3.5 us) and those switches (0.085 us
/// at the workers' rate); 2.5 us [inferred] until then (docs/CALIBRATION.md).
pub const CLIENT_REQ_NS: u64 = 2_700;
/// Open loop: CPU time of the receive path per request on the CPU taking the
/// NIC queue's interrupt (hard irq, NAPI poll, ip_rcv, tcp_v4_rcv, queueing on
/// the socket, sock_def_readable) [assumed 3 us; F-803].
pub const RX_NS: u64 = 3_000;
/// CPU an epoll_wait() that sleeps costs its caller beyond the context switch
/// (ep_poll()'s wait-queue entry and timeout, the blocking schedule(), the
/// wakeup through ep_poll_callback()): `EPOLL_BLOCK_PRE_NS` of it before the
/// sleep, the rest on the wakeup (F-030). **Calibration**:
/// memcached -t 2 and memload pinned to one vCPU (scripts/memcached-pinned,
/// 1 x 1, 1 x 8, 2 x 8): each side's CPU per request regressed on its
/// voluntary and involuntary switches gives 5.2 us per sleep (both sides) and
/// 1.3 us per preemption; the model charges ~2.0 us per switch of either kind,
/// so a sleep adds 3.2 us (docs/CALIBRATION.md "memcached pinned to one vCPU").
pub const EPOLL_BLOCK_NS: u64 = 3_200;
/// The part of `EPOLL_BLOCK_NS` paid before the sleep (ep_poll() from the
/// empty ready list to schedule()): **measured** (session 30, bpftrace on
/// raw_syscalls and sched_switch, memcached 1 x 1 pinned to one vCPU, probes'
/// own cost included alike): from epoll_wait()'s entry to the switch-out 2.8
/// (worker) / 3.2 (client) us, from the switch-in to its exit 2.0 / 2.1 us, a
/// call that returns at once 1.6 / 1.8 us. The extra of a sleep is then 3.3
/// us, of which the path to schedule() takes 3.0 less the entry's share of a
/// call that returns at once; taking that share as half (0.86 us [assumed])
/// gives 2.1 us before the sleep, 1.1 us after (docs/CALIBRATION.md "EEVDF
/// state at the wakeup checks, traced").
pub const EPOLL_BLOCK_PRE_NS: u64 = 2_100;
/// Events per epoll_wait() of a worker: libevent's epoll backend starts with
/// room for 32 and doubles it whenever a call fills it, up to 4096
/// (INITIAL_NEVENT, MAX_NEVENT): the room is always enough here.
pub const LIBEVENT_MAX_EVENTS: u32 = 4096;
/// Events per epoll_wait() of a client thread (memload.c's `evs[64]`).
pub const CLIENT_MAX_EVENTS: u32 = 64;
/// Connections in all (two channels each).
pub const MAX_CONNS: u64 = 100_000;

fn build(p: &Params, nr_cpus: usize, _cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let s = p.u64_in("threads", 4, 1, 10_000)? as u32;
    let ct = p.u64_in("client_threads", 4, 1, 10_000)? as u32;
    let k = p.u64_in("connections", 50, 1, 100_000)? as u32;
    let rate = p.u64_in("rate", 0, 0, 100_000_000)?;
    if rate > 0 {
        return build_open_loop(p, s, ct * k, rate, nr_cpus);
    }
    if p.get("rx_queues").is_some() {
        return Err(WorkloadError("memcached: rx_queues applies to the open loop only; add rate=REQUESTS_PER_S or drop rx_queues".into()));
    }
    if ct as u64 * k as u64 > MAX_CONNS {
        return Err(WorkloadError(format!("client_threads={ct} x connections={k}: at most {MAX_CONNS} connections")));
    }
    // A worker without connections sleeps in epoll_wait for good: not modelled.
    let s = s.min(ct * k);
    let n = ct * k;
    // One message per direction in flight on a connection; room as the open loop's.
    let sock = ChannelSpec { capacity: 64, sync: true, kind: ChannelKind::Socket, epoll: None };
    let requests = MetricSpec::Rate { name: "requests".into(), unit: "req/s".into(), counter: COUNTER_OPS, start: None, end: None };
    let (metric_key, metric) = pick_metric(p, "requests", requests, &[("latency", HIST_REQUEST)])?;
    let params = vec![
        ("threads".into(), s.to_string()),
        ("client_threads".into(), ct.to_string()),
        ("connections".into(), k.to_string()),
        ("metric".into(), metric_key),
    ];
    let mut w = Workload::new("memcached", params, metric, true, 10);
    w.channels.reserve(2 * n as usize);
    if p.get("metric").is_none() {
        w.params.retain(|(k, _)| k != "metric");
    }
    // Connection c (= t x k + j: client thread t's j-th) is channel c from
    // the client to its worker, c mod s (dispatch_conn_new(): round robin in
    // connection order), registered in that worker's epoll set (set w), and
    // channel n + c back, registered in client thread t's set (s + t). Both
    // events carry c (epoll_event.data), so a thread answers on the
    // connection that was ready.
    for c in 0..n {
        w.channels.push(ChannelSpec { epoll: Some(EpollReg { set: c % s, data: c }), ..sock.clone() });
    }
    for c in 0..n {
        w.channels.push(ChannelSpec { epoll: Some(EpollReg { set: s + c / k, data: c }), ..sock.clone() });
    }
    for wi in 0..s {
        // libevent's event_base_loop(): epoll_wait(), then every returned
        // connection's callback (memcached's drive_machine(): read the
        // request, process it, send the reply; the connection then waits in
        // conn_waiting) before the next epoll_wait().
        let prog = vec![
            Op::Loop { count: u64::MAX },
            Op::EpollNext { set: wi, max: LIBEVENT_MAX_EVENTS, block_cost: EPOLL_BLOCK_NS, block_pre: EPOLL_BLOCK_PRE_NS },
            Op::ReadReg { chan_base: 0, cost: TCP_RECV_NS },
            Op::Run { ns: SERVE_NS },
            Op::WriteReg { chan_base: n, cost: TCP_SEND_NS },
            Op::EndLoop,
        ];
        let pi = push_prog(&mut w, prog);
        w.tasks.push(start_task(format!("memcached-w{wi}"), pi, 0));
    }
    for t in 0..ct {
        // memload.c's worker(): open the connections, one request on each,
        // then per epoll_wait() result, per ready connection: read the
        // reply, send the next request on it.
        let mut prog = Vec::with_capacity(3 * k as usize + 10);
        for c in t * k..(t + 1) * k {
            prog.extend([Op::Run { ns: CLIENT_REQ_NS }, Op::ReqStart { hist: HIST_REQUEST }, Op::Write { chan: c, cost: TCP_SEND_NS }]);
        }
        prog.extend([
            Op::Loop { count: u64::MAX },
            Op::EpollNext { set: s + t, max: CLIENT_MAX_EVENTS, block_cost: EPOLL_BLOCK_NS, block_pre: EPOLL_BLOCK_PRE_NS },
            Op::ReadReg { chan_base: n, cost: TCP_RECV_NS },
            Op::ReqEnd { hist: HIST_REQUEST },
            Op::Count { id: COUNTER_OPS, n: 1 },
            Op::Run { ns: CLIENT_REQ_NS },
            Op::ReqStart { hist: HIST_REQUEST },
            Op::WriteReg { chan_base: 0, cost: TCP_SEND_NS },
            Op::EndLoop,
        ]);
        let pi = push_prog(&mut w, prog);
        w.tasks.push(start_task(format!("memtier-{t}"), pi, 1));
    }
    Ok(w)
}

/// Open loop (`rate` > 0): `conns` connections from remote clients, spread
/// over the worker threads as memcached dispatches them (round robin) and over
/// `rx_queues` NIC receive queues by RSS hash; requests arrive at `rate` per
/// second (Poisson) through the receive path (Workload::arrivals) and each
/// worker answers on the socket (the reply leaves through the NIC: nobody on
/// this machine is woken). Latency runs from a request's arrival to the end of
/// its reply's send.
fn build_open_loop(p: &Params, s: u32, conns: u32, rate: u64, nr_cpus: usize) -> Result<Workload, WorkloadError> {
    let queues = p.u64_in("rx_queues", nr_cpus as u64, 1, nr_cpus.max(1) as u64)? as u32;
    let s = s.min(conns);
    let per_worker = conns.div_ceil(s);
    // A socket receive queue holds many requests; 64 per connection before drops.
    let sock = ChannelSpec { capacity: per_worker * 64, sync: false, kind: ChannelKind::Socket, epoll: None };
    let requests = MetricSpec::Rate { name: "requests".into(), unit: "req/s".into(), counter: COUNTER_OPS, start: None, end: None };
    let (metric_key, metric) = pick_metric(p, "requests", requests, &[("latency", HIST_REQUEST)])?;
    let params = vec![
        ("threads".into(), s.to_string()),
        ("connections".into(), conns.to_string()),
        ("rate".into(), rate.to_string()),
        ("rx_queues".into(), queues.to_string()),
        ("metric".into(), metric_key),
    ];
    let mut w = Workload::new("memcached", params, metric, true, 10);
    w.channels = vec![sock; s as usize];
    if p.get("metric").is_none() {
        w.params.retain(|(k, _)| k != "metric");
    }
    for wi in 0..s {
        let prog = vec![
            Op::Loop { count: u64::MAX },
            Op::ReadTag { chan: wi, cost: TCP_RECV_NS },
            Op::Run { ns: SERVE_NS },
            Op::Run { ns: TCP_SEND_NS },
            Op::ReqEnd { hist: HIST_REQUEST },
            Op::Count { id: COUNTER_OPS, n: 1 },
            Op::EndLoop,
        ];
        let pi = push_prog(&mut w, prog);
        w.tasks.push(start_task(format!("memcached-w{wi}"), pi, 0));
    }
    // RSS: a hash of the connection's 4-tuple picks its receive queue; queue q's
    // interrupt is on CPU q.
    let conns = (0..conns).map(|i| (i % s, i, super::rss_queue(i, queues as u64))).collect();
    w.arrivals = Some(Arrivals { rate_per_s: rate as f64, conns, rx_ns: RX_NS, hist: HIST_REQUEST });
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn task_graph() {
        let w = crate::build("memcached", &Params::parse("threads=2,client_threads=3,connections=5").unwrap(), 12, &[]).unwrap();
        assert_eq!(w.tasks.len(), 5);
        assert_eq!(w.tasks[0].mm, w.tasks[1].mm);
        assert_ne!(w.tasks[0].mm, w.tasks[2].mm);
        // 15 connections, two channels each: requests 0..15, replies 15..30.
        assert_eq!(w.channels.len(), 30);
        assert!(w.channels.iter().all(|c| c.sync && c.kind == ChannelKind::Socket));
        let reg = |c: usize| w.channels[c].epoll.map(|e| (e.set, e.data));
        // Client thread 2's connections are 10..14, dispatched round robin:
        // workers 0, 1, 0, 1, 0 (sets 0 and 1); their replies come back in
        // thread 2's set (2 + 2); both directions carry the connection.
        assert_eq!((10..15).map(reg).collect::<Vec<_>>(), [Some((0, 10)), Some((1, 11)), Some((0, 12)), Some((1, 13)), Some((0, 14))]);
        assert_eq!((25..30).map(reg).collect::<Vec<_>>(), (10..15).map(|c| Some((4, c))).collect::<Vec<_>>());
        // A worker serves every ready connection of its set, answering on the
        // connection it read (reply channel 15 + c).
        let wp = &w.programs[w.tasks[1].program as usize];
        assert_eq!(
            wp[1..5],
            [
                Op::EpollNext { set: 1, max: LIBEVENT_MAX_EVENTS, block_cost: EPOLL_BLOCK_NS, block_pre: EPOLL_BLOCK_PRE_NS },
                Op::ReadReg { chan_base: 0, cost: TCP_RECV_NS },
                Op::Run { ns: SERVE_NS },
                Op::WriteReg { chan_base: 15, cost: TCP_SEND_NS }
            ]
        );
        // The client opens its connections with one request each, then sends
        // the next request on the connection whose reply it read.
        let c = &w.programs[w.tasks[4].program as usize];
        let opens: Vec<u32> = c
            .iter()
            .filter_map(|o| match o {
                Op::Write { chan, .. } => Some(*chan),
                _ => None,
            })
            .collect();
        assert_eq!(opens, [10, 11, 12, 13, 14]);
        assert!(c.contains(&Op::EpollNext { set: 4, max: CLIENT_MAX_EVENTS, block_cost: EPOLL_BLOCK_NS, block_pre: EPOLL_BLOCK_PRE_NS }));
        assert!(c.contains(&Op::ReadReg { chan_base: 15, cost: TCP_RECV_NS }));
        assert!(c.contains(&Op::WriteReg { chan_base: 0, cost: TCP_SEND_NS }));
        // Both workers serve even with one client thread (memcached -t 2, memtier -t 1).
        let one = crate::build("memcached", &Params::parse("threads=2,client_threads=1,connections=8").unwrap(), 2, &[]).unwrap();
        assert_eq!(one.tasks.iter().filter(|t| t.name.starts_with("memcached-w")).count(), 2);
        // Too many connections is an error naming the limit.
        let e = crate::build("memcached", &Params::parse("client_threads=1000,connections=101").unwrap(), 2, &[]).unwrap_err().0;
        assert!(e.contains("at most 100000 connections"), "{e}");
    }
}
