//! The `schedlab` command: the only place (with a later Python package) that
//! does IO. Everything here is glue: parse, validate at the edge, call the
//! engine, print.

mod bench;
mod bisect;
mod compare;
mod demo;
mod explain;
mod html;
mod import;
mod numa_out;
use schedlab_oracle as oracle;
mod output;
mod record;
mod reproduce;
mod schedstat_report;
mod trace;
mod trace_profile;
mod validate;
#[cfg(test)]
mod wellformed;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use schedlab_kernel::profile;
use schedlab_kernel::topology::flag_names;
pub use schedlab_lab::scenario::{
    cores_of, domains, load_kernel, load_kernel_patched, load_machine, load_workload, parse_duration, Prepared,
};
use schedlab_lab::spec::{ScenarioSpec, DEFAULT_KERNEL, DEFAULT_MACHINE, DEFAULT_WORKLOAD};
pub use schedlab_lab::stats;
use schedlab_topology::{cpulist, CpuId};
use schedlab_workload::{builtin, Params};
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
    /// Which release step, and which difference inside it (feature bit, algorithm variant), carries a metric change: `bisect --kernel A --vs B`.
    Bisect(bisect::BisectArgs),
    /// A /proc/schedstat snapshot (`run --schedstat FILE`) as `perf sched stats report` / `diff` lay it out.
    Schedstat {
        #[command(subcommand)]
        cmd: SchedstatCmd,
    },
    /// Fidelity scorecard: published kernel results (validation/*.toml, docs/validation-format.md) against the model.
    Validate(validate::ValidateArgs),
    /// Trace a real command's scheduling through tracefs (root): `schedlab record -o FILE -- CMD ARGS...`.
    Record(record::RecordArgs),
    /// Turn a trace (ftrace, trace-cmd report, perf script text) into a workload file: `schedlab import TRACE -o FILE.toml`.
    Import(import::ImportArgs),
    /// Per-role CPU, switches, wakeups, migrations, run delay of a trace or a simulated run; `--vs` shows both.
    Profile(trace_profile::ProfileArgs),
    /// Fixed performance scenarios: simulated context switches and events per wall-clock second.
    Bench {
        /// Print a JSON list instead of a table.
        #[arg(long)]
        json: bool,
        /// Run only scenarios whose name contains this string.
        #[arg(long)]
        filter: Option<String>,
        /// Scenario set: `engine` (default) or `scale` (ping-pong, sleep/wake on
        /// 4 to 1024 CPUs, 1024-CPU hackbench; with sim s/wall s and ns/switch).
        #[arg(long)]
        suite: Option<String>,
    },
}

#[derive(Subcommand)]
enum MachineCmd {
    /// Print the machine and its sched-domain hierarchy (preset name, `local`, or a .toml/.xml file).
    Show {
        name: String,
        /// Kernel profile whose sched_init() rules to apply.
        #[arg(long, default_value = DEFAULT_KERNEL)]
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
        #[arg(long, default_value = DEFAULT_MACHINE)]
        machine: String,
        /// Output file (default: stdout).
        #[arg(long, short = 'o')]
        output: Option<std::path::PathBuf>,
    },
}

#[derive(Subcommand)]
enum SchedstatCmd {
    /// Per-domain (and with --cpus per-CPU) report of one snapshot.
    Report {
        file: std::path::PathBuf,
        /// Also every CPU, after the all-CPU summary.
        #[arg(long)]
        cpus: bool,
    },
    /// Two snapshots side by side with the percent change.
    Diff {
        a: std::path::PathBuf,
        b: std::path::PathBuf,
        #[arg(long)]
        cpus: bool,
    },
}

#[derive(Subcommand)]
enum KernelCmd {
    Show {
        name: String,
        /// Patch overlays to show on top of the profile (`schedlab kernels` lists them).
        #[arg(long)]
        patch: Option<String>,
    },
}

