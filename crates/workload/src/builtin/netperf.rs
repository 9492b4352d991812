//! netperf TCP_RR / UDP_RR over loopback (benchmark-workloads §6).
//!
//! `instances` independent netperf processes, each paired with its own
//! forked netserver child; strictly one transaction in flight per pair
//! (no -b burst): request of `request_size` bytes, response of
//! `response_size` bytes, both delivered in softirq on the sender's CPU with
//! WF_SYNC.

use super::costs::{COPY_NS_PER_KB, TCP_RECV_NS, TCP_SEND_NS, UDP_RECV_NS, UDP_SEND_NS};
use super::{choice, pick_metric, push_prog, start_task, Builtin, COUNTER_OPS, HIST_REQUEST};
use crate::params::{ParamDoc, Params};
use crate::{Arrivals, ChannelKind, ChannelSpec, MetricSpec, Op, Workload, WorkloadError};

pub const BUILTIN: Builtin = Builtin {
    name: "netperf",
    summary: "netperf TCP_RR / UDP_RR: netperf/netserver pairs, one transaction in flight each",
    metric: "transactions/s (all pairs, higher is better)",
    params: &[
        ParamDoc { key: "mode", default: "TCP_RR", help: "TCP_RR or UDP_RR (-t)" },
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
    let mode = choice(p, "mode", "TCP_RR", &["TCP_RR", "UDP_RR"])?;
    let n = p.u64_in("instances", 1, 1, 50_000)? as u32;
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
    let mut w = Workload {
        memory: Vec::new(),
        arrivals: None,
        name: "netperf".into(),
        params: vec![
            ("mode".into(), mode.to_string()),
            ("instances".into(), n.to_string()),
            ("request_size".into(), req.to_string()),
            ("response_size".into(), rsp.to_string()),
        ],
        programs: Vec::new(),
        tasks: Vec::new(),
        channels: Vec::new(),
        sems: Vec::new(),
        metric: MetricSpec::Rate { name: "transactions".into(), unit: "trans/s".into(), counter: COUNTER_OPS, start: None, end: None },
        time_bounded: true,
        groups: Vec::new(),
        jitter_pct: 10,
    };
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
        // Client programs first, then server programs (compact workload files).
        let cp = push_prog(&mut w, client);
        servers.push(server);
        w.tasks.push(start_task(format!("netperf-{i}"), cp, 1 + 2 * i));
        w.tasks.push(start_task(format!("netserver-{i}"), u32::MAX, 2 + 2 * i));
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
        assert!(crate::build("netperf", &Params::parse("mode=TCP_STREAM").unwrap(), 12, &[]).is_err());
    }
}
