//! `schedlab._schedlab`: the native half of the Python package, a thin
//! layer over `schedlab-lab`. Specs come in and results go out as JSON text
//! (the library's one serialisation); the Python half (python/schedlab)
//! builds DataFrames. Simulations run with the GIL released, on a helper
//! thread, while the calling thread polls for signals so Ctrl-C interrupts
//! a run (KeyboardInterrupt) within milliseconds.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use schedlab_lab::{CompareSpec, ReproduceSpec, ScenarioSpec, SweepSpec, ValidateSpec};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

create_exception!(_schedlab, SchedlabError, PyValueError, "A schedlab error: bad input (the message names the problem and the fix).");

fn err(e: anyhow::Error) -> PyErr {
    SchedlabError::new_err(format!("{e:#}"))
}

fn parse<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> PyResult<T> {
    serde_json::from_str(text).map_err(|e| SchedlabError::new_err(format!("{what}: {e}")))
}

/// Runs `work` on a helper thread with the GIL released; every 20 ms the
/// calling thread takes the GIL to run Python's signal handlers. If one
/// raises (Ctrl-C: KeyboardInterrupt), `stop` is set, the work ends at its
/// next check, and the exception is returned.
fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce(Arc<AtomicBool>) -> anyhow::Result<T> + Send + 'static,
) -> PyResult<T> {
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let handle = std::thread::spawn(move || work(s2));
    let mut pending: Option<PyErr> = None;
    py.detach(|| {
        while !handle.is_finished() {
            std::thread::sleep(std::time::Duration::from_millis(20));
            if pending.is_none() {
                if let Err(e) = Python::attach(|py| py.check_signals()) {
                    stop.store(true, Ordering::Relaxed);
                    pending = Some(e);
                }
            }
        }
    });
    let out = handle.join().map_err(|_| SchedlabError::new_err("a simulation run failed (internal error); please report it"))?;
    if let Some(e) = pending {
        return Err(e);
    }
    out.map_err(err)
}

/// Runs one scenario (a ScenarioSpec as JSON); returns the RunReport as JSON.
#[pyfunction]
fn run(py: Python<'_>, spec_json: &str) -> PyResult<String> {
    let spec: ScenarioSpec = parse("run spec", spec_json)?;
    let rep = interruptible(py, move |stop| schedlab_lab::run_stoppable(&spec, Some(&stop)))?;
    Ok(serde_json::to_string(&rep).expect("a RunReport always serialises"))
}

/// Runs an A/B comparison (a CompareSpec as JSON); returns the report as
/// JSON (`Report::to_json`: the document `schedlab compare --json` writes),
/// and the warnings about truncated runs.
#[pyfunction]
fn compare(py: Python<'_>, spec_json: &str) -> PyResult<(String, Vec<String>)> {
    let spec: CompareSpec = parse("compare spec", spec_json)?;
    let (rep, warnings) = interruptible(py, move |stop| {
        let plan = schedlab_lab::compare::plan(&spec)?;
        let mut progress = schedlab_lab::compare::Progress::quiet(plan.nr_runs());
        let mut warnings = Vec::new();
        let rep = schedlab_lab::compare::execute(&plan, &mut progress, &mut |w| warnings.push(w.to_string()), Some(&stop))?;
        Ok((rep, warnings))
    })?;
    Ok((rep.to_json().to_string(), warnings))
}

/// Runs the validation case files (a ValidateSpec as JSON); returns the
/// scorecard as JSON (the document of `schedlab validate --json`) and the
/// error the CLI exits with when a negative control agrees.
#[pyfunction]
fn validate(py: Python<'_>, spec_json: &str) -> PyResult<(String, Option<String>)> {
    let spec: ValidateSpec = parse("validate spec", spec_json)?;
    let card = interruptible(py, move |stop| schedlab_lab::validate::validate_stoppable(&spec, Some(&stop)))?;
    Ok((serde_json::to_string(&card.to_json()).expect("a scorecard always serialises"), card.control_error()))
}

/// Reproduces a study (a ReproduceSpec as JSON); returns the study data as
/// JSON (each comparison's report as `compare` returns it), and the warnings
/// about truncated runs.
#[pyfunction]
fn reproduce(py: Python<'_>, spec_json: &str) -> PyResult<(String, Vec<String>)> {
    let spec: ReproduceSpec = parse("reproduce spec", spec_json)?;
    let (study, warnings) = interruptible(py, move |stop| schedlab_lab::reproduce::reproduce_stoppable(&spec, Some(&stop)))?;
    Ok((serde_json::to_string(&study).expect("a study always serialises"), warnings))
}

/// The studies of an experiments directory (None: the default one), as JSON records.
#[pyfunction]
#[pyo3(signature = (dir=None))]
fn studies(dir: Option<std::path::PathBuf>) -> PyResult<String> {
    let l = schedlab_lab::reproduce::list(dir.as_deref()).map_err(err)?;
    Ok(serde_json::to_string(&l).expect("a list always serialises"))
}

