//! End-to-end tests of the `schedlab` command: the binary is run as a user
//! would run it, and only its exit code, stdout and stderr are looked at.
//! Each test is small (well under 2 s in release).

use serde_json::Value;
use std::path::PathBuf;
mod common;
use common::{ok, schedlab, text};

const PRESETS: &[&str] =
    &["x86-12", "skylake-2s", "zen3-2s-nps1", "zen3-2s-nps2", "zen3-2s-nps4", "spr-112", "numa-2n-96", "laptop-4c8t", "ivb-2s-40", "local"];

/// Runs a command that must be refused as a usage error: exit code 2, a
/// message on stderr containing every one of `needles`, and no panic.
fn usage_error(args: &[&str], needles: &[&str]) -> String {
    let out = schedlab(args);
    let err = text(&out.stderr);
    assert!(!err.contains("panicked"), "schedlab {args:?} panicked:\n{err}");
    assert_eq!(out.status.code(), Some(2), "schedlab {args:?}: expected exit code 2, got {:?}\nstderr:\n{err}", out.status);
    for n in needles {
        assert!(err.contains(n), "schedlab {args:?}: stderr does not mention {n:?}:\n{err}");
    }
    err
}

fn run_json(extra: &[&str]) -> (Vec<u8>, Value) {
    let mut args = vec!["run", "--json"];
    args.extend_from_slice(extra);
    let out = schedlab(&args);
    assert!(out.status.success(), "schedlab {args:?} failed:\n{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("schedlab {args:?} printed invalid JSON ({e}):\n{}", text(&out.stdout)));
    (out.stdout, v)
}

const HACKBENCH_SMALL: &[&str] = &["--machine", "x86-12", "--workload", "hackbench", "--set", "groups=2,loops=20"];

/// (level name, span weight) of cpu0's sched domains, bottom-up, as printed
/// by `machine show`.
fn domain_weights(show: &str) -> Vec<(String, u64)> {
    show.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("domain"))
        .map(|l| {
            let toks: Vec<&str> = l.split_whitespace().collect();
            let w = toks
                .iter()
                .position(|t| *t == "weight")
                .and_then(|i| toks.get(i + 1))
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("no weight on domain line {l:?}"));
            (toks[1].to_string(), w)
        })
        .collect()
}

/// The structure of a JSON value: object keys and array element shapes, with
/// every leaf replaced by its type.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(shape).collect()),
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
    }
}

fn tmp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-cli-test-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

// ---------------------------------------------------------------- listings

#[test]
fn machines_lists_all_presets() {
    let out = ok(&["machines"]);
    let names: Vec<&str> = out.lines().filter_map(|l| l.split_whitespace().next()).collect();
    for p in PRESETS {
        assert!(names.contains(p), "`schedlab machines` lacks {p}:\n{out}");
    }
}

#[test]
fn machine_show_zen3_nps4_has_smt_mc_and_numa_levels() {
    let out = ok(&["machine", "show", "zen3-2s-nps4"]);
    let d = domain_weights(&out);
    assert_eq!(d.first(), Some(&("SMT".to_string(), 2)), "{out}");
    assert!(d.contains(&("MC".to_string(), 16)), "{out}");
    let numa: Vec<u64> = d.iter().filter(|(n, _)| n == "NUMA").map(|(_, w)| *w).collect();
    assert!(!numa.is_empty(), "no NUMA level:\n{out}");
    assert_eq!(numa.last(), Some(&256), "top NUMA level must span all CPUs:\n{out}");
    let weights: Vec<u64> = d.iter().map(|(_, w)| *w).collect();
    assert!(weights.windows(2).all(|w| w[0] < w[1]), "span weights must grow bottom-up: {weights:?}");
}

#[test]
fn machine_show_spr112_has_one_112_cpu_llc() {
    let out = ok(&["machine", "show", "spr-112"]);
    let d = domain_weights(&out);
    assert!(d.contains(&("MC".to_string(), 112)), "{out}");
    assert!(out.contains("sd_llc_size 112"), "{out}");
}

#[test]
fn machine_show_local() {
    if !std::path::Path::new("/sys/devices/system/cpu").exists() {
        eprintln!("skipped: no /sys/devices/system/cpu here");
        return;
    }
    let out = ok(&["machine", "show", "local"]);
    assert!(out.starts_with("local"), "{out}");
    assert!(out.contains("CPUs"), "{out}");
}

