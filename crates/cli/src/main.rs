//! The `schedlab` command: the only place (with a later Python package) that
//! does IO. Everything here is glue: parse, validate at the edge, call the
//! engine, print.

mod bench;
mod compare;
mod demo;
mod html;
mod numa_out;
mod oracle;
mod output;
mod reproduce;
mod stats;
mod trace;
mod validate;
#[cfg(test)]
mod wellformed;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use schedlab_engine::SimConfig;
use schedlab_kernel::profile::{self, KernelProfile};
use schedlab_kernel::topology::{flag_names, SchedDomains};
use schedlab_machine::Machine;
use schedlab_topology::{cpulist, CpuId};
use schedlab_workload::{builtin, Params, Workload};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "schedlab", version, about = "A deterministic laboratory for Linux fair-scheduler task placement")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// List machine presets.
    Machines,
    /// Show a machine and the sched domains the kernel builds for it.
    Machine {
        #[command(subcommand)]
        cmd: MachineCmd,
    },
    /// List kernel profiles.
    Kernels,
    /// Show a kernel profile: feature bits, tunables, algorithm variants.
    Kernel {
        #[command(subcommand)]
        cmd: KernelCmd,
    },
    /// List built-in workloads with their parameters.
    Workloads,
    /// Workload files: `workload export NAME --set ...` writes a built-in as a file.
    Workload {
        #[command(subcommand)]
        cmd: WorkloadCmd,
    },
    /// Run one simulation.
    Run(RunArgs),
    /// A/B comparison: side A against side B over a parameter matrix, R seeded runs each (mmtests / LKML tables).
    Compare(compare::CompareArgs),
    /// Run a study from an experiment file (experiments/NAME.toml, docs/experiment-format.md); `--list` lists them.
    Reproduce(reproduce::ReproduceArgs),
    /// The same workload on a real Linux kernel under qemu on the machine's topology, next to the model (docs/oracle.md).
    Oracle(oracle::OracleArgs),
    /// The main job on a built-in default: hackbench and pipe under v3.10, v6.6 and v6.12, one table.
    Demo,
    /// Fidelity scorecard: published kernel results (validation/*.toml, docs/validation-format.md) against the model.
    Validate(validate::ValidateArgs),
    /// Fixed performance scenarios: simulated context switches and events per wall-clock second.
    Bench {
        /// Print a JSON list instead of a table.
        #[arg(long)]
        json: bool,
        /// Run only scenarios whose name contains this string.
        #[arg(long)]
        filter: Option<String>,
    },
}

#[derive(Subcommand)]
enum MachineCmd {
    /// Print the machine and its sched-domain hierarchy (preset name, `local`, or a .toml/.xml file).
    Show {
        name: String,
        /// Kernel profile whose sched_init() rules to apply.
        #[arg(long, default_value = "v6.12")]
        kernel: String,
        /// Print the machine as TOML (the documented file format) instead.
        #[arg(long)]
        toml: bool,
    },
}

#[derive(Subcommand)]
enum WorkloadCmd {
    /// Write a built-in workload as a workload file (docs/workload-format.md).
    Export {
        /// Built-in name (`schedlab workloads`).
        name: String,
        /// Parameters key=value[,key=value...]; may be repeated.
        #[arg(long = "set")]
        set: Vec<String>,
        /// Machine whose CPU count sizes defaulted parameters.
        #[arg(long, default_value = "x86-12")]
        machine: String,
        /// Output file (default: stdout).
        #[arg(long, short = 'o')]
        output: Option<std::path::PathBuf>,
    },
}

#[derive(Subcommand)]
enum KernelCmd {
    Show { name: String },
}

