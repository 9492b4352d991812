//! The built-in workloads against the real programs on the machine they were
//! measured on: the 2-vCPU EPYC KVM guest (kernel 6.18), recorded with
//! `scripts/calibrate-measure` into tests/data/calib-local.txt (CPU per role
//! from cgroup accounting in a run without perf; context switches and
//! sched_waking from cgroup-filtered perf counters in a second run). The model
//! runs on
//! tests/data/local-guest.toml (`schedlab machine show local --toml` on that
//! guest: its measured context switch, IPI send, halt exit and halt cache
//! eviction) under the guest's own kernel, v6.18 with `--patch
//! stable-6.18.44` (v6.12 until session 13), and must stay within the stated
//! tolerance of the mean of the recorded repeats. docs/CALIBRATION.md "Built-ins against the real
//! programs" has the tables this test prints (`cargo test --release -p
//! schedlab-engine --test local_calibration -- --nocapture`).
//!
//! The guest's kernel is not mainline in one respect that matters here: a
//! vendor rule (`vcpu_pack_room`, boot option sched_vcpu_pack=15; FIDELITY
//! F-649, probed by scripts/probe-vcpu-pack) keeps a wakee on the waker's vCPU
//! while the two fit in it, where mainline and the model send it to the idle
//! vCPU. The placement-dependent rows in OPEN compare against that rule.
//!
//! `SCHEDLAB_CALIB_KERNEL=NAME[:PATCHES]` runs the model under another
//! profile (with `--patch`-style overlays after the colon, e.g.
//! `v6.18:stable-6.18.44`) to compare kernels on the same table; the
//! tolerances and the OPEN list are set for the default.

use std::collections::BTreeMap;

mod common;
use common::guest_machine;
use schedlab_engine::{Sim, SimConfig};
use schedlab_kernel::profile::profile;
use schedlab_kernel::Kernel;
use schedlab_workload::{build, Params};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/");

/// Per-op figures of one side: CPU us, switches, wakeups issued.
#[derive(Clone, Copy, Debug, Default)]
struct Side {
    cpu_us: f64,
    cs: f64,
}

#[derive(Clone, Debug, Default)]
struct Figures {
    srv: Side,
    cl: Side,
    /// Wakeups per op, both sides.
    wakeups: f64,
    /// The program's own figure: wall us per op (pipe, hackbench), MB/s
    /// (tbench, stream), requests/s (memcached).
    metric: f64,
}

/// One recorded configuration: the mean of its repeats.
struct Real {
    bench: String,
    cfg: BTreeMap<String, String>,
    repeats: usize,
    fig: Figures,
}

fn parse_line(l: &str) -> (String, BTreeMap<String, String>, BTreeMap<String, f64>) {
    let mut cfg = BTreeMap::new();
    let mut num = BTreeMap::new();
    let mut bench = String::new();
    for (k, v) in l.split_whitespace().filter_map(|f| f.split_once('=')) {
        match k {
            "bench" => bench = v.to_string(),
            "ops" | "wall_s" | "load" | "mb_s" | "ctxt" => {
                num.insert(k.to_string(), v.parse::<f64>().unwrap_or_else(|_| panic!("{k}={v}: not a number in {l}")));
            }
            _ if k.starts_with("srv_") || k.starts_with("cl_") || k.starts_with("cnt_") => {
                num.insert(k.to_string(), v.parse::<f64>().unwrap_or_else(|_| panic!("{k}={v}: not a number in {l}")));
            }
            _ => {
                cfg.insert(k.to_string(), v.to_string());
            }
        }
    }
    (bench, cfg, num)
}

