//! Issue 13, "No silent wrong results": every result is either right or
//! refused with a message naming the problem and the fix.

mod common;
use common::{ok, schedlab, text};
use std::path::PathBuf;

fn tmp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-wrong-test-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs a command that must fail with exit 2 and a message containing every needle.
fn refused(args: &[&str], needles: &[&str]) -> (String, String) {
    let out = schedlab(args);
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    assert!(!se.contains("panicked"), "schedlab {args:?} panicked:\n{se}");
    assert_eq!(out.status.code(), Some(2), "schedlab {args:?}: expected exit 2, got {:?}\nstdout:\n{so}\nstderr:\n{se}", out.status);
    for n in needles {
        assert!(se.contains(n), "schedlab {args:?}: stderr does not mention {n:?}:\n{se}");
    }
    (so, se)
}

fn write(dir: &std::path::Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p.to_str().unwrap().to_string()
}

const TWO_TASKS: &str = r#"format = 1
name = "marks"
[metric]
kind = "elapsed"
name = "t"
start = START
end = END
[[sem]]
initial = 0
sync = false
[[program]]
ops = ["mark id=0", "sem_wake sem=0 n=1", "run ns=1ms", "mark id=1"]
[[program]]
ops = ["run ns=100us", "sem_wait sem=0", "run ns=RUN"]
[[task]]
name = "NAME"
program = 0
mm = 0
[[task]]
name = "b"
program = 1
mm = 1
"#;

fn two_tasks(start: &str, end: &str, run: &str, name: &str) -> String {
    TWO_TASKS.replace("START", start).replace("END", end).replace("RUN", run).replace("NAME", name)
}

/// Item 1: a run-to-completion workload cut by --duration has no result.
#[test]
fn duration_cutting_a_run_to_completion_workload_is_an_error() {
    let (so, _) = refused(
        &["run", "--workload", "hackbench", "--set", "groups=4,loops=200", "--duration", "10ms"],
        &["hackbench", "--duration 10ms", "runs to completion", "raise --duration or drop it"],
    );
    assert!(!so.contains("time "), "no time printed as a result:\n{so}");
    refused(&["run", "--workload", "stream", "--duration", "1ms"], &["stream", "runs to completion"]);
    refused(&["run", "--workload", "pipe", "--duration", "1ms", "--json"], &["pipe", "not reached"]);
    // Long enough: a result as before.
    assert!(ok(&["run", "--workload", "hackbench", "--set", "groups=1,loops=20", "--duration", "1s"]).contains("time "));
}

/// Item 1: in compare, --duration applies to time-bounded workloads only, so a
/// run-to-completion workload gives the same table with or without it.
#[test]
fn compare_duration_applies_to_time_bounded_workloads_only() {
    let base = ["compare", "--workload", "hackbench", "--set", "groups=2,loops=30", "--kernel", "v3.10", "--vs", "v6.12", "--runs", "2"];
    let plain = ok(&base);
    let mut with = base.to_vec();
    with.extend(["--duration", "1ms"]);
    let out = schedlab(&with);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), plain);
    assert!(
        text(&out.stderr).contains("--duration applies to time-bounded workloads; hackbench runs to completion"),
        "{}",
        text(&out.stderr)
    );
}

/// Items 1 and 3: in compare, runs without a valid metric are left out of the
/// statistics with a warning; with none left, compare refuses.
#[test]
fn compare_refuses_when_every_run_is_truncated() {
    refused(
        &["compare", "--workload", "pgbench", "--set", "metric=latency_p99", "--duration", "100us", "--runs", "2", "--vs", "v6.6"],
        &["run truncated, left out of the statistics", "no samples", "every run was truncated"],
    );
}