#[derive(clap::Args, Clone)]
pub struct RunArgs {
    /// Machine preset, `local`, or a .toml / .xml (hwloc) file.
    #[arg(long, default_value = "x86-12")]
    pub machine: String,
    /// Kernel profile (`schedlab kernels`).
    #[arg(long, default_value = "v6.12")]
    pub kernel: String,
    /// Feature bits to flip, as /sys/kernel/debug/sched/features takes them: NO_PLACE_LAG,NEXT_BUDDY.
    #[arg(long)]
    pub features: Option<String>,
    /// Proposed patches to apply on top of the kernel profile (`schedlab kernels` lists them).
    #[arg(long)]
    pub patch: Option<String>,
    /// Kernel sysctls, name=value[,...]: numa_balancing=0|1, numa_balancing_scan_delay_ms, numa_balancing_scan_period_min_ms,
    /// numa_balancing_scan_period_max_ms, numa_balancing_scan_size_mb, numa_balancing_cling_degree (the cling patch).
    #[arg(long)]
    pub sysctl: Option<String>,
    /// Built-in workload (`schedlab workloads`), or a workload file: FILE.toml (docs/workload-format.md) or FILE.json (rt-app).
    #[arg(long, default_value = "hackbench")]
    pub workload: String,
    /// Workload parameters key=value[,key=value...]; may be repeated.
    #[arg(long = "set")]
    pub set: Vec<String>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Simulated run time for time-bounded workloads (e.g. 2s, 500ms); for run-to-completion workloads a cap that is an error if it cuts the run.
    #[arg(long, allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Machine-model components to switch off for ablation: NO_CACHE,NO_SMT,NO_MEMBW,NO_NUMA,NO_LOCKS,NO_WAKELAT,NO_SWITCH,NO_SCAN.
    #[arg(long = "machine-model")]
    pub machine_model: Option<String>,
    /// Write /proc/schedstat as the modelled kernel writes it (version 15 up to v6.5, 16 for v6.6-v6.12) at the end of the run to FILE.
    #[arg(long, value_name = "FILE")]
    pub schedstat: Option<std::path::PathBuf>,
    /// Write every context switch (time, CPU, prev and next task with their task groups) to FILE.
    #[arg(long = "switch-log", value_name = "FILE")]
    pub switch_log: Option<std::path::PathBuf>,
    /// Write a Perfetto trace (protobuf: per-CPU sched_switch, sched_waking, ...) to FILE; open it at ui.perfetto.dev.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// Write the same events as ftrace text (the kernel's `trace` file layout) to FILE.
    #[arg(long, value_name = "FILE")]
    pub ftrace: Option<std::path::PathBuf>,
}

