//! The built-in workloads simulated: each runs cleanly (CPU time conserved,
//! no lost task) and its metric moves the right way with its main parameter.

use schedlab_engine::{run, RunResult, SimConfig};
use schedlab_kernel::profile::profile;
use schedlab_machine::Machine;
use schedlab_workload::{build, Params, Workload};

const MS: u64 = 1_000_000;

fn machine() -> Machine {
    schedlab_machine::load("x86-12").unwrap()
}

/// CPUs of each core, in order of first CPU (as the CLI passes them).
fn cores(m: &Machine) -> Vec<Vec<u16>> {
    m.topology.core_groups()
}

fn wl(m: &Machine, name: &str, set: &str) -> Workload {
    build(name, &Params::parse(set).unwrap(), m.topology.nr_cpus(), &cores(m)).unwrap()
}

fn go(name: &str, set: &str, duration_ms: Option<u64>) -> RunResult {
    let m = machine();
    let w = wl(&m, name, set);
    let r = run(
        &m,
        profile("v6.12").unwrap(),
        &w,
        &SimConfig {
            seed: 3,
            duration_ns: duration_ms.map(|d| d * MS),
            schedstat: false,
            model: Default::default(),
            trace: false,
            switch_log: false,
        },
    );
    for &(busy, idle) in &r.cpus {
        assert_eq!(busy + idle, r.simulated_ns, "{name} {set}: CPU time not conserved");
    }
    assert!(r.tasks_exited <= r.tasks_created);
    if duration_ms.is_none() {
        assert_eq!(r.tasks_exited as usize, w.nr_tasks(), "{name} {set}: every task exits");
    }
    assert!(r.metric_value.is_finite() && r.metric_value > 0.0, "{name} {set}: metric {}", r.metric_value);
    r
}

#[test]
fn schbench_2023_latency_rises_when_workers_exceed_cpus() {
    let few = go("schbench", "threads=4", Some(300));
    let many = go("schbench", "threads=36", Some(300));
    assert!(many.metric_value > 5.0 * few.metric_value, "p99 {} -> {} us", few.metric_value, many.metric_value);
    assert_eq!(few.latencies.len(), 2, "wakeup (0) and request (1) latency");
    assert!(few.latencies[0].count > 40, "every request records a wakeup latency");
}

/// The latency histogram `hist` of a run (panics when it has no samples).
fn hist(r: &RunResult, hist: u32) -> &schedlab_engine::LatencySummary {
    r.latencies.iter().find(|l| l.hist == hist).unwrap_or_else(|| panic!("no samples in histogram {hist}: {:?}", r.latencies))
}

#[test]
fn schbench_2023_request_latency_and_rps() {
    let few = go("schbench", "threads=4", Some(300));
    let many = go("schbench", "threads=36", Some(300));
    let (a, b) = (hist(&few, 1), hist(&many, 1));
    assert!(a.count > 40 && a.p50 >= 100_000, "a request includes the 100 us sleep and the matrix work: {a:?}");
    assert!(a.p50 <= a.p90 && a.p90 <= a.p99 && a.p99 <= a.p999 && a.p999 <= a.max);
    assert!(b.p99 > a.p99, "oversubscribed workers wait for CPU mid-request: {} -> {} ns", a.p99, b.p99);
    let rps_few = go("schbench", "threads=4,metric=rps", Some(300));
    let rps_many = go("schbench", "threads=36,metric=rps,locking=0", Some(300));
    assert_eq!(rps_few.metric_unit, "req/s");
    assert!(rps_few.higher_is_better);
    assert!(
        rps_many.metric_value > 2.0 * rps_few.metric_value,
        "without the per-CPU lock (-L), more workers, more requests: {} -> {}",
        rps_few.metric_value,
        rps_many.metric_value
    );
    // With it, three workers per CPU leave one working and two spinning on
    // its lock: no more requests than 4 workers on 12 CPUs serve.
    let rps_locked = go("schbench", "threads=36,metric=rps", Some(300));
    assert!(
        rps_locked.metric_value < 1.2 * rps_few.metric_value,
        "with the lock the spinners take the gain: {} -> {}",
        rps_few.metric_value,
        rps_locked.metric_value
    );
    let req = go("schbench", "threads=4,metric=request_p99.9", Some(300));
    assert_eq!(req.metric_value, a.p999 as f64 / 1e3);
}

