//! End-to-end tests of `schedlab validate` (the fidelity scorecard). They fail when
//! the scorecard cannot run or its output loses its structure, never because a
//! claim disagrees (disagreement is information, not a red build).

mod common;
use common::{schedlab, text};

const VERDICTS: [&str; 4] = ["agree", "disagree", "not modelled", "not runnable"];

#[test]
fn quick_scorecard_runs_with_rows_controls_and_total() {
    let out = schedlab(&["validate", "--quick"]);
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "validate --quick failed ({:?}):\n{se}\n{so}", out.status);
    let lines: Vec<&str> = so.lines().collect();
    let head =
        lines.iter().position(|l| l.starts_with("case ") && l.contains("published") && l.ends_with("verdict")).expect("claim table header");
    let rows: Vec<&str> = lines[head + 1..].iter().take_while(|l| !l.is_empty()).copied().collect();
    assert!(rows.len() >= 5, "too few claim rows:\n{so}");
    for r in &rows {
        assert!(VERDICTS.iter().any(|v| r.contains(v)), "row without a verdict: {r}");
    }
    assert!(rows.iter().any(|r| r.starts_with("seed002-tbench")), "the seed 002 case is part of --quick:\n{so}");
    // Controls: listed, every one disagrees, and the summary says so.
    let ch = lines.iter().position(|l| l.starts_with("negative controls")).expect("controls section");
    let controls: Vec<&str> = lines[ch + 2..].iter().take_while(|l| !l.starts_with("controls:")).copied().collect();
    assert!(controls.len() >= 4, "expected controls for the A/B claims:\n{so}");
    assert!(controls.iter().all(|c| c.ends_with("disagree")), "a control agrees:\n{so}");
    assert!(so.contains("(as they must)"), "{so}");
    // The total line is the last line, in the documented form.
    let last = lines.last().unwrap();
    let words: Vec<&str> = last.split_whitespace().collect();
    assert!(
        words.len() > 6
            && words[0].parse::<usize>().is_ok()
            && words[1] == "of"
            && words[2].parse::<usize>().is_ok()
            && words[3..5] == ["claims", "agree"],
        "total line: {last}"
    );
    assert!(last.contains("calibration,") && last.contains("validation)") && last.contains("not runnable (not in n)"), "{last}");
}

#[test]
fn deterministic_for_a_seed() {
    let args = ["validate", "--case", "seed002-tbench", "--runs", "3", "--seed", "7"];
    let (a, b) = (schedlab(&args), schedlab(&args));
    assert!(a.status.success(), "{}", text(&a.stderr));
    assert_eq!(text(&a.stdout), text(&b.stdout), "same seed, different output");
    assert!(text(&a.stdout).contains("seeds 7.."), "{}", text(&a.stdout));
}

#[test]
fn json_and_case_selection() {
    let html = std::env::temp_dir().join(format!("schedlab-validate-{}.html", std::process::id()));
    let out = schedlab(&["validate", "--case", "seed002-switch-pattern", "--json", "--runs", "1", "--html", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = std::fs::read_to_string(&html).expect("--html writes the page");
    std::fs::remove_file(&html).ok();
    assert!(page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"), "{page}");
    assert!(
        page.matches("<svg").count() == 2 && page.contains(">published</text>") && page.contains(">schedlab</text>"),
        "one plot per claim, published against schedlab:\n{page}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["cases"].as_array().unwrap().len(), 1);
    let claims = v["cases"][0]["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 2);
    for c in claims {
        assert!(VERDICTS.contains(&c["verdict"].as_str().unwrap()), "{c}");
    }
    assert_eq!(v["totals"]["controls_agreeing"], 0);
    assert!(v["total_line"].as_str().unwrap().contains("claims agree"));
}

#[test]
fn bad_input_is_refused_with_the_fix() {
    let out = schedlab(&["validate", "--case", "no-such-case"]);
    assert_eq!(out.status.code(), Some(2));
    let e = text(&out.stderr);
    assert!(e.contains("no-such-case") && e.contains("seed002-tbench") && !e.contains("panicked"), "{e}");
    let dir = std::env::temp_dir().join(format!("schedlab-validate-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("bad.toml"),
        "[source]\ntitle = \"t\"\nauthor = \"a\"\ndate = \"d\"\nchecked = \"c\"\n\n[[case]]\nname = \"x\"\nlable = \"validation\"\n",
    )
    .unwrap();
    let out = schedlab(&["validate", "--dir", dir.to_str().unwrap()]);
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("bad.toml:9") && e.contains("lable"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_control_that_agrees_fails_loudly() {
    // A case whose published sign is the opposite of the model's: the claim
    // disagrees and its swapped control agrees, which must fail the run.
    let dir = std::env::temp_dir().join(format!("schedlab-validate-ctl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let case = r#"
[source]
title = "reversed"
author = "test"
date = "2026-01-01"
checked = "made up: the published sign is the opposite of the model's"

[[case]]
name = "reversed"
label = "validation"
machine = "x86-12"
workload = "tbench"
set = "clients=2,threads=1,cgroups=2,pin=0"
runs = 3
duration = "200ms"
unit = "MB/s"

[[case.side]]
name = "before"
kernel = "v2.6.38"

[[case.side]]
name = "after"
kernel = "v2.6.38"
patches = ["next-buddy-hint"]

[case.published]
before = [112.0]
after = [105.0]

[[case.claim]]
kind = "sign"
a = "before"
b = "after"
what = "reversed sign"
"#;
    std::fs::write(dir.join("reversed.toml"), case).unwrap();
    let out = schedlab(&["validate", "--dir", dir.to_str().unwrap()]);
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.status.code(), Some(2), "a control agreed but validate exited {:?}\n{so}\n{se}", out.status);
    assert!(se.contains("negative control") && se.contains("AGREE") && so.contains("AGREES (control failed)"), "{so}\n{se}");
}
