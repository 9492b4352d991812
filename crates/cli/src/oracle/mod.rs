//! `schedlab oracle`: the same workload on a real Linux kernel booted under
//! qemu on the machine's topology, next to schedlab's simulation of it
//! (docs/oracle.md). The guest's timing means nothing under TCG emulation;
//! its decisions (per-domain wakeup placement, balancing, migrations) are real.

pub mod cpio;
pub mod guest;
pub mod qemu;
pub mod schedstat;

use crate::{prepare, RunArgs};
use anyhow::{bail, Context, Result};
use schedlab_engine::RunResult;
use schedlab_kernel::topology::SchedDomains;
use schedlab_machine::Machine;
use schedlab_topology::{cpulist, parse_cpulist, CpuId};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The kernel profile the guest kernel is compared with.
pub const PROFILE: &str = "v6.12";

#[derive(clap::Args, Clone)]
pub struct OracleArgs {
    /// Machine preset or file (docs/machine-format.md); at most 32 CPUs, SMT siblings numbered adjacently.
    #[arg(long)]
    pub machine: String,
    /// Built-in workload: hackbench, pipe, context_switch1 or netperf.
    #[arg(long)]
    pub workload: String,
    /// Workload parameters key=value[,key=value...]; may be repeated.
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Guest kernel image (bzImage); default: Debian's linux-image-6.12.*-amd64-unsigned, downloaded once into the cache.
    #[arg(long, value_name = "PATH")]
    pub kernel_image: Option<PathBuf>,
    /// Seed of the simulation.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run time of time-bounded workloads (context_switch1, netperf): simulated for the model, wall-clock in the guest.
    #[arg(long)]
    pub duration: Option<String>,
    /// Wall-clock limit for the guest (boot + workload + power-off), seconds; qemu is killed when it passes.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// How qemu runs the vCPUs: icount (even progress, reproducible; default) or mttcg (fast, host-load dependent).
    #[arg(long, value_enum, default_value = "icount")]
    pub accel: qemu::Accel,
    /// Print one JSON object with both sides.
    #[arg(long)]
    pub json: bool,
    /// Keep the guest's raw output (console log, /proc/schedstat before/after) in DIR.
    #[arg(long, value_name = "DIR")]
    pub raw_dir: Option<PathBuf>,
    /// Print the qemu command line and the guest command, and exit without booting.
    #[arg(long)]
    pub dry_run: bool,
}

/// The real kernel's side, parsed from the guest's output.
#[derive(Clone, Debug)]
pub struct RealSide {
    pub release: String,
    pub schedstat_version: u32,
    pub summary: schedstat::Summary,
    /// sched_migrate_task events of the workload's tasks (None: no tracefs).
    pub migrations: Option<u64>,
    pub exit_code: i32,
    pub output: String,
    /// Per-CPU domain spans differing from the model's (empty: all agree).
    pub span_mismatches: Vec<String>,
    /// Guest topology (sysfs) differing from the machine.
    pub topology_mismatches: Vec<String>,
}

fn section<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    let start = text.find(&format!("@@ {marker}"))?;
    let body = &text[start..];
    let body = &body[body.find('\n')? + 1..];
    Some(&body[..body.find("\n@@ ").map(|i| i + 1).unwrap_or(body.len())])
}