#[test]
fn sysbench_p95_rises_when_threads_exceed_cpus() {
    let few = go("sysbench", "threads=4,metric=latency_p95", Some(100));
    let many = go("sysbench", "threads=48,metric=latency_p95", Some(100));
    assert!(!few.higher_is_better && few.metric_unit == "us");
    assert!(many.metric_value > 1.5 * few.metric_value, "p95 {} -> {} us", few.metric_value, many.metric_value);
    let h = hist(&few, 1);
    assert!(h.count > 100 && h.p50 <= h.p95 && h.p95 <= h.p99, "{h:?}");
    assert_eq!(few.metric_value, h.p95 as f64 / 1e3);
    // the default metric is unchanged, and still reports the histogram
    let ev = go("sysbench", "threads=4", Some(100));
    assert_eq!(ev.metric_name, "events");
    assert_eq!(hist(&ev, 1).count, h.count);
}

#[test]
fn pgbench_latency_average_tracks_clients_over_tps() {
    let r = go("pgbench", "clients=4", Some(100));
    let lat = go("pgbench", "clients=4,metric=latency_avg", Some(100));
    let h = hist(&r, 1);
    assert!(h.count > 100 && h.p50 <= h.p90 && h.p90 <= h.p99, "{h:?}");
    assert_eq!(lat.metric_value, h.mean as f64 / 1e3);
    // closed loop: latency average ~ clients / tps
    let expect_us = 4.0 / r.metric_value * 1e6;
    assert!((lat.metric_value / expect_us - 1.0).abs() < 0.05, "avg {} us, clients/tps {expect_us} us", lat.metric_value);
    let more = go("pgbench", "clients=48,threads=12,metric=latency_avg", Some(100));
    assert!(more.metric_value > 2.0 * lat.metric_value, "avg {} -> {} us", lat.metric_value, more.metric_value);
}

#[test]
fn memcached_latency_rises_with_connections() {
    let few = go("memcached", "connections=2,metric=latency_p99", Some(50));
    let many = go("memcached", "connections=50,metric=latency_p99", Some(50));
    assert!(many.metric_value > 3.0 * few.metric_value, "p99 {} -> {} us", few.metric_value, many.metric_value);
    let h = hist(&many, 1);
    assert!(h.count > 1000 && h.p50 > 0 && h.p50 <= h.p99, "{h:?}");
    let avg = go("memcached", "connections=50,metric=latency_avg", Some(50));
    assert!(avg.metric_value > 0.0 && avg.metric_value <= h.max as f64 / 1e3);
}

#[test]
fn schbench_2016_bursts_hurt_p99_with_more_workers() {
    let few = go("schbench", "version=2016,threads=2", Some(500));
    let many = go("schbench", "version=2016,threads=12", Some(500));
    assert!(many.metric_value > few.metric_value, "p99 {} -> {} us", few.metric_value, many.metric_value);
}

#[test]
fn tbench_throughput_rises_with_clients() {
    let a = go("tbench", "clients=1", Some(50));
    let b = go("tbench", "clients=4", Some(50));
    assert!(b.metric_value > 3.0 * a.metric_value, "{} -> {} MB/s", a.metric_value, b.metric_value);
    // 5.4 KB per op at ~10-20 us per round trip
    assert!((100.0..2000.0).contains(&a.metric_value), "{} MB/s for one client", a.metric_value);
}

