//! `schedlab record -- CMD ARGS...`: trace a real command's scheduling
//! through tracefs and write the ftrace text that `schedlab import` and
//! `schedlab profile` read.
//!
//! A private trace instance (`tracefs/instances/schedlab-record-PID`) keeps
//! the system's own tracing untouched. Events are filtered to the command's
//! process tree with `set_event_pid` + `options/event-fork`: the recorder
//! puts its own pid in the set and then spawns the command, so every
//! descendant joins the set at fork. The kernel traces `sched_switch` when
//! either prev or next is in the set and `sched_waking`/`sched_wakeup` when
//! the woken task is (kernel/trace/trace_events.c, the `event_filter_pid_sched_*`
//! probes), so wakeups from other tasks and from interrupts are kept.
//! `options/record-tgid` adds the tgid column, from which import tells
//! threads from processes. The header gets `# schedlab record:` lines with
//! the root pid (the command) and the number of lost events.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Events recorded when `--events` is not given.
pub const DEFAULT_EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_waking",
    "sched/sched_wakeup",
    "sched/sched_wakeup_new",
    "sched/sched_migrate_task",
    "sched/sched_process_fork",
    "sched/sched_process_exit",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
];

#[derive(clap::Args, Clone)]
pub struct RecordArgs {
    /// Output file (ftrace text; default: schedlab.trace).
    #[arg(long, short = 'o', default_value = "schedlab.trace")]
    pub output: PathBuf,
    /// Events to record, SUBSYSTEM/EVENT or SUBSYSTEM:EVENT, comma separated (default: the sched and irq events import uses).
    #[arg(long, value_delimiter = ',')]
    pub events: Vec<String>,
    /// Per-CPU ring buffer size in KiB.
    #[arg(long, default_value_t = 65536)]
    pub buffer_kb: u64,
    /// tracefs mount point (default: /sys/kernel/tracing, then /sys/kernel/debug/tracing).
    #[arg(long)]
    pub tracefs: Option<PathBuf>,
    /// Record every task on the machine, not only the command's process tree.
    #[arg(long)]
    pub all_tasks: bool,
    /// The command and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

fn find_tracefs(given: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = given {
        if p.join("instances").is_dir() {
            return Ok(p.to_path_buf());
        }
        bail!("{} is not a tracefs mount (no instances/ directory); mount it with `mount -t tracefs nodev {}`", p.display(), p.display());
    }
    for p in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        let p = Path::new(p);
        if p.join("instances").is_dir() {
            return Ok(p.to_path_buf());
        }
    }
    bail!(
        "tracefs is not mounted (neither /sys/kernel/tracing nor /sys/kernel/debug/tracing has an instances/ directory); \
         mount it with `mount -t tracefs nodev /sys/kernel/tracing` (as root), or pass --tracefs DIR"
    )
}

/// The command's program resolved on PATH (so that a typo fails before tracing starts).
fn resolve(cmd: &str) -> Result<PathBuf> {
    let is_exec = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.is_file() && std::fs::metadata(p).map(|m| m.permissions().mode() & 0o111 != 0).unwrap_or(false)
    };
    if cmd.contains('/') {
        let p = PathBuf::from(cmd);
        if is_exec(&p) {
            return Ok(p);
        }
        bail!("command not found: {cmd} is not an executable file");
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let p = dir.join(cmd);
        if is_exec(&p) {
            return Ok(p);
        }
    }
    bail!("command not found: {cmd} (not on PATH); install it (hackbench: apt-get install rt-tests; perf: apt-get install linux-perf) or give its path")
}

/// The instance directory, removed (tracing off) when dropped.
struct Instance(PathBuf);