/// Compare the guest's sysfs topology and node distances with the machine.
fn check_topology(text: &str, m: &Machine) -> Vec<String> {
    let t = &m.topology;
    let mut bad = Vec::new();
    let Some(topo) = section(text, "topology") else {
        return vec!["the guest printed no topology".into()];
    };
    let group = |c: u16, f: &dyn Fn(&schedlab_topology::CpuInfo, &schedlab_topology::CpuInfo) -> bool| -> Vec<u16> {
        let me = *t.cpu(CpuId(c));
        t.ids_where(|x| f(x, &me)).map(|x| x.0).collect()
    };
    let mut cpus_seen = 0;
    for l in topo.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if let Some(c) = f.first().and_then(|w| w.strip_prefix("cpu")).and_then(|n| n.parse::<u16>().ok()) {
            cpus_seen += 1;
            if c as usize >= t.nr_cpus() {
                bad.push(format!("guest has cpu{c}, machine has {} CPUs", t.nr_cpus()));
                continue;
            }
            let get = |key: &str| f.iter().position(|w| *w == key).and_then(|i| f.get(i + 1)).and_then(|v| parse_cpulist(v).ok());
            let checks: [(&str, Vec<u16>); 3] = [
                ("core", group(c, &|x, me| x.core == me.core)),
                ("llc", group(c, &|x, me| x.llc == me.llc)),
                ("package", group(c, &|x, me| x.package == me.package)),
            ];
            for (key, want) in checks {
                match get(key) {
                    Some(got) if got == want => {}
                    got => bad.push(format!(
                        "cpu{c} {key}: guest {} machine {}",
                        got.map(|g| cpulist(g.into_iter().map(CpuId))).unwrap_or_else(|| "?".into()),
                        cpulist(want.into_iter().map(CpuId))
                    )),
                }
            }
        } else if let Some(n) = f.first().and_then(|w| w.strip_prefix("node")).and_then(|n| n.parse::<u32>().ok()) {
            let cpus = f.get(2).and_then(|v| parse_cpulist(v).ok()).unwrap_or_default();
            let want: Vec<u16> = t.ids_where(|x| x.node == n).map(|x| x.0).collect();
            if cpus != want {
                bad.push(format!("node{n} cpus: guest {:?} machine {:?}", cpus, want));
            }
            let dist: Vec<u32> = f.iter().skip(4).filter_map(|v| v.parse().ok()).collect();
            if (n as usize) < t.nr_nodes() && dist != t.distance_matrix()[n as usize] {
                bad.push(format!("node{n} distances: guest {dist:?} machine {:?}", t.distance_matrix()[n as usize]));
            }
        }
    }
    if cpus_seen != t.nr_cpus() {
        bad.push(format!("guest has {cpus_seen} CPUs, machine {}", t.nr_cpus()));
    }
    bad
}

/// Compare each CPU's real domain spans (bottom-up) with the model's.
fn check_spans(s: &schedstat::Snapshot, sd: &SchedDomains) -> Vec<String> {
    let mut bad = Vec::new();
    for c in &s.cpus {
        let real: Vec<Vec<u16>> = c.domains.iter().map(|d| d.span.clone()).collect();
        let model: Vec<Vec<u16>> = match sd.per_cpu.get(c.cpu as usize) {
            Some(_) => sd.of(CpuId(c.cpu)).map(|d| d.span.iter().map(|x| x.0).collect()).collect(),
            None => vec![],
        };
        if real != model {
            let fmt = |v: &[Vec<u16>]| v.iter().map(|s| cpulist(s.iter().map(|&x| CpuId(x)))).collect::<Vec<_>>().join(" | ");
            bad.push(format!("cpu{}: real {} model {}", c.cpu, fmt(&real), fmt(&model)));
        }
    }
    bad
}

/// Parse the guest's serial output (the /init script's `@@` sections).
pub fn parse_guest(text: &str, m: &Machine, sd: &SchedDomains) -> Result<RealSide> {
    let text = text.replace('\r', "");
    if !text.contains("@@ schedlab-oracle 1") {
        bail!("the guest printed nothing on its result port (did the kernel boot? see the console log)");
    }
    if !text.contains("@@ end") {
        bail!("the guest output stops before its end marker (the guest died or the output was cut)");
    }
    let release = text.lines().find_map(|l| l.strip_prefix("@@ uname ")).unwrap_or("?").trim().to_string();
    let before = schedstat::parse(section(&text, "schedstat-before").context("no schedstat-before section")?).context("guest /proc/schedstat before the workload")?;
    let after = schedstat::parse(section(&text, "schedstat-after").context("no schedstat-after section")?).context("guest /proc/schedstat after the workload")?;
    let d = schedstat::delta(&before, &after)?;
    let summary = schedstat::summarize(&d, &m.topology)?;
    let exit_code = text.lines().find_map(|l| l.strip_prefix("@@ exit ")).and_then(|v| v.trim().parse().ok()).unwrap_or(-1);
    let output = {
        let w = text.find("@@ workload").map(|i| &text[i..]).unwrap_or("");
        let w = &w[w.find('\n').map(|i| i + 1).unwrap_or(w.len())..];
        w[..w.find("@@ exit").unwrap_or(w.len())].trim().to_string()
    };
    let migrations = section(&text, "migrate-trace").map(|s| {
        s.lines()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let get = |k: &str| f.iter().position(|w| *w == k).and_then(|i| f.get(i + 1)).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
                get("entries:") + get("overrun:")
            })
            .sum()
    });
    Ok(RealSide {
        release,
        schedstat_version: d.version,
        summary,
        migrations,
        exit_code,
        output,
        span_mismatches: check_spans(&after, sd),
        topology_mismatches: check_topology(&text, m),
    })
}