fn figures(bench: &str, cfg: &BTreeMap<String, String>, n: &BTreeMap<String, f64>) -> Figures {
    // tbench's unit is the MB it reports (the model's metric), not its op count.
    // Its Throughput and op table cover the `-t` seconds after a warmup of
    // timelimit / 5 whole seconds (dbench's main(): `options.warmup =
    // options.timelimit / 5`; sig_alarm() resets the counters when it ends),
    // while the role's CPU and counters cover the whole run: 9 s of load for
    // `-t 8`. So the MB of the whole run are mb_s x (seconds + warmup).
    // Measured (session 22, 2 clients, 3 runs each): switches per table op
    // 1.001 with `-t 4` (no warmup) against 1.12 with `-t 8`.
    let unit = |prefix: &str| {
        let get = |k: &str| n.get(&format!("{prefix}{k}")).copied();
        if bench == "tbench" {
            let secs = cfg["seconds"].parse::<f64>().unwrap();
            let warmup = (secs as u64 / 5) as f64;
            get("mb_s").map(|mb_s| mb_s * (secs + warmup))
        } else {
            get("ops")
        }
    };
    // CPU from the clean run; counts from the counted run (cnt_: since
    // session 13 the counts come from a second run under perf, so that perf's
    // work stays out of the CPU figures), each per its own run's ops.
    let ops = unit("").unwrap_or_else(|| panic!("calib-local.txt: a {bench} line without ops"));
    let cnt_ops = unit("cnt_").unwrap_or(ops);
    Figures {
        srv: Side { cpu_us: n["srv_cpu_ms"] * 1000.0 / ops, cs: n["srv_cs"] / cnt_ops },
        cl: Side { cpu_us: n["cl_cpu_ms"] * 1000.0 / ops, cs: n["cl_cs"] / cnt_ops },
        wakeups: (n["srv_waking"] + n["cl_waking"]) / cnt_ops,
        metric: match bench {
            "tbench" | "stream" => n["mb_s"],
            "memcached" | "sysbench" => n["ops"] / cfg["seconds"].parse::<f64>().unwrap(),
            _ => n["wall_s"] * 1e6 / ops,
        },
    }
}

fn load_real() -> Vec<Real> {
    let text = std::fs::read_to_string(format!("{DATA}calib-local.txt")).unwrap();
    let mut out: Vec<Real> = Vec::new();
    let mut stream: Vec<(BTreeMap<String, String>, BTreeMap<String, f64>)> = Vec::new();
    for l in text.lines().filter(|l| l.starts_with("bench=")) {
        let (bench, mut cfg, mut n) = parse_line(l);
        if bench == "stream" {
            // Per-kernel figures from the difference of a long and a short run:
            // both pay the same initialisation (first touch of the arrays),
            // which the model does not run.
            let nt = cfg.remove("ntimes").expect("stream line without ntimes");
            match stream.iter().position(|(c, _)| *c == cfg) {
                None => {
                    n.insert("ntimes".into(), nt.parse().unwrap());
                    stream.push((cfg, n));
                    continue;
                }
                Some(i) => {
                    let (_, short) = stream.remove(i);
                    let mut d = BTreeMap::new();
                    for (k, v) in &n {
                        let s = short.get(k).copied().unwrap_or(0.0);
                        d.insert(k.clone(), if k.ends_with("mb_s") { *v } else { v - s });
                    }
                    cfg.insert("ntimes".into(), format!("{}", nt.parse::<f64>().unwrap() - short["ntimes"]));
                    n = d;
                }
            }
        }
        let f = figures(&bench, &cfg, &n);
        match out.iter_mut().find(|r| r.bench == bench && r.cfg == cfg) {
            Some(r) => {
                let k = r.repeats as f64;
                let avg = |a: f64, b: f64| (a * k + b) / (k + 1.0);
                r.fig = Figures {
                    srv: Side { cpu_us: avg(r.fig.srv.cpu_us, f.srv.cpu_us), cs: avg(r.fig.srv.cs, f.srv.cs) },
                    cl: Side { cpu_us: avg(r.fig.cl.cpu_us, f.cl.cpu_us), cs: avg(r.fig.cl.cs, f.cl.cs) },
                    wakeups: avg(r.fig.wakeups, f.wakeups),
                    metric: avg(r.fig.metric, f.metric),
                };
                r.repeats += 1;
            }
            None => out.push(Real { bench, cfg, repeats: 1, fig: f }),
        }
    }
    assert!(stream.is_empty(), "calib-local.txt: stream configurations without their second length: {stream:?}");
    assert!(!out.is_empty(), "calib-local.txt: no bench= lines");
    out
}