/// The points of a sweep matrix (a SweepSpec as JSON), each a ScenarioSpec as
/// canonical JSON (the text the sweep keys its results by).
#[pyfunction]
fn sweep_points(spec_json: &str) -> PyResult<Vec<String>> {
    let spec: SweepSpec = parse("sweep spec", spec_json)?;
    let pts = spec.points().map_err(err)?;
    Ok(pts.iter().map(|p| serde_json::to_string(p).expect("a spec always serialises")).collect())
}

/// Prepares a scenario (a ScenarioSpec as JSON) without running it: raises
/// SchedlabError with the CLI's message if anything is wrong.
#[pyfunction]
fn check(spec_json: &str) -> PyResult<()> {
    let spec: ScenarioSpec = parse("run spec", spec_json)?;
    schedlab_lab::prepare(&spec).map(|_| ()).map_err(err)
}

/// The canonical JSON of a ScenarioSpec (defaults filled in).
#[pyfunction]
fn canonical_spec(spec_json: &str) -> PyResult<String> {
    let spec: ScenarioSpec = parse("run spec", spec_json)?;
    Ok(serde_json::to_string(&spec).expect("a spec always serialises"))
}

/// The default ScenarioSpec and CompareSpec as JSON.
#[pyfunction]
fn defaults() -> (String, String) {
    (serde_json::to_string(&ScenarioSpec::default()).unwrap(), serde_json::to_string(&CompareSpec::default()).unwrap())
}

/// Machine presets with their shape, as JSON records.
#[pyfunction]
fn machines() -> PyResult<String> {
    let mut out = Vec::new();
    for p in schedlab_machine::presets() {
        let m = schedlab_lab::scenario::load_machine(p.name).map_err(err)?;
        let t = &m.topology;
        out.push(json!({
            "name": p.name, "description": p.description, "cpus": t.nr_cpus(), "packages": t.nr_packages(),
            "nodes": t.nr_nodes(), "llcs": t.nr_llcs(), "cores": t.nr_cores(), "threads_per_core": t.threads_per_core(),
        }));
    }
    Ok(serde_json::to_string(&out).unwrap())
}

/// Kernel profiles, deprecated names and patches, as JSON records.
#[pyfunction]
fn kernels() -> String {
    use schedlab_kernel::profile;
    let mut out = Vec::new();
    for p in profile::profiles() {
        out.push(json!({"name": p.name, "kind": "profile", "summary": p.summary}));
    }
    for (n, base, patches, _) in profile::DEPRECATED {
        out.push(json!({"name": n, "kind": "deprecated", "summary": format!("deprecated: {base} --patch {patches}")}));
    }
    for (n, _, d) in profile::Patch::ALL {
        out.push(json!({"name": n, "kind": "patch", "summary": d}));
    }
    serde_json::to_string(&out).unwrap()
}

/// Built-in workloads with their metric and parameters, as JSON records.
#[pyfunction]
fn workloads() -> String {
    let out: Vec<_> = schedlab_workload::builtin::BUILTINS
        .iter()
        .map(|b| {
            json!({
                "name": b.name, "summary": b.summary, "metric": b.metric,
                "params": b.params.iter().map(|p| json!({"key": p.key, "default": p.default, "help": p.help})).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::to_string(&out).unwrap()
}

/// A machine or workload given as a dict (JSON), as file text (TOML) in the
/// documented formats (docs/machine-format.md, docs/workload-format.md);
/// `kind` is "machine" or "workload". The text is checked by loading it.
#[pyfunction]
fn to_toml(kind: &str, data_json: &str, name: &str) -> PyResult<String> {
    let v: serde_json::Value = parse(kind, data_json)?;
    let text = toml::to_string(&v).map_err(|e| SchedlabError::new_err(format!("{kind} {name}: cannot be written as TOML: {e}")))?;
    match kind {
        "machine" => schedlab_machine::from_toml_str(&text, name).map(|_| ()).map_err(|e| SchedlabError::new_err(format!("{e}")))?,
        "workload" => {
            schedlab_workload::file::from_toml_str(&text, name).map(|_| ()).map_err(|e| SchedlabError::new_err(format!("{e}")))?
        }
        _ => return Err(SchedlabError::new_err(format!("unknown kind {kind:?}; use machine or workload"))),
    }
    Ok(text)
}

#[pymodule]
fn _schedlab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SchedlabError", m.py().get_type::<SchedlabError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(studies, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_points, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_spec, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(defaults, m)?)?;
    m.add_function(wrap_pyfunction!(machines, m)?)?;
    m.add_function(wrap_pyfunction!(kernels, m)?)?;
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(to_toml, m)?)?;
    Ok(())
}