/// `qemu-system-x86_64 --version` -> (major, minor).
fn qemu_version(bin: &Path) -> Result<(u32, u32, String)> {
    let out = Command::new(bin).arg("--version").stdin(Stdio::null()).output().with_context(|| format!("cannot run {}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let first = text.lines().next().unwrap_or("").to_string();
    let v = first.split("version ").nth(1).and_then(|r| r.split_whitespace().next()).unwrap_or("");
    let mut it = v.split('.').map(|x| x.parse::<u32>().unwrap_or(0));
    Ok((it.next().unwrap_or(0), it.next().unwrap_or(0), first))
}

/// One qemu at a time per cache directory (the guests are CPU-hungry): a lock
/// file holding the owner's pid, taken over when that process is gone.
struct QemuLock(PathBuf);

impl QemuLock {
    fn take(cache: &Path, deadline: Instant) -> Result<QemuLock> {
        let path = cache.join("qemu.lock");
        loop {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut f) => {
                    use std::io::Write;
                    let _ = write!(f, "{}", std::process::id());
                    return Ok(QemuLock(path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let owner = std::fs::read_to_string(&path).unwrap_or_default();
                    let alive = owner.trim().parse::<u32>().is_ok_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
                    if !alive && !owner.is_empty() {
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                    if Instant::now() > deadline {
                        bail!("another schedlab oracle (pid {}) holds {}; only one guest runs at a time", owner.trim(), path.display());
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
                Err(e) => return Err(e).with_context(|| format!("cannot create {}", path.display())),
            }
        }
    }
}

impl Drop for QemuLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn tail(path: &Path, n: usize) -> String {
    let t = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = t.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Boot the guest and return its result-port text.
fn boot(qemu: &Path, args: &[String], run_dir: &Path, timeout: Duration) -> Result<String> {
    let console = run_dir.join("console.log");
    let out = run_dir.join("guest.txt");
    let _ = std::fs::remove_file(&out);
    let mut child = Command::new(qemu)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(run_dir.join("qemu.stderr"))?)
        .spawn()
        .with_context(|| format!("cannot start {}", qemu.display()))?;
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "the guest did not finish within {} s (--timeout); qemu was killed. Last console lines ({}):\n{}",
                timeout.as_secs(),
                console.display(),
                tail(&console, 15)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if !status.success() {
        bail!("qemu exited with {status}: {}", tail(&run_dir.join("qemu.stderr"), 10));
    }
    eprintln!("schedlab oracle: guest finished in {:.1} s", start.elapsed().as_secs_f64());
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    if !text.contains("@@ end") {
        bail!("the guest powered off without finishing its script; last console lines ({}):\n{}", console.display(), tail(&console, 15));
    }
    Ok(text)
}

pub fn oracle(a: &OracleArgs) -> Result<()> {
    let run_args = RunArgs {
        machine: a.machine.clone(),
        kernel: PROFILE.into(),
        features: None,
        patch: None,
        workload: a.workload.clone(),
        set: a.set.clone(),
        seed: a.seed,
        duration: a.duration.clone(),
        json: a.json,
        machine_model: None,
        schedstat: None,
    };
    if a.workload.ends_with(".toml") || a.workload.ends_with(".json") {
        bail!("the oracle runs built-in workloads only ({}), not workload files", guest::SUPPORTED.iter().map(|s| s.0).collect::<Vec<_>>().join(", "));
    }
    let prep = prepare(&run_args)?;
    let shape = qemu::shape(&prep.machine)?;
    let gw = guest::workload_command(&prep.workload, prep.cfg.duration_ns, &crate::cores_of(&prep.machine))?;
    let cache = guest::cache_dir()?;
    let qemu_bin = guest::host_binary("qemu-system-x86_64", "apt-get install qemu-system-x86 (docs/oracle.md: qemu 10.0 from bookworm-backports for split LLCs)")?;
    let (major, _minor, qemu_line) = qemu_version(&qemu_bin)?;
    if shape.needs_qemu10() && major < 10 {
        bail!(
            "machine {} needs qemu 10.0 (dies for split LLCs / an AMD Zen3 guest CPU), found {qemu_line:?}; install it from bookworm-backports: apt-get install -t bookworm-backports qemu-system-x86",
            prep.machine.name
        );
    }
    let kernel = if a.dry_run { a.kernel_image.clone().unwrap_or_else(|| cache.join("boot/vmlinuz-6.12.*")) } else { guest::kernel_image(a.kernel_image.as_deref(), &cache)? };
    let run_dir = cache.join(format!("run-{}", std::process::id()));
    let append = "console=ttyS0 loglevel=4 panic=-1 schedstats=enable numa_balancing=disable mitigations=off";
    let mut qargs = shape.args(a.accel);
    qargs.extend(["-kernel".into(), kernel.to_string_lossy().into_owned(), "-initrd".into(), run_dir.join("initrd.cpio").to_string_lossy().into_owned()]);
    qargs.extend(["-append".into(), append.into(), "-nodefaults".into(), "-display".into(), "none".into(), "-no-reboot".into()]);
    qargs.extend(["-serial".into(), format!("file:{}", run_dir.join("console.log").display())]);
    qargs.extend(["-serial".into(), format!("file:{}", run_dir.join("guest.txt").display())]);
    if a.dry_run {
        println!("qemu: {qemu_line}");
        println!("{} {}", qemu_bin.display(), qargs.iter().map(|x| if x.contains(' ') { format!("'{x}'") } else { x.clone() }).collect::<Vec<_>>().join(" "));
        println!("guest workload: {}", gw.command);
        for n in shape.not_expressed() {
            println!("not expressed: {n}");
        }
        return Ok(());
    }
    let timeout = Duration::from_secs(a.timeout.max(1));
    let lock = QemuLock::take(&cache, Instant::now() + timeout)?;
    std::fs::create_dir_all(&run_dir).with_context(|| format!("cannot create {}", run_dir.display()))?;
    let result = (|| -> Result<String> {
        let initrd = guest::initramfs(&gw, &cache)?;
        std::fs::write(run_dir.join("initrd.cpio"), initrd)?;
        eprintln!("schedlab oracle: booting {} ({} vCPUs, -smp {}) with {}", kernel.display(), shape.cpus, shape.smp(), gw.command);
        boot(&qemu_bin, &qargs, &run_dir, timeout)
    })();
    drop(lock);
    if let Some(dir) = &a.raw_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create --raw-dir {}", dir.display()))?;
        for f in ["console.log", "guest.txt"] {
            let _ = std::fs::copy(run_dir.join(f), dir.join(f));
        }
    }
    let text = match result {
        Ok(t) => t,
        Err(e) => {
            return Err(e.context(format!("raw guest files kept in {}", run_dir.display())));
        }
    };
    let _ = std::fs::remove_dir_all(&run_dir);
    let sd = SchedDomains::build(&prep.machine.topology, &prep.kernel);
    let real = parse_guest(&text, &prep.machine, &sd)?;
    if real.exit_code != 0 {
        bail!("the guest workload `{}` exited with {}: {}", gw.command, real.exit_code, real.output);
    }
    let res = schedlab_engine::run(&prep.machine, prep.kernel.clone(), &prep.workload, &prep.cfg);
    let qemu_short = format!("qemu {}", qemu_line.split("version ").nth(1).and_then(|r| r.split_whitespace().next()).unwrap_or("?"));
    let info = Info {
        machine: &prep.machine,
        workload: &prep.workload,
        qemu: &qemu_short,
        accel: a.accel,
        smp: shape.smp(),
        guest_cmd: &gw.command,
        not_expressed: shape.not_expressed(),
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&to_json(&info, &real, &res, a))?);
    } else {
        print!("{}", table(&info, &real, &res, a));
    }
    Ok(())
}

pub struct Info<'a> {
    pub machine: &'a Machine,
    pub workload: &'a schedlab_workload::Workload,
    pub qemu: &'a str,
    pub accel: qemu::Accel,
    pub smp: String,
    pub guest_cmd: &'a str,
    pub not_expressed: Vec<String>,
}

fn accel_name(a: qemu::Accel) -> &'static str {
    match a {
        qemu::Accel::Icount => "icount",
        qemu::Accel::Mttcg => "mttcg",
    }
}