#[test]
fn kernels_lists_profiles() {
    let out = ok(&["kernels"]);
    let names: Vec<&str> = out.lines().filter_map(|l| l.split_whitespace().next()).collect();
    for k in ["v3.10", "v6.6", "v6.12"] {
        assert!(names.contains(&k), "`schedlab kernels` lacks {k}:\n{out}");
    }
}

#[test]
fn kernel_show_v6_6_lists_eevdf_features() {
    let out = ok(&["kernel", "show", "v6.6"]);
    let feats: Vec<&str> = out.lines().map(str::trim).collect();
    // v6.6 is the first EEVDF release: both bits are set there.
    assert!(feats.contains(&"PLACE_LAG"), "{out}");
    assert!(feats.contains(&"RUN_TO_PARITY"), "{out}");
}

/// The wait-queue rules outside the scheduler that a profile carries: pipe
/// waits exclusive from v5.5, epoll's sync wakeups from v6.13.
#[test]
fn kernel_show_names_pipe_and_epoll_wakeup_rules_by_version() {
    let line = |k: &str, what: &str| {
        let out = ok(&["kernel", "show", k]);
        out.lines().find(|l| l.trim_start().starts_with(what)).unwrap_or_else(|| panic!("{k}: no {what} line\n{out}")).to_string()
    };
    assert!(line("v5.2", "pipe waits").contains("every blocked writer"));
    assert!(line("v5.11", "pipe waits").contains("exclusive"));
    assert!(line("v6.12", "epoll wakeups").contains("never sync"));
    assert!(line("v6.18", "epoll wakeups").contains("WF_SYNC"));
    assert!(line("v6.12", "delayed group entities").contains("may still reweight"));
    assert!(line("v6.18", "delayed group entities").contains("66951e4860d3"));
    assert!(!ok(&["kernel", "show", "v6.6"]).contains("delayed group entities"));
}

#[test]
fn workloads_lists_builtins() {
    let out = ok(&["workloads"]);
    for w in ["hackbench", "pipe", "context_switch1", "pgbench", "soaker"] {
        assert!(out.lines().any(|l| l.starts_with(&format!("{w}:"))), "`schedlab workloads` lacks {w}:\n{out}");
    }
}

// ---------------------------------------------------------------- run --json

#[test]
fn run_json_is_byte_identical_across_runs() {
    let (a, _) = run_json(HACKBENCH_SMALL);
    let (b, _) = run_json(HACKBENCH_SMALL);
    assert!(!a.is_empty());
    assert!(a == b, "two identical runs printed different JSON");
}

#[test]
fn another_seed_keeps_shape_but_changes_details() {
    let (_, a) = run_json(HACKBENCH_SMALL);
    let mut args = HACKBENCH_SMALL.to_vec();
    args.extend_from_slice(&["--seed", "2"]);
    let (_, b) = run_json(&args);
    assert_eq!(shape(&a), shape(&b), "JSON shape depends on the seed");
    assert_eq!(b["seed"], 2);
    let detail = |v: &Value| (v["simulated_ns"].clone(), v["run_delay_ns"].clone(), v["context_switches"].clone());
    assert_ne!(detail(&a), detail(&b), "seeds 1 and 2 gave the same simulated time, run delay and context switches");
}

#[test]
fn run_json_has_required_keys_and_conserves_cpu_time() {
    let (_, v) = run_json(HACKBENCH_SMALL);
    let num = |ptr: &str| -> u64 {
        v.pointer(ptr)
            .unwrap_or_else(|| panic!("JSON lacks {ptr}:\n{v:#}"))
            .as_u64()
            .unwrap_or_else(|| panic!("{ptr} is not an unsigned integer:\n{v:#}"))
    };
    assert!(v.pointer("/metric/name").is_some_and(Value::is_string));
    assert!(v.pointer("/metric/value").is_some_and(Value::is_number));
    assert!(v.pointer("/metric/unit").is_some_and(Value::is_string));
    let voluntary = num("/context_switches/voluntary");
    num("/context_switches/involuntary");
    num("/migrations");
    let wakeups = num("/wakeups");
    let (p50, p90, p99, max) = (num("/run_delay_ns/p50"), num("/run_delay_ns/p90"), num("/run_delay_ns/p99"), num("/run_delay_ns/max"));
    assert!(p50 <= p90 && p90 <= p99 && p99 <= max, "{p50} {p90} {p99} {max}");
    let sim = num("/simulated_ns");
    assert!(sim > 0);
    assert!(voluntary > 0 && wakeups > 0, "hackbench must block and wake");
    let cpus = v["cpus"].as_array().expect("cpus is an array");
    assert_eq!(cpus.len(), 12, "x86-12 has 12 CPUs");
    for (i, c) in cpus.iter().enumerate() {
        let busy = c["busy_ns"].as_u64().expect("busy_ns");
        let idle = c["idle_ns"].as_u64().expect("idle_ns");
        assert_eq!(busy + idle, sim, "cpu{i}: busy_ns {busy} + idle_ns {idle} != simulated_ns {sim}");
    }
}