#[test]
fn netperf_rates_and_modes() {
    let tcp = go("netperf", "", Some(50));
    let udp = go("netperf", "mode=UDP_RR", Some(50));
    let four = go("netperf", "instances=4", Some(50));
    assert!(udp.metric_value > tcp.metric_value);
    assert!(four.metric_value > 3.0 * tcp.metric_value);
    assert!((50_000.0..200_000.0).contains(&tcp.metric_value), "{} trans/s", tcp.metric_value);
}

#[test]
fn stream_bandwidth_scales_with_threads_until_cpus_are_full() {
    let two = go("stream", "threads=2,array_size=1000000,ntimes=3", None);
    let twelve = go("stream", "threads=12,array_size=1000000,ntimes=3", None);
    let over = go("stream", "threads=24,array_size=1000000,ntimes=3", None);
    // With the bandwidth model, STREAM saturates the memory system: more
    // threads help until the nodes' bandwidth is used, never beyond it.
    assert!(twelve.metric_value > 1.2 * two.metric_value, "{} -> {}", two.metric_value, twelve.metric_value);
    let m = schedlab_machine::load("x86-12").unwrap();
    let total = (m.costs.mem_bw_node_mbps * m.topology.nr_nodes() as u64) as f64;
    assert!(twelve.metric_value <= total * 1.01, "{} MB/s exceeds the machine's {total}", twelve.metric_value);
    assert!(over.metric_value < 1.1 * twelve.metric_value, "more threads than CPUs cannot add bandwidth");
}

#[test]
fn sysbench_events_rise_with_threads() {
    let a = go("sysbench", "threads=1", Some(100));
    let b = go("sysbench", "threads=6", Some(100));
    assert!(b.metric_value > 3.0 * a.metric_value, "{} -> {}", a.metric_value, b.metric_value);
}

#[test]
fn memcached_requests_rise_with_client_threads() {
    let a = go("memcached", "client_threads=1,connections=8", Some(50));
    let b = go("memcached", "client_threads=4,connections=8", Some(50));
    assert!(b.metric_value > 2.5 * a.metric_value, "{} -> {}", a.metric_value, b.metric_value);
}

/// Every checked-in examples/workloads/NAME.toml (written by `schedlab
/// workload export NAME`) is exactly the built-in: equal workloads, equal results.
#[test]
fn example_files_equal_their_builtins() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/workloads");
    let m = machine();
    let mut seen = Vec::new();
    for b in schedlab_workload::builtin::BUILTINS {
        let path = dir.join(format!("{}.toml", b.name));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let from_file = schedlab_workload::file::from_toml_str(&text, &path.display().to_string()).unwrap();
        let set: Vec<String> = from_file.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let built = wl(&m, b.name, &set.join(","));
        assert_eq!(from_file, built, "{}", b.name);
        let cfg =
            SimConfig { seed: 11, duration_ns: Some(5 * MS), schedstat: false, model: Default::default(), trace: false, switch_log: false };
        let r1 = run(&m, profile("v6.12").unwrap(), &from_file, &cfg);
        let r2 = run(&m, profile("v6.12").unwrap(), &built, &cfg);
        assert_eq!(r1, r2, "{}", b.name);
        seen.push(b.name);
    }
    assert_eq!(seen.len(), 11);
}

/// A small rt-app file runs, and its barrier and condvar ping-pong make progress.
#[test]
fn rtapp_example_runs() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/workloads/rtapp-pingpong.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let w = schedlab_workload::rtapp::from_json_str(&text, "rtapp-pingpong.json").unwrap();
    let m = machine();
    let r = run(
        &m,
        profile("v6.12").unwrap(),
        &w,
        &SimConfig { seed: 1, duration_ns: Some(50 * MS), schedstat: false, model: Default::default(), trace: false, switch_log: false },
    );
    assert!(r.metric_value > 100.0, "{} loops/s", r.metric_value);
    for &(busy, idle) in &r.cpus {
        assert_eq!(busy + idle, r.simulated_ns);
    }
}

