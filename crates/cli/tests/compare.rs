//! End-to-end tests of `schedlab compare` (small workloads, runs=2: fast in release).

use serde_json::Value;
mod common;
use common::{ok, schedlab, text};

fn usage_error(args: &[&str], needle: &str) {
    let out = schedlab(args);
    let err = text(&out.stderr);
    assert!(!err.contains("panicked"), "schedlab {args:?} panicked:\n{err}");
    assert_eq!(out.status.code(), Some(2), "schedlab {args:?}: {err}");
    assert!(err.contains(needle), "schedlab {args:?}: stderr does not mention {needle:?}:\n{err}");
}

const HACK: &[&str] =
    &["compare", "--workload", "hackbench", "--set", "groups=1,loops=20,fds=2,4", "--kernel", "v3.10", "--vs", "v6.6", "--runs", "2"];

#[test]
fn output_is_independent_of_worker_count() {
    let dir = std::env::temp_dir().join(format!("schedlab-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut outs = Vec::new();
    for jobs in ["1", "2", "3"] {
        let (j, c) = (dir.join(format!("r{jobs}.json")), dir.join(format!("r{jobs}.csv")));
        let mut args = HACK.to_vec();
        args.extend(["--jobs", jobs, "--json", j.to_str().unwrap(), "--csv", c.to_str().unwrap()]);
        let stdout = ok(&args);
        outs.push((stdout, std::fs::read(&j).unwrap(), std::fs::read(&c).unwrap()));
    }
    assert_eq!(outs[0], outs[1], "--jobs 1 and --jobs 2 differ");
    assert_eq!(outs[0], outs[2], "--jobs 1 and --jobs 3 differ");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tables_and_files() {
    let dir = std::env::temp_dir().join(format!("schedlab-compare-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (j, c) = (dir.join("r.json"), dir.join("r.csv"));
    let mut args = vec![
        "compare",
        "--machine",
        "x86-12",
        "--workload",
        "pipe",
        "--set",
        "loops=2000",
        "--kernel",
        "v2.6.38",
        "--vs",
        "v6.6",
        "--runs",
        "2",
    ];
    args.extend(["--json", j.to_str().unwrap(), "--csv", c.to_str().unwrap()]);
    let out = ok(&args);
    // Higher-is-better: harmonic mean; v2.6.38 (no cache-affine prev check) moves the pipe pair at every
    // wakeup where v6.6 keeps it (README), a large significant gain.
    assert!(out.contains("Hmean     default"), "{out}");
    assert!(out.contains("harmonic mean"), "{out}");
    assert!(out.contains("baseline(std%)\tcompare%( std%)"), "{out}");
    assert!(out.contains("affine% A"), "{out}");
    let row = out.lines().find(|l| l.starts_with("Hmean     ")).unwrap();
    assert!(row.trim_end().ends_with("%*"), "expected a significant row: {row}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(v["runs"], 2);
    assert_eq!(v["sides"][1]["kernel"], "v6.6");
    // Records (point * 2 + side) * runs + seed - 1: A seeds 1, 2, then B.
    assert_eq!(v["tables"][0]["recs"].as_array().unwrap().len(), 4);
    assert_eq!(v["tables"][0]["recs"][2]["levels"][0]["level"], "MC");
    assert_eq!(v["tables"][0]["rows"][0]["significant"], true);
    assert!(v["tables"][0]["rows"][0]["change_pct"].as_f64().unwrap() > 5.0);
    let csv = std::fs::read_to_string(&c).unwrap();
    assert_eq!(csv.lines().count(), 5);
    assert!(csv.starts_with("machine,workload,side,kernel,"));
    assert!(csv.lines().nth(1).unwrap().starts_with("x86-12,pipe,A,v2.6.38,"), "{csv}");
    let _ = std::fs::remove_dir_all(&dir);

    // Lower-is-better: arithmetic mean; a sweep gives one row per value, in order.
    let out = ok(HACK);
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("Amean     ")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(rows[0].contains("fds-2") && rows[1].contains("fds-4"));
    assert!(out.contains("arithmetic mean"));
}

#[test]
fn b_defaults_to_a() {
    // Same kernel, one feature bit on B: the header names it and A keeps the profile's own.
    let out = ok(&[
        "compare",
        "--workload",
        "hackbench",
        "--set",
        "groups=1,loops=20",
        "--kernel",
        "v6.12",
        "--features-b",
        "NO_PLACE_LAG",
        "--runs",
        "2",
    ]);
    assert!(out.contains("A: v6.12   B: v6.12 --features NO_PLACE_LAG"), "{out}");
    // Identical sides: no change, nothing significant.
    let out = ok(&["compare", "--workload", "hackbench", "--set", "groups=1,loops=20", "--kernel", "v6.6", "--runs", "2"]);
    let row = out.lines().find(|l| l.starts_with("Amean     ")).unwrap();
    assert!(row.contains("(   0.00%)"), "{row}");
}

#[test]
fn errors_are_clear() {
    let base = ["compare", "--workload", "hackbench", "--set", "groups=1,loops=20"];
    let with = |extra: &[&'static str]| base.iter().copied().chain(extra.iter().copied()).collect::<Vec<_>>();
    usage_error(&with(&["--kernel", "v9.99"]), "v9.99");
    usage_error(&with(&["--vs", "v9.99"]), "v9.99");
    usage_error(&with(&["--runs", "0"]), "--runs");
    usage_error(&with(&["--jobs", "0"]), "--jobs");
    usage_error(&with(&["--features-b", "NO_SUCH_BIT"]), "NO_SUCH_BIT");
    usage_error(&["compare", "--workload", "hackbench", "--set", "groups=1,2,loops=10,20"], "at most one key");
    usage_error(&["compare", "--workload", "hackbench", "--set", "nosuchkey=1,2"], "nosuchkey");
}

#[test]
fn several_machines_and_workloads() {
    // One table per (machine, workload), machine-major; each block is what a
    // single compare of that pair prints, and `WORKLOAD:key` applies to that workload only.
    let args = [
        "compare",
        "--machine",
        "x86-12,laptop-4c8t",
        "--workload",
        "hackbench",
        "--workload",
        "pipe",
        "--set",
        "hackbench:groups=1,hackbench:loops=20,hackbench:fds=2,4,pipe:loops=500",
        "--kernel",
        "v3.10",
        "--vs",
        "v6.6",
        "--runs",
        "2",
    ];
    let dir = std::env::temp_dir().join(format!("schedlab-compare-multi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (j, c) = (dir.join("r.json"), dir.join("r.csv"));
    let mut with_files = args.to_vec();
    with_files.extend(["--json", j.to_str().unwrap(), "--csv", c.to_str().unwrap()]);
    let out = schedlab(&with_files);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "", "progress must stay off when stderr is not a terminal");
    let out = text(&out.stdout);
    let heads: Vec<&str> = out.lines().filter(|l| l.starts_with("schedlab compare: ")).collect();
    assert_eq!(heads.len(), 4, "{out}");
    for (h, (w, m)) in
        heads.iter().zip([("hackbench", "x86-12"), ("pipe", "x86-12"), ("hackbench", "laptop-4c8t"), ("pipe", "laptop-4c8t")])
    {
        assert!(h.starts_with(&format!("schedlab compare: {w} on {m} (")), "{h}");
    }
    let mut expected = Vec::new();
    for m in ["x86-12", "laptop-4c8t"] {
        for (w, set) in [("hackbench", "groups=1,loops=20,fds=2,4"), ("pipe", "loops=500")] {
            expected.push(ok(&[
                "compare",
                "--machine",
                m,
                "--workload",
                w,
                "--set",
                set,
                "--kernel",
                "v3.10",
                "--vs",
                "v6.6",
                "--runs",
                "2",
            ]));
        }
    }
    assert_eq!(out, expected.join("\n"), "a multi-table compare differs from the single compares");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(v["tables"].as_array().unwrap().len(), 4);
    assert_eq!(v["tables"][3]["machine"], "laptop-4c8t");
    assert_eq!(v["tables"][3]["workload"], "pipe");
    // hackbench: 2 points x 2 sides x 2 seeds; pipe: 1 point x 2 sides x 2 seeds; on two machines.
    let tables = v["tables"].as_array().unwrap();
    assert_eq!(tables.iter().map(|t| t["recs"].as_array().unwrap().len()).collect::<Vec<_>>(), [8, 4, 8, 4]);
    assert_eq!(tables.iter().map(|t| t["rows"].as_array().unwrap().len()).sum::<usize>(), 2 * (2 + 1));
    assert!(tables[0]["recs"][0]["counters"]["llc_misses"].is_u64());
    assert_eq!(std::fs::read_to_string(&c).unwrap().lines().count(), 1 + 2 * (8 + 4));
    let _ = std::fs::remove_dir_all(&dir);

    usage_error(&["compare", "--workload", "hackbench,pipe", "--set", "tbench:clients=4"], "not among --workload");
    usage_error(&["compare", "--workload", "hackbench,hackbench"], "twice");
    usage_error(&["compare", "--machine", "x86-12,nosuchbox", "--workload", "pipe"], "nosuchbox");
    // An unscoped key must suit every workload.
    usage_error(&["compare", "--workload", "hackbench,pipe", "--set", "groups=1"], "groups");
}

#[test]
fn progress_on_a_terminal_only() {
    // `script` (util-linux, Debian's essential bsdutils) gives the command a terminal.
    let bin = env!("CARGO_BIN_EXE_schedlab");
    let cmd = format!("{bin} compare --workload pipe --set loops=500 --runs 2 --jobs 1");
    let out =
        std::process::Command::new("script").args(["-qec", &cmd, "/dev/null"]).output().expect("cannot run script(1) (package bsdutils)");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tty = text(&out.stdout);
    assert!(tty.contains("schedlab: runs 4/4, elapsed ") && tty.contains(", ETA "), "no progress line on a terminal:\n{tty:?}");
    assert!(tty.contains("Hmean     default"), "{tty:?}");
    // Not a terminal: no progress, and stdout is the same table.
    let plain = schedlab(&["compare", "--workload", "pipe", "--set", "loops=500", "--runs", "2", "--jobs", "1"]);
    assert_eq!(text(&plain.stderr), "");
    let table = text(&plain.stdout);
    assert!(tty.replace("\r\n", "\n").contains(&table), "the terminal run printed different tables");
}

// The --json document is the library's `compare::Report` as it serialises:
// it reads back into that type, and it is the report the library computes for
// the same comparison, byte for byte (one serialisation, no second shape).
#[test]
fn json_is_the_library_report() {
    use schedlab_lab::compare::{execute, plan, Progress, Report};
    let dir = std::env::temp_dir().join(format!("schedlab-compare-lib-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let j = dir.join("r.json");
    let mut args = HACK.to_vec();
    args.extend(["--machine", "x86-12,laptop-4c8t", "--json", j.to_str().unwrap()]);
    ok(&args);
    let text = std::fs::read_to_string(&j).unwrap();
    let cli: Report = serde_json::from_str(&text).unwrap_or_else(|e| panic!("--json is not a compare::Report: {e}"));
    let spec = schedlab_lab::CompareSpec {
        machines: vec!["x86-12,laptop-4c8t".into()],
        workloads: vec!["hackbench".into()],
        set: vec!["groups=1,loops=20,fds=2,4".into()],
        kernel: "v3.10".into(),
        vs: Some("v6.6".into()),
        runs: 2,
        ..Default::default()
    };
    let p = plan(&spec).unwrap();
    let lib = execute(&p, &mut Progress::quiet(p.nr_runs()), &mut |w| panic!("unexpected warning {w}"), None).unwrap();
    assert_eq!(cli, lib, "the CLI's --json differs from the library's report");
    assert_eq!(text, serde_json::to_string_pretty(&lib.to_json()).unwrap() + "\n");
    // Every record carries the engine's per-level counters (LevelStats), load balancing included.
    let rec = &cli.tables[0].recs[0];
    assert!(rec.levels.iter().any(|l| l.lb_count > 0), "{:?}", rec.levels);
    assert_eq!(rec.ttwu_move_affine, rec.levels.iter().map(|l| l.ttwu_move_affine).sum::<u64>());
    let _ = std::fs::remove_dir_all(&dir);
}