#[test]
fn time_bounded_workload_runs_exactly_its_duration() {
    let (_, v) = run_json(&["--workload", "soaker", "--set", "tasks=4", "--duration", "50ms"]);
    assert_eq!(v["simulated_ns"], 50_000_000u64, "{v:#}");
}

#[test]
fn run_json_names_the_machine_and_its_counters() {
    let (_, v) = run_json(HACKBENCH_SMALL);
    assert_eq!(v.pointer("/machine/name").and_then(Value::as_str), Some("x86-12"), "{v:#}");
    for k in ["l2_misses", "llc_misses", "dram_bytes", "remote_bytes", "rq_lock_wait_ns", "idle_exit_ns", "mm_switches"] {
        assert!(v["machine"][k].is_u64(), "machine.{k} missing:\n{v:#}");
    }
    assert_eq!(v["latencies"], Value::Array(vec![]), "hackbench records no latency histogram");
}

#[test]
fn schbench_reports_wakeup_latencies() {
    let (_, v) = run_json(&["--workload", "schbench", "--duration", "50ms"]);
    let lats = v["latencies"].as_array().expect("latencies is an array");
    assert!(!lats.is_empty(), "schbench records wakeup latencies:\n{v:#}");
    for l in lats {
        let n = |k: &str| l[k].as_u64().unwrap_or_else(|| panic!("latency lacks {k}: {l}"));
        assert!(n("count") > 0, "{l}");
        let (p50, p90, p99, p999, max) = (n("p50_ns"), n("p90_ns"), n("p99_ns"), n("p999_ns"), n("max_ns"));
        assert!(p50 <= p90 && p90 <= p99 && p99 <= p999 && p999 <= max, "{l}");
    }
    let summary = ok(&["run", "--workload", "schbench", "--duration", "50ms"]);
    assert!(summary.contains("latency hist 0 (us)") && summary.contains("p99.9"), "{summary}");
}

// ---------------------------------------------------------------- bad input

#[test]
fn unknown_machine_lists_presets() {
    let mut needles = vec!["nosuchbox"];
    needles.extend(PRESETS.iter().filter(|p| **p != "local"));
    usage_error(&["run", "--machine", "nosuchbox"], &needles);
    usage_error(&["machine", "show", "nosuchbox"], &needles);
}

#[test]
fn unknown_kernel_lists_profiles() {
    usage_error(&["run", "--kernel", "v9.9"], &["v9.9", "v3.10", "v6.6", "v6.12"]);
    usage_error(&["kernel", "show", "v9.9"], &["v9.9", "v6.12"]);
}

// `kernel show` says what a profile and its patch overlays carry: v6.18's
// v6.17 run-to-parity rules, the stable-6.18.44 overlay's wakeup pick and lag
// clamp; the overlay is refused on any other base.
#[test]
fn kernel_show_v6_18_and_the_stable_overlay() {
    let base = ok(&["kernel", "show", "v6.18"]);
    assert!(base.contains("patches: none (the release as tagged)"), "{base}");
    assert!(base.contains("base_slice 700000 ns") && base.contains("  PICK_BUDDY"), "{base}");
    assert!(base.contains("(v6.17+)") && base.contains("v6.6-6.18.32") && base.contains("(v6.14-v6.16)"), "{base}");
    let st = ok(&["kernel", "show", "v6.18", "--patch", "stable-6.18.44"]);
    assert!(st.contains("patches on top:\n  stable-6.18.44 (6.18.y stable"), "{st}");
    assert!(st.contains("(6.18.33+)") && st.contains("largest slice on the cfs_rq + TICK_NSEC (6.18.17+)"), "{st}");
    usage_error(&["kernel", "show", "v6.12", "--patch", "stable-6.18.44"], &["applies to v6.18"]);
}

#[test]
fn unknown_workload_lists_builtins() {
    usage_error(&["run", "--workload", "nosuchbench"], &["nosuchbench", "hackbench", "pipe", "context_switch1", "soaker"]);
}

