//! Wakeup preemption on one CPU against the guest's kernel: a hog (the
//! client) wakes K sleepers (servers) through pipes, all pinned to one vCPU,
//! recorded with scripts/calib-src/wakepreempt.c into
//! tests/data/wakepreempt-local.txt. No placement is involved: what decides
//! is check_preempt_wakeup_fair() / wakeup_preempt_fair() on the woken
//! server (its lag, delayed dequeue, DELAY_ZERO, RUN_TO_PARITY), and once the
//! servers fall behind, the tick's slice check. The model runs the same
//! program on tests/data/local-guest.toml under the guest's own kernel (v6.18
//! with `--patch stable-6.18.44`) and must give the client's involuntary
//! switches per write within 0.1 of the mean of the recorded repeats (the
//! repeats spread up to 0.14 at two points, 0.05 at most others), with the
//! servers at nice 0, -5 (they weigh 3.1 times the client) and 5 (a third
//! of it), except the
//! configurations in `OPEN`, which must stay outside it (an OPEN point that
//! starts agreeing fails, so that it is moved out of the list).
//! docs/CALIBRATION.md "Wakeup preemption of a hog waker" has the table this
//! test prints (`cargo test --release -p schedlab-engine --test
//! wakeup_preemption -- --nocapture`).
//!
//! The second test does the same with memcached's built-in against memcached
//! and its client pinned to one vCPU (scripts/memcached-pinned): which side
//! each wakeup preempts, and so each side's voluntary and involuntary
//! switches per request.
//!
//! The third puts CPU hogs next to a waker and its wakee (scripts/hogwake,
//! tests/data/hogwake-local.txt; docs/CALIBRATION.md "Wakeup preemption
//! among hogs"): the hogs' lag decides whether the wakee preempts and whom
//! the CPU goes to when the waker blocks. The fourth has one waker wake
//! several sleepers (scripts/fanout, tests/data/fanout-local.txt): which of
//! them runs first.

use std::collections::BTreeMap;

mod common;
use common::{guest_machine, run_on_guest_explained, run_on_guest_with};
use schedlab_kernel::explain::Preempt;
use schedlab_workload::{build, Params};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/");

/// The server's spin per message, as recorded (`wakepreempt K 32 X`).
const S_US: u64 = 32;
/// Tolerance on involuntary switches per write (absolute).
const TOL: f64 = 0.1;
/// Per-op time variation: the real servers' runs (32 us spin + read + switch,
/// 35.6 us) have a coefficient of variation of 2.0 % in a trace of the K = 2,
/// X = 28 run; uniform +-3 % has 1.7 %.
const JITTER_PCT: u32 = 3;

/// The data lines of tests/data/`file` (comments and blank lines left
/// out), each as its `key=value` fields.
fn data_lines(file: &str) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(format!("{DATA}{file}")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().filter_map(|f| f.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect())
        .collect()
}

/// Print one figure of configuration `what`, real against model, with its
/// reason if `open` lists it, and record in `bad` a figure outside
/// [`TOL`] that is not listed, or listed in `list` but agreeing now.
fn judge(what: &str, fig: &str, real: f64, model: f64, open: Option<&str>, list: &str, bad: &mut Vec<String>) {
    eprintln!("  {fig:13} {real:.3} / {model:.3}{}", open.map_or(String::new(), |o| format!("  open: {o}")));
    match ((model - real).abs() <= TOL, open) {
        (false, None) => bad.push(format!("{what} {fig}: real {real:.3}, model {model:.3} (tolerance {TOL})")),
        (true, Some(_)) => bad.push(format!("{what} {fig}: listed in {list} but agrees now (real {real:.3}, model {model:.3})")),
        _ => {}
    }
}

/// The model's figures per metric count (`figures(run, kernel, count)`,
/// count = the metric's rate times the run's length) and its metric, each the
/// mean over `seeds` runs of `duration_ns` on the guest.
fn seed_means(
    m: &schedlab_machine::Machine,
    w: &schedlab_workload::Workload,
    seeds: &[u64],
    duration_ns: u64,
    switch_log: bool,
    figures: impl Fn(&schedlab_engine::RunResult, &schedlab_kernel::Kernel, f64) -> Vec<f64>,
) -> (Vec<f64>, f64) {
    let (mut sum, mut rate) = (Vec::new(), 0.0);
    for &seed in seeds {
        let (r, kern) = run_on_guest_with(m, w, seed, Some(duration_ns), switch_log);
        let figs = figures(&r, &kern, r.metric_value * r.simulated_ns as f64 / 1e9);
        sum.resize(figs.len(), 0.0);
        sum.iter_mut().zip(&figs).for_each(|(a, b)| *a += b);
        rate += r.metric_value;
    }
    let n = seeds.len() as f64;
    (sum.into_iter().map(|v| v / n).collect(), rate / n)
}