impl Instance {
    fn write(&self, file: &str, val: &str) -> Result<()> {
        let p = self.0.join(file);
        std::fs::write(&p, val).with_context(|| format!("cannot write {val:?} to {}", p.display()))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("tracing_on"), "0");
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Lost events of one instance: the per-CPU `overrun` (overwritten) plus
/// `dropped events` (not written), from `per_cpu/cpuN/stats`.
fn lost_events(inst: &Path) -> u64 {
    let mut lost = 0;
    let Ok(rd) = std::fs::read_dir(inst.join("per_cpu")) else { return 0 };
    for e in rd.flatten() {
        let Ok(s) = std::fs::read_to_string(e.path().join("stats")) else { continue };
        for l in s.lines() {
            for key in ["overrun:", "dropped events:"] {
                if let Some(v) = l.strip_prefix(key) {
                    lost += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    lost
}

/// Effective uid from /proc/self/status (`Uid: real effective saved fs`).
fn euid() -> Option<u32> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with("Uid:"))?;
    l.split_whitespace().nth(2)?.parse().ok()
}

pub fn record(a: &RecordArgs) -> Result<()> {
    let prog = resolve(&a.command[0])?;
    if let Some(uid) = euid().filter(|&u| u != 0) {
        bail!("`schedlab record` needs root to use tracefs (effective uid is {uid}); run it with sudo");
    }
    let tracefs = find_tracefs(a.tracefs.as_deref())?;
    let inst_path = tracefs.join("instances").join(format!("schedlab-record-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir(&inst_path) {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            bail!("cannot create a trace instance in {}: permission denied; `schedlab record` must run as root (sudo)", tracefs.display());
        }
        return Err(e).with_context(|| format!("cannot create trace instance {}", inst_path.display()));
    }
    let inst = Instance(inst_path);
    inst.write("tracing_on", "0")?;
    inst.write("buffer_size_kb", &a.buffer_kb.to_string())?;
    // Keep the oldest events and count the rest as dropped: a trace that lost
    // events is flagged either way, but its beginning stays intact.
    inst.write("options/overwrite", "0")?;
    let _ = inst.write("options/record-tgid", "1");
    let events: Vec<String> = if a.events.is_empty() { DEFAULT_EVENTS.iter().map(|s| s.to_string()).collect() } else { a.events.clone() };
    for e in &events {
        let e = e.replace(':', "/");
        let p = inst.0.join("events").join(&e).join("enable");
        if !p.exists() {
            bail!("unknown trace event {e:?}: {} does not exist (see {}/available_events)", p.display(), tracefs.display());
        }
        inst.write(&format!("events/{e}/enable"), "1")?;
    }
    if !a.all_tasks {
        inst.write("options/event-fork", "1")?;
        inst.write("set_event_pid", &std::process::id().to_string())?;
    }
    inst.write("tracing_on", "1")?;
    let status = std::process::Command::new(&prog).args(&a.command[1..]).spawn();
    let mut child = match status {
        Ok(c) => c,
        Err(e) => bail!("cannot start {}: {e}", prog.display()),
    };
    let root = child.id();
    let st = child.wait().context("waiting for the command")?;
    inst.write("tracing_on", "0")?;
    let lost = lost_events(&inst.0);
    let text = std::fs::read_to_string(inst.0.join("trace")).context("cannot read the trace buffer")?;
    let mut out = String::with_capacity(text.len() + 256);
    out.push_str(&format!("# schedlab record: root_pid={root} command={}\n", a.command.join(" ")));
    out.push_str(&format!("# schedlab record: lost_events={lost} buffer_kb={}\n", a.buffer_kb));
    out.push_str(&text);
    std::fs::write(&a.output, out).with_context(|| format!("cannot write {}", a.output.display()))?;
    let n = text.lines().filter(|l| !l.starts_with('#')).count();
    eprintln!("schedlab: recorded {n} events of `{}` (root pid {root}, {}) to {}", a.command.join(" "), st, a.output.display());
    if lost > 0 {
        bail!(
            "{lost} events were lost (the per-CPU buffer of {} KiB overflowed); the trace in {} is incomplete and import will refuse it: \
             record again with a larger --buffer-kb or a shorter run",
            a.buffer_kb,
            a.output.display()
        );
    }
    if !st.success() {
        eprintln!("schedlab: warning: the command exited with {st}");
    }
    Ok(())
}
