//! A synthetic trace generator for scale tests: `pairs` thread pairs of one
//! process ping-ponging through blocking wakeups (A runs, wakes B, blocks;
//! B runs, wakes A, blocks), `cycles` times each, as ftrace text.

use std::fmt::Write;

/// ftrace text of `pairs` ping-pong thread pairs (tgid 100, pids from 101)
/// doing `cycles` round trips each on `cpus` CPUs; round trips of one pair
/// are `period_ns` apart.
pub fn ping_pong(pairs: u32, cycles: u32, cpus: u16, period_ns: u64) -> String {
    let mut s = String::with_capacity((pairs as usize) * (cycles as usize) * 4 * 150);
    let _ = writeln!(s, "# tracer: nop\n#\n# entries-in-buffer/entries-written: 0/0   #P:{cpus}");
    let line = |s: &mut String, ts: u64, cpu: u16, cur: u32, ev: &str, pl: String| {
        let comm = if cur == 0 { "<idle>".to_string() } else { format!("worker-{}", cur - 101) };
        let _ = writeln!(
            s,
            "{comm:>16}-{cur:<7} (    100) [{cpu:03}] d..2. {:>5}.{:06}: {ev}: {pl}",
            ts / 1_000_000_000,
            ts % 1_000_000_000 / 1000
        );
    };
    let step = period_ns / (pairs as u64 + 1);
    for c in 0..cycles as u64 {
        for p in 0..pairs {
            let (a, b) = (101 + 2 * p, 102 + 2 * p);
            let cpu = (p % cpus as u32) as u16;
            let t0 = c * period_ns + p as u64 * step;
            let sw = |prev: u32, next: u32| {
                let pc = |x: u32| if x == 0 { format!("swapper/{cpu}") } else { format!("worker-{}", x - 101) };
                format!(
                    "prev_comm={} prev_pid={prev} prev_prio=120 prev_state=S ==> next_comm={} next_pid={next} next_prio=120",
                    pc(prev),
                    pc(next)
                )
            };
            let wk = |x: u32| format!("comm=worker-{} pid={x} prio=120 target_cpu={cpu:03}", x - 101);
            line(&mut s, t0, cpu, 0, "sched_switch", sw(0, a).replace("prev_state=S", "prev_state=R"));
            line(&mut s, t0 + 20_000, cpu, a, "sched_waking", wk(b));
            line(&mut s, t0 + 21_000, cpu, a, "sched_switch", sw(a, b));
            line(&mut s, t0 + 51_000, cpu, b, "sched_waking", wk(a));
            line(&mut s, t0 + 52_000, cpu, b, "sched_switch", sw(b, 0));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{analyse, import, ImportOptions};

    /// Scale: the import stays bounded however long the trace (loops fold).
    #[test]
    fn a_thousand_threads_fold_to_a_bounded_file() {
        let text = ping_pong(500, 40, 2, 2_000_000);
        let (p, a) = analyse(&text, None, false).unwrap();
        assert_eq!(a.tasks.len(), 1000);
        assert!(p.events.len() >= 500 * 40 * 5);
        let imp = import(&a, &ImportOptions::default()).unwrap();
        assert!(imp.folded_ops <= 20_000, "{}", imp.folded_ops);
        assert!(imp.notes.is_empty(), "{:?}", imp.notes);
        // One process, 1000 threads; every worker's program is a loop.
        let w = &imp.workload;
        assert_eq!(w.tasks.iter().map(|t| t.mm).max(), Some(0));
        assert!(w.programs.iter().all(|p| p.iter().any(|o| matches!(o, schedlab_workload::Op::Loop { .. }))));
    }

    /// The full-size measurement (1,000 threads, one minute, 10 round trips
    /// per second per pair: 3,000,000 events): `cargo test -p schedlab-trace
    /// --release -- --ignored --nocapture one_minute`.
    #[test]
    #[ignore]
    fn one_minute_of_a_thousand_threads() {
        let t = std::time::Instant::now();
        let text = ping_pong(500, 600, 2, 100_000_000);
        let gen = t.elapsed();
        let t = std::time::Instant::now();
        let (p, a) = analyse(&text, None, false).unwrap();
        let imp = import(&a, &ImportOptions::default()).unwrap();
        let toml = schedlab_workload::file::to_toml(&imp.workload, "scale");
        eprintln!(
            "one_minute: {} MB of text, {} events, generated in {:?}; parsed+imported+written in {:?}: {} ops -> {} folded, {} bytes of TOML",
            text.len() / 1_000_000,
            p.events.len(),
            gen,
            t.elapsed(),
            imp.raw_ops,
            imp.folded_ops,
            toml.len()
        );
        assert!(toml.len() < 2_000_000);
    }
}