/// The built-in's parameters for a recorded configuration and the simulated
/// duration of a time-bounded run (None: the workload runs to its end).
fn model_params(r: &Real) -> (String, Option<u64>) {
    let c = &r.cfg;
    match r.bench.as_str() {
        "pipe" => {
            let pin = if c["pin"].is_empty() { String::new() } else { format!(",pin={}", c["pin"]) };
            (format!("loops=20000,threads={}{pin}", c["threads"]), None)
        }
        "hackbench" => {
            // pin=N (recorded with taskset -c N): every task on CPU N.
            let pin = c.get("pin").map_or(String::new(), |p| format!(",pin={p}"));
            (format!("groups={},loops={},pipe={},threads={}{pin}", c["groups"], c["loops"], c["pipe"], c["threads"]), None)
        }
        "tbench" => (format!("clients={}", c["clients"]), Some(2_000_000_000)),
        "stream" => (
            format!("threads={},array_size={},ntimes={},wait_policy={}", c["threads"], c["array_size"], c["ntimes"], c["wait_policy"]),
            None,
        ),
        "memcached" => (
            format!("threads={},client_threads={},connections={}", c["threads"], c["client_threads"], c["connections"]),
            Some(1_000_000_000),
        ),
        "sysbench" => (format!("threads={}", c["threads"]), Some(2_000_000_000)),
        b => panic!("calib-local.txt: no model for bench={b}"),
    }
}

fn is_server(bench: &str, name: &str) -> bool {
    match bench {
        "tbench" => name.starts_with("tbench_srv"),
        "memcached" => name.starts_with("memcached"),
        "sysbench" => name.starts_with("mysqld"),
        _ => false,
    }
}

const SEEDS: [u64; 3] = [1, 2, 3];
/// hackbench's runs vary with the seed as the real ones do from run to run
/// (see `checks`): its model side averages more of them.
const HACKBENCH_SEEDS: u64 = 12;

/// The profile the model runs: the guest's kernel (6.18.44: v6.18 with its
/// stable overlay), or `SCHEDLAB_CALIB_KERNEL=NAME[:PATCHES]`.
const GUEST_KERNEL: &str = "v6.18:stable-6.18.44";
fn calib_kernel() -> schedlab_kernel::profile::KernelProfile {
    let spec = std::env::var("SCHEDLAB_CALIB_KERNEL").unwrap_or_else(|_| GUEST_KERNEL.into());
    let (name, patches) = spec.split_once(':').unwrap_or((&spec, ""));
    let mut k = profile(name).unwrap_or_else(|e| panic!("SCHEDLAB_CALIB_KERNEL={spec}: {e}"));
    k.apply_patches(patches).unwrap_or_else(|e| panic!("SCHEDLAB_CALIB_KERNEL={spec}: {e}"));
    k
}

fn model(r: &Real) -> Figures {
    let m = guest_machine();
    let (params, duration) = model_params(r);
    let p = Params::parse(&params).unwrap();
    let w = build(&r.bench, &p, m.topology.nr_cpus(), &m.topology.core_groups()).unwrap();
    let mut acc = Figures::default();
    let seeds: Vec<u64> = if r.bench == "hackbench" { (1..=HACKBENCH_SEEDS).collect() } else { SEEDS.to_vec() };
    for &seed in &seeds {
        let cfg = SimConfig { seed, duration_ns: duration, schedstat: false, model: Default::default(), trace: false, switch_log: false };
        let k = Kernel::new(&m.topology, calib_kernel());
        let (res, k) = Sim::new(&m, k, &w, &cfg).run_keep_kernel(&cfg);
        assert!(res.metric_missing.is_none(), "{} {params}: {:?}", r.bench, res.metric_missing);
        let secs = res.simulated_ns as f64 / 1e9;
        let c = &r.cfg;
        let num = |k: &str| c[k].parse::<f64>().unwrap();
        let ops = match r.bench.as_str() {
            "pipe" => 20000.0,
            "hackbench" => num("groups") * 400.0 * num("loops"),
            "tbench" => res.metric_value * secs,
            "memcached" | "sysbench" => res.metric_value * secs,
            "stream" => 4.0 * num("ntimes"),
            _ => unreachable!(),
        };
        let mut srv = Side::default();
        let mut cl = Side::default();
        for (i, t) in k.tasks.iter().enumerate() {
            let name = res.task_names.get(i).map(|(n, _)| n.as_str()).unwrap_or("");
            if name.starts_with("kthread") {
                continue;
            }
            let side = if is_server(&r.bench, name) { &mut srv } else { &mut cl };
            side.cpu_us += t.se.sum_exec_runtime as f64 / 1000.0 / ops;
            side.cs += (t.nvcsw + t.nivcsw) as f64 / ops;
        }
        acc.srv.cpu_us += srv.cpu_us;
        acc.srv.cs += srv.cs;
        acc.cl.cpu_us += cl.cpu_us;
        acc.cl.cs += cl.cs;
        acc.wakeups += res.wakeups as f64 / ops;
        acc.metric += match r.bench.as_str() {
            "tbench" | "stream" | "memcached" | "sysbench" => res.metric_value,
            _ => res.simulated_ns as f64 / 1000.0 / ops,
        };
    }
    let n = seeds.len() as f64;
    Figures {
        srv: Side { cpu_us: acc.srv.cpu_us / n, cs: acc.srv.cs / n },
        cl: Side { cpu_us: acc.cl.cpu_us / n, cs: acc.cl.cs / n },
        wakeups: acc.wakeups / n,
        metric: acc.metric / n,
    }
}