/// Die quietly when stdout is a pipe whose reader has gone, as Unix tools do
/// (`schedlab machines | head -1`): the Rust runtime ignores SIGPIPE, which
/// turns the closed pipe into a panic inside `println!` (exit 101).
#[cfg(unix)]
fn default_sigpipe() {
    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    const SIGPIPE: i32 = 13; // Linux, macOS and the BSDs
    const SIG_DFL: usize = 0;
    // SAFETY: restoring the default disposition of one signal, before any
    // thread is started; no handler code is involved.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

fn main() -> ExitCode {
    #[cfg(unix)]
    default_sigpipe();
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("schedlab: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn dispatch(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Machines => {
            println!("{:<16} DESCRIPTION", "NAME");
            for p in schedlab_machine::presets() {
                println!("{:<16} {}", p.name, p.description);
            }
            println!("{:<16} this machine, from /sys/devices/system/cpu and /sys/devices/system/node", "local");
            println!("\nAlso: --machine FILE.toml (docs/machine-format.md) or FILE.xml (hwloc: lstopo --of xml).");
            Ok(())
        }
        Cmd::Machine { cmd: MachineCmd::Show { name, kernel, toml } } => {
            let m = load_machine(&name)?;
            if toml {
                print!("{}", m.to_toml());
                return Ok(());
            }
            let k = load_kernel(&kernel, None)?;
            print!("{}", output::machine_show(&m, &k));
            Ok(())
        }
        Cmd::Kernels => {
            for p in profile::profiles() {
                println!("{:<8} {}", p.name, p.summary);
            }
            for (n, base, patches, _) in profile::DEPRECATED {
                println!("{n:<8} deprecated: {base} --patch {patches}");
            }
            println!("\npatches (--patch NAME):");
            for (n, _, d) in profile::Patch::ALL {
                println!("  {n:<14} {d}");
            }
            Ok(())
        }
        Cmd::Kernel { cmd: KernelCmd::Show { name } } => {
            let k = load_kernel(&name, None)?;
            print!("{}", output::kernel_show(&k));
            Ok(())
        }
        Cmd::Workloads => {
            for b in builtin::BUILTINS {
                println!("{}: {}\n  metric: {}", b.name, b.summary, b.metric);
                for p in b.params {
                    let kv = format!("{}={}", p.key, p.default);
                    println!("  --set {kv:<18} {}", p.help);
                }
                println!();
            }
            println!("every built-in also takes:");
            for p in schedlab_workload::GENERIC_PARAMS {
                let kv = format!("{}={}", p.key, p.default);
                println!("  --set {kv:<18} {}", p.help);
            }
            Ok(())
        }
        Cmd::Demo => {
            print!("{}", demo::demo()?);
            Ok(())
        }
        Cmd::Run(args) => {
            let prep = prepare(&args)?;
            // Trace files are created before the run so a bad path fails at once.
            let create = |flag: &str, p: &Option<std::path::PathBuf>| {
                p.as_ref()
                    .map(|p| std::fs::File::create(p).with_context(|| format!("cannot create {flag} file {}", p.display())))
                    .transpose()
            };
            let (pf_file, ft_file) = (create("--trace", &args.trace)?, create("--ftrace", &args.ftrace)?);
            let res = schedlab_engine::run(&prep.machine, prep.kernel.clone(), &prep.workload, &prep.cfg);
            if let (Some(path), Some(text)) = (&args.schedstat, &res.schedstat) {
                std::fs::write(path, text).with_context(|| format!("cannot write --schedstat file {}", path.display()))?;
            }
            if let Some(path) = &args.switch_log {
                // Task names by creation order: the engine creates start tasks
                // first, then forks; res.task_names records that order.
                let text = output::switch_log(&prep, &res, &res.task_names, &res.group_names());
                std::fs::write(path, text).with_context(|| format!("cannot write --switch-log file {}", path.display()))?;
            }
            if let Some(tr) = &res.trace {
                use std::io::Write;
                let buffered = |f| std::io::BufWriter::with_capacity(1 << 20, f);
                if let (Some(f), Some(p)) = (pf_file, &args.trace) {
                    let meta = trace::Meta::new(&prep.machine.name, &prep.kernel, args.seed);
                    let mut w = buffered(f);
                    trace::perfetto::write(tr, &meta, &mut w)
                        .and_then(|_| w.flush())
                        .with_context(|| format!("cannot write --trace file {}", p.display()))?;
                }
                if let (Some(f), Some(p)) = (ft_file, &args.ftrace) {
                    let mut w = buffered(f);
                    trace::ftrace::write(tr, &mut w)
                        .and_then(|_| w.flush())
                        .with_context(|| format!("cannot write --ftrace file {}", p.display()))?;
                }
            }
            // A metric whose end was never reached is no result (issue 13).
            if let Some(why) = &res.metric_missing {
                bail!("{} on {} with {}: no result: {why}", prep.workload.name, prep.machine.name, prep.kernel.name);
            }
            if res.blocked_forever > 0 {
                eprintln!(
                    "schedlab: warning: the run ended with {} tasks blocked forever (deadlock or lost wakeup: nothing was left that could wake them)",
                    res.blocked_forever
                );
            }
            if args.json {
                println!("{}", serde_json::to_string_pretty(&output::run_json(&prep, &args, &res))?);
            } else {
                print!("{}", output::run_summary(&prep, &args, &res));
            }
            Ok(())
        }
        Cmd::Workload { cmd: WorkloadCmd::Export { name, set, machine, output } } => {
            let m = load_machine(&machine)?;
            let params = Params::parse(&set.join(",")).map_err(|e| anyhow::anyhow!("{e}"))?;
            let w = schedlab_workload::build(&name, &params, m.topology.nr_cpus(), &cores_of(&m)).map_err(|e| anyhow::anyhow!("{e}"))?;
            let header = format!(
                "schedlab workload file (docs/workload-format.md), exported from the built-in {name}\n`schedlab workload export {name}{}{}` (defaults sized for --machine {machine})",
                if set.is_empty() { "" } else { " --set " },
                set.join(",")
            );
            if !w.memory.is_empty() {
                bail!(
                    "{name} with these parameters declares process memory (NUMA placement), which the workload file format cannot express yet; export it without instances/db_mib"
                );
            }
            let text = schedlab_workload::file::to_toml(&w, &header);
            match output {
                Some(p) => std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))?,
                None => print!("{text}"),
            }
            Ok(())
        }
        Cmd::Bench { json, filter } => bench::bench(json, filter.as_deref()),
        Cmd::Compare(args) => compare::compare(&args),
        Cmd::Reproduce(args) => reproduce::reproduce(&args),
        Cmd::Oracle(args) => oracle::oracle(&args),
        Cmd::Validate(args) => validate::validate(&args),
    }
}

