//! End-to-end tests of the HTML report (`compare --html`, `reproduce --html`):
//! well-formed, deterministic, and rendered by headless Chromium without a
//! console message. Needs the Debian package `chromium` (.ci/run installs it);
//! without it the browser test fails and says so, unless SCHEDLAB_SKIP_BROWSER=1
//! is set, which skips only the browser rendering (and says so on stderr).

use std::path::{Path, PathBuf};
use std::process::Command;
mod common;
use common::{ok, schedlab, text};

#[path = "../src/wellformed.rs"]
mod wellformed;

fn tmpdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("schedlab-html-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const COMPARE: &[&str] = &[
    "compare",
    "--machine",
    "x86-12,laptop-4c8t",
    "--workload",
    "hackbench,pipe",
    "--set",
    "hackbench:groups=1,hackbench:loops=20,hackbench:fds=2,4,pipe:loops=500",
    "--kernel",
    "v3.10",
    "--vs",
    "v6.6",
    "--features-b",
    "NO_WA_WEIGHT",
    "--runs",
    "2",
];

/// The report for COMPARE written with `--jobs JOBS` into `dir`; its bytes.
fn report(dir: &Path, jobs: &str, name: &str) -> String {
    let f = dir.join(name);
    let mut args = COMPARE.to_vec();
    args.extend(["--jobs", jobs, "--html", f.to_str().unwrap()]);
    ok(&args);
    std::fs::read_to_string(&f).unwrap()
}

#[test]
fn report_is_well_formed_complete_and_deterministic() {
    let dir = tmpdir("det");
    let h1 = report(&dir, "1", "a.html");
    let h2 = report(&dir, "2", "b.html");
    let h3 = report(&dir, "2", "c.html");
    assert!(h1 == h2 && h2 == h3, "the HTML report depends on --jobs or on the run");
    wellformed::check_well_formed(&h1).unwrap_or_else(|e| panic!("report is not well-formed: {e}"));
    // Self-contained: no scripts, no external resources.
    for bad in ["<script", "src=", "href=\"http", "@import", "url("] {
        assert!(!h1.contains(bad), "report contains {bad:?}");
    }
    // 4 tables (2 machines x 2 workloads), each with 3 plots and 6 tables.
    assert_eq!(h1.matches("<article ").count(), 4);
    assert_eq!(h1.matches("<svg ").count(), 12);
    assert_eq!(h1.matches("<table>").count(), 24);
    for h in ["hackbench on x86-12 (12 CPUs)", "pipe on laptop-4c8t (8 CPUs)"] {
        assert!(h1.contains(h), "missing heading {h}");
    }
    for s in ["mmtests compare-kernels", "baseline(std%)", "schedstat wakeups", "Run delay percentiles", "Machine counters", "llc_misses"] {
        assert!(h1.contains(s), "missing {s}");
    }
    // A polyline per side in the hackbench plots (two points), and B's feature bit in the header, escaped.
    assert!(h1.contains("stroke-dasharray=\"6 3\"/>"));
    assert!(h1.contains("v6.6 --features NO_WA_WEIGHT"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reproduce_writes_one_report_for_the_study() {
    let dir = tmpdir("repro");
    let f = dir.join("tiny.toml");
    std::fs::write(
        &f,
        r#"name = "tiny"
description = "a <tiny> study & its HTML"
[[comparison]]
machine = ["x86-12", "laptop-4c8t"]
workload = "pipe"
set = "loops=500"
kernel = "v3.10"
vs = "v6.6"
runs = 2
published = "pipe: <1%> change expected"
[[comparison]]
workload = "hackbench"
set = "groups=1,loops=20,fds=2,4"
runs = 2
"#,
    )
    .unwrap();
    let h = dir.join("r.html");
    let out = ok(&["reproduce", f.to_str().unwrap(), "--html", h.to_str().unwrap()]);
    assert_eq!(out.matches("schedlab compare: ").count(), 3, "{out}");
    let html = std::fs::read_to_string(&h).unwrap();
    wellformed::check_well_formed(&html).unwrap_or_else(|e| panic!("report is not well-formed: {e}"));
    assert!(html.contains("<title>schedlab reproduce tiny</title>"));
    assert!(html.contains("a &lt;tiny&gt; study &amp; its HTML"));
    assert!(html.contains("<pre>pipe: &lt;1%&gt; change expected</pre>"));
    assert!(html.contains("comparison 2/2"));
    assert_eq!(html.matches("<article ").count(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Renders `file` in headless Chromium; returns (DOM, console lines).
fn chromium(file: &Path) -> Option<(String, Vec<String>)> {
    if std::env::var_os("SCHEDLAB_SKIP_BROWSER").is_some_and(|v| v == "1") {
        eprintln!("SKIPPED: headless Chromium rendering (SCHEDLAB_SKIP_BROWSER=1)");
        return None;
    }
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=2000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", file.canonicalize().unwrap().display()))
        .env("HOME", file.parent().unwrap())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `chromium` ({e}): the HTML report test renders it in headless Chromium; \
                 install the Debian package: apt-get install -y --no-install-recommends chromium \
                 (.ci/run does), or set SCHEDLAB_SKIP_BROWSER=1 to skip only this rendering check"
            )
        });
    assert!(out.status.success(), "chromium failed: {:?}\n{}", out.status, text(&out.stderr));
    let console = text(&out.stderr).lines().filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught")).map(str::to_string).collect();
    Some((text(&out.stdout), console))
}

#[test]
fn renders_in_headless_chromium_without_console_errors() {
    let dir = tmpdir("chromium");
    // The detector works: a page with a console error and an uncaught exception is caught.
    let bad = dir.join("bad.html");
    std::fs::write(&bad, "<!DOCTYPE html><html><body><p>x</p><script>console.error('boom'); nosuchfn();</script></body></html>").unwrap();
    let Some((_, console)) = chromium(&bad) else { return };
    assert!(console.iter().any(|l| l.contains("boom")), "console.error not seen: {console:?}");
    assert!(console.iter().any(|l| l.contains("Uncaught ReferenceError")), "uncaught exception not seen: {console:?}");

    let html = report(&dir, "2", "r.html");
    let (dom, console) = chromium(&dir.join("r.html")).unwrap();
    assert!(console.is_empty(), "console messages while rendering the report:\n{}", console.join("\n"));
    // The browser built the document we wrote: every plot and table, and the SVG content.
    assert_eq!(dom.matches("<svg ").count(), html.matches("<svg ").count(), "{dom}");
    assert_eq!(dom.matches("<table>").count(), 24);
    assert!(dom.matches("<polyline ").count() >= 12, "plots without lines");
    assert!(dom.contains("<h3>hackbench on x86-12 (12 CPUs)</h3>"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn errors_name_the_file() {
    let out = schedlab(&["compare", "--workload", "pipe", "--set", "loops=500", "--runs", "1", "--html", "/nonexistent-dir/r.html"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot write --html file /nonexistent-dir/r.html"), "{}", text(&out.stderr));
}