/// Item 2: marks are checked when the file loads; a run whose marks were not
/// reached, or that ends with tasks blocked forever, says so.
#[test]
fn elapsed_marks_are_checked_and_deadlocks_reported() {
    let dir = tmp_dir("marks");
    let swapped = write(&dir, "swapped.toml", &two_tasks("1", "0", "1us", "a"));
    refused(&["run", "--workload", &swapped], &["end mark 0", "before its start mark 1", "swap start and end"]);
    let never = write(&dir, "never.toml", &two_tasks("0", "5", "1us", "a"));
    refused(&["run", "--workload", &never], &["end mark 5 is never recorded"]);
    // b waits after a's only wakeup went by (a lost wakeup): the metric is
    // valid, and the run says one task is blocked forever.
    let lost = write(&dir, "lost.toml", &two_tasks("0", "1", "1us", "a"));
    let out = schedlab(&["run", "--workload", &lost, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("1 tasks blocked forever"), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tasks"]["blocked_forever"], 1);
    // The parent's end mark sits after a wait that never ends: no result.
    let dead = two_tasks("0", "1", "1us", "a").replace(
        r#"ops = ["mark id=0", "sem_wake sem=0 n=1", "run ns=1ms", "mark id=1"]"#,
        r#"ops = ["mark id=0", "run ns=1ms", "sem_wait sem=0", "mark id=1"]"#,
    );
    let dead = dead.replace(r#""sem_wait sem=0", "run ns=1us"]"#, r#""sem_wait sem=0", "sem_post sem=0 n=1"]"#);
    let dead = write(&dir, "dead.toml", &dead);
    refused(&["run", "--workload", &dead], &["end mark (mark id=1) was not reached", "2 tasks blocked forever"]);
}

/// Item 3: a latency metric without samples is no result, not 0.000000 us.
#[test]
fn latency_metric_without_samples_is_refused() {
    let (so, _) = refused(
        &["run", "--workload", "pgbench", "--set", "metric=latency_p99", "--duration", "100us"],
        &["latency_p99", "no samples", "run longer"],
    );
    assert!(!so.contains("0.000000 us"), "{so}");
}

/// Item 4: the HTML schedstat table matches domain levels by name (side B of
/// v5.13 vs v6.0 builds an extra CLS level on a machine with clusters).
#[test]
fn html_schedstat_levels_matched_by_name() {
    let dir = tmp_dir("html");
    let toml = ok(&["machine", "show", "zen3-2s-nps1", "--toml"]);
    let cls =
        toml.replacen("clusters_per_llc = 1", "clusters_per_llc = 2", 1).replacen("name = \"zen3-2s-nps1\"", "name = \"zen3-cls\"", 1);
    assert_ne!(cls, toml, "the machine file has clusters_per_llc = 1");
    let m = write(&dir, "cls.toml", &cls);
    let html = dir.join("cls.html");
    let json = dir.join("cls.json");
    let args = [
        "compare",
        "--machine",
        &m,
        "--workload",
        "hackbench",
        "--set",
        "groups=2,loops=20",
        "--kernel",
        "v5.13",
        "--vs",
        "v6.0",
        "--runs",
        "1",
        "--html",
        html.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    ok(&args);
    let h = std::fs::read_to_string(&html).unwrap();
    let v: schedlab_lab::compare::Report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // One point, one run per side: records A, B.
    let share = |side: &str, level: &str| -> Option<String> {
        let r = &v.tables[0].recs[if side == "A" { 0 } else { 1 }];
        let l = r.levels.iter().find(|l| l.name == level)?;
        let pct = 100.0 * l.ttwu_wake_remote as f64 / r.ttwu_count as f64;
        Some(format!("{pct:.1}%"))
    };
    assert!(share("A", "CLS").is_none() && share("B", "CLS").is_some(), "v5.13 builds no CLS level, v6.0 does");
    for level in ["SMT", "CLS", "MC", "DIE", "NUMA"] {
        let row = h
            .lines()
            .find(|l| l.contains(&format!("<td class=\"l\">{level}</td>")))
            .unwrap_or_else(|| panic!("no {level} row in the wakeups table"));
        let a = share("A", level).unwrap_or_else(|| "not built".into());
        let b = share("B", level).unwrap_or_else(|| "not built".into());
        assert!(row.contains(&format!("<td>{a}</td><td>{b}</td>")), "{level}: want A {a}, B {b} in {row}");
    }
    assert!(h.contains("same CPU (ttwu_local)"));
}

/// Item 5: a closed pipe on stdout ends the program quietly (as `| head -1`).
#[test]
fn broken_pipe_exits_quietly() {
    use std::os::unix::process::ExitStatusExt;
    for args in [&["run", "--json"][..], &["machines"][..], &["compare", "--runs", "1"][..]] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(args)
            .env_remove("RUST_BACKTRACE")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader goes away before anything is written
        let out = child.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{args:?}: {err}");
        assert!(out.status.success() || out.status.signal() == Some(13), "{args:?}: {:?} {err}", out.status);
    }
}

/// Item 6: a feature bit the kernel does not have is an error naming the
/// kernels that have it; `kernel show` lists only the kernel's own bits.
#[test]
fn feature_bits_outside_the_kernel_are_errors() {
    refused(&["run", "--kernel", "v3.10", "--features", "PLACE_LAG"], &["PLACE_LAG does not exist in v3.10", "v6.6, v6.12"]);
    refused(
        &["run", "--kernel", "v6.12", "--features", "NO_GENTLE_FAIR_SLEEPERS"],
        &["GENTLE_FAIR_SLEEPERS does not exist in v6.12", "v3.10"],
    );
    refused(
        &["compare", "--kernel", "v6.6", "--features-b", "DELAY_DEQUEUE", "--runs", "1"],
        &["DELAY_DEQUEUE does not exist in v6.6", "v6.12"],
    );
    let show = ok(&["kernel", "show", "v6.12"]);
    for gone in
        ["GENTLE_FAIR_SLEEPERS", "START_DEBIT", "SIS_PROP", "PICK_BUDDY", "UTIL_EST_FASTUP", "ALT_PERIOD", "BASE_SLICE", "SIS_SHORT"]
    {
        assert!(!show.contains(gone), "kernel show v6.12 lists {gone}:\n{show}");
    }
    assert!(show.contains("DELAY_DEQUEUE"));
    assert!(!ok(&["kernel", "show", "v3.10"]).contains("PLACE_LAG"));
    ok(&["run", "--kernel", "v6.12", "--features", "NO_DELAY_DEQUEUE", "--set", "groups=1,loops=10"]);
}

/// Item 7: a run time of inf, negative, NaN or beyond an hour is refused with the line.
#[test]
fn non_finite_run_times_are_refused() {
    let dir = tmp_dir("inf");
    for (ns, needle) in [("inf", "run ns=inf"), ("-5", "out of range"), ("nan", "unknown name"), ("2*3600s", "at most 1 simulated hour")] {
        let f = write(&dir, "inf.toml", &two_tasks("0", "1", ns, "a"));
        refused(&["run", "--workload", &f], &[":14:", needle]);
    }
}

/// Item 9: messages point at the right place.
#[test]
fn error_messages_point_at_the_right_place() {
    let dir = tmp_dir("places");
    refused(&["run", "--duration", "-1s"], &["must be positive"]);
    refused(&["run", "--duration", "1S"], &["unknown unit \"S\""]);
    refused(&["run", "--duration", "2h"], &["one simulated hour"]);
    ok(&["run", "--set", "groups=1,loops=10", "--duration", "1h"]);
    refused(&["run", "--set", "pin=3-1"], &["reversed", "3-1"]);
    // A duplicate idle-state name is reported at its own line.
    let mut toml = ok(&["machine", "show", "x86-12", "--toml"]);
    let first = toml.find("[[idle_states]]").unwrap();
    let block_end = toml[first + 1..].find("[[idle_states]]").map_or(toml.len(), |k| first + 1 + k);
    let block = toml[first..block_end].to_string();
    toml.push('\n');
    toml.push_str(&block);
    let dup_line = toml[..toml.rfind("[[idle_states]]").unwrap()].lines().count()
        + block.lines().position(|l| l.trim_start().starts_with("name")).unwrap()
        + 1;
    let m = write(&dir, "dup.toml", &toml);
    refused(&["machine", "show", &m], &["appears twice", &format!("(line {dup_line})")]);
    // A value cut off at the end of the file.
    let cut = ok(&["machine", "show", "x86-12", "--toml"]);
    let at = cut.find("cores_per_llc = ").unwrap() + "cores_per_llc = ".len();
    let m = write(&dir, "cut.toml", &cut[..at]);
    refused(&["machine", "show", &m], &["missing or cut off"]);
    // Task names with newlines cannot split lines of the ftrace text or the switch log.
    let f = write(&dir, "nl.toml", &two_tasks("0", "1", "1us", "cli\\nent ==> x"));
    let (ft, sl) = (dir.join("t.txt"), dir.join("s.txt"));
    let out = schedlab(&["run", "--workload", &f, "--ftrace", ft.to_str().unwrap(), "--switch-log", sl.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ftrace = std::fs::read_to_string(&ft).unwrap();
    assert!(ftrace.contains("cli\\nent ==> x"), "escaped comm in:\n{ftrace}");
    assert!(ftrace.lines().all(|l| l.starts_with('#') || l.contains(": sched_")), "an event line was split:\n{ftrace}");
    let log = std::fs::read_to_string(&sl).unwrap();
    assert!(log.contains("cli\\nent ==> x-1000"), "{log}");
    assert!(log.lines().all(|l| l.starts_with('#') || l.split('\t').count() == 6), "a switch-log line was split:\n{log}");
}
