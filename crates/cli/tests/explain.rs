//! End-to-end tests of `run --explain`, `compare --explain` and `bisect`
//! (issue 20). Each is small (well under 2 s in release).

use serde_json::Value;
mod common;
use common::{ok, schedlab, text};

const SMALL: &[&str] = &["--machine", "x86-12", "--workload", "hackbench", "--set", "groups=2,loops=20"];

fn json_of(args: &[&str]) -> Value {
    serde_json::from_str(&ok(args)).expect("valid JSON")
}

fn sum(v: &Value) -> u64 {
    v.as_object().map_or(0, |o| o.values().map(|x| x.as_u64().unwrap_or(0)).sum())
}

// Recording changes no decision: the run's JSON is the same with and without
// --explain (but for the explain object), as is the text summary above the tables.
#[test]
fn explain_changes_nothing() {
    for kernel in ["v6.12", "v5.11", "v3.10"] {
        let mut a = vec!["run", "--json", "--kernel", kernel];
        a.extend_from_slice(SMALL);
        let plain = json_of(&a);
        a.push("--explain");
        let mut explained = json_of(&a);
        assert!(explained.as_object_mut().unwrap().remove("explain").is_some());
        assert_eq!(plain, explained, "{kernel}: --explain changed the run");
        let mut t = vec!["run", "--kernel", kernel];
        t.extend_from_slice(SMALL);
        let plain = ok(&t);
        t.push("--explain");
        let explained = ok(&t);
        assert!(explained.starts_with(&plain), "{kernel}: the summary differs with --explain");
        assert!(explained.contains("wakeup paths") && explained.contains("select_idle_sibling efficiency"));
    }
}

// Per-path counts add up to the wakeups; per-outcome balance counts to the
// attempts; the model's schedstat agrees (lb_count, lb_gained, ttwu_move_affine).
#[test]
fn counts_add_up_and_agree_with_schedstat() {
    for kernel in ["v6.12", "v5.13", "v3.10"] {
        // Without the machine's background: its kernel threads' wakeups are in
        // the explain counts and schedstat but not in the workload's wakeups (F-802).
        let mut a = vec!["run", "--json", "--explain", "--machine-model", "NO_NOISE", "--kernel", kernel];
        a.extend_from_slice(SMALL);
        let v = json_of(&a);
        let e = &v["explain"];
        let wakeups = v["wakeups"].as_u64().unwrap();
        assert_eq!(e["wakeups"].as_u64(), Some(wakeups), "{kernel}");
        let paths: u64 = e["paths"].as_object().unwrap().values().map(|p| p["count"].as_u64().unwrap()).sum();
        assert_eq!(paths, wakeups, "{kernel}: per-path counts");
        for p in e["paths"].as_object().unwrap().values() {
            assert_eq!(sum(&p["by_level"]), p["count"].as_u64().unwrap(), "{kernel}: per-level counts of {p}");
        }
        let clauses: u64 = e["wake_affine"].as_object().unwrap().values().map(|p| p["count"].as_u64().unwrap()).sum();
        assert_eq!(clauses, wakeups, "{kernel}: wake_affine clauses");
        let pulls: u64 =
            e["wake_affine"].as_object().unwrap().values().filter(|p| p["pulls"] == true).map(|p| p["count"].as_u64().unwrap()).sum();
        let levels = v["schedstat"]["levels"].as_array().unwrap();
        let affine: u64 = levels.iter().map(|l| l["ttwu_move_affine"].as_u64().unwrap()).sum();
        assert_eq!(pulls, affine, "{kernel}: pulling clauses = schedstat ttwu_move_affine");
        let mut attempts = 0;
        for l in levels {
            let name = l["level"].as_str().unwrap();
            let b = &e["balance"][name];
            let n: u64 = ["busy", "idle", "newidle"].iter().map(|i| sum(&b[*i])).sum();
            assert_eq!(n, l["lb_count"].as_u64().unwrap(), "{kernel} {name}: outcomes = lb_count");
            let gained = l["lb_gained"].as_u64().unwrap() - l["alb_pushed"].as_u64().unwrap();
            assert_eq!(b["tasks_moved"].as_u64().unwrap_or(0), gained, "{kernel} {name}: tasks moved = lb_gained");
            attempts += n;
        }
        assert_eq!(e["balance_attempts"].as_u64(), Some(attempts), "{kernel}");
        let s = &e["sis"];
        assert!(s["sis_search"].as_u64().unwrap() >= s["sis_domain_search"].as_u64().unwrap());
        assert!(s["sis_domain_search"].as_u64().unwrap() >= s["sis_failed"].as_u64().unwrap());
    }
}

