//! Built-in benchmarks, one file each (../shared/reference/benchmark-workloads.md).

pub mod context_switch1;
pub mod costs;
pub mod hackbench;
pub mod pgbench;
pub mod pipe;
pub mod soaker;

use crate::params::{ParamDoc, Params};
use crate::{Workload, WorkloadError};

/// A built-in: name, what it models, its parameters and its metric.
pub struct Builtin {
    pub name: &'static str,
    pub summary: &'static str,
    pub metric: &'static str,
    pub params: &'static [ParamDoc],
    /// `(params, nr_cpus, cores)` where `cores[i]` lists the CPUs of core i.
    pub build: fn(&Params, usize, &[Vec<u16>]) -> Result<Workload, WorkloadError>,
}

pub const BUILTINS: &[Builtin] = &[
    hackbench::BUILTIN,
    pipe::BUILTIN,
    context_switch1::BUILTIN,
    pgbench::BUILTIN,
    soaker::BUILTIN,
];

pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Mark and counter ids used by the built-ins.
pub(crate) const MARK_START: u32 = 0;
pub(crate) const MARK_END: u32 = 1;
pub(crate) const COUNTER_OPS: u32 = 0;
