//! will-it-scale `context_switch1` (benchmark-workloads §3): N pairs, each pair
//! bound to one core's CPUs (hwloc cpuset of core i % ncores), 1-byte pipe
//! ping-pong; the counter counts one-way switches (+2 per round trip).
//! As in will-it-scale's main.c, one main task forks the copies one after
//! another and each copy forks its ping-pong child as it starts, so with
//! `affinity=0` (-n) the fork balancer places every task while the earlier
//! pairs are already running.

use super::costs::*;
use super::{forked_task, start_task, Builtin, COUNTER_OPS};
use crate::params::{ParamDoc, Params};
use crate::{ChannelKind, ChannelSpec, MetricSpec, Op, TaskSpec, Workload, WorkloadError};

pub const BUILTIN: Builtin = Builtin {
    name: "context_switch1",
    summary: "will-it-scale context_switch1: ping-pong pairs, each bound to one core",
    metric: "ops/s (one-way switches per second, all pairs, higher is better)",
    params: &[
        ParamDoc { key: "pairs", default: "1", help: "number of ping-pong pairs (-t)" },
        ParamDoc { key: "threads", default: "0", help: "1: the _threads build (pthread_create)" },
        ParamDoc { key: "affinity", default: "1", help: "0: no binding (-n)" },
    ],
    build,
};

fn build(p: &Params, nr_cpus: usize, cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let pairs = p.u64_in("pairs", 1, 1, 50_000)? as u32;
    let threads = p.flag("threads", false)?;
    let affinity = p.flag("affinity", true)?;
    let (cap, per_page) = pipe_capacity(1);
    let chan = ChannelSpec { capacity: cap, sync: true, kind: ChannelKind::Pipe { msgs_per_page: per_page }, epoll: None };
    let fork_cost = if threads { FORK_THREAD_NS } else { FORK_PROCESS_NS };
    let params = vec![
        ("pairs".into(), pairs.to_string()),
        ("threads".into(), (threads as u8).to_string()),
        ("affinity".into(), (affinity as u8).to_string()),
    ];
    let metric = MetricSpec::Rate { name: "ops_per_sec".into(), unit: "ops/s".into(), counter: COUNTER_OPS, start: None, end: None };
    let mut w = Workload::new("context_switch1", params, metric, true, 10);
    let _ = nr_cpus;
    // will-it-scale main(): forks the copies one after another, then waits.
    // FIDELITY(F-441): ops are counted from time 0, the fork phase included.
    let main_prog = 0u32;
    w.programs.push(Vec::new());
    w.tasks.push(start_task("will-it-scale".into(), main_prog, 2 * pairs));
    let mut main_ops = Vec::new();
    for i in 0..pairs {
        let (c1, c2) = (2 * i, 2 * i + 1);
        w.channels.push(chan.clone());
        w.channels.push(chan.clone());
        let cpus = if affinity && !cores.is_empty() { Some(cores[i as usize % cores.len()].clone()) } else { None };
        let parent_prog = w.programs.len() as u32;
        let child_spec = w.tasks.len() as u32 + 1;
        main_ops.push(Op::Fork { spec: w.tasks.len() as u32, cost: fork_cost });
        w.programs.push(vec![
            Op::Fork { spec: child_spec, cost: fork_cost },
            Op::Loop { count: u64::MAX },
            Op::Write { chan: c1, cost: PIPE_WRITE_NS },
            Op::Read { chan: c2, cost: PIPE_READ_NS },
            Op::Count { id: COUNTER_OPS, n: 2 },
            Op::EndLoop,
        ]);
        w.programs.push(vec![
            Op::Loop { count: u64::MAX },
            Op::Read { chan: c1, cost: PIPE_READ_NS },
            Op::Write { chan: c2, cost: PIPE_WRITE_NS },
            Op::EndLoop,
        ]);
        let mm = if threads { 0 } else { 2 * i };
        w.tasks.push(TaskSpec { cpus: cpus.clone(), ..forked_task(format!("context_switch1-{i}"), parent_prog, mm) });
        w.tasks
            .push(TaskSpec { cpus, ..forked_task(format!("context_switch1-{i}c"), parent_prog + 1, if threads { 0 } else { 2 * i + 1 }) });
    }
    main_ops.push(Op::WaitChild);
    w.programs[main_prog as usize] = main_ops;
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn pairs_bound_to_cores() {
        let cores = vec![vec![0, 2], vec![1, 3]];
        let w = crate::build("context_switch1", &Params::parse("pairs=3").unwrap(), 4, &cores).unwrap();
        assert_eq!(w.tasks.len(), 7, "main + 3 pairs");
        assert!(w.tasks[0].start && w.tasks[0].cpus.is_none(), "main() is unbound");
        assert!(w.tasks[1..].iter().all(|t| !t.start), "copies are forked by main()");
        assert_eq!(w.tasks[1].cpus, Some(vec![0, 2]));
        assert_eq!(w.tasks[5].cpus, Some(vec![0, 2]));
        assert_eq!(w.tasks[4].cpus, Some(vec![1, 3]));
        // main() forks the copies in order, then waits.
        let forks: Vec<u32> =
            w.programs[0].iter().filter_map(|op| if let Op::Fork { spec, .. } = op { Some(*spec) } else { None }).collect();
        assert_eq!(forks, vec![1, 3, 5]);
        assert_eq!(w.programs[0].last(), Some(&Op::WaitChild));
        assert!(w.time_bounded);
    }
}