/// Configurations (server nice, servers, x_us) the model does not meet, with the reason.
const OPEN: &[(i32, u32, u64, &str)] = &[];

/// Mean nivcsw per write and writes per second of the recorded repeats, by (server nice, servers, x_us).
fn load_real() -> BTreeMap<(i32, u32, u64), (f64, f64, usize)> {
    let mut acc: BTreeMap<(i32, u32, u64), (f64, f64, usize)> = BTreeMap::new();
    for kv in data_lines("wakepreempt-local.txt") {
        let key = (kv["server_nice"].parse().unwrap(), kv["servers"].parse().unwrap(), kv["x_us"].parse().unwrap());
        let e = acc.entry(key).or_default();
        e.0 += kv["nivcsw_per_write"].parse::<f64>().unwrap();
        e.1 += kv["writes_per_s"].parse::<f64>().unwrap();
        e.2 += 1;
    }
    acc.into_iter().map(|(k, (a, b, n))| (k, (a / n as f64, b / n as f64, n))).collect()
}

/// The recorded program as a workload file: one pipe per server (1-byte
/// messages, 16 pages of 4 KiB), the pipe's measured write / read costs; the
/// servers at nice `nice`.
fn workload(nice: i32, k: u32, x_us: u64) -> String {
    let mut w = format!(
        "format = 1\nname = \"wakepreempt\"\ntime_bounded = true\njitter_pct = {JITTER_PCT}\n\n\
         [metric]\nkind = \"rate\"\nname = \"writes\"\nunit = \"writes/s\"\ncounter = 0\n\n\
         [[channel]]\nrepeat = {k}\ncapacity = 65536\nsync = true\nkind = \"pipe\"\nmsgs_per_page = 4096\n\n"
    );
    let mut client = vec!["\"loop count=inf\"".to_string()];
    for i in 0..k {
        client.push(format!("\"run ns={x_us}us\""));
        client.push(format!("\"write chan={i} cost=324ns\""));
        client.push("\"count id=0 n=1\"".to_string());
    }
    client.push("\"end_loop\"".to_string());
    w += &format!("[[program]]\nops = [{}]\n\n", client.join(", "));
    w += &format!(
        "[[program]]\nrepeat = {k}\nops = [\"loop count=inf\", \"read chan=i cost=292ns\", \"run ns={S_US}us\", \"end_loop\"]\n\n"
    );
    w += "[[task]]\nname = \"client\"\nprogram = 0\nmm = 0\ncpus = [1]\n\n";
    w += &format!("[[task]]\nrepeat = {k}\nname = \"server{{i}}\"\nprogram = \"1 + i\"\nmm = 0\ncpus = [1]\nnice = {nice}\n");
    w
}

/// The model's client involuntary switches per write and writes per second, mean of three seeds.
fn model(nice: i32, k: u32, x_us: u64) -> (f64, f64) {
    let m = guest_machine();
    let w = schedlab_workload::file::from_toml_str(&workload(nice, k, x_us), "wakepreempt.toml").unwrap();
    let (per_write, rate) =
        seed_means(&m, &w, &[1, 2, 3], 2_000_000_000, false, |_, kern, writes| vec![kern.tasks[0].nivcsw as f64 / writes]);
    (per_write[0], rate)
}

#[test]
fn a_hog_is_preempted_by_its_wakees_as_on_the_guest() {
    let real = load_real();
    assert_eq!(real.len(), 30, "three server counts x six client runs at nice 0, two x three at nice -5 and 5");
    let mut bad = Vec::new();
    eprintln!("nice servers  x_us   nivcsw/write real  model    writes/s real   model");
    for (&(nice, k, x), &(r, r_rate, n)) in &real {
        assert_eq!(n, 3, "three repeats of server_nice={nice} servers={k} x_us={x}");
        let (m, m_rate) = model(nice, k, x);
        let open = OPEN.iter().find(|o| o.0 == nice && o.1 == k && o.2 == x);
        let ok = (m - r).abs() <= TOL;
        eprintln!(
            "{nice:4} {k:7} {x:5}   {r:17.3} {m:6.3}   {r_rate:14.0} {m_rate:7.0}{}",
            open.map_or(String::new(), |o| format!("  open: {}", o.3))
        );
        match (ok, open) {
            (false, None) => bad.push(format!("server_nice={nice} servers={k} x_us={x}: real {r:.3}, model {m:.3} (tolerance {TOL})")),
            (true, Some(_)) => {
                bad.push(format!("server_nice={nice} servers={k} x_us={x}: listed in OPEN but agrees now (real {r:.3}, model {m:.3})"))
            }
            _ => {}
        }
    }
    assert!(bad.is_empty(), "wakepreempt-local.txt:\n{}", bad.join("\n"));
}

/// Configurations of memcached pinned to one vCPU (client threads,
/// connections, figure) the model does not meet, with the reason.
const MEMCACHED_OPEN: &[(u32, u32, &str, &str)] = &[];

