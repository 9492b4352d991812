//! netperf TCP_RR / UDP_RR over loopback (benchmark-workloads §6).
//!
//! `instances` independent netperf processes, each paired with its own
//! forked netserver child; strictly one transaction in flight per pair
//! (no -b burst): request of `request_size` bytes, response of
//! `response_size` bytes, both delivered in softirq on the sender's CPU with
//! WF_SYNC.

use super::costs::{COPY_NS_PER_KB, TCP_RECV_NS, TCP_SEND_NS, UDP_RECV_NS, UDP_SEND_NS};
use super::{choice, push_prog, start_task, Builtin, COUNTER_OPS};
use crate::params::{ParamDoc, Params};
use crate::{ChannelKind, ChannelSpec, MetricSpec, Op, Workload, WorkloadError};

pub const BUILTIN: Builtin = Builtin {
    name: "netperf",
    summary: "netperf TCP_RR / UDP_RR: netperf/netserver pairs, one transaction in flight each",
    metric: "transactions/s (all pairs, higher is better)",
    params: &[
        ParamDoc { key: "mode", default: "TCP_RR", help: "TCP_RR or UDP_RR (-t)" },
        ParamDoc { key: "instances", default: "1", help: "concurrent netperf/netserver pairs" },
        ParamDoc { key: "request_size", default: "1", help: "request bytes (-- -r req,rsp)" },
        ParamDoc { key: "response_size", default: "1", help: "response bytes" },
    ],
    build,
};

/// netperf's per-transaction user-space work (omni loop, timing) [inferred: ~0.5 us].
pub const NETPERF_USER_NS: u64 = 500;

// FIDELITY(F-102): loopback TCP/UDP as sync channels.
fn build(p: &Params, _nr_cpus: usize, _cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let mode = choice(p, "mode", "TCP_RR", &["TCP_RR", "UDP_RR"])?;
    let n = p.u64_in("instances", 1, 1, 50_000)? as u32;
    let req = p.u64_in("request_size", 1, 1, 1 << 20)?;
    let rsp = p.u64_in("response_size", 1, 1, 1 << 20)?;
    let (send, recv) = if mode == "TCP_RR" { (TCP_SEND_NS, TCP_RECV_NS) } else { (UDP_SEND_NS, UDP_RECV_NS) };
    let copy = |b: u64| b * COPY_NS_PER_KB / 1024;
    let sock = ChannelSpec { capacity: 64, sync: true, kind: ChannelKind::Socket };
    let mut w = Workload {
        memory: Vec::new(),
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
