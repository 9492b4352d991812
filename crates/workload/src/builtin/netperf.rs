//! netperf TCP_RR / UDP_RR / TCP_STREAM over loopback (benchmark-workloads §6).
//!
//! `instances` independent netperf processes, each paired with its own
//! forked netserver child. TCP_RR / UDP_RR: strictly one transaction in
//! flight per pair (no -b burst): request of `request_size` bytes, response
//! of `response_size` bytes, both delivered in softirq on the sender's CPU
//! with WF_SYNC. TCP_STREAM: netperf send()s `message_size` bytes in a loop
//! (nettest_omni's send_data loop) and netserver recv()s whatever has arrived
//! (a sync wakeup from the sender's softirq when it was asleep); the sender
//! blocks only when the socket buffer is full.

use super::costs::{
    COPY_NS_PER_KB, STREAM_RECV_NS, STREAM_RECV_NS_PER_KB, STREAM_SEND_NS, STREAM_SEND_NS_PER_KB, TCP_RECV_NS, TCP_SEND_NS, UDP_RECV_NS,
    UDP_SEND_NS,
};
use super::{choice, pick_metric, push_prog, start_task, Builtin, COUNTER_OPS, HIST_REQUEST};
use crate::params::{ParamDoc, Params};
use crate::{Arrivals, ChannelKind, ChannelSpec, MetricSpec, Op, Workload, WorkloadError};

pub const BUILTIN: Builtin = Builtin {
    name: "netperf",
    summary: "netperf TCP_RR / UDP_RR (one transaction in flight per pair) or TCP_STREAM (bulk send): netperf/netserver pairs",
    metric: "transactions/s (all pairs, higher is better); TCP_STREAM: Mbit/s received (all pairs)",
    params: &[
        ParamDoc { key: "mode", default: "TCP_RR", help: "TCP_RR, UDP_RR or TCP_STREAM (-t)" },
        ParamDoc { key: "message_size", default: "16384", help: "TCP_STREAM: bytes per send() (-- -m; netperf's default is the send socket buffer, 16384 on Linux)" },
        ParamDoc { key: "instances", default: "1", help: "concurrent netperf/netserver pairs" },
        ParamDoc { key: "request_size", default: "1", help: "request bytes (-- -r req,rsp)" },
        ParamDoc { key: "response_size", default: "1", help: "response bytes" },
        ParamDoc {
            key: "rate",
            default: "0",
            help: "open loop: transactions/s from remote netperf clients (all instances) through the NIC receive path; 0 = on-box netperf pairs",
        },
        ParamDoc { key: "rx_queues", default: "all CPUs", help: "open loop: NIC receive queues, their interrupts on CPUs 0..rx_queues" },
        ParamDoc { key: "metric", default: "transactions", help: "open loop: transactions or latency_{avg,p50,p90,p95,p99,p99.9} (arrival to reply sent)" },
    ],
    build,
};

/// netperf's per-transaction user-space work (omni loop, timing) [inferred: ~0.5 us].
pub const NETPERF_USER_NS: u64 = 500;