/// memcached's built-in with every task pinned to CPU 1, against
/// tests/data/memcached-pinned-local.txt (scripts/memcached-pinned): the
/// client's and the server's voluntary and involuntary switches per request,
/// within 0.1 of the mean of the six recorded rounds. No placement is involved, so what is
/// compared is which side a wakeup preempts.
#[test]
fn memcached_pinned_to_one_vcpu_switches_as_on_the_guest() {
    let mut real: BTreeMap<(u32, u32), (Vec<f64>, f64, usize)> = BTreeMap::new();
    // Each side's CPU per request, where recorded (sum, count): shown, not checked.
    let mut real_cpu: BTreeMap<(u32, u32), (f64, f64, usize)> = BTreeMap::new();
    for kv in data_lines("memcached-pinned-local.txt") {
        let key = (kv["client_threads"].parse().unwrap(), kv["connections"].parse().unwrap());
        let e = real.entry(key).or_insert((vec![0.0; 4], 0.0, 0));
        for (i, f) in MC_FIGURES.iter().enumerate() {
            e.0[i] += kv[*f].parse::<f64>().unwrap();
        }
        e.1 += kv["req_per_s"].parse::<f64>().unwrap();
        e.2 += 1;
        if let (Some(c), Some(s)) = (kv.get("client_cpu_us"), kv.get("server_cpu_us")) {
            let e = real_cpu.entry(key).or_default();
            e.0 += c.parse::<f64>().unwrap();
            e.1 += s.parse::<f64>().unwrap();
            e.2 += 1;
        }
    }
    assert_eq!(real.len(), 3, "1 x 1, 1 x 8 and 2 x 8");
    let m = guest_machine();
    let mut bad = Vec::new();
    eprintln!("client_threads x connections: figure per request real / model");
    for (&(ct, conns), (sums, rate, n)) in &real {
        let n = *n as f64;
        let p = Params::parse(&format!("threads=2,client_threads={ct},connections={conns}")).unwrap();
        let mut w = build("memcached", &p, m.topology.nr_cpus(), &m.topology.core_groups()).unwrap();
        for t in &mut w.tasks {
            t.cpus = Some(vec![1]);
        }
        // Per request: client vol / invol, server vol / invol, then the
        // client's and the server's CPU in us.
        let (figs, model_rate) = seed_means(&m, &w, &[1, 2, 3], 1_000_000_000, false, |r, kern, reqs| {
            let mut f = vec![0.0; 6];
            for (i, t) in kern.tasks.iter().enumerate() {
                let name = r.task_names.get(i).map(|(s, _)| s.as_str()).unwrap_or("");
                let base = if name.starts_with("memtier") {
                    0
                } else if name.starts_with("memcached") {
                    2
                } else {
                    continue;
                };
                f[4 + base / 2] += t.se.sum_exec_runtime as f64 / 1000.0 / reqs;
                f[base] += t.nvcsw as f64 / reqs;
                f[base + 1] += t.nivcsw as f64 / reqs;
            }
            f
        });
        let (model, model_cpu) = (&figs[..4], &figs[4..]);
        eprintln!("{ct} x {conns}: req/s {:.0} / {model_rate:.0} (not checked)", rate / n);
        if let Some(&(c, s, k)) = real_cpu.get(&(ct, conns)) {
            let k = k as f64;
            eprintln!(
                "  CPU us per request, client {:.2} / {:.2}, server {:.2} / {:.2} (not checked)",
                c / k,
                model_cpu[0],
                s / k,
                model_cpu[1]
            );
        }
        for (i, f) in MC_FIGURES.iter().enumerate() {
            let open = MEMCACHED_OPEN.iter().find(|o| o.0 == ct && o.1 == conns && o.2 == *f).map(|o| o.3);
            judge(&format!("{ct} x {conns}"), f, sums[i] / n, model[i], open, "MEMCACHED_OPEN", &mut bad);
        }
    }
    assert!(bad.is_empty(), "memcached-pinned-local.txt:\n{}", bad.join("\n"));
}

/// The recorded figures, per request.
const MC_FIGURES: [&str; 4] = ["client_vol", "client_invol", "server_vol", "server_invol"];

/// The clauses of the wakeup-preemption check that both sides count: the
/// recorded field and the model's `--explain` clauses counted under it.
const EV_CLAUSES: [(&str, &[Preempt]); 5] = [
    ("curr_past_v", &[Preempt::CurrPastV]),
    ("earlier_deadline", &[Preempt::EarlierDeadline, Preempt::Short]),
    ("curr_protected", &[Preempt::Protected]),
    ("wakee_past_v", &[Preempt::WakeeIneligible]),
    ("other_first", &[Preempt::OtherFirst]),
];