/// A checked figure: name, reader, relative tolerance, absolute floor (a
/// figure below it on both sides counts as agreeing: e.g. STREAM's handful of
/// switches per kernel from the guest's own background).
struct Check {
    name: &'static str,
    get: fn(&Figures) -> f64,
    tol: f64,
    floor: f64,
}

fn checks(bench: &str, cfg: &BTreeMap<String, String>) -> Vec<Check> {
    let unpinned_pipe = bench == "pipe" && cfg["pin"].is_empty();
    // Cross-vCPU ping-pong depends on the host waking the halted vCPU: the
    // recorded repeats of unpinned pipe spread 17-27 us CPU and 43-58 us wall
    // per round trip, so 25 % there. STREAM's CPU per kernel is its memory
    // bandwidth, which the guest shares with the host's other tenants: 25-28
    // GB/s alone and 28-36 GB/s with two threads between runs, so 20 %.
    let tol = if unpinned_pipe {
        0.25
    } else if bench == "stream" {
        0.20
    } else {
        0.15
    };
    // hackbench switches mostly at its end, once few senders are left
    // (docs/CALIBRATION.md "Session 23"), and how long that end lasts varies
    // from run to run: 18,235-30,933 switches over six real pinned pipe runs,
    // 14,790-26,005 over five pinned socket runs, and a coefficient of
    // variation of 8-26 % over the three recorded repeats of each row, pinned
    // or not (cv ~20 % per run). The real 3-run mean then has a standard
    // deviation of ~12 %; the model's mean over HACKBENCH_SEEDS seeds (its
    // runs vary as much: 37,432-66,702 switches over seeds 1-6 of the
    // unpinned pipe row) ~6 %: 35 % (a little over two standard deviations of
    // the difference) for the switches and wakeups of every hackbench row.
    // Until session 26 the unpinned rows were held to 15 % against a 3-seed
    // mean, which seeds 1-3 happened to meet (12 seeds: pipe +24 %).
    let tol_cs = if bench == "hackbench" { 0.35 } else { tol };
    // STREAM with spinning barriers switches only for the guest's background
    // (0.3-0.4 switches per kernel from kworkers and timers, which the
    // model's noise has at its idle-machine rate): below 0.5 per kernel on
    // both sides the switch and wakeup counts agree.
    // hackbench switches 0.02-0.1 times per message: that is its signal, so
    // no floor there.
    let floor = match bench {
        "stream" => 0.5,
        "hackbench" => 0.0,
        _ => 0.05,
    };
    let mut v = vec![
        Check { name: "client CPU us/op", get: |f| f.cl.cpu_us, tol, floor: 0.0 },
        Check { name: "client switches/op", get: |f| f.cl.cs, tol: tol_cs, floor },
        Check { name: "wakeups/op", get: |f| f.wakeups, tol: tol_cs, floor },
    ];
    if matches!(bench, "tbench" | "memcached" | "sysbench") {
        v.push(Check { name: "server CPU us/op", get: |f| f.srv.cpu_us, tol, floor: 0.0 });
        v.push(Check { name: "server switches/op", get: |f| f.srv.cs, tol, floor });
    }
    v
}