/// Open loop (`rate=`): the offered load is the same whatever the kernel (same
/// seed, same arrivals), the server completes what arrives while it keeps up,
/// every completion has a latency from its arrival, and an offered rate above
/// the server's capacity is dropped and said so.
#[test]
fn open_loop_holds_the_offered_load_constant() {
    let m = machine();
    let run_k = |kernel: &str, set: &str| {
        let w = wl(&m, "memcached", set);
        let cfg = SimConfig {
            seed: 5,
            duration_ns: Some(200 * MS),
            schedstat: false,
            model: Default::default(),
            trace: false,
            switch_log: false,
        };
        run(&m, profile(kernel).unwrap(), &w, &cfg)
    };
    let (a, b) = (run_k("v5.11", "rate=50000"), run_k("v6.12", "rate=50000"));
    assert_eq!(a.arrivals.arrived, b.arrivals.arrived, "same offered requests on both kernels");
    // Poisson: 50000/s x 0.2 s = 10000 +- 4 sigma.
    assert!((9_600..=10_400).contains(&a.arrivals.arrived), "arrived {}", a.arrivals.arrived);
    for r in [&a, &b] {
        assert_eq!(r.arrivals.dropped, 0);
        let done = (r.metric_value * 0.2).round() as u64;
        assert!(done + 50 >= r.arrivals.arrived && done <= r.arrivals.arrived, "done {done} of {}", r.arrivals.arrived);
        let lat = r.latencies.iter().find(|l| l.hist == 1).expect("latency from arrival");
        assert_eq!(lat.count, done);
        // Receive path + recv + serve + send: at least ~10 us, far below a ms at this load.
        assert!(lat.mean > 9_000 && lat.mean < 200_000, "mean latency {} ns", lat.mean);
        // No on-box client: the workers are woken from interrupt context only.
        assert!(r.wakeups <= r.arrivals.wakeups + r.noise.kthread_wakeups);
    }
    let over = run_k("v6.12", "rate=5000000,threads=2");
    assert!(over.arrivals.dropped > 0, "5 M req/s on 2 workers must overflow their queues");
    assert!(over.metric_value < 2_000_000.0);
    // netperf's netservers take the same path.
    let w = wl(&m, "netperf", "rate=100000,instances=4");
    let cfg =
        SimConfig { seed: 5, duration_ns: Some(100 * MS), schedstat: false, model: Default::default(), trace: false, switch_log: false };
    let r = run(&m, profile("v6.12").unwrap(), &w, &cfg);
    assert!((r.metric_value - 100_000.0).abs() < 5_000.0, "netperf open loop {} trans/s", r.metric_value);
    // ...and tbench's servers: throughput = offered ops/s x client.txt's mean payload per op.
    let w = wl(&m, "tbench", "rate=50000,clients=4");
    let r = run(&m, profile("v6.12").unwrap(), &w, &cfg);
    let per_op = schedlab_workload::builtin::tbench::CYCLE.iter().map(|c| c.3).sum::<u64>() as f64 / 11.0;
    let expect = 50_000.0 * per_op / 1e6;
    assert!((r.metric_value - expect).abs() < 0.06 * expect, "tbench open loop {} MB/s, expected ~{expect:.0}", r.metric_value);
    // ...and pgbench's backends, select-only and TPC-B: tps = the offered rate.
    for mode in ["select", "tpcb"] {
        let w = wl(&m, "pgbench", &format!("rate=20000,clients=8,mode={mode}"));
        let r = run(&m, profile("v6.12").unwrap(), &w, &cfg);
        assert!((r.metric_value - 20_000.0).abs() < 1_200.0, "pgbench {mode} open loop {} tps", r.metric_value);
    }
}

#[test]
fn open_loop_parameters_are_checked() {
    let m = machine();
    let e = |name: &str, set: &str| build(name, &Params::parse(set).unwrap(), m.topology.nr_cpus(), &cores(&m)).unwrap_err().to_string();
    assert!(e("memcached", "rx_queues=4").contains("open loop only"));
    assert!(e("netperf", "metric=latency_p99").contains("open loop only"));
    assert!(e("memcached", "rate=1000,rx_queues=13").contains("rx_queues"));
}