/// Figures of [`memcached_pinned_wakeup_checks_decide_as_on_the_guest`] the
/// model does not meet: (client threads, connections, figure, reason).
const EEVDF_OPEN: &[(u32, u32, &str, &str)] =
    &[(1, 8, "sleeps_delayed", "0.93 against 0.68: not explained; the clause shares agree (session 30)")];

/// memcached pinned to vCPU 1 (as in the test above) against
/// tests/data/eevdf-state-memcached-pinned.txt: the share of the wakeup
/// checks between the client and the workers decided by each clause
/// (`--explain`'s table; on the guest read from the running entity and its
/// cfs_rq by scripts/eevdf-wakeup-state), and the share of their sleeps that
/// DELAY_DEQUEUE kept queued, each within 0.1 of the recorded mean. The
/// model's checks with need_resched already set (about 1 %) are left out of
/// its denominator: the trace cannot tell them apart and counts them under
/// curr's eligibility. The recorded shares are the probed guest's (0.92 us of
/// the waker's time after each wakeup, 0.35 us per switch; scripts/probe-cost):
/// charged the same in a debug build, 1 x 1 moves to 0.80 / 0.20 past V /
/// protected (docs/CALIBRATION.md "What a bpftrace probe costs the traced program").
#[test]
fn memcached_pinned_wakeup_checks_decide_as_on_the_guest() {
    let mut real: BTreeMap<(u32, u32), (Vec<f64>, usize)> = BTreeMap::new();
    for kv in data_lines("eevdf-state-memcached-pinned.txt") {
        let key = (kv["client_threads"].parse().unwrap(), kv["connections"].parse().unwrap());
        let f = |k: &str| kv[&format!("ev_{k}")].parse::<f64>().unwrap();
        let e = real.entry(key).or_insert((vec![0.0; EV_CLAUSES.len() + 1], 0));
        for (i, (k, _)) in EV_CLAUSES.iter().enumerate() {
            e.0[i] += f(k) / f("checks");
        }
        e.0[EV_CLAUSES.len()] += f("sleeps_delayed") / f("sleeps");
        e.1 += 1;
    }
    assert_eq!(real.len(), 3, "1 x 1, 1 x 8 and 2 x 8");
    let m = guest_machine();
    let mut bad = Vec::new();
    eprintln!("client_threads x connections: share real / model");
    for (&(ct, conns), (sums, n)) in &real {
        let p = Params::parse(&format!("threads=2,client_threads={ct},connections={conns}")).unwrap();
        let mut w = build("memcached", &p, m.topology.nr_cpus(), &m.topology.core_groups()).unwrap();
        for t in &mut w.tasks {
            t.cpus = Some(vec![1]);
        }
        let (mut preempt, mut sleeps) = ([0u64; Preempt::N], [0u64; 2]);
        for seed in 1..=3 {
            let (_, kern) = run_on_guest_explained(&m, &w, seed, Some(1_000_000_000));
            let c = &kern.explain.as_ref().expect("explain was enabled").counts;
            preempt.iter_mut().zip(c.preempt).for_each(|(a, b)| *a += b);
            sleeps.iter_mut().zip(c.sleeps).for_each(|(a, b)| *a += b);
        }
        let decided: u64 = EV_CLAUSES.iter().flat_map(|(_, ps)| ps.iter()).map(|&w| preempt[w as usize]).sum();
        eprintln!("{ct} x {conns}: {decided} model checks in 3 s");
        for (i, (k, ps)) in EV_CLAUSES.iter().enumerate() {
            let model = ps.iter().map(|&w| preempt[w as usize]).sum::<u64>() as f64 / decided as f64;
            let open = EEVDF_OPEN.iter().find(|o| o.0 == ct && o.1 == conns && o.2 == *k).map(|o| o.3);
            judge(&format!("{ct} x {conns}"), k, sums[i] / *n as f64, model, open, "EEVDF_OPEN", &mut bad);
        }
        let model = sleeps[1] as f64 / (sleeps[0] + sleeps[1]) as f64;
        let open = EEVDF_OPEN.iter().find(|o| o.0 == ct && o.1 == conns && o.2 == "sleeps_delayed").map(|o| o.3);
        judge(&format!("{ct} x {conns}"), "sleeps_delayed", sums[EV_CLAUSES.len()] / *n as f64, model, open, "EEVDF_OPEN", &mut bad);
    }
    assert!(bad.is_empty(), "eevdf-state-memcached-pinned.txt:\n{}", bad.join("\n"));
}

