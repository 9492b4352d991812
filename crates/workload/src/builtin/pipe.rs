//! `perf bench sched pipe` (benchmark-workloads §2): two tasks pass one token
//! over two pipes; one loop = one round trip = 2 sync wakeups.

use super::costs::*;
use super::{forked_task, start_task, Builtin, MARK_END, MARK_START};
use crate::params::{ParamDoc, Params};
use crate::{ChannelKind, ChannelSpec, MetricSpec, Op, Workload, WorkloadError};

pub const BUILTIN: Builtin = Builtin {
    name: "pipe",
    summary: "perf bench sched pipe: one-token ping-pong between two tasks over two pipes",
    metric: "ops/s (round trips per second, higher is better)",
    params: &[
        ParamDoc { key: "loops", default: "1000000", help: "round trips (-l)" },
        ParamDoc { key: "threads", default: "0", help: "1: two threads of one process (-T)" },
    ],
    build,
};

fn build(p: &Params, _nr_cpus: usize, _cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let loops = p.u64_in("loops", 1_000_000, 1, 1 << 40)?;
    let threads = p.flag("threads", false)?;
    let (cap, per_page) = pipe_capacity(4);
    let chan = ChannelSpec { capacity: cap, sync: true, kind: ChannelKind::Pipe { msgs_per_page: per_page }, epoll: None };
    let fork_cost = if threads { FORK_THREAD_NS } else { FORK_PROCESS_NS };
    // Older (one-token) perf: worker 0 reads pipe_1 then writes pipe_2; worker 1 writes pipe_1 then reads pipe_2.
    let main = vec![
        Op::Fork { spec: 1, cost: fork_cost },
        Op::Mark { id: MARK_START },
        Op::Loop { count: loops },
        Op::Write { chan: 0, cost: PIPE_WRITE_NS },
        Op::Read { chan: 1, cost: PIPE_READ_NS },
        Op::Count { id: super::COUNTER_OPS, n: 1 },
        Op::EndLoop,
        Op::WaitChild,
        Op::Mark { id: MARK_END },
        Op::Exit { cost: EXIT_NS },
    ];
    let child = vec![
        Op::Loop { count: loops },
        Op::Read { chan: 0, cost: PIPE_READ_NS },
        Op::Write { chan: 1, cost: PIPE_WRITE_NS },
        Op::EndLoop,
        Op::Exit { cost: EXIT_NS },
    ];
    let params = vec![("loops".into(), loops.to_string()), ("threads".into(), (threads as u8).to_string())];
    let metric = MetricSpec::Rate {
        name: "ops_per_sec".into(),
        unit: "ops/s".into(),
        counter: super::COUNTER_OPS,
        start: Some(MARK_START),
        end: Some(MARK_END),
    };
    let mut w = Workload::new("pipe", params, metric, false, 10);
    w.programs = vec![main, child];
    w.tasks = vec![start_task("sched-pipe".into(), 0, 0), forked_task("sched-pipe-child".into(), 1, if threads { 0 } else { 1 })];
    w.channels = vec![chan.clone(), chan];
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn two_tasks_sync_pipes() {
        let w = crate::build("pipe", &Params::parse("loops=10").unwrap(), 2, &[]).unwrap();
        assert_eq!(w.tasks.len(), 2);
        assert!(w.channels.iter().all(|c| c.sync));
        assert_ne!(w.tasks[0].mm, w.tasks[1].mm);
    }
}