// --trace with --explain: the ftrace packets unchanged, the decision tracks appended.
#[test]
fn trace_gets_decision_tracks() {
    let dir = std::env::temp_dir().join(format!("schedlab-explain-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.pftrace"), dir.join("b.pftrace"));
    let mut args = vec!["run"];
    args.extend_from_slice(SMALL);
    let (sa, sb) = (a.to_str().unwrap(), b.to_str().unwrap());
    ok(&[&args[..], &["--trace", sa]].concat());
    ok(&[&args[..], &["--trace", sb, "--explain"]].concat());
    let (ta, tb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert!(tb.len() > ta.len() && tb.starts_with(&ta), "the decision records are appended to the same trace");
    let tail = &tb[ta.len()..];
    for needle in [&b"wakeup decisions"[..], b"load balance", b"wake_affine", b"scan_end", b"cache-hot"] {
        assert!(tail.windows(needle.len()).any(|w| w == needle), "{} missing", String::from_utf8_lossy(needle));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// compare --explain: the first line after the tables names the move.
#[test]
fn compare_explain_leads_with_the_move() {
    let out = ok(&[
        "compare",
        "--machine",
        "x86-12",
        "--workload",
        "hackbench",
        "--set",
        "groups=2,loops=20",
        "--kernel",
        "v5.11",
        "--vs",
        "v6.12",
        "--runs",
        "2",
        "--explain",
    ]);
    let at = out.find("placement decisions:").expect("explain section");
    let first = out[at..].lines().nth(1).unwrap();
    assert!(first.starts_with("v6.12 moves ") && first.contains("% of wakeups from ") && first.contains(" to "), "{first}");
    assert!(out[at..].contains("wakeup paths by change in share"));
}

// bisect names the step, the difference inside it and its share.
#[test]
fn bisect_names_step_and_difference() {
    let out =
        ok(&["bisect", "--kernel", "v5.11", "--vs", "v5.13", "--machine", "skylake-2s", "--workload", "schbench", "--duration", "200ms"]);
    assert!(out.contains("v5.11 -> v5.12") && out.contains("v5.12 -> v5.13"), "{out}");
    let step = out.lines().find(|l| l.starts_with("step ")).expect("a chosen step");
    assert!(step.contains("each applied alone"), "{step}");
    let carries = out.lines().find(|l| l.contains(" carries ")).expect("a named difference");
    assert!(carries.contains("% of the v5.1"), "{carries}");
    assert!(out.contains("decisions (seed 1): "), "{out}");
}

#[test]
fn bisect_refuses_bad_ranges() {
    for (args, needle) in [
        (&["bisect", "--kernel", "v5.13", "--vs", "v5.11"][..], "newer"),
        (&["bisect", "--kernel", "v5.13"][..], "nothing to bisect"),
        (&["bisect", "--kernel", "v5.11", "--vs", "v5.12", "--runs", "1"][..], "at least 2"),
        (&["bisect", "--kernel", "v3.11", "--vs", "v5.12"][..], "deprecated"),
        (&["bisect", "--kernel", "v9.9", "--vs", "v5.12"][..], "unknown kernel"),
    ] {
        let o = schedlab(args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle) && !err.contains("panicked"), "{args:?}: {err}");
    }
}

// bisect across a patch overlay: the step is the patch; its differences are what the patch changes.
#[test]
fn bisect_across_a_patch() {
    let out = ok(&[
        "bisect",
        "--kernel",
        "v3.10",
        "--patch",
        "wakee-flips",
        "--machine",
        "x86-12",
        "--workload",
        "hackbench",
        "--set",
        "groups=2,loops=20",
        "--runs",
        "2",
    ]);
    assert!(out.contains("v3.10 -> v3.10+wakee-flips"), "{out}");
    assert!(out.contains("wake_wide: None -> V3_12"), "{out}");
}

// schedstat report / diff: the modelled /proc/schedstat in perf sched stats' layout.
#[test]
fn schedstat_report_and_diff() {
    let dir = std::env::temp_dir().join(format!("schedlab-schedstat-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.txt"), dir.join("b.txt"));
    let (sa, sb) = (a.to_str().unwrap(), b.to_str().unwrap());
    let v = json_of(&[&["run", "--json", "--kernel", "v5.13", "--schedstat", sa][..], SMALL].concat());
    ok(&[&["run", "--kernel", "v6.12", "--schedstat", sb][..], SMALL].concat());
    let rep = ok(&["schedstat", "report", sa]);
    let ttwu = rep.lines().find(|l| l.starts_with("ttwu_count ")).expect("ttwu_count row");
    assert_eq!(ttwu.split(':').nth(1).unwrap().trim().parse::<u64>().unwrap(), v["schedstat"]["ttwu_count"].as_u64().unwrap());
    assert!(rep.contains("CPU <ALL CPUS SUMMARY>, DOMAIN 0") && rep.contains("<Category newidle>") && rep.contains("*idle_lb_avg_pulled"));
    let diff = ok(&["schedstat", "diff", sa, sb, "--cpus"]);
    assert!(diff.contains("PCT_CHANGE") && diff.contains("\nCPU 11\n"), "{diff}");
    let o = schedlab(&["schedstat", "report", dir.join("missing").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("cannot read"));
    let _ = std::fs::remove_dir_all(&dir);
}