/// Figures of [`pipe_and_hackbench_pinned_wakeup_checks_as_on_the_guest`] the
/// model does not meet: (bench key, figure, reason).
const PINNED_EEVDF_OPEN: &[(&str, &str, &str)] = &[
    (
        "pipe",
        "past_v",
        "1.00 against 0.57 (session 30): the guest's pair runs a four-step cycle (the waker preempted; the wakee blocks delayed; the resumed waker's next wakeup finds it still right of V and is kept; it blocks delayed); the share is a threshold in how much longer the wakee runs from its pick to its sleep (a blocking read's path before schedule()) than the resumed waker runs to its wakeup. The model's guest keeps that path in the incoming task's context_switch_ns. A debug build needs 1.5 us of it before the sleep (about 1.75 us once the recording probe's own 0.92 us per wakeup and 0.35 us per switch are charged too, scripts/probe-cost); the interval measurements, inflated by their raw_syscalls probes (1.4 us per syscall), do not place it within the 0.5 us that decides (docs/CALIBRATION.md \"What a bpftrace probe costs the traced program\")",
    ),
    ("pipe", "protected", "0.003 against 0.43: as past_v"),
    ("pipe", "sleeps_delayed", "0.87 against 0.99: as past_v (the same debug build: 0.98)"),
    ("hackbench pipe=1 threads=0", "past_v", "0.37 against 0.52 (0.39 before session 31's cooling of queued messages, F-031, which brought the protected share within 0.1: 0.46 against 0.39): not explained"),
];

/// perf's pipe and hackbench with every task on vCPU 1 against
/// tests/data/eevdf-state-pinned.txt (scripts/eevdf-pinned): the share of the
/// wakeup checks the waker is past V at (preempted), eligible and protected at
/// (kept), or kept for another reason (another entity first, the wakee past
/// V, or on the guest the wakee not found in the tree's first three levels),
/// and the share of the sleeps DELAY_DEQUEUE kept queued, each within 0.1 of
/// the recorded mean. The pipe's record is a window of a long run, the model's
/// a whole run of 200,000 round trips (two tasks: no start or end phase);
/// hackbench's are whole runs of 3,000 loops on both sides.
/// The recorded shares are the probed guest's: the recording program costs the
/// waker 0.92 us after each wakeup and 0.35 us per switch (scripts/probe-cost),
/// which the model does not charge (docs/CALIBRATION.md "What a bpftrace probe
/// costs the traced program").
#[test]
fn pipe_and_hackbench_pinned_wakeup_checks_as_on_the_guest() {
    let figures = ["past_v", "protected", "kept_other", "sleeps_delayed"];
    let mut real: BTreeMap<String, (Vec<f64>, usize)> = BTreeMap::new();
    for kv in data_lines("eevdf-state-pinned.txt") {
        let key = match kv["bench"].as_str() {
            "pipe" => "pipe".to_string(),
            _ => format!("hackbench pipe={} threads={}", kv["pipe"], kv["threads"]),
        };
        let f = |k: &str| kv[&format!("ev_{k}")].parse::<f64>().unwrap();
        let n = f("checks");
        let v = [
            (f("curr_past_v") + f("earlier_deadline")) / n,
            f("curr_protected") / n,
            (f("other_first") + f("wakee_past_v") + f("wakee_unknown")) / n,
            f("sleeps_delayed") / f("sleeps"),
        ];
        let e = real.entry(key).or_insert((vec![0.0; 4], 0));
        e.0.iter_mut().zip(v).for_each(|(a, b)| *a += b);
        e.1 += 1;
    }
    assert_eq!(real.len(), 4, "the pipe and three hackbench forms");
    let m = guest_machine();
    let mut bad = Vec::new();
    eprintln!("share real / model");
    for (key, (sums, n)) in &real {
        let (name, params) = match key.as_str() {
            "pipe" => ("pipe", "loops=200000".to_string()),
            k => ("hackbench", format!("groups=1,loops=3000,{}", k.trim_start_matches("hackbench ").replace(' ', ","))),
        };
        let p = Params::parse(&params).unwrap();
        let mut w = build(name, &p, m.topology.nr_cpus(), &m.topology.core_groups()).unwrap();
        for t in &mut w.tasks {
            t.cpus = Some(vec![1]);
        }
        let (mut pre, mut sleeps) = ([0u64; Preempt::N], [0u64; 2]);
        for seed in 1..=3 {
            let (r, kern) = run_on_guest_explained(&m, &w, seed, None);
            assert!(r.metric_missing.is_none(), "{key}: the run completed");
            let c = &kern.explain.as_ref().expect("explain was enabled").counts;
            pre.iter_mut().zip(c.preempt).for_each(|(a, b)| *a += b);
            sleeps.iter_mut().zip(c.sleeps).for_each(|(a, b)| *a += b);
        }
        let sum = |ws: &[Preempt]| ws.iter().map(|&w| pre[w as usize]).sum::<u64>() as f64;
        let past = sum(&[Preempt::CurrPastV, Preempt::EarlierDeadline, Preempt::Short]);
        let kept = sum(&[Preempt::Protected]);
        let other = sum(&[Preempt::OtherFirst, Preempt::WakeeIneligible]);
        let decided = past + kept + other;
        let model = [past / decided, kept / decided, other / decided, sleeps[1] as f64 / (sleeps[0] + sleeps[1]) as f64];
        eprintln!("{key}: {decided} model checks over 3 seeds");
        for (i, fig) in figures.iter().enumerate() {
            let open = PINNED_EEVDF_OPEN.iter().find(|o| o.0 == key && o.1 == *fig).map(|o| o.2);
            judge(key, fig, sums[i] / *n as f64, model[i], open, "PINNED_EEVDF_OPEN", &mut bad);
        }
    }
    assert!(bad.is_empty(), "eevdf-state-pinned.txt:\n{}", bad.join("\n"));
}

