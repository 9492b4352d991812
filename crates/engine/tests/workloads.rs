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
    let mut cores: Vec<(u32, Vec<u16>)> = Vec::new();
    for (i, c) in m.topology.cpus().iter().enumerate() {
        match cores.iter_mut().find(|(id, _)| *id == c.core) {
            Some((_, v)) => v.push(i as u16),
            None => cores.push((c.core, vec![i as u16])),
        }
    }
    cores.into_iter().map(|(_, v)| v).collect()
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
        &SimConfig { seed: 3, duration_ns: duration_ms.map(|d| d * MS), schedstat: false, model: Default::default() },
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
    assert_eq!(few.latencies.len(), 1);
    assert!(few.latencies[0].count > 40, "every request records a wakeup latency");
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
        let cfg = SimConfig { seed: 11, duration_ns: Some(5 * MS), schedstat: false, model: Default::default() };
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
        &SimConfig { seed: 1, duration_ns: Some(50 * MS), schedstat: false, model: Default::default() },
    );
    assert!(r.metric_value > 100.0, "{} loops/s", r.metric_value);
    for &(busy, idle) in &r.cpus {
        assert_eq!(busy + idle, r.simulated_ns);
    }
}