/// Disagreements that are known, understood as far as the reason says, and
/// open (docs/CALIBRATION.md "Open"): (bench, configuration words that must
/// all appear, figure, reason). Each is printed, not failed; one that comes
/// within tolerance fails the test so that the list stays true.
const OPEN: &[(&str, &[&str], &str, &str)] = &[
    (
        "hackbench",
        &["groups=16", "pipe=0"],
        "client CPU us/op",
        "640 tasks on the two vCPUs: 2.52 against 3.29 us per message (2.47 before session 31, when every read cost a transfer from the channel's last writer; 2.69 with the cooling before the AF_UNIX costs were refitted on the pinned row). Queued messages now go cold through the tasks' refills (F-031); the skbs' own bytes (~768 of truesize per message, up to 212 KB queued per socket) are not counted as traffic, nor the allocation's misses",
    ),
    ("hackbench", &["groups=64", "pipe=0"], "client CPU us/op", "2,560 tasks: 2.71 against 3.44 us (2.55 before session 31): as 16 groups"),
    (
        "hackbench",
        &["groups=16", "pipe=1"],
        "client switches/op",
        "0.009 per message against 0.033: at 640-2,560 tasks on two vCPUs the real tasks sleep 2-3 times as often (bpftrace at 64 groups: 0.021 / 0.011 voluntary switches per message for sockets / pipes against the model's 0.008 / 0.004, and 0.0033 involuntary against 0.0005); not explained",
    ),
    ("hackbench", &["groups=16", "pipe=1"], "wakeups/op", "as the switches: 0.007 against 0.025"),
    ("hackbench", &["groups=64", "pipe=0"], "client switches/op", "0.015 against 0.027: as 16 groups with pipes"),
    ("hackbench", &["groups=64", "pipe=0"], "wakeups/op", "0.013 against 0.023: as the switches"),
    ("hackbench", &["groups=64", "pipe=1"], "client switches/op", "0.011 against 0.025: as 16 groups with pipes"),
    ("hackbench", &["groups=64", "pipe=1"], "wakeups/op", "0.009 against 0.020: as the switches"),
    (
        "tbench",
        &["clients=1"],
        "client CPU us/op",
        "one client across the two vCPUs: measured without perf, a loopback op costs 16 us more on the client and 14 on the server than with both vCPUs busy (4,655 against 1,624 and 4,145 against 1,591 us per MB), where unpinned pipe costs 11.6 us more per wakeup, which the model's IPI and halt exit meet (28.6 against 28.5 us per round trip); the model adds the pipe's cost to TCP too (3,690 us per MB, 11.5 us per op more than at 2 clients). What TCP's cross-vCPU path costs beyond the IPI is not modelled",
    ),
    (
        "memcached",
        &["client_threads=1", "connections=8"],
        "client CPU us/op",
        "9.0 against 7.1 us (10.5 until session 30). The switches now agree (0.30 per request against 0.27, 0.38 before; the workers' wakeups 0.47 against 0.47, 0.69 before) since epoll_wait()'s blocking path is paid partly before the sleep (EPOLL_BLOCK_PRE_NS, F-030); the CPU is still 27 % high. Traced (session 30, scripts/eevdf-wakeup-state on two unpinned runs), where the wakeups go agrees: 36-39 % of them onto the idle vCPU on the guest, 36 % in the model, and the waker is past V at 93-96 % of the others against 99 %; so the excess is in what a wakeup onto the other vCPU costs (the model charges the pipe's 11 us IPI, F-649's packing aside), not measured for epoll's wakeups",
    ),
    (
        "sysbench",
        &["threads=1"],
        "server CPU us/op",
        "the guest runs ~2x slower after a vCPU halt (mysqld 1,210 us per event quiet, 681 us while other load kept the vCPUs busy, session 8); the halt's cache eviction is modelled (F-450) but mysqld's working set is not declared (64 KiB default, F-016)",
    ),
    ("sysbench", &["threads=4"], "server CPU us/op", "mysqld's CPU per event grows with connections (InnoDB latches, buffer pool mutex: 578 us at 2, 693 at 4) where the model's is constant"),
];

fn open_reason(bench: &str, cfg: &[String], figure: &str) -> Option<&'static str> {
    OPEN.iter().find(|(b, words, f, _)| *b == bench && *f == figure && words.iter().all(|w| cfg.iter().any(|c| c == w))).map(|o| o.3)
}

