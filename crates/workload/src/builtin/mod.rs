//! Built-in benchmarks, one file each (../shared/reference/benchmark-workloads.md).

pub mod context_switch1;
pub mod costs;
pub mod hackbench;
pub mod memcached;
pub mod netperf;
pub mod pgbench;
pub mod pipe;
pub mod schbench;
pub mod soaker;
pub mod stream;
pub mod sysbench;
pub mod tbench;

use crate::params::{ParamDoc, Params};
use crate::{Workload, WorkloadError};

/// Builds a built-in from `(params, nr_cpus, cores)`.
pub type BuildFn = fn(&Params, usize, &[Vec<u16>]) -> Result<Workload, WorkloadError>;

/// A built-in: name, what it models, its parameters and its metric.
pub struct Builtin {
    pub name: &'static str,
    pub summary: &'static str,
    pub metric: &'static str,
    pub params: &'static [ParamDoc],
    /// `(params, nr_cpus, cores)` where `cores[i]` lists the CPUs of core i.
    pub build: BuildFn,
}

pub const BUILTINS: &[Builtin] = &[
    hackbench::BUILTIN,
    pipe::BUILTIN,
    context_switch1::BUILTIN,
    schbench::BUILTIN,
    pgbench::BUILTIN,
    tbench::BUILTIN,
    netperf::BUILTIN,
    stream::BUILTIN,
    sysbench::BUILTIN,
    memcached::BUILTIN,
    soaker::BUILTIN,
];

pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Mark and counter ids used by the built-ins.
pub(crate) const MARK_START: u32 = 0;
pub(crate) const MARK_END: u32 = 1;
/// hackbench's `warmup=`: when half the senders have finished their warm-up loops.
pub(crate) const MARK_WARM: u32 = 2;
pub(crate) const COUNTER_OPS: u32 = 0;

/// A task that exists at time 0 (no affinity, nice 0).
pub(crate) fn start_task(name: String, program: u32, mm: u32) -> crate::TaskSpec {
    crate::TaskSpec {
        name,
        program,
        mm,
        nice: 0,
        cpus: None,
        start: true,
        group: 0,
        footprint_kib: None,
        shared: None,
        timer_slack_ns: crate::DEFAULT_TIMER_SLACK_NS,
    }
}

/// A task a `fork` op creates (`start = false`; no affinity, nice 0).
pub(crate) fn forked_task(name: String, program: u32, mm: u32) -> crate::TaskSpec {
    crate::TaskSpec { start: false, ..start_task(name, program, mm) }
}

/// RSS for the open loops: the receive queue (= the CPU of its interrupt)
/// that a hash of connection `i`'s 4-tuple picks among `queues`.
pub(crate) fn rss_queue(i: u32, queues: u64) -> u16 {
    let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
    (h % queues) as u16
}

/// Push a program, returning its index.
pub(crate) fn push_prog(w: &mut Workload, ops: Vec<crate::Op>) -> u32 {
    w.programs.push(ops);
    w.programs.len() as u32 - 1
}

/// Parse a choice parameter.
pub(crate) fn choice<'a>(p: &'a Params, key: &str, default: &'a str, allowed: &[&str]) -> Result<&'a str, WorkloadError> {
    let v = p.get(key).unwrap_or(default);
    if allowed.contains(&v) {
        Ok(v)
    } else {
        Err(WorkloadError(format!("{key}={v:?}: expected one of {}", allowed.join(", "))))
    }
}

/// Histogram id of wakeup latency; counter of bytes moved.
pub(crate) const HIST_WAKEUP: u32 = 0;
/// Histogram id of request / transaction latency (`Op::ReqStart`/`Op::ReqEnd`).
pub(crate) const HIST_REQUEST: u32 = 1;

/// The latency metric named `{prefix}_avg` or `{prefix}_pNN` (p50, p90, p95,
/// p99, p99.9) of histogram `hist`, if `choice` is one.
pub(crate) fn latency_metric(choice: &str, prefix: &str, hist: u32) -> Option<crate::MetricSpec> {
    let rest = choice.strip_prefix(prefix)?.strip_prefix('_')?;
    if rest == "avg" {
        return Some(crate::MetricSpec::LatencyMean { name: choice.into(), hist });
    }
    let q = match rest {
        "p50" => 0.50,
        "p90" => 0.90,
        "p95" => 0.95,
        "p99" => 0.99,
        "p99.9" => 0.999,
        _ => return None,
    };
    Some(crate::MetricSpec::LatencyPercentile { name: choice.into(), hist, q })
}

/// The `metric` parameter: `default` (the benchmark's headline figure, spec
/// `base`) or one of `{prefix}_avg|p50|p90|p95|p99|p99.9` for each (prefix, hist).
pub(crate) fn pick_metric(
    p: &Params,
    default: &str,
    base: crate::MetricSpec,
    lats: &[(&str, u32)],
) -> Result<(String, crate::MetricSpec), WorkloadError> {
    let v = p.get("metric").unwrap_or(default);
    if v == default {
        return Ok((v.to_string(), base));
    }
    lats.iter().find_map(|&(pre, h)| latency_metric(v, pre, h)).map(|m| (v.to_string(), m)).ok_or_else(|| {
        let alts: Vec<String> = lats.iter().map(|(pre, _)| format!("{pre}_avg|p50|p90|p95|p99|p99.9")).collect();
        WorkloadError(format!("metric={v:?}: expected {default} or {}", alts.join(" or ")))
    })
}

/// Client/server built-ins push each pair's client program and task as they go
/// and their server tasks with a placeholder program; this appends the server
/// programs after all clients (compact workload files) and points task
/// `2 * i + 1` at server `i`'s program.
pub(crate) fn push_server_programs(w: &mut Workload, servers: Vec<Vec<crate::Op>>) {
    for (i, server) in servers.into_iter().enumerate() {
        let sp = push_prog(w, server);
        w.tasks[2 * i + 1].program = sp;
    }
}
