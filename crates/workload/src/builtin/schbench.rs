//! schbench (Chris Mason; benchmark-workloads §4), in its two models.
//!
//! `version=2023` (April 2023 onward, §4.1): M message threads, each with T
//! workers. A worker queues itself on its message thread's list and posts the
//! message thread's futex, waits on its own futex, records its wakeup latency,
//! usleep(100 us) (a timer wakeup), then does `n` matrix multiplies of `F` KB.
//! The message thread takes every queued worker at once, reads one timestamp
//! and posts them one after another (`xlist_wake_all`, `Op::WakeQueued`),
//! then futex-waits for the next post.
//!
//! `version=2016` (e4aa540, the one in AMD's reports, §4.2): workers spin 30 ms
//! and then queue; the message thread wakes all queued workers, futex-waits for
//! the first new post, spins 30 ms and sleeps 30-37.5 ms, so workers are
//! released in bursts.
//!
//! Every wakeup between threads is a futex wake (not WF_SYNC). The list is a
//! channel of tagged messages (the tag is the worker's futex); `Poll` on it is
//! the message thread's futex wait. The metric is the p99 of the wakeup
//! latency (batch timestamp -> worker running), as schbench prints it.
//! 2023 also records the request latency (worker woken -> usleep and matrix
//! work done: `ReqStart`/`ReqEnd`, histogram 1) and counts requests, so
//! `--set metric=rps` reports requests per second and `metric=request_p99`
//! (or `wakeup_p50`, `request_p99.9`, ...) another figure.
//! The 2023 worker's matrix work holds its CPU's lock (`Op::CpuLock`,
//! lock_this_cpu()), so a worker woken onto a CPU where another one works
//! spins there until that one is done (`locking=0` is schbench -L).
//! FIDELITY(F-101): each fpost() a fixed cost (FUTEX_WAKE_NS) plus the modelled ttwu.

use super::costs::FUTEX_WAKE_NS;
use super::{choice, pick_metric, push_prog, start_task, Builtin, COUNTER_OPS, HIST_REQUEST, HIST_WAKEUP};
use crate::params::{ParamDoc, Params};
use crate::{ChannelKind, ChannelSpec, MetricSpec, Op, SemSpec, Workload, WorkloadError};

pub const BUILTIN: Builtin = Builtin {
    name: "schbench",
    summary: "schbench: message threads waking worker threads through futexes; wakeup-latency percentiles",
    metric: "wakeup latency p99 (us, lower is better)",
    params: &[
        ParamDoc { key: "version", default: "2023", help: "2023 (futex hub, usleep + matrix work) or 2016 (30 ms spins, bursts)" },
        ParamDoc { key: "message_threads", default: "1 (2016: 2)", help: "message threads (-m)" },
        ParamDoc { key: "threads", default: "ceil(cpus/m) (2016: 16)", help: "worker threads per message thread (-t)" },
        ParamDoc { key: "sleep_us", default: "100 (2016: 30000)", help: "2023: usleep per request (-s); 2016: message-thread sleep (-s)" },
        ParamDoc { key: "footprint_kb", default: "256", help: "2023: matrix footprint per worker (-F)" },
        ParamDoc { key: "operations", default: "5", help: "2023: matrix multiplies per request (-n)" },
        ParamDoc { key: "cputime_us", default: "30000", help: "2016: worker and message-thread spin per loop (-c)" },
        ParamDoc {
            key: "locking",
            default: "1",
            help: "2023: 1 = the matrix work holds its CPU's lock (a worker that finds it taken spins); 0 = schbench -L",
        },
        ParamDoc {
            key: "metric",
            default: "wakeup_p99",
            help: "reported figure: wakeup_{avg,p50,p90,p95,p99,p99.9}; 2023 also request_{avg,p50,...,p99.9} and rps",
        },
    ],
    build,
};

/// One naive matrix multiply of three 104x104 u64 matrices (-F 256): the
/// README's calibration run shows ~16.9 ms for -n 5 on a 52-CPU machine.
pub const MATMUL_256K_NS: u64 = 3_380_000;

/// Matrix-multiply time for a footprint of `kb` KB: dimension ~ sqrt(kb), cost ~ dim^3.
fn matmul_ns(kb: u64) -> u64 {
    (MATMUL_256K_NS as f64 * (kb as f64 / 256.0).powf(1.5)).round() as u64
}