pub struct Prepared {
    pub machine: Machine,
    pub kernel: KernelProfile,
    pub workload: Workload,
    pub cfg: SimConfig,
    pub duration_defaulted: bool,
}

pub fn load_machine(name: &str) -> Result<Machine> {
    schedlab_machine::load(name).map_err(|e| anyhow::anyhow!("{e}"))
}

pub fn load_kernel_patched(name: &str, patch: Option<&str>, features: Option<&str>) -> Result<KernelProfile> {
    let mut k = load_kernel(name, None)?;
    if let Some(p) = patch {
        k.apply_patches(p).map_err(anyhow::Error::msg)?;
    }
    if let Some(f) = features {
        k.apply_features(f).map_err(anyhow::Error::msg)?;
    }
    Ok(k)
}

pub fn load_kernel(name: &str, features: Option<&str>) -> Result<KernelProfile> {
    if let Some(note) = profile::deprecation_note(name) {
        eprintln!("schedlab: warning: {note}");
    }
    let mut k = profile::profile(name).map_err(anyhow::Error::msg)?;
    if let Some(f) = features {
        k.apply_features(f).map_err(anyhow::Error::msg)?;
    }
    Ok(k)
}

/// CPUs of each core, cores in order of their first CPU (hwloc logical order).
pub fn cores_of(m: &Machine) -> Vec<Vec<u16>> {
    m.topology.core_groups()
}

/// Parse a duration: `2s`, `500ms`, `250us`, `1000ns`, `1.5s`, `2min`, `1h`.
pub fn parse_duration(s: &str) -> Result<u64> {
    let s = s.trim();
    let num = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &s[num.len()..];
    let mult = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        "" => bail!("duration {s:?} needs a unit: e.g. 2s, 500ms, 250us"),
        u if num.trim().is_empty() => bail!("duration {s:?} is not a number with a unit (e.g. 2s); {u:?} has no number"),
        u => bail!("duration {s:?} has an unknown unit {u:?}; use ns, us, ms, s, min or h (lower case)"),
    };
    let v: f64 = num.trim().parse().with_context(|| format!("duration {s:?} is not a number with a unit (e.g. 2s)"))?;
    if !v.is_finite() || v <= 0.0 {
        bail!("duration {s:?} must be positive");
    }
    let ns = v * mult;
    if ns < 1.0 {
        bail!("duration {s:?} is shorter than 1 ns; schedlab's clock counts whole nanoseconds");
    }
    if ns > 3600e9 {
        bail!("duration {s:?} is longer than one simulated hour; use a shorter run");
    }
    Ok(ns as u64)
}

