//! `schedlab run --trace F.pftrace --ftrace F.txt`: the Perfetto file is
//! re-parsed by an independent reader (the protobuf bindings of the
//! `perfetto` PyPI package, scripts/check_perfetto_trace.py), which also
//! compares it event for event with the ftrace text and with the run's own
//! counters. The Python comes from SCHEDLAB_PYTHON (set by scripts/test via
//! scripts/ensure-python.sh) or the default venv; without one the test fails
//! and says how to get it.

use std::path::{Path, PathBuf};
use std::process::Command;
mod common;
use common::{ok, schedlab, text};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("SCHEDLAB_PYTHON") {
        return PathBuf::from(p);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let venv = std::env::var_os("SCHEDLAB_PYVENV").map(PathBuf::from).unwrap_or(home.join(".cache/schedlab/pyvenv"));
    let p = venv.join("bin/python");
    assert!(
        p.exists(),
        "no Python with the perfetto package: run `bash scripts/ensure-python.sh` (scripts/test and .ci/run do), \
         or set SCHEDLAB_PYTHON to an interpreter that can `import perfetto` (looked for {})",
        p.display()
    );
    p
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Runs `schedlab run ARGS --trace --ftrace --json` and the checker; returns the checker's output.
fn traced_run_checks(tag: &str, args: &[&str]) -> String {
    let (pf, ft, js) = (tmp(&format!("{tag}.pftrace")), tmp(&format!("{tag}.txt")), tmp(&format!("{tag}.json")));
    let mut a = vec!["run", "--json"];
    a.extend_from_slice(args);
    let (pfs, fts) = (pf.to_str().unwrap(), ft.to_str().unwrap());
    a.extend_from_slice(&["--trace", pfs, "--ftrace", fts]);
    std::fs::write(&js, ok(&a)).unwrap();
    let script = repo_root().join("scripts/check_perfetto_trace.py");
    let out = Command::new(python())
        .arg(&script)
        .args([&pf, &ft, &js])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} (set SCHEDLAB_PYTHON or run scripts/ensure-python.sh): {e}", python().display()));
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "check_perfetto_trace.py failed for {args:?} ({:?}):\n{so}\n{se}", out.status);
    assert!(so.contains("perfetto trace ok"), "unexpected checker output:\n{so}\n{se}");
    for f in [pf, ft, js] {
        let _ = std::fs::remove_file(f);
    }
    so
}

#[test]
fn pipe_trace_reparses_with_perfetto_bindings() {
    let so = traced_run_checks("pipe", &["--machine", "x86-12", "--workload", "pipe", "--set", "loops=200"]);
    // 200 round trips: each side blocks and is woken once per loop.
    assert!(so.contains("sched_waking 400"), "{so}");
}

#[test]
fn hackbench_trace_with_migrations_and_preemption_reparses() {
    let so = traced_run_checks(
        "hackbench",
        &["--machine", "zen3-2s-nps1", "--kernel", "v3.10", "--workload", "hackbench", "--set", "groups=4,loops=30"],
    );
    assert!(so.contains("sched_migrate_task"), "hackbench on 128 CPUs should migrate tasks: {so}");
    assert!(so.contains("R+="), "hackbench should preempt (prev_state R+): {so}");
    assert!(so.contains("Z="), "exiting processes switch out as zombies: {so}");
}

#[test]
fn trace_files_are_deterministic_and_tracing_does_not_change_the_run() {
    let args = ["--machine", "x86-12", "--workload", "hackbench", "--set", "groups=1,loops=10", "--seed", "7"];
    let files: Vec<(Vec<u8>, Vec<u8>)> = (0..2)
        .map(|i| {
            let (pf, ft) = (tmp(&format!("det{i}.pftrace")), tmp(&format!("det{i}.txt")));
            let mut a = vec!["run", "--json"];
            a.extend_from_slice(&args);
            a.extend_from_slice(&["--trace", pf.to_str().unwrap(), "--ftrace", ft.to_str().unwrap()]);
            let traced = ok(&a);
            let mut plain = vec!["run", "--json"];
            plain.extend_from_slice(&args);
            assert_eq!(traced, ok(&plain), "--trace changed the run's results");
            let bytes = (std::fs::read(&pf).unwrap(), std::fs::read(&ft).unwrap());
            let _ = (std::fs::remove_file(pf), std::fs::remove_file(ft));
            bytes
        })
        .collect();
    assert!(!files[0].0.is_empty() && !files[0].1.is_empty());
    assert_eq!(files[0], files[1], "same run, different trace bytes");
}

