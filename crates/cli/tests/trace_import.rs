//! `schedlab import` / `profile` on traces recorded on the project's 2-vCPU
//! VM (crates/cli/tests/data): `schedlab record` (ftrace text) and
//! `perf sched record` + `perf script` of `perf bench sched pipe` and
//! `hackbench -g 1 -l 5`. local-2cpu.toml is that VM as `schedlab machine
//! show local --toml` printed it, so the tests do not depend on the host.

use std::path::PathBuf;
use std::process::Command;

fn data(f: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(f).to_string_lossy().into_owned()
}

fn schedlab(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).output().unwrap();
    (o.status.success(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn tmp(name: &str) -> String {
    let d = std::env::temp_dir().join(format!("schedlab-trace-import-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name).to_string_lossy().into_owned()
}

fn import(trace: &str, extra: &[&str]) -> (schedlab_workload::Workload, String) {
    // One output file per call: tests run in parallel and may import the same trace.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let base = std::path::Path::new(trace).file_name().unwrap().to_string_lossy().replace('.', "_");
    let out = tmp(&format!("{base}-{n}.toml"));
    let mut args = vec!["import", trace, "-o", &out];
    args.extend_from_slice(extra);
    let (ok, _, err) = schedlab(&args);
    assert!(ok, "import {trace}: {err}");
    let text = std::fs::read_to_string(&out).unwrap();
    (schedlab_workload::file::from_toml_str(&text, &out).unwrap(), out)
}

fn profile_json(args: &[&str]) -> serde_json::Value {
    let mut a = vec!["profile", "--json"];
    a.extend_from_slice(args);
    let (ok, out, err) = schedlab(&a);
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn ops(w: &schedlab_workload::Workload, t: usize) -> &[schedlab_workload::Op] {
    &w.programs[w.tasks[t].program as usize]
}

#[test]
fn pipe_structure_from_ftrace_and_perf_script() {
    use schedlab_workload::Op;
    for (trace, extra) in [(data("pipe-500.ftrace"), vec![]), (data("pipe-300.perf"), vec!["--pid", "13124"])] {
        let (w, _) = import(&trace, &extra);
        // perf bench sched pipe: a parent process forks one child process; they wake each other.
        assert_eq!(w.tasks.len(), 2, "{trace}");
        assert!(w.tasks[0].start && !w.tasks[1].start, "{trace}");
        assert_ne!(w.tasks[0].mm, w.tasks[1].mm, "{trace}: two processes");
        assert!(ops(&w, 0).iter().any(|o| matches!(o, Op::Fork { spec: 1, .. })), "{trace}");
        // One semaphore per task, each posted by the other: who wakes whom.
        assert_eq!(w.sems.len(), 2, "{trace}");
        for t in 0..2 {
            let waits: Vec<u32> = ops(&w, t).iter().filter_map(|o| if let Op::SemWait { sem } = o { Some(*sem) } else { None }).collect();
            let posts: Vec<u32> =
                ops(&w, t).iter().filter_map(|o| if let Op::SemPost { sem, .. } = o { Some(*sem) } else { None }).collect();
            assert!(!waits.is_empty() && !posts.is_empty(), "{trace} task {t}");
            assert!(waits.iter().all(|s| !posts.contains(s)), "{trace}: task {t} waits on its own semaphore and posts the other's");
        }
        // Pipe writes are sync: the waker blocks or is preempted by the wakee right away.
        assert!(w.sems.iter().all(|s| s.sync), "{trace}: {:?}", w.sems);
        assert!(ops(&w, 0).iter().any(|o| matches!(o, Op::Loop { .. })), "{trace}: loops folded");
        let mut args = vec![trace.as_str(), "--ops", if trace.ends_with("perf") { "300" } else { "500" }];
        args.extend_from_slice(&extra);
        let p = profile_json(&args);
        let edges = p["waker_wakee"].as_array().unwrap();
        let pp = edges.iter().find(|e| e["waker"] == "sched-pipe" && e["wakee"] == "sched-pipe").unwrap();
        assert!(pp["sync"].as_u64().unwrap() * 10 > pp["wakeups"].as_u64().unwrap() * 9, "{trace}: {pp}");
        // About one blocking wakeup per round trip (the other side is often still running).
        let wk = p["total"]["per_op"]["wakeups"].as_f64().unwrap();
        assert!((0.8..1.6).contains(&wk), "{trace}: wakeups/op {wk}");
    }
}

#[test]
fn hackbench_structure_from_ftrace_and_perf_script() {
    use schedlab_workload::Op;
    for (trace, extra) in [(data("hackbench-g1-l5.ftrace"), vec![]), (data("hackbench-g1-l5.perf"), vec!["--pid", "13183"])] {
        let (w, _) = import(&trace, &extra);
        // hackbench -g 1: the main process forks 20 receivers and 20 senders (processes).
        assert_eq!(w.tasks.len(), 41, "{trace}");
        assert_eq!(w.tasks.iter().filter(|t| t.start).count(), 1, "{trace}");
        assert_eq!(ops(&w, 0).iter().filter(|o| matches!(o, Op::Fork { .. })).count(), 40, "{trace}");
        assert_eq!(w.tasks.iter().map(|t| t.mm).collect::<std::collections::BTreeSet<_>>().len(), 41, "{trace}");
        assert!(w.tasks.iter().all(|t| t.name == "hackbench"));
        let mut args = vec![trace.as_str()];
        args.extend_from_slice(&extra);
        let p = profile_json(&args);
        let r = &p["roles"][0];
        assert_eq!(r["role"], "hackbench");
        assert_eq!(r["tasks"], 41);
        // Senders fill the socket and block; receivers block on empty sockets: many blocking wakeups, few inferred sync.
        let (wk, sync) = (r["wakeups"].as_u64().unwrap(), r["wakeups_sync"].as_u64().unwrap());
        assert!(wk >= 80, "{trace}: {wk} wakeups");
        assert!(sync * 4 < wk, "{trace}: {sync} of {wk} sync");
        assert!(p["spin_before_block_ns"].is_null());
    }
}

/// Issue 16: an imported workload runs on every preset and every kernel.
#[test]
fn an_imported_hackbench_runs_on_every_preset_and_kernel() {
    let (_, file) = import(&data("hackbench-g1-l5.ftrace"), &[]);
    for m in schedlab_machine::presets() {
        for k in schedlab_kernel::profile::profiles() {
            let (ok, out, err) = schedlab(&["run", "--workload", &file, "--machine", m.name, "--kernel", k.name, "--json"]);
            assert!(ok && !err.contains("blocked forever"), "{} {}: {err}", m.name, k.name);
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(v["tasks"]["exited"], v["tasks"]["created"], "{} {}: every task exits", m.name, k.name);
        }
    }
}

#[test]
fn imported_workloads_run_on_presets_and_kernels() {
    for trace in ["pipe-500.ftrace", "hackbench-g1-l5.ftrace", "pipe-50.tracecmd"] {
        let (_, file) = import(&data(trace), &[]);
        for (machine, kernel) in [
            ("x86-12", "v6.12"),
            ("zen3-2s-nps1", "v3.10"),
            ("laptop-4c8t", "v6.6"),
            (&data("local-2cpu.toml"), "v5.13"),
            ("skylake-2s", "v2.6.38"),
        ] {
            let (ok, out, err) = schedlab(&["run", "--workload", &file, "--machine", machine, "--kernel", kernel, "--json"]);
            assert!(ok, "{trace} on {machine} {kernel}: {err}");
            assert!(!err.contains("blocked forever"), "{trace} on {machine} {kernel}: {err}");
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert!(v["context_switches"]["voluntary"].as_u64().unwrap() > 0, "{out}");
        }
    }
}

#[test]
fn bad_traces_get_errors_naming_the_line() {
    let text = std::fs::read_to_string(data("pipe-500.ftrace")).unwrap();
    // Truncated mid-line.
    let cut = &text[..text.len() / 2];
    let f = tmp("cut.trace");
    std::fs::write(&f, cut).unwrap();
    let (ok, _, err) = schedlab(&["import", &f]);
    let nlines = cut.lines().count();
    assert!(!ok);
    assert!(err.contains(&format!("line {nlines}:")) && err.contains("truncated"), "{err}");
    // A garbage line.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(40, "this is not an event");
    std::fs::write(&f, lines.join("\n")).unwrap();
    let (ok, _, err) = schedlab(&["import", &f]);
    assert!(!ok && err.contains("line 41:") && err.contains("no [CPU] column"), "{err}");
    // Lost events: refused unless --allow-lost.
    std::fs::write(&f, text.replace("lost_events=0", "lost_events=17")).unwrap();
    let (ok, _, err) = schedlab(&["import", &f]);
    assert!(!ok && err.contains("lost 17 events"), "{err}");
    let (ok, _, err) = schedlab(&["import", &f, "--allow-lost", "-o", &tmp("lost.toml")]);
    assert!(ok, "{err}");
}

#[test]
fn profile_of_a_simulated_run_and_of_its_own_ftrace_agree() {
    // `profile --run` and `run --ftrace` + `profile FILE` read the same events.
    let ft = tmp("sim.ftrace");
    let (ok, _, err) = schedlab(&["run", "--workload", "pipe", "--set", "loops=200", "--machine", "x86-12", "--ftrace", &ft]);
    assert!(ok, "{err}");
    let a = profile_json(&[&ft, "--ops", "200"]);
    let b = profile_json(&["--run", "--workload", "pipe", "--set", "loops=200", "--machine", "x86-12", "--ops", "200"]);
    assert_eq!(a["total"], b["total"]);
    // The built-in pipe: two switches and two wakeups per round trip.
    let sw = a["total"]["per_op"]["switches"].as_f64().unwrap();
    assert!((1.9..2.2).contains(&sw), "{sw}");
}

/// Issue 16's acceptance: the imported `perf bench sched pipe` on this
/// machine reproduces switches/op and migrations/op within 15%.
/// pipe-quiet-400.ftrace: `schedlab record -- perf bench sched pipe -l 400` on
/// the quiet 2-vCPU VM, the run in which the kernel kept the two tasks on the
/// two CPUs (each blocks once per round trip: 2.01 switches/op). Replayed on
/// local-2cpu.toml (whose halted idle vCPUs need an IPI, as `local` now says)
/// it gives 1.99. Migrations are start-up placements only (0.002/op real): a
/// figure that small is checked to 0.005/op absolute. Runs in which the
/// kernel put both tasks on one CPU (the wakee preempting the waker: 0.9
/// involuntary switches/op) are not reproduced: a pipe write to a running
/// reader leaves no sched event, so the import cannot see that the preempted
/// writer would have blocked on its read (F-702).
#[test]
fn pipe_replay_reproduces_switches_and_migrations() {
    let v = profile_json(&[&data("pipe-quiet-400.ftrace"), "--vs", "--ops", "400", "--machine", &data("local-2cpu.toml")]);
    for (k, abs) in [("switches", 0.0), ("migrations", 0.005)] {
        let (r, s) = (v["real"]["total"]["per_op"][k].as_f64().unwrap(), v["sim"]["total"]["per_op"][k].as_f64().unwrap());
        assert!((s - r).abs() <= (0.15 * r).max(abs), "{k}/op: real {r} sim {s}");
    }
    let r = v["real"]["total"]["per_op"]["switches"].as_f64().unwrap();
    assert!((1.9..2.1).contains(&r), "the recording is the two-CPU run: {r} switches/op");
}

/// `trace-cmd report` text of a real recording (`trace-cmd extract -B` of a
/// tracefs instance: `trace-cmd record` cannot switch ftrace on in this VM),
/// with the sched plugin's `A:PID [PRIO] S ==> B:PID [PRIO]` and
/// `COMM:PID [PRIO] CPU:NNN` forms and the instance's `NAME:` line prefix.
#[test]
fn trace_cmd_report_of_a_real_recording_imports() {
    let (w, _) = import(&data("pipe-50.tracecmd"), &[]);
    let pipes: Vec<_> = w.tasks.iter().filter(|t| t.name == "sched-pipe").collect();
    assert_eq!(pipes.len(), 2, "parent and child of perf bench sched pipe: {:?}", w.tasks.iter().map(|t| &t.name).collect::<Vec<_>>());
    assert_ne!(pipes[0].mm, pipes[1].mm, "two processes");
    let v = profile_json(&[&data("pipe-50.tracecmd"), "--ops", "50"]);
    let role = &v["roles"].as_array().unwrap().iter().find(|r| r["role"] == "sched-pipe").unwrap()["per_op"];
    let (sw, wk) = (role["switches"].as_f64().unwrap(), role["wakeups"].as_f64().unwrap());
    assert!((1.8..2.3).contains(&sw) && (1.8..2.3).contains(&wk), "two switches and wakeups per round trip: {sw} {wk}");
}