/// The hogwake program (scripts/calib-src/hogwake.c) as a workload file: a
/// waker that spins `a_us` and wakes a sleeper through a pipe, then blocks
/// on its own; the sleeper spins `b_us` and wakes it back; `hogs` tasks spin
/// for ever. Everything on CPU 1, the pipes' measured write / read costs.
fn hogwake_workload(hogs: u32, a_us: u64, b_us: u64) -> String {
    let mut w = format!(
        "format = 1\nname = \"hogwake\"\ntime_bounded = true\njitter_pct = {JITTER_PCT}\n\n\
         [metric]\nkind = \"rate\"\nname = \"rounds\"\nunit = \"rounds/s\"\ncounter = 0\n\n\
         [[channel]]\nrepeat = 2\ncapacity = 65536\nsync = true\nkind = \"pipe\"\nmsgs_per_page = 4096\n\n\
         [[program]]\nops = [\"loop count=inf\", \"run ns={a_us}us\", \"write chan=0 cost=324ns\", \"read chan=1 cost=292ns\", \"count id=0 n=1\", \"end_loop\"]\n\n\
         [[program]]\nops = [\"loop count=inf\", \"read chan=0 cost=292ns\", \"run ns={b_us}us\", \"write chan=1 cost=324ns\", \"end_loop\"]\n\n\
         [[program]]\nops = [\"loop count=inf\", \"run ns=1ms\", \"end_loop\"]\n\n\
         [[task]]\nname = \"waker\"\nprogram = 0\nmm = 0\ncpus = [1]\n\n\
         [[task]]\nname = \"sleeper\"\nprogram = 1\nmm = 1\ncpus = [1]\n"
    );
    if hogs > 0 {
        w += &format!("\n[[task]]\nrepeat = {hogs}\nname = \"hog{{i}}\"\nprogram = 2\nmm = \"2 + i\"\ncpus = [1]\n");
    }
    w
}

/// (hogs, a_us, b_us) -> the four figures summed over the rounds, rounds/s summed, rounds.
type HogwakeSums = BTreeMap<(u32, u64, u64), (Vec<f64>, f64, usize)>;

/// The recorded hogwake figures, per round.
const HW_FIGURES: [&str; 4] = ["waker_vol", "waker_invol", "sleeper_vol", "sleeper_invol"];

/// Configurations (hogs, a_us, b_us, figure) the model does not meet, with the reason.
const HOGWAKE_OPEN: &[(u32, u64, u64, &str, &str)] = &[];

/// Wakeup preemption with CPU hogs on the same CPU, against
/// tests/data/hogwake-local.txt (scripts/hogwake): the hogs' lag decides
/// whether the woken task preempts its waker and whom the CPU goes to when
/// the waker blocks. Each side's voluntary and involuntary switches per round
/// within 0.1 of the mean of the three recorded rounds.
#[test]
fn a_waker_and_its_wakee_among_hogs_switch_as_on_the_guest() {
    let mut real: HogwakeSums = BTreeMap::new();
    for kv in data_lines("hogwake-local.txt") {
        let key = (kv["hogs"].parse().unwrap(), kv["a_us"].parse().unwrap(), kv["b_us"].parse().unwrap());
        let e = real.entry(key).or_insert((vec![0.0; 4], 0.0, 0));
        for (i, f) in HW_FIGURES.iter().enumerate() {
            e.0[i] += kv[*f].parse::<f64>().unwrap();
        }
        e.1 += kv["rounds_per_s"].parse::<f64>().unwrap();
        e.2 += 1;
    }
    assert_eq!(real.len(), 10, "ten configurations");
    let m = guest_machine();
    let mut bad = Vec::new();
    eprintln!("hogs a_us b_us: figure per round real / model");
    for (&(hogs, a, b), (sums, rate, n)) in &real {
        assert_eq!(*n, 3, "three rounds of hogs={hogs} a_us={a} b_us={b}");
        let n = *n as f64;
        let w = schedlab_workload::file::from_toml_str(&hogwake_workload(hogs, a, b), "hogwake.toml").unwrap();
        let (model, model_rate) = seed_means(&m, &w, &[1, 2, 3], 2_000_000_000, false, |_, kern, rounds| {
            (0..2).flat_map(|side| [kern.tasks[side].nvcsw as f64 / rounds, kern.tasks[side].nivcsw as f64 / rounds]).collect()
        });
        eprintln!("{hogs} {a:4} {b:4}: rounds/s {:.0} / {model_rate:.0} (not checked)", rate / n);
        for (i, f) in HW_FIGURES.iter().enumerate() {
            let open = HOGWAKE_OPEN.iter().find(|o| (o.0, o.1, o.2) == (hogs, a, b) && o.3 == *f).map(|o| o.4);
            judge(&format!("hogs={hogs} a_us={a} b_us={b}"), f, sums[i] / n, model[i], open, "HOGWAKE_OPEN", &mut bad);
        }
    }
    assert!(bad.is_empty(), "hogwake-local.txt:\n{}", bad.join("\n"));
}