fn pct(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

fn model_summary(r: &RunResult) -> schedstat::Summary {
    schedstat::Summary {
        ttwu_count: r.ttwu_count,
        ttwu_local: r.ttwu_local,
        sched_count: 0,
        levels: r
            .levels
            .iter()
            .map(|l| schedstat::Level {
                name: l.name.to_string(),
                span_example: (0, vec![]),
                ttwu_wake_remote: l.ttwu_wake_remote,
                ttwu_move_affine: l.ttwu_move_affine,
                lb_count: l.lb_count,
                lb_balanced: l.lb_balanced,
                lb_failed: l.lb_failed,
                lb_gained: l.lb_gained,
                alb_pushed: l.alb_pushed,
            })
            .collect(),
    }
}

/// Level labels present on either side, bottom-up (the real side's order first).
fn level_names(real: &schedstat::Summary, model: &schedstat::Summary) -> Vec<String> {
    let mut v: Vec<String> = real.levels.iter().map(|l| l.name.clone()).collect();
    for l in &model.levels {
        let have = v.iter().filter(|n| **n == l.name).count();
        let want = model.levels.iter().filter(|m| m.name == l.name).count();
        if have < want {
            v.push(l.name.clone());
        }
    }
    v
}

fn nth_level<'a>(s: &'a schedstat::Summary, names: &[String], i: usize) -> Option<&'a schedstat::Level> {
    let name = &names[i];
    let rank = names[..i].iter().filter(|n| *n == name).count();
    s.levels.iter().filter(|l| &l.name == name).nth(rank)
}