// FIDELITY(F-102): loopback TCP/UDP as sync channels.
fn build(p: &Params, nr_cpus: usize, _cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let mode = choice(p, "mode", "TCP_RR", &["TCP_RR", "UDP_RR", "TCP_STREAM"])?;
    let n = p.u64_in("instances", 1, 1, 50_000)? as u32;
    if mode == "TCP_STREAM" {
        return stream(p, n);
    }
    if p.get("message_size").is_some() {
        return Err(WorkloadError(
            "netperf: message_size applies to mode=TCP_STREAM; for TCP_RR / UDP_RR use request_size and response_size".into(),
        ));
    }
    let req = p.u64_in("request_size", 1, 1, 1 << 20)?;
    let rsp = p.u64_in("response_size", 1, 1, 1 << 20)?;
    let (send, recv) = if mode == "TCP_RR" { (TCP_SEND_NS, TCP_RECV_NS) } else { (UDP_SEND_NS, UDP_RECV_NS) };
    let copy = |b: u64| b * COPY_NS_PER_KB / 1024;
    let rate = p.u64_in("rate", 0, 0, 100_000_000)?;
    if rate == 0 {
        for k in ["rx_queues", "metric"] {
            if p.get(k).is_some() {
                return Err(WorkloadError(format!("netperf: {k} applies to the open loop only; add rate=TRANSACTIONS_PER_S or drop {k}")));
            }
        }
    }
    let sock = ChannelSpec { capacity: 64, sync: rate == 0, kind: ChannelKind::Socket, epoll: None };
    let mut w = empty(
        vec![
            ("mode".into(), mode.to_string()),
            ("instances".into(), n.to_string()),
            ("request_size".into(), req.to_string()),
            ("response_size".into(), rsp.to_string()),
        ],
        MetricSpec::Rate { name: "transactions".into(), unit: "trans/s".into(), counter: COUNTER_OPS, start: None, end: None },
    );
    if rate > 0 {
        // Open loop: only the netservers run here; each one's connection gets
        // rate / instances transactions per second from a remote netperf.
        let queues = p.u64_in("rx_queues", nr_cpus as u64, 1, nr_cpus.max(1) as u64)?;
        let latency =
            MetricSpec::Rate { name: "transactions".into(), unit: "trans/s".into(), counter: COUNTER_OPS, start: None, end: None };
        let (key, metric) = pick_metric(p, "transactions", latency, &[("latency", HIST_REQUEST)])?;
        w.metric = metric;
        w.params.push(("rate".into(), rate.to_string()));
        w.params.push(("rx_queues".into(), queues.to_string()));
        if p.get("metric").is_some() {
            w.params.push(("metric".into(), key));
        }
        let mut conns = Vec::new();
        for i in 0..n {
            let c_req = w.channels.len() as u32;
            w.channels.push(sock.clone());
            let server = vec![
                Op::Loop { count: u64::MAX },
                Op::Read { chan: c_req, cost: recv + copy(req) },
                Op::Run { ns: send + copy(rsp) },
                Op::ReqEnd { hist: HIST_REQUEST },
                Op::Count { id: COUNTER_OPS, n: 1 },
                Op::EndLoop,
            ];
            let sp = push_prog(&mut w, server);
            w.tasks.push(start_task(format!("netserver-{i}"), sp, 2 + 2 * i));
            conns.push((c_req, i, super::rss_queue(i, queues)));
        }
        w.arrivals = Some(Arrivals { rate_per_s: rate as f64, conns, rx_ns: super::memcached::RX_NS, hist: HIST_REQUEST });
        return Ok(w);
    }
    let mut servers = Vec::new();
    for i in 0..n {
        let c_req = w.channels.len() as u32;
        w.channels.push(sock.clone());
        w.channels.push(sock.clone());
        let c_rsp = c_req + 1;
        let client = vec![
            Op::Loop { count: u64::MAX },
            Op::Run { ns: NETPERF_USER_NS },
            Op::Write { chan: c_req, cost: send + copy(req) },
            Op::Read { chan: c_rsp, cost: recv + copy(rsp) },
            Op::Count { id: COUNTER_OPS, n: 1 },
            Op::EndLoop,
        ];
        let server = vec![
            Op::Loop { count: u64::MAX },
            Op::Read { chan: c_req, cost: recv + copy(req) },
            Op::Write { chan: c_rsp, cost: send + copy(rsp) },
            Op::EndLoop,
        ];
        add_pair(&mut w, &mut servers, i, client, server);
    }
    super::push_server_programs(&mut w, servers);
    Ok(w)
}

/// A netperf workload with no task yet: `params` as reported, `metric`.
fn empty(params: Vec<(String, String)>, metric: MetricSpec) -> Workload {
    Workload::new("netperf", params, metric, true, 10)
}

/// Pair `i`: its netperf task with `client`, its netserver task with `server`
/// (client programs first, the server programs after them: compact workload files).
fn add_pair(w: &mut Workload, servers: &mut Vec<Vec<Op>>, i: u32, client: Vec<Op>, server: Vec<Op>) {
    let cp = push_prog(w, client);
    servers.push(server);
    w.tasks.push(start_task(format!("netperf-{i}"), cp, 1 + 2 * i));
    w.tasks.push(start_task(format!("netserver-{i}"), u32::MAX, 2 + 2 * i));
}

/// Socket buffering of one TCP_STREAM connection: loopback autotunes the
/// receive buffer up to tcp_rmem's maximum (6 MiB by default) [assumed: 4 MiB
/// in flight]; the measured sender never blocked with the receiver on another CPU.
const STREAM_INFLIGHT_BYTES: u64 = 4 << 20;