#[test]
fn unwritable_trace_path_is_a_usage_error_before_the_run() {
    for flag in ["--trace", "--ftrace"] {
        let out = schedlab(&["run", "--workload", "pipe", "--set", "loops=10", flag, "/nonexistent-dir/x"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("cannot create {flag} file /nonexistent-dir/x")), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `schedlab run --json ARGS --ftrace FILE`: the ftrace file (in the test
/// directory, named `name`) and the run's JSON.
fn run_with_ftrace(name: &str, args: &[&str]) -> (PathBuf, serde_json::Value) {
    let ft = tmp(name);
    let mut a = vec!["run", "--json"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--ftrace", ft.to_str().unwrap()]);
    let v = serde_json::from_str(&ok(&a)).unwrap();
    (ft, v)
}

/// Run a scripts/ summary on an ftrace file: its stdout, after it succeeded.
/// The file is removed.
fn summary(script: &str, ft: &Path, args: &[&str]) -> String {
    let out = Command::new(python()).arg(repo_root().join("scripts").join(script)).arg(ft).args(args).output().unwrap();
    let so = text(&out.stdout);
    assert!(out.status.success(), "{script} failed:\n{so}\n{}", text(&out.stderr));
    let _ = std::fs::remove_file(ft);
    so
}

/// scripts/placement-summary (which compares real and modelled placement,
/// docs/CALIBRATION.md "pgbench placement") reads schedlab's ftrace text: its
/// migration count is the run's own (workload plus the machine's kernel
/// threads), and every CPU's shares add up to the whole trace.
#[test]
fn placement_summary_reads_the_ftrace_and_agrees_with_the_run() {
    let (ft, v) = run_with_ftrace(
        "placement.txt",
        &["--machine", "zen3-2s-nps1", "--kernel", "v3.10", "--workload", "hackbench", "--set", "groups=4,loops=30"],
    );
    let migrations = v["migrations"].as_u64().expect("migrations in the run's JSON");
    let noise_migr = v["machine"]["noise"]["kthread_migrations"].as_u64().unwrap_or(0);
    let so = summary("placement-summary", &ft, &["--kinds", "hackbench"]);
    // "migrations: KIND WHEN N, ...": the counts add up to the run's.
    let line = so.lines().find(|l| l.starts_with("migrations: ")).expect("a migrations line");
    let counted: u64 = line.trim_start_matches("migrations: ").split(", ").filter_map(|f| f.rsplit(' ').next()?.parse::<u64>().ok()).sum();
    assert!(migrations > 0, "hackbench on 128 CPUs migrates");
    assert_eq!(counted, migrations + noise_migr, "{so}");
    // Each CPU line's shares sum to 100 % (rounding aside).
    for l in so.lines().filter(|l| l.starts_with("cpu ")) {
        let sum: f64 = l
            .split(": ")
            .nth(1)
            .unwrap()
            .split(", ")
            .map(|f| f.rsplit(' ').next().unwrap().trim_end_matches('%').parse::<f64>().unwrap())
            .sum();
        assert!((sum - 100.0).abs() < 0.5, "{l}");
    }
}

/// scripts/hackbench-summary (real against modelled hackbench traces,
/// docs/CALIBRATION.md "Session 23, pipes are pages") reads schedlab's ftrace
/// text: it finds the group's 20 senders and 20 receivers by their names, the
/// hackbench tasks' switches are the run's voluntary plus involuntary ones,
/// and every sender and receiver exits once.
#[test]
fn hackbench_summary_reads_the_ftrace_and_agrees_with_the_run() {
    let (ft, v) = run_with_ftrace(
        "hackbench-summary.txt",
        &["--machine", "x86-12", "--kernel", "v6.12", "--workload", "hackbench", "--set", "groups=1,loops=100,pipe=1"],
    );
    let cs = &v["context_switches"];
    let switches = cs["voluntary"].as_u64().unwrap() + cs["involuntary"].as_u64().unwrap();
    let so = summary("hackbench-summary", &ft, &[]);
    assert!(so.contains("tasks: 20 senders, 20 receivers"), "{so}");
    assert!(so.contains(&format!("hackbench tasks' switches: {switches}\n")), "run: {switches}\n{so}");
    assert!(so.contains("receiver exited 20") && so.contains("sender exited 20"), "{so}");
    assert!(so.lines().any(|l| l.starts_with("senders blocked: ") && !l.starts_with("senders blocked: 0 ")), "{so}");
}

/// scripts/switch-summary (who preempts whom, real against modelled traces)
/// reads schedlab's ftrace text: each task's sleeps and preemptions add up to
/// the run's voluntary and involuntary switches, and every wakeup onto a busy
/// CPU it classifies is one the run made.
#[test]
fn switch_summary_reads_the_ftrace_and_agrees_with_the_run() {
    // Two CPUs: workers and client threads share them, so wakeups find them busy.
    let guest = repo_root().join("crates/engine/tests/data/local-guest.toml");
    let (ft, v) = run_with_ftrace(
        "switch-summary.txt",
        &[
            "--machine",
            guest.to_str().unwrap(),
            "--kernel",
            "v6.12",
            "--machine-model",
            "NO_NOISE",
            "--workload",
            "memcached",
            "--set",
            "threads=2,client_threads=2,connections=8",
            "--duration",
            "100ms",
        ],
    );
    let cs = &v["context_switches"];
    let (vol, invol) = (cs["voluntary"].as_u64().unwrap() as f64, cs["involuntary"].as_u64().unwrap() as f64);
    let so = summary("switch-summary", &ft, &["--tasks", "memcached|memtier"]);
    // "FILE: D ms traced, N switches"
    let ms: f64 = so.lines().next().and_then(|l| l.split(": ").nth(1)?.split(' ').next()?.parse().ok()).expect("a header line");
    let rows: Vec<Vec<&str>> =
        so.lines().filter(|l| l.starts_with("memcached-w") || l.starts_with("memtier-")).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), 4, "two workers and two client threads:\n{so}");
    // Columns: task, one share per CPU, runs/s, p50, mean, sleeps/s, preempted/s.
    let per_s = |i: usize| rows.iter().map(|r| r[r.len() - i].parse::<f64>().unwrap()).sum::<f64>() * ms / 1e3;
    let (sleeps, preempted) = (per_s(2), per_s(1));
    // Rounded to whole events per second per row; the trace spans the run
    // from its first to its last switch.
    assert!((sleeps - vol).abs() <= 0.02 * vol + 4.0, "sleeps {sleeps:.0} against {vol} voluntary switches\n{so}");
    assert!((preempted - invol).abs() <= 0.02 * invol + 4.0, "preemptions {preempted:.0} against {invol} involuntary\n{so}");
    // The preemption share, and split by the waker's CPU (sched_waking's).
    assert!(so.contains("wakee preempts") && so.lines().any(|l| l.starts_with("memtier") && l.contains("% of ")), "{so}");
}
