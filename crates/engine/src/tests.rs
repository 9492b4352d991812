//! Engine-level tests: invariants checked on every workload, determinism, and
//! fairness properties that only show up when the kernel model and the run
//! loop work together.

use crate::{run, RunResult, SimConfig};
use schedlab_kernel::profile::profile;
use schedlab_machine::Machine;
use schedlab_workload::{build, Params, Workload};

const MS: u64 = 1_000_000;

fn machine(name: &str) -> Machine {
    schedlab_machine::load(name).unwrap()
}

fn one_cpu_machine() -> Machine {
    let mut t = schedlab_machine::load("laptop-4c8t").unwrap().to_toml();
    t = t
        .replace("cores_per_llc = 4", "cores_per_llc = 1")
        .replace("threads_per_core = 2", "threads_per_core = 1");
    schedlab_machine::from_toml_str(&t, "one-cpu").unwrap()
}

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
    build(
        name,
        &Params::parse(set).unwrap(),
        m.topology.nr_cpus(),
        &cores(m),
    )
    .unwrap()
}

fn go(m: &Machine, kernel: &str, w: &Workload, seed: u64, duration: Option<u64>) -> RunResult {
    run(
        m,
        profile(kernel).unwrap(),
        w,
        &SimConfig {
            seed,
            duration_ns: duration,
            schedstat: false,
        },
    )
}

/// The invariants every run must satisfy.
fn check_invariants(r: &RunResult, w: &Workload, completes: bool) {
    for (i, &(busy, idle)) in r.cpus.iter().enumerate() {
        assert_eq!(
            busy + idle,
            r.simulated_ns,
            "cpu{i}: busy {busy} + idle {idle} != simulated {}",
            r.simulated_ns
        );
    }
    if completes {
        assert_eq!(
            r.tasks_created as usize,
            w.nr_tasks(),
            "every task spec was created"
        );
        assert_eq!(
            r.tasks_exited, r.tasks_created,
            "every task is accounted for at exit"
        );
        assert_eq!(r.woken_never_ran, 0, "every woken task eventually ran");
    } else {
        assert!(r.tasks_exited <= r.tasks_created);
        // Cut by --duration: a task may be waiting, but none can have waited
        // longer than the run (it would have starved).
        assert!(r.run_delay_max <= r.simulated_ns);
    }
}

#[test]
fn invariants_every_workload_every_kernel() {
    let m = machine("x86-12");
    let cases: &[(&str, &str, bool)] = &[
        ("hackbench", "groups=2,loops=20", true),
        ("hackbench", "groups=1,loops=20,pipe=1,threads=1", true),
        ("pipe", "loops=2000", true),
        ("pipe", "loops=2000,threads=1", true),
        ("context_switch1", "pairs=8", false),
        ("soaker", "tasks=20,run_us=500,sleep_us=300", false),
        ("soaker", "tasks=3", false),
    ];
    for kernel in ["v3.10", "v6.6", "v6.12"] {
        for &(name, set, completes) in cases {
            let w = wl(&m, name, set);
            let r = go(
                &m,
                kernel,
                &w,
                7,
                if completes { None } else { Some(20 * MS) },
            );
            check_invariants(&r, &w, completes);
            assert!(
                r.metric_value > 0.0,
                "{kernel} {name} {set}: metric {}",
                r.metric_value
            );
        }
    }
}

#[test]
fn same_seed_same_result_other_seed_other_details() {
    let m = machine("laptop-4c8t");
    let w = wl(&m, "hackbench", "groups=1,loops=30");
    let a = go(&m, "v6.12", &w, 1, None);
    let b = go(&m, "v6.12", &w, 1, None);
    assert_eq!(a, b);
    let c = go(&m, "v6.12", &w, 2, None);
    assert_ne!(a.simulated_ns, c.simulated_ns);
    assert_eq!(c.tasks_exited, a.tasks_exited);
}

#[test]
fn hackbench_more_groups_take_longer() {
    let m = machine("laptop-4c8t");
    let t = |g: u32| {
        go(
            &m,
            "v6.6",
            &wl(&m, "hackbench", &format!("groups={g},loops=20")),
            1,
            None,
        )
        .metric_value
    };
    assert!(t(4) > t(1) * 1.5, "4 groups {} vs 1 group {}", t(4), t(1));
}

/// spec §7.2 / §7.3: two CPU hogs of equal weight share one CPU evenly under
/// both EEVDF and CFS; nice 0 vs nice 5 share it ~1024:335.
#[test]
fn hogs_share_a_cpu_by_weight() {
    let m = one_cpu_machine();
    for kernel in ["v3.10", "v6.6", "v6.12"] {
        let w = wl(&m, "soaker", "tasks=2,run_us=100");
        let r = go(&m, kernel, &w, 1, Some(400 * MS));
        check_invariants(&r, &w, false);
        // 2 tasks x 100us periods: total periods/s ~ 10000 (one CPU fully busy).
        assert!(
            (r.metric_value - 10_000.0).abs() < 300.0,
            "{kernel}: {}",
            r.metric_value
        );
    }
    let mut w = wl(&m, "soaker", "tasks=2,run_us=100");
    w.tasks[1].nice = 5;
    let sim = crate::Sim::new(
        &m,
        schedlab_kernel::Kernel::new(&m.topology, profile("v6.6").unwrap()),
        &w,
        &SimConfig {
            seed: 1,
            duration_ns: Some(500 * MS),
            schedstat: false,
        },
    );
    let (r, kernel) = sim.run_keep_kernel(&SimConfig {
        seed: 1,
        duration_ns: Some(500 * MS),
            schedstat: false,
    });
    let a = kernel.tasks[0].se.sum_exec_runtime as f64;
    let b = kernel.tasks[1].se.sum_exec_runtime as f64;
    let ratio = a / b;
    assert!(
        (ratio - 1024.0 / 335.0).abs() < 0.1,
        "nice 0 : nice 5 = {ratio}"
    );
    check_invariants(&r, &w, false);
}

/// On one CPU, the perf-pipe round trip is two context switches plus the
/// syscall costs: the simulated figure must follow from those constants.
#[test]
fn pipe_round_trip_on_one_cpu_follows_costs() {
    let m = one_cpu_machine();
    let w = wl(&m, "pipe", "loops=5000");
    let r = go(&m, "v6.12", &w, 1, None);
    let c = &m.costs;
    // per round trip: 2 x (write 800 + read 700) + 2 context switches (mm switch too: processes).
    let rt_ns = 2.0 * 1500.0 + 2.0 * (c.context_switch_ns + c.mm_switch_ns) as f64;
    let want = 1e9 / rt_ns;
    assert!(
        (r.metric_value - want).abs() / want < 0.05,
        "ops/s {} vs {want}",
        r.metric_value
    );
    assert!(r.voluntary_switches >= 2 * 5000);
}