#[test]
fn builtins_match_the_real_programs_on_the_guest() {
    let mut bad = Vec::new();
    let mut table = String::new();
    let mut open_seen = 0;
    for r in load_real() {
        let m = model(&r);
        let cfg: Vec<String> = r.cfg.iter().map(|(k, v)| format!("{k}={v}")).collect();
        table += &format!("{} {} ({} runs)\n", r.bench, cfg.join(" "), r.repeats);
        for c in checks(&r.bench, &r.cfg) {
            let (a, b) = ((c.get)(&r.fig), (c.get)(&m));
            let ok = (a < c.floor && b < c.floor) || (b - a).abs() <= c.tol * a;
            let open = open_reason(&r.bench, &cfg, c.name);
            let mark = match (ok, open) {
                (true, None) => String::new(),
                (false, Some(why)) => {
                    open_seen += 1;
                    format!("  open: {why}")
                }
                (false, None) => {
                    bad.push(format!(
                        "{} {}: {}: real {a:.3}, model {b:.3} (tolerance {:.0} %)",
                        r.bench,
                        cfg.join(" "),
                        c.name,
                        c.tol * 100.0
                    ));
                    "  <-- outside".into()
                }
                (true, Some(_)) => {
                    bad.push(format!(
                        "{} {}: {} now agrees (real {a:.3}, model {b:.3}): remove it from OPEN",
                        r.bench,
                        cfg.join(" "),
                        c.name
                    ));
                    "  <-- agrees but listed as open".into()
                }
            };
            table += &format!("  {:<20} real {a:>10.3}  model {b:>10.3}  {:+7.1}%{mark}\n", c.name, (b / a - 1.0) * 100.0);
        }
        let (a, b) = (r.fig.metric, m.metric);
        table += &format!("  {:<20} real {a:>10.3}  model {b:>10.3}  {:+7.1}%  (not checked)\n", "metric", (b / a - 1.0) * 100.0);
    }
    eprintln!("{table}\n{open_seen} open disagreements (OPEN), {} unexpected", bad.len());
    assert!(bad.is_empty(), "model against the real programs:\n{}", bad.join("\n"));
}

/// tbench's per-MB figures divide the whole run's CPU and counts by the MB
/// of the whole run: `-t 8` runs 1 s of dbench warmup (timelimit / 5) before
/// the 8 s its Throughput and op table cover; `-t 4` has none.
#[test]
fn tbench_figures_count_dbench_warmup() {
    let line = |secs: u32| {
        format!(
            "bench=tbench clients=2 seconds={secs} ops=1 wall_s=1 load=0 srv_cpu_ms=900 cl_cpu_ms=900 ctxt=0 mb_s=100 \
             cnt_ops=1 cnt_mb_s=100 srv_cs=900 srv_migr=0 srv_waking=0 cl_cs=900 cl_migr=0 cl_waking=0"
        )
    };
    for (secs, mb) in [(8, 900.0), (4, 400.0), (10, 1200.0)] {
        let (bench, cfg, n) = parse_line(&line(secs));
        let f = figures(&bench, &cfg, &n);
        assert!((f.cl.cpu_us - 900_000.0 / mb).abs() < 1e-9, "-t {secs}: {} us per MB", f.cl.cpu_us);
        assert!((f.srv.cs - 900.0 / mb).abs() < 1e-12, "-t {secs}: {} switches per MB", f.srv.cs);
    }
}

/// The guest's machine file carries the noise `machine show local` gives on a
/// virtual machine (`Noise::GUEST_MEASURED`, docs/CALIBRATION.md "Machine
/// noise"): one measurement, written in two places.
#[test]
fn the_guest_file_has_the_measured_guest_noise() {
    let m = guest_machine();
    let g = schedlab_machine::Noise::GUEST_MEASURED;
    let n = &m.noise;
    assert_eq!(
        (n.tick_ns, n.irq_per_s, n.irq_ns, n.kthread_per_s, n.kthread_run_ns, n.unbound_per_s, n.unbound_run_ns),
        (g.tick_ns, g.irq_per_s, g.irq_ns, g.kthread_per_s, g.kthread_run_ns, g.unbound_per_s, g.unbound_run_ns)
    );
}