fn build(p: &Params, nr_cpus: usize, _cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let version = choice(p, "version", "2023", &["2023", "2016"])?;
    let old = version == "2016";
    let m = p.u64_in("message_threads", if old { 2 } else { 1 }, 1, 1024)? as u32;
    let default_t = if old { 16 } else { (nr_cpus.max(1) as u64).div_ceil(m as u64).max(1) };
    let t = p.u64_in("threads", default_t, 1, 100_000)? as u32;
    if (m as u64) * (t as u64 + 1) > 100_000 {
        return Err(WorkloadError(format!("message_threads={m}, threads={t} makes too many tasks; schedlab allows 100000")));
    }
    let sleep_us = p.u64_in("sleep_us", if old { 30_000 } else { 100 }, 0, 10_000_000)?;
    let footprint_kb = p.u64_in("footprint_kb", 256, 0, 1 << 22)?;
    let operations = p.u64_in("operations", 5, 0, 1_000_000)?;
    let cputime_us = p.u64_in("cputime_us", 30_000, 0, 10_000_000)?;
    let locking = p.u64_in("locking", 1, 0, 1)? == 1;
    let mut params = vec![
        ("version".to_string(), version.to_string()),
        ("message_threads".into(), m.to_string()),
        ("threads".into(), t.to_string()),
        ("sleep_us".into(), sleep_us.to_string()),
    ];
    if old {
        params.push(("cputime_us".into(), cputime_us.to_string()));
    } else {
        params.push(("footprint_kb".into(), footprint_kb.to_string()));
        params.push(("operations".into(), operations.to_string()));
        if !locking {
            params.push(("locking".into(), "0".into()));
        }
    }
    let wakeup_p99 = MetricSpec::LatencyPercentile { name: "wakeup_p99".into(), hist: HIST_WAKEUP, q: 0.99 };
    let (metric_key, metric) = if !old && p.get("metric") == Some("rps") {
        let rps = MetricSpec::Rate { name: "rps".into(), unit: "req/s".into(), counter: COUNTER_OPS, start: None, end: None };
        ("rps".to_string(), rps)
    } else if old {
        pick_metric(p, "wakeup_p99", wakeup_p99, &[("wakeup", HIST_WAKEUP)])?
    } else {
        pick_metric(p, "wakeup_p99", wakeup_p99, &[("wakeup", HIST_WAKEUP), ("request", HIST_REQUEST)])?
    };
    if p.get("metric").is_some() {
        params.push(("metric".into(), metric_key));
    }
    let mut w = Workload::new("schbench", params, metric, true, 10);
    let work_ns = operations * matmul_ns(footprint_kb);
    for mi in 0..m {
        // The message thread's list of queued workers (never full).
        let list = w.channels.len() as u32;
        w.channels.push(ChannelSpec { capacity: t + 1, sync: false, kind: ChannelKind::Socket, epoll: None });
        let mut hub =
            vec![Op::Loop { count: u64::MAX }, Op::WakeQueued { chan: list, sem_base: 0, cost: FUTEX_WAKE_NS }, Op::Poll { chan: list }];
        if old {
            hub.push(Op::Run { ns: cputime_us * 1000 });
            // usleep(sleeptime + rand() % (sleeptime / 4)): its mean.
            hub.push(Op::Sleep { ns: sleep_us * 1000 * 9 / 8 });
        }
        hub.push(Op::EndLoop);
        let hp = push_prog(&mut w, hub);
        w.tasks.push(start_task(format!("schbench-msg{mi}"), hp, 0));
        for ti in 0..t {
            let futex = w.sems.len() as u32;
            w.sems.push(SemSpec { initial: 0, sync: false, barging: false });
            let mut prog = vec![Op::Loop { count: u64::MAX }];
            if old {
                prog.push(Op::Run { ns: cputime_us * 1000 });
            }
            prog.extend([
                Op::WriteTag { chan: list, cost: FUTEX_WAKE_NS, tag: futex },
                Op::SemWait { sem: futex },
                Op::WakeLatency { hist: HIST_WAKEUP, sem: futex },
            ]);
            if !old {
                prog.push(Op::ReqStart { hist: HIST_REQUEST });
                if sleep_us > 0 {
                    prog.push(Op::Sleep { ns: sleep_us * 1000 });
                }
                if work_ns > 0 {
                    // do_work(): lock_this_cpu() around the matrix work,
                    // unless -L.
                    if locking {
                        prog.push(Op::CpuLock { set: 0 });
                    }
                    prog.push(Op::Run { ns: work_ns });
                    if locking {
                        prog.push(Op::CpuUnlock { set: 0 });
                    }
                }
                prog.push(Op::ReqEnd { hist: HIST_REQUEST });
            }
            prog.push(Op::Count { id: COUNTER_OPS, n: 1 });
            prog.push(Op::EndLoop);
            let wp = push_prog(&mut w, prog);
            w.tasks.push(start_task(format!("schbench-w{mi}.{ti}"), wp, 0));
        }
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn task_graph() {
        let w = crate::build("schbench", &Params::parse("message_threads=2,threads=3").unwrap(), 12, &[]).unwrap();
        assert_eq!(w.tasks.len(), 2 * (1 + 3));
        assert!(w.tasks.iter().all(|t| t.mm == 0), "threads of one process");
        assert_eq!(w.sems.len(), 6, "one futex per worker");
        assert!(w.sems.iter().all(|s| !s.sync), "futex wakeups are not WF_SYNC");
        assert!(w.channels.iter().all(|c| !c.sync));
        // worker 1 of hub 0 queues on list 0 and waits on futex 1
        let p = &w.programs[w.tasks[2].program as usize];
        assert!(p.contains(&Op::WriteTag { chan: 0, cost: FUTEX_WAKE_NS, tag: 1 }));
        assert!(p.contains(&Op::SemWait { sem: 1 }));
        assert!(p.contains(&Op::Sleep { ns: 100_000 }));
        let work = p.iter().position(|o| matches!(o, Op::Run { .. })).unwrap();
        assert_eq!((p[work - 1], p[work + 1]), (Op::CpuLock { set: 0 }, Op::CpuUnlock { set: 0 }), "the work holds its CPU's lock");
        let unlocked = crate::build("schbench", &Params::parse("locking=0").unwrap(), 12, &[]).unwrap();
        assert!(!unlocked.programs.iter().flatten().any(|o| matches!(o, Op::CpuLock { .. })), "-L");
        // defaults: 2023 scales workers to the CPUs
        let d = crate::build("schbench", &Params::default(), 12, &[]).unwrap();
        assert_eq!(d.tasks.len(), 13);
        let o = crate::build("schbench", &Params::parse("version=2016").unwrap(), 12, &[]).unwrap();
        assert_eq!(o.tasks.len(), 2 * 17);
        assert!(crate::build("schbench", &Params::parse("version=2020").unwrap(), 12, &[]).is_err());
    }
    #[test]
    fn matmul_scales_with_footprint() {
        assert_eq!(matmul_ns(256), MATMUL_256K_NS);
        assert!(matmul_ns(1024) > 7 * MATMUL_256K_NS);
    }
}