#[derive(clap::Args, Clone)]
pub struct RunArgs {
    /// Machine preset, `local`, or a .toml / .xml (hwloc) file.
    #[arg(long, default_value = DEFAULT_MACHINE)]
    pub machine: String,
    /// Kernel profile (`schedlab kernels`).
    #[arg(long, default_value = DEFAULT_KERNEL)]
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
    #[arg(long, default_value = DEFAULT_WORKLOAD)]
    pub workload: String,
    /// Workload parameters key=value[,key=value...]; may be repeated.
    #[arg(long = "set")]
    pub set: Vec<String>,
    #[arg(long, default_value_t = schedlab_lab::spec::DEFAULT_SEED)]
    pub seed: u64,
    /// Simulated run time for time-bounded workloads (e.g. 2s, 500ms); for run-to-completion workloads a cap that is an error if it cuts the run.
    #[arg(long, allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Machine-model components to switch off for ablation: NO_CACHE,NO_L1 (the L1 hot-set refill alone),NO_SMT,NO_MEMBW,NO_NUMA,NO_LOCKS,NO_WAKELAT,NO_SWITCH,NO_SCAN,NO_NOISE (the machine's background: tick and interrupt time, kernel threads).
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
    /// Explain every placement decision: wakeup paths by rule and level, wake_affine clauses, wakeup preemption by clause, select_idle_sibling efficiency, balance outcomes (with --trace: the records as Perfetto tracks; with --json: an "explain" object).
    #[arg(long)]
    pub explain: bool,
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
        Cmd::Kernel { cmd: KernelCmd::Show { name, patch } } => {
            let k = load_kernel_patched(&name, patch.as_deref(), None)?;
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
            let (res, explained, records) = if args.explain {
                let (r, x, recs) = explain::run_explained(&prep, &prep.cfg, args.trace.is_some());
                (r, Some(x), recs)
            } else {
                (schedlab_engine::run(&prep.machine, prep.kernel.clone(), &prep.workload, &prep.cfg), None, Vec::new())
            };
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
                        .and_then(|_| explained.as_ref().map_or(Ok(()), |x| explain::write_perfetto(&records, tr, x, &mut w)))
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
                let mut v = output::run_json(&prep, &args, &res);
                if let (Some(x), Some(o)) = (&explained, v.as_object_mut()) {
                    o.insert("explain".into(), explain::report_json(x));
                }
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                print!("{}", output::run_summary(&prep, &args, &res));
                if let Some(x) = &explained {
                    print!("\n{}", explain::report_text(x));
                }
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
            let text = schedlab_workload::file::to_toml(&w, &header);
            match output {
                Some(p) => std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))?,
                None => print!("{text}"),
            }
            Ok(())
        }
        Cmd::Bench { json, filter, suite } => bench::bench(json, filter.as_deref(), suite.as_deref()),
        Cmd::Compare(args) => compare::compare(&args),
        Cmd::Reproduce(args) => reproduce::reproduce(&args),
        Cmd::Oracle(args) => oracle::oracle(&args),
        Cmd::Validate(args) => validate::validate(&args),
        Cmd::Record(args) => record::record(&args),
        Cmd::Import(args) => import::import(&args),
        Cmd::Profile(args) => trace_profile::profile(&args),
        Cmd::Bisect(args) => bisect::bisect(&args),
        Cmd::Schedstat { cmd: SchedstatCmd::Report { file, cpus } } => {
            print!("{}", schedstat_report::report(&file, cpus)?);
            Ok(())
        }
        Cmd::Schedstat { cmd: SchedstatCmd::Diff { a, b, cpus } } => {
            print!("{}", schedstat_report::diff(&a, &b, cpus)?);
            Ok(())
        }
    }
}

impl RunArgs {
    /// The library's scenario for these arguments.
    pub fn spec(&self) -> Result<ScenarioSpec> {
        ScenarioSpec {
            machine: self.machine.clone(),
            kernel: self.kernel.clone(),
            patch: self.patch.clone(),
            features: self.features.clone(),
            workload: self.workload.clone(),
            params: Vec::new(),
            seed: self.seed,
            duration: self.duration.clone(),
            machine_model: self.machine_model.clone(),
            schedstat: self.schedstat.is_some(),
            switch_log: self.switch_log.is_some(),
            trace: self.trace.is_some() || self.ftrace.is_some(),
            sysctl: self.sysctl.clone(),
        }
        .with_sets(&self.set)
    }
}

/// `schedlab_lab::prepare` for the CLI's run arguments.
pub fn prepare(args: &RunArgs) -> Result<Prepared> {
    let spec = match args.spec() {
        Ok(s) => s,
        Err(e) => {
            // A bad machine or kernel is reported before a bad --set, as always.
            load_machine(&args.machine)?;
            load_kernel_patched(&args.kernel, args.patch.as_deref(), args.features.as_deref())?;
            return Err(e);
        }
    };
    schedlab_lab::prepare(&spec)
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