/// The fanout program (scripts/calib-src/fanout.c) as a workload file: the
/// waker writes to `k` sleepers' pipes in order, spins `a_us`, then reads `k`
/// replies from its own pipe; each sleeper reads, spins `b_us` and replies;
/// `hogs` tasks spin for ever. Everything on CPU 1. Tasks: the waker (0), the
/// sleepers (1..=k), the hogs.
fn fanout_workload(k: u32, hogs: u32, a_us: u64, b_us: u64) -> String {
    let mut waker = vec!["\"loop count=inf\"".to_string()];
    waker.extend((0..k).map(|i| format!("\"write chan={i} cost=324ns\"")));
    waker.push(format!("\"run ns={a_us}us\""));
    waker.extend((0..k).map(|_| format!("\"read chan={k} cost=292ns\"")));
    waker.extend(["\"count id=0 n=1\"".to_string(), "\"end_loop\"".to_string()]);
    let mut w = format!(
        "format = 1\nname = \"fanout\"\ntime_bounded = true\njitter_pct = {JITTER_PCT}\n\n\
         [metric]\nkind = \"rate\"\nname = \"rounds\"\nunit = \"rounds/s\"\ncounter = 0\n\n\
         [[channel]]\nrepeat = {}\ncapacity = 65536\nsync = true\nkind = \"pipe\"\nmsgs_per_page = 4096\n\n\
         [[program]]\nops = [{}]\n\n\
         [[program]]\nrepeat = {k}\nops = [\"loop count=inf\", \"read chan=i cost=292ns\", \"run ns={b_us}us\", \"write chan={k} cost=324ns\", \"end_loop\"]\n\n\
         [[program]]\nops = [\"loop count=inf\", \"run ns=1ms\", \"end_loop\"]\n\n\
         [[task]]\nname = \"waker\"\nprogram = 0\nmm = 0\ncpus = [1]\n\n\
         [[task]]\nrepeat = {k}\nname = \"sleeper{{i}}\"\nprogram = \"1 + i\"\nmm = \"1 + i\"\ncpus = [1]\n",
        k + 1,
        waker.join(", ")
    );
    if hogs > 0 {
        w += &format!("\n[[task]]\nrepeat = {hogs}\nname = \"hog{{i}}\"\nprogram = {}\nmm = \"{} + i\"\ncpus = [1]\n", k + 1, k + 1);
    }
    w
}

/// From a switch log of the fanout workload: per sleeper, the share of rounds
/// it ran first. A round starts when the waker is switched in after every
/// sleeper has run since the last start; its first sleeper switched in after
/// that is the round's first.
fn fanout_first(log: &[schedlab_engine::SwitchRec], k: u32) -> Vec<f64> {
    let mut first = vec![0u64; k as usize];
    let mut ran = vec![true; k as usize];
    let mut open = false;
    let mut rounds = 0u64;
    for s in log.iter().filter(|s| s.cpu == 1) {
        match s.next {
            Some(0) if ran.iter().all(|&r| r) => {
                ran.iter_mut().for_each(|r| *r = false);
                open = true;
            }
            Some(t) if (1..=k).contains(&t) => {
                let i = (t - 1) as usize;
                if open {
                    first[i] += 1;
                    rounds += 1;
                    open = false;
                }
                ran[i] = true;
            }
            _ => {}
        }
    }
    first.iter().map(|&f| f as f64 / rounds.max(1) as f64).collect()
}

/// (k, hogs, a_us, b_us) -> the waker's vol / invol per round and each
/// sleeper's first share, summed over the rounds; rounds/s summed; rounds.
type FanoutSums = BTreeMap<(u32, u32, u64, u64), (Vec<f64>, f64, usize)>;

/// Configurations (k, hogs, a_us, b_us, figure) the model does not meet, with the reason.
const FANOUT_OPEN: &[(u32, u32, u64, u64, &str, &str)] = &[
    (4, 0, 20, 10, "waker_invol", NO_HOG),
    (4, 0, 20, 10, "first[1]", NO_HOG),
    (4, 0, 20, 10, "first[2]", NO_HOG),
    (4, 0, 20, 10, "first[3]", NO_HOG),
    (4, 1, 20, 10, "waker_vol", PHASES),
    (4, 1, 20, 10, "waker_invol", PHASES),
    (4, 1, 50, 20, "waker_vol", PHASES),
    (8, 0, 20, 10, "first[5]", BIMODAL),
    (8, 0, 20, 10, "first[7]", BIMODAL),
    (8, 1, 20, 10, "waker_vol", PHASES),
    (8, 1, 20, 10, "waker_invol", PHASES),
];