pub fn prepare(args: &RunArgs) -> Result<Prepared> {
    let machine = load_machine(&args.machine)?;
    let mut kernel = load_kernel_patched(&args.kernel, args.patch.as_deref(), args.features.as_deref())?;
    if let Some(s) = &args.sysctl {
        kernel.tunables.numa.apply(s).map_err(anyhow::Error::msg)?;
        if kernel.tunables.numa.enabled == Some(true) && !schedlab_kernel::Kernel::numa_balancing_modelled(&kernel) {
            bail!(
                "--sysctl numa_balancing=1: NUMA balancing is modelled in its v5.2 form only (docs/FIDELITY.md F-771); use --kernel v5.2, or leave numa_balancing unset ({} runs with it off)",
                kernel.name
            );
        }
    }
    let params = Params::parse(&args.set.join(",")).map_err(|e| anyhow::anyhow!("{e}"))?;
    let cores = cores_of(&machine);
    let workload = load_workload(&args.workload, &params, &machine, &cores)?;
    for t in &workload.tasks {
        if let Some(c) = &t.cpus {
            if let Some(bad) = c.iter().find(|&&x| x as usize >= machine.topology.nr_cpus()) {
                bail!("task {} is bound to CPU {bad}, but {} has {} CPUs", t.name, machine.name, machine.topology.nr_cpus());
            }
        }
    }
    let mut duration_ns = args.duration.as_deref().map(parse_duration).transpose()?;
    let mut duration_defaulted = false;
    if workload.time_bounded && duration_ns.is_none() {
        duration_ns = Some(1_000_000_000);
        duration_defaulted = true;
    }
    Ok(Prepared {
        machine,
        kernel,
        workload,
        cfg: SimConfig {
            seed: args.seed,
            duration_ns,
            schedstat: args.schedstat.is_some(),
            switch_log: args.switch_log.is_some(),
            trace: args.trace.is_some() || args.ftrace.is_some(),
            model: schedlab_machine::cost::ModelSwitches::parse(args.machine_model.as_deref().unwrap_or("")).map_err(anyhow::Error::msg)?,
        },
        duration_defaulted,
    })
}

/// A built-in by name, or a workload file: `.toml` (docs/workload-format.md)
/// or `.json` (rt-app). Files take no `--set`.
pub fn load_workload(name: &str, params: &Params, machine: &Machine, cores: &[Vec<u16>]) -> Result<Workload> {
    let is_toml = name.ends_with(".toml");
    if is_toml || name.ends_with(".json") {
        if !params.0.is_empty() {
            bail!("--set applies to built-in workloads; edit the file {name} instead");
        }
        let text = std::fs::read_to_string(name).with_context(|| format!("cannot read workload file {name}"))?;
        let w = if is_toml {
            schedlab_workload::file::from_toml_str(&text, name)
        } else {
            schedlab_workload::rtapp::from_json_str(&text, name)
        };
        return w.map_err(|e| anyhow::anyhow!("{e}"));
    }
    schedlab_workload::build(name, params, machine.topology.nr_cpus(), cores).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Domains for display (`machine show`).
pub fn domains(m: &Machine, k: &KernelProfile) -> SchedDomains {
    SchedDomains::build(&m.topology, k)
}

pub fn fmt_span(sd: &schedlab_kernel::topology::SchedDomain) -> String {
    cpulist(sd.span.iter())
}

pub fn fmt_flags(f: u32) -> String {
    flag_names(f)
}

pub fn cpu0() -> CpuId {
    CpuId(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn durations() {
        assert_eq!(parse_duration("2s").unwrap(), 2_000_000_000);
        assert_eq!(parse_duration("500ms").unwrap(), 500_000_000);
        assert_eq!(parse_duration("1.5s").unwrap(), 1_500_000_000);
        assert!(parse_duration("2").unwrap_err().to_string().contains("unit"));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("xs").is_err());
        assert!(parse_duration("0.5ns").unwrap_err().to_string().contains("1 ns"));
        assert_eq!(parse_duration("1h").unwrap(), 3_600_000_000_000);
        assert_eq!(parse_duration("2min").unwrap(), 120_000_000_000);
        assert!(parse_duration("2h").unwrap_err().to_string().contains("one simulated hour"));
        assert!(parse_duration("1S").unwrap_err().to_string().contains("unknown unit \"S\""));
        assert!(parse_duration("abc").unwrap_err().to_string().contains("not a number"));
        assert!(parse_duration("-1s").unwrap_err().to_string().contains("must be positive"));
    }
}
