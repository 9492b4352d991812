//! Wakeup preemption on one CPU against the guest's kernel: a hog (the
//! client) wakes K sleepers (servers) through pipes, all pinned to one vCPU,
//! recorded with scripts/calib-src/wakepreempt.c into
//! tests/data/wakepreempt-local.txt. No placement is involved: what decides
//! is check_preempt_wakeup_fair() / wakeup_preempt_fair() on the woken
//! server (its lag, delayed dequeue, DELAY_ZERO, RUN_TO_PARITY), and once the
//! servers fall behind, the tick's slice check. The model runs the same
//! program on tests/data/local-guest.toml under the guest's own kernel (v6.18
//! with `--patch stable-6.18.44`) and must give the client's involuntary
//! switches per write within 0.1 of the mean of the recorded repeats (the
//! repeats spread up to 0.14 at two points, 0.05 at most others), with the
//! servers at nice 0, -5 (they weigh 3.1 times the client) and 5 (a third
//! of it), except the
//! configurations in `OPEN`, which must stay outside it (an OPEN point that
//! starts agreeing fails, so that it is moved out of the list).
//! docs/CALIBRATION.md "Wakeup preemption of a hog waker" has the table this
//! test prints (`cargo test --release -p schedlab-engine --test
//! wakeup_preemption -- --nocapture`).

use std::collections::BTreeMap;

use schedlab_engine::{Sim, SimConfig};
use schedlab_kernel::profile::profile;
use schedlab_kernel::Kernel;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/");

/// The server's spin per message, as recorded (`wakepreempt K 32 X`).
const S_US: u64 = 32;
/// Tolerance on involuntary switches per write (absolute).
const TOL: f64 = 0.1;
/// Per-op time variation: the real servers' runs (32 us spin + read + switch,
/// 35.6 us) have a coefficient of variation of 2.0 % in a trace of the K = 2,
/// X = 28 run; uniform +-3 % has 1.7 %.
const JITTER_PCT: u32 = 3;

/// Configurations (server nice, servers, x_us) the model does not meet, with the reason.
const OPEN: &[(i32, u32, u64, &str)] = &[];

/// Mean nivcsw per write and writes per second of the recorded repeats, by (server nice, servers, x_us).
fn load_real() -> BTreeMap<(i32, u32, u64), (f64, f64, usize)> {
    let text = std::fs::read_to_string(format!("{DATA}wakepreempt-local.txt")).unwrap();
    let mut acc: BTreeMap<(i32, u32, u64), (f64, f64, usize)> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let kv: BTreeMap<&str, &str> = line.split_whitespace().filter_map(|f| f.split_once('=')).collect();
        let key = (kv["server_nice"].parse().unwrap(), kv["servers"].parse().unwrap(), kv["x_us"].parse().unwrap());
        let e = acc.entry(key).or_default();
        e.0 += kv["nivcsw_per_write"].parse::<f64>().unwrap();
        e.1 += kv["writes_per_s"].parse::<f64>().unwrap();
        e.2 += 1;
    }
    acc.into_iter().map(|(k, (a, b, n))| (k, (a / n as f64, b / n as f64, n))).collect()
}

/// The recorded program as a workload file: one pipe per server (1-byte
/// messages, 16 pages of 4 KiB), the pipe's measured write / read costs; the
/// servers at nice `nice`.
fn workload(nice: i32, k: u32, x_us: u64) -> String {
    let mut w = format!(
        "format = 1\nname = \"wakepreempt\"\ntime_bounded = true\njitter_pct = {JITTER_PCT}\n\n\
         [metric]\nkind = \"rate\"\nname = \"writes\"\nunit = \"writes/s\"\ncounter = 0\n\n\
         [[channel]]\nrepeat = {k}\ncapacity = 65536\nsync = true\nkind = \"pipe\"\nmsgs_per_page = 4096\n\n"
    );
    let mut client = vec!["\"loop count=inf\"".to_string()];
    for i in 0..k {
        client.push(format!("\"run ns={x_us}us\""));
        client.push(format!("\"write chan={i} cost=324ns\""));
        client.push("\"count id=0 n=1\"".to_string());
    }
    client.push("\"end_loop\"".to_string());
    w += &format!("[[program]]\nops = [{}]\n\n", client.join(", "));
    w += &format!(
        "[[program]]\nrepeat = {k}\nops = [\"loop count=inf\", \"read chan=i cost=292ns\", \"run ns={S_US}us\", \"end_loop\"]\n\n"
    );
    w += "[[task]]\nname = \"client\"\nprogram = 0\nmm = 0\ncpus = [1]\n\n";
    w += &format!("[[task]]\nrepeat = {k}\nname = \"server{{i}}\"\nprogram = \"1 + i\"\nmm = 0\ncpus = [1]\nnice = {nice}\n");
    w
}

/// The model's client involuntary switches per write and writes per second, mean of three seeds.
fn model(nice: i32, k: u32, x_us: u64) -> (f64, f64) {
    let text = std::fs::read_to_string(format!("{DATA}local-guest.toml")).unwrap();
    let m = schedlab_machine::from_toml_str(&text, "local-guest.toml").unwrap();
    let w = schedlab_workload::file::from_toml_str(&workload(nice, k, x_us), "wakepreempt.toml").unwrap();
    let (mut per_write, mut rate) = (0.0, 0.0);
    let seeds = [1u64, 2, 3];
    for seed in seeds {
        let cfg = SimConfig {
            seed,
            duration_ns: Some(2_000_000_000),
            schedstat: false,
            model: Default::default(),
            trace: false,
            switch_log: false,
        };
        let mut kp = profile("v6.18").unwrap();
        kp.apply_patches("stable-6.18.44").unwrap();
        let kern = Kernel::new(&m.topology, kp);
        let (r, kern) = Sim::new(&m, kern, &w, &cfg).run_keep_kernel(&cfg);
        let writes = r.metric_value * r.simulated_ns as f64 / 1e9;
        per_write += kern.tasks[0].nivcsw as f64 / writes;
        rate += r.metric_value;
    }
    (per_write / seeds.len() as f64, rate / seeds.len() as f64)
}

#[test]
fn a_hog_is_preempted_by_its_wakees_as_on_the_guest() {
    let real = load_real();
    assert_eq!(real.len(), 30, "three server counts x six client runs at nice 0, two x three at nice -5 and 5");
    let mut bad = Vec::new();
    eprintln!("nice servers  x_us   nivcsw/write real  model    writes/s real   model");
    for (&(nice, k, x), &(r, r_rate, n)) in &real {
        assert_eq!(n, 3, "three repeats of server_nice={nice} servers={k} x_us={x}");
        let (m, m_rate) = model(nice, k, x);
        let open = OPEN.iter().find(|o| o.0 == nice && o.1 == k && o.2 == x);
        let ok = (m - r).abs() <= TOL;
        eprintln!(
            "{nice:4} {k:7} {x:5}   {r:17.3} {m:6.3}   {r_rate:14.0} {m_rate:7.0}{}",
            open.map_or(String::new(), |o| format!("  open: {}", o.3))
        );
        match (ok, open) {
            (false, None) => bad.push(format!("server_nice={nice} servers={k} x_us={x}: real {r:.3}, model {m:.3} (tolerance {TOL})")),
            (true, Some(_)) => {
                bad.push(format!("server_nice={nice} servers={k} x_us={x}: listed in OPEN but agrees now (real {r:.3}, model {m:.3})"))
            }
            _ => {}
        }
    }
    assert!(bad.is_empty(), "wakepreempt-local.txt:\n{}", bad.join("\n"));
}