/// Why the fanout runs without a hog miss.
const NO_HOG: &str = "with no hog every sleeper's lag is about 0 (DELAY_ZERO), and which wakee preempts the waker turns on sub-microsecond costs: the model's waker turns ineligible after its first write and the third wakee preempts it (sleeper 2 first in 44 %); the real one is preempted at the second (sleeper 1 first in 35 %). With the waking write at 1.2 us instead of the pipe's 324 ns the model gives sleeper 1 first in 27 %; not calibrated";
/// Why the waker's switches with hogs miss.
const PHASES: &str = "two phases alternate: the waker blocks after its writes and runs between the sleepers' replies (4 blocks per round), or the last wakee preempts it at its writes and the sleepers run back to back (1 block, 1 preemption); the model spends about 75 % of rounds in the first, the guest about 63 %";
/// The real eight-sleeper run without a hog is bimodal.
const BIMODAL: &str =
    "the real runs are bimodal: sleeper 5 ran first in 7, 8 and 32 % of rounds in the three repeats, sleeper 7 in 41, 38 and 14 %";

/// Which of several woken tasks runs first, against tests/data/fanout-local.txt
/// (scripts/fanout): place_entity() with PLACE_LAG lowers the queue's average
/// vruntime with every wakee it places ahead of it, so among wakees with
/// positive lag the last one woken lands earliest; with no hog the waker's own
/// lag decides. The waker's switches per round and each sleeper's share of
/// first runs within 0.1 of the mean of the three recorded rounds.
#[test]
fn the_wakee_that_runs_first_is_the_guests() {
    let mut real: FanoutSums = BTreeMap::new();
    for kv in data_lines("fanout-local.txt") {
        let key = (kv["k"].parse().unwrap(), kv["hogs"].parse().unwrap(), kv["a_us"].parse().unwrap(), kv["b_us"].parse().unwrap());
        let mut figs = vec![kv["waker_vol"].parse::<f64>().unwrap(), kv["waker_invol"].parse::<f64>().unwrap()];
        figs.extend(kv["first"].split(',').map(|f| f.parse::<f64>().unwrap()));
        assert_eq!(figs.len(), 2 + key.0 as usize, "{kv:?}");
        let e = real.entry(key).or_insert((vec![0.0; figs.len()], 0.0, 0));
        e.0.iter_mut().zip(&figs).for_each(|(a, b)| *a += b);
        e.1 += kv["rounds_per_s"].parse::<f64>().unwrap();
        e.2 += 1;
    }
    assert_eq!(real.len(), 6, "six configurations");
    let m = guest_machine();
    let mut bad = Vec::new();
    eprintln!("k hogs a_us b_us: figure per round real / model");
    for (&(k, hogs, a, b), (sums, rate, n)) in &real {
        assert_eq!(*n, 3, "three rounds of k={k} hogs={hogs} a_us={a} b_us={b}");
        let n = *n as f64;
        let w = schedlab_workload::file::from_toml_str(&fanout_workload(k, hogs, a, b), "fanout.toml").unwrap();
        // Six seeds: over three, a figure at the tolerance's edge passed or
        // failed with the seeds (k=4, 2 hogs: 1.763 over 1-3, 1.800 over 4-6).
        let (model, model_rate) = seed_means(&m, &w, &[1, 2, 3, 4, 5, 6], 2_000_000_000, true, |r, kern, rounds| {
            let mut figs = vec![kern.tasks[0].nvcsw as f64 / rounds, kern.tasks[0].nivcsw as f64 / rounds];
            figs.extend(fanout_first(&r.switch_log, k));
            figs
        });
        assert_eq!(model.len(), 2 + k as usize);
        eprintln!("{k} {hogs} {a:3} {b:3}: rounds/s {:.0} / {model_rate:.0} (not checked)", rate / n);
        for (i, (&s, &y)) in sums.iter().zip(&model).enumerate() {
            let f = match i {
                0 => "waker_vol".to_string(),
                1 => "waker_invol".to_string(),
                _ => format!("first[{}]", i - 2),
            };
            let open = FANOUT_OPEN.iter().find(|o| (o.0, o.1, o.2, o.3) == (k, hogs, a, b) && o.4 == f).map(|o| o.5);
            judge(&format!("k={k} hogs={hogs} a_us={a} b_us={b}"), &f, s / n, y, open, "FANOUT_OPEN", &mut bad);
        }
    }
    assert!(bad.is_empty(), "fanout-local.txt:\n{}", bad.join("\n"));
}