fn params_str(w: &schedlab_workload::Workload) -> String {
    w.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

pub fn table(info: &Info, real: &RealSide, res: &RunResult, a: &OracleArgs) -> String {
    let model = model_summary(res);
    let names = level_names(&real.summary, &model);
    let mut o = String::new();
    let m = info.machine;
    let _ = writeln!(o, "schedlab oracle: {} {} on {} ({} CPUs)", info.workload.name, params_str(info.workload), m.name, m.topology.nr_cpus());
    let _ = writeln!(
        o,
        "  real : Linux {} under {} TCG ({}), -smp {}, /proc/schedstat version {}",
        real.release,
        info.qemu,
        accel_name(info.accel),
        info.smp,
        real.schedstat_version
    );
    let _ = writeln!(o, "         guest ran `{}`: {}", info.guest_cmd, real.output.lines().last().unwrap_or(""));
    let _ = writeln!(o, "  model: schedlab {} profile, seed {}, simulated {:.3} ms", PROFILE, a.seed, res.simulated_ns as f64 / 1e6);
    let _ = writeln!(o);
    let cell = |n: u64, d: u64| format!("{n:>9} ({:5.1}%)", pct(n, d));
    let _ = writeln!(o, "  {:<40} {:>18} {:>18}", "", "real kernel", "schedlab model");
    let _ = writeln!(o, "  {:<40} {:>18} {:>18}", "try_to_wake_up calls (ttwu_count)", real.summary.ttwu_count, model.ttwu_count);
    let _ = writeln!(
        o,
        "  {:<40} {:>18} {:>18}",
        "wakeups on the waker's CPU (ttwu_local)",
        cell(real.summary.ttwu_local, real.summary.ttwu_count),
        cell(model.ttwu_local, model.ttwu_count)
    );
    let get = |s: &schedstat::Summary, i: usize, f: &dyn Fn(&schedstat::Level) -> u64| nth_level(s, &names, i).map(f);
    let cell_opt = |v: Option<u64>, d: u64| v.map(|n| cell(n, d)).unwrap_or_else(|| "-".into());
    for (i, n) in names.iter().enumerate() {
        let _ = writeln!(
            o,
            "  {:<40} {:>18} {:>18}",
            format!("remote wakeups, first shared level {n}"),
            cell_opt(get(&real.summary, i, &|l| l.ttwu_wake_remote), real.summary.ttwu_count),
            cell_opt(get(&model, i, &|l| l.ttwu_wake_remote), model.ttwu_count)
        );
    }
    for (i, n) in names.iter().enumerate() {
        let _ = writeln!(
            o,
            "  {:<40} {:>18} {:>18}",
            format!("affine wakeups (wake_affine) at {n}"),
            cell_opt(get(&real.summary, i, &|l| l.ttwu_move_affine), real.summary.ttwu_count),
            cell_opt(get(&model, i, &|l| l.ttwu_move_affine), model.ttwu_count)
        );
    }
    let lb = |s: &schedstat::Summary, i: usize| nth_level(s, &names, i).map(|l| format!("{} / {}", l.lb_count, l.lb_gained)).unwrap_or_else(|| "-".into());
    for (i, n) in names.iter().enumerate() {
        let _ = writeln!(o, "  {:<40} {:>18} {:>18}", format!("lb_count / lb_gained at {n}"), lb(&real.summary, i), lb(&model, i));
    }
    let _ = writeln!(
        o,
        "  {:<40} {:>18} {:>18}",
        "migrations (workload tasks)",
        real.migrations.map(|x| x.to_string()).unwrap_or_else(|| "n/a".into()),
        res.migrations
    );
    let _ = writeln!(o);
    if real.span_mismatches.is_empty() && real.topology_mismatches.is_empty() {
        let _ = writeln!(o, "  domain spans: the guest's sched domains match the model's on every CPU");
    } else {
        for s in real.topology_mismatches.iter().chain(&real.span_mismatches) {
            let _ = writeln!(o, "  MISMATCH {s}");
        }
    }
    for n in &info.not_expressed {
        let _ = writeln!(o, "  not expressed: {n}");
    }
    o
}

fn side_json(s: &schedstat::Summary, migrations: Option<u64>) -> Value {
    json!({
        "ttwu_count": s.ttwu_count,
        "ttwu_local": s.ttwu_local,
        "local_share": pct(s.ttwu_local, s.ttwu_count) / 100.0,
        "migrations": migrations,
        "levels": s.levels.iter().map(|l| json!({
            "level": l.name,
            "ttwu_wake_remote": l.ttwu_wake_remote,
            "ttwu_move_affine": l.ttwu_move_affine,
            "wake_remote_share": pct(l.ttwu_wake_remote, s.ttwu_count) / 100.0,
            "affine_share": pct(l.ttwu_move_affine, s.ttwu_count) / 100.0,
            "lb_count": l.lb_count,
            "lb_balanced": l.lb_balanced,
            "lb_failed": l.lb_failed,
            "lb_gained": l.lb_gained,
            "alb_pushed": l.alb_pushed,
        })).collect::<Vec<_>>(),
    })
}

pub fn to_json(info: &Info, real: &RealSide, res: &RunResult, a: &OracleArgs) -> Value {
    let mut r = side_json(&real.summary, real.migrations);
    r["kernel_release"] = json!(real.release);
    r["schedstat_version"] = json!(real.schedstat_version);
    r["guest_command"] = json!(info.guest_cmd);
    r["guest_output"] = json!(real.output);
    r["sched_count"] = json!(real.summary.sched_count);
    r["spans_match"] = json!(real.span_mismatches.is_empty());
    r["span_mismatches"] = json!(real.span_mismatches);
    r["topology_mismatches"] = json!(real.topology_mismatches);
    r["level_spans"] = json!(real
        .summary
        .levels
        .iter()
        .map(|l| json!({"level": l.name, "cpu": l.span_example.0, "span": cpulist(l.span_example.1.iter().map(|&x| CpuId(x)))}))
        .collect::<Vec<_>>());
    let mut m = side_json(&model_summary(res), Some(res.migrations));
    m["profile"] = json!(PROFILE);
    m["seed"] = json!(a.seed);
    m["simulated_ns"] = json!(res.simulated_ns);
    json!({
        "machine": info.machine.name,
        "nr_cpus": info.machine.topology.nr_cpus(),
        "workload": info.workload.name,
        "params": info.workload.params.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
        "qemu": { "version": info.qemu, "accel": accel_name(info.accel), "smp": info.smp },
        "not_expressed": info.not_expressed,
        "real": r,
        "model": m,
    })
}