#[test]
fn unknown_set_key_lists_parameters() {
    usage_error(&["run", "--workload", "hackbench", "--set", "bogus=1"], &["bogus", "groups", "loops"]);
}

#[test]
fn zero_groups_is_out_of_range() {
    usage_error(&["run", "--workload", "hackbench", "--set", "groups=0"], &["groups=0", "between 1"]);
}

#[test]
fn malformed_duration_asks_for_a_unit() {
    usage_error(&["run", "--workload", "soaker", "--duration", "5"], &["\"5\"", "unit", "500ms"]);
    usage_error(&["run", "--workload", "soaker", "--duration", "fast"], &["\"fast\"", "2s"]);
}

#[test]
fn unknown_feature_bit_lists_valid_bits() {
    usage_error(&["run", "--features", "NO_PLACE_LAGG"], &["NO_PLACE_LAGG", "PLACE_LAG", "RUN_TO_PARITY", "NO_"]);
}

#[test]
fn machine_file_with_unknown_key_is_refused() {
    let dir = tmp_dir("unknown-key");
    let f = dir.join("bad.toml");
    std::fs::write(&f, "name = \"bad\"\nbogus_key = 1\n").unwrap();
    let path = f.to_str().unwrap();
    usage_error(&["run", "--machine", path], &["bogus_key", "machine-format.md"]);
    usage_error(&["machine", "show", path], &["bogus_key"]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn nonexistent_machine_file_is_refused() {
    let path = "/nonexistent/schedlab/no-such-machine.toml";
    usage_error(&["run", "--machine", path], &[path, "check the path"]);
}

#[test]
fn bad_option_value_is_a_usage_error() {
    usage_error(&["run", "--seed", "x"], &["--seed"]);
}

/// Issue 3 / 6: schedstat levels in --json carry wakeup shares and the load-balance
/// counters; --schedstat writes /proc/schedstat in the modelled kernel's
/// version: v6.12 (the default) wrote version 16 (issue 13 item 10; was 17).
#[test]
fn schedstat_levels_and_file() {
    let dir = tmp_dir("schedstat");
    let path = dir.join("schedstat.txt");
    let p = path.to_str().unwrap();
    let (_, v) = run_json(&["--schedstat", p]);
    let levels = v["schedstat"]["levels"].as_array().expect("schedstat.levels");
    assert!(!levels.is_empty());
    for l in levels {
        for k in ["level", "wake_remote_share", "affine_share", "lb_count", "lb_balanced", "lb_failed", "lb_gained", "alb_pushed"] {
            assert!(l.get(k).is_some(), "level entry lacks {k}: {l}");
        }
    }
    assert!(levels.iter().map(|l| l["lb_count"].as_u64().unwrap()).sum::<u64>() > 0, "the balancer ran");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("version 16\ntimestamp "), "{}", &text[..40.min(text.len())]);
    let dom = text.lines().find(|l| l.starts_with("domain0 ")).expect("a domain line");
    assert_eq!(dom.split_whitespace().count(), 2 + 36, "domain<K> MASK + 36 fields: {dom}");
}

/// Tidy (style guide): every `FIDELITY(F-nnn)` marker in the code has an entry in
/// docs/FIDELITY.md, and every open entry is marked somewhere in the code.
#[test]
fn fidelity_markers_and_entries_agree() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/FIDELITY.md")).unwrap();
    let mut entries = Vec::new();
    for l in doc.lines().filter(|l| l.starts_with("## F-")) {
        let id = l[3..8].to_string();
        entries.push((id, l.contains("status: open")));
    }
    let mut markers = std::collections::BTreeSet::new();
    let mut stack = vec![root.join("crates")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let s = std::fs::read_to_string(&p).unwrap();
                for (i, _) in s.match_indices("FIDELITY(F-") {
                    let id = &s[i + 9..(i + 14).min(s.len())];
                    if id.len() == 5 && id[2..].bytes().all(|b| b.is_ascii_digit()) {
                        markers.insert(id.to_string());
                    }
                }
            }
        }
    }
    for m in &markers {
        assert!(entries.iter().any(|(id, _)| id == m), "marker {m} has no entry in docs/FIDELITY.md");
    }
    for (id, open) in &entries {
        if *open {
            assert!(markers.contains(id), "open entry {id} has no FIDELITY({id}) marker in the code");
        }
    }
}