/// `mode=TCP_STREAM`: netperf's send loop and netserver's recv loop.
// FIDELITY(F-110): bytes counted at send(); one channel message per send(), the receiver takes all queued.
fn stream(p: &Params, n: u32) -> Result<Workload, WorkloadError> {
    for k in ["request_size", "response_size", "rate", "rx_queues", "metric"] {
        if p.get(k).is_some() {
            return Err(WorkloadError(format!("netperf: {k} does not apply to mode=TCP_STREAM (it takes instances and message_size)")));
        }
    }
    let m = p.u64_in("message_size", 16384, 1, 1 << 20)?;
    let capacity = (STREAM_INFLIGHT_BYTES / m).clamp(1, u32::MAX as u64) as u32;
    let sock = ChannelSpec { capacity, sync: true, kind: ChannelKind::Socket, epoll: None };
    let mut w = empty(
        vec![("mode".into(), "TCP_STREAM".into()), ("instances".into(), n.to_string()), ("message_size".into(), m.to_string())],
        MetricSpec::ScaledRate {
            name: "throughput".into(),
            unit: "Mbit/s".into(),
            counter: COUNTER_OPS,
            divisor: 1_000_000,
            start: None,
            end: None,
        },
    );
    let per_kb = |ns_per_kb: u64| m * ns_per_kb / 1024;
    let mut servers = Vec::new();
    for i in 0..n {
        let c = w.channels.len() as u32;
        w.channels.push(sock.clone());
        let client = vec![
            Op::Loop { count: u64::MAX },
            Op::Write { chan: c, cost: STREAM_SEND_NS + per_kb(STREAM_SEND_NS_PER_KB) },
            Op::Count { id: COUNTER_OPS, n: m * 8 },
            Op::EndLoop,
        ];
        let server = vec![
            Op::Loop { count: u64::MAX },
            Op::ReadAll { chan: c, cost: STREAM_RECV_NS, per_msg: per_kb(STREAM_RECV_NS_PER_KB) },
            Op::EndLoop,
        ];
        add_pair(&mut w, &mut servers, i, client, server);
    }
    super::push_server_programs(&mut w, servers);
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn task_graph() {
        let w = crate::build("netperf", &Params::parse("instances=2,mode=UDP_RR").unwrap(), 12, &[]).unwrap();
        assert_eq!(w.tasks.len(), 4);
        assert!(w.channels.iter().all(|c| c.sync));
        assert_ne!(w.tasks[0].mm, w.tasks[1].mm);
        let c = &w.programs[w.tasks[2].program as usize];
        assert_eq!(c[2], Op::Write { chan: 2, cost: UDP_SEND_NS });
        assert!(crate::build("netperf", &Params::parse("mode=TCP_SENDFILE").unwrap(), 12, &[]).is_err());
        assert!(crate::build("netperf", &Params::parse("message_size=64").unwrap(), 12, &[]).is_err());
    }

    #[test]
    fn stream_sends_in_a_loop_and_the_server_drains() {
        let w = crate::build("netperf", &Params::parse("mode=TCP_STREAM,message_size=64,instances=2").unwrap(), 12, &[]).unwrap();
        assert_eq!(w.tasks.len(), 4);
        assert_eq!(w.channels.len(), 2);
        assert!(w.channels.iter().all(|c| c.sync && c.capacity == 65_536));
        let c = &w.programs[w.tasks[0].program as usize];
        assert_eq!(c[1], Op::Write { chan: 0, cost: STREAM_SEND_NS + 64 * STREAM_SEND_NS_PER_KB / 1024 });
        assert_eq!(c[2], Op::Count { id: COUNTER_OPS, n: 512 });
        let s = &w.programs[w.tasks[1].program as usize];
        assert!(matches!(s[1], Op::ReadAll { chan: 0, cost: STREAM_RECV_NS, .. }));
        assert!(matches!(w.metric, MetricSpec::ScaledRate { divisor: 1_000_000, .. }));
        for bad in ["mode=TCP_STREAM,request_size=2", "mode=TCP_STREAM,rate=1000", "mode=TCP_STREAM,message_size=0"] {
            let e = crate::build("netperf", &Params::parse(bad).unwrap(), 12, &[]).unwrap_err().0;
            assert!(e.contains("netperf") || e.contains("message_size"), "{bad}: {e}");
        }
    }
}
