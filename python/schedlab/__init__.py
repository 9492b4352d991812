"""schedlab: a deterministic simulator of the Linux fair scheduler's task placement.

    import schedlab
    schedlab.machines(); schedlab.kernels(); schedlab.workloads()     # pandas DataFrames
    r = schedlab.run(machine="x86-12", kernel="v6.12", workload="hackbench",
                     params={"groups": 2, "loops": 50}, seed=1)
    r.metric, r.cpus, r.levels, r.counters, r.json
    c = schedlab.compare(kernel="v6.6", vs="v6.12", params={"groups": [1, 2, 4]}, runs=5)
    c.summary, c.runs, c.levels, c.json                               # the CLI's statistics and --json
    df = schedlab.sweep({"kernel": ["v6.6", "v6.12"], "params": {"groups": [1, 2]}},
                        runs=3, path="results/")                     # Parquet dataset, resumable
    v = schedlab.validate(quick=True); v.claims, v.total_line          # the fidelity scorecard
    s = schedlab.reproduce("wakee-flips"); s.summary                   # a study of experiments/

Everything is computed by the Rust library (crates/lab) that the `schedlab`
command uses too: same defaults, same results, same error messages (raised
as `schedlab.SchedlabError`, a ValueError). Simulations release the GIL and
Ctrl-C interrupts them.
"""

from __future__ import annotations

import json as _json

from . import _schedlab
from ._schedlab import SchedlabError
from ._result import CompareResult, ReproduceResult, Result, ValidateResult
from ._spec import compare_spec, scenario_spec
from .dataset import load, sweep

__version__ = _schedlab.__version__

__all__ = [
    "SchedlabError",
    "Result",
    "CompareResult",
    "ValidateResult",
    "ReproduceResult",
    "machines",
    "kernels",
    "workloads",
    "run",
    "compare",
    "sweep",
    "validate",
    "reproduce",
    "studies",
    "load",
    "machine_file",
    "workload_file",
]


def _frame(records, columns=None):
    import pandas as pd

    return pd.DataFrame.from_records(records, columns=columns)


def machines():
    """Machine presets: name, description and shape (CPUs, nodes, LLCs, cores, threads per core)."""
    return _frame(_json.loads(_schedlab.machines()))


def kernels():
    """Kernel profiles (kind "profile"), deprecated names and patches (kind "patch")."""
    return _frame(_json.loads(_schedlab.kernels()))


def workloads():
    """Built-in workloads: name, summary, metric and parameters (a dict key -> default)."""
    recs = _json.loads(_schedlab.workloads())
    for r in recs:
        r["params"] = {p["key"]: p["default"] for p in r["params"]}
    return _frame(recs, ["name", "summary", "metric", "params"])


def machine_file(data, directory=None):
    """A machine given as a dict (the keys of docs/machine-format.md) written as a
    .toml file; returns its path, to pass as `machine=`. Dicts given to `run`,
    `compare` and `sweep` as `machine=` go through here."""
    from ._spec import dict_file

    return dict_file("machine", data, directory)


def workload_file(data, directory=None):
    """A workload given as a dict (docs/workload-format.md) written as a .toml file; returns its path."""
    from ._spec import dict_file

    return dict_file("workload", data, directory)


def run(machine=None, kernel=None, workload=None, params=None, seed=None, duration=None, patch=None,
        features=None, machine_model=None, schedstat=False):
    """Run one simulation; returns a `Result`.

    machine: preset name, "local", a .toml/.xml file or a dict; kernel: profile name;
    workload: built-in name, a .toml/.json file or a dict; params: dict of workload
    parameters; duration: "2s", "500ms" (default: 1s for time-bounded workloads).
    A run whose metric has no valid value raises SchedlabError, as the CLI does.
    """
    spec = scenario_spec(machine=machine, kernel=kernel, workload=workload, params=params, seed=seed,
                         duration=duration, patch=patch, features=features, machine_model=machine_model,
                         schedstat=schedstat)
    text = _schedlab.run(_json.dumps(spec))
    res = Result(text, spec)
    if res.truncated is not None:
        raise SchedlabError(f"{res.data['workload']} on {res.data['machine']['name']} with {res.data['kernel']}: "
                            f"no result: {res.truncated}")
    return res


def compare(machine=None, workload=None, kernel=None, vs=None, params=None, runs=None, duration=None,
            patch=None, patch_b=None, features=None, features_b=None, machine_model=None,
            machine_model_b=None, jobs=None):
    """A/B comparison, as `schedlab compare`: side A (kernel, patch, features) against
    side B (vs, patch_b, features_b; default: A's), each point of the swept parameter
    (a params value that is a list) `runs` times with seeds 1..runs. Returns a
    `CompareResult` with the CLI's statistics (means as mmtests takes them, CV,
    Welch's t-test), per-run and per-level tables, and the `schedlab compare
    --json` document (`.json`)."""
    spec = compare_spec(machine=machine, workload=workload, kernel=kernel, vs=vs, params=params, runs=runs,
                        duration=duration, patch=patch, patch_b=patch_b, features=features, features_b=features_b,
                        machine_model=machine_model, machine_model_b=machine_model_b, jobs=jobs)
    text, warnings = _schedlab.compare(_json.dumps(spec))
    if warnings:
        import warnings as _w

        for w in warnings:
            _w.warn(w, stacklevel=2)
    return CompareResult(text, spec)


def _path(p):
    import os

    return None if p is None else os.fspath(p)


def validate(case=None, quick=False, runs=None, seed=None, jobs=None, dir=None):
    """The fidelity scorecard, as `schedlab validate`: runs the validation case files
    (docs/validation-format.md; `dir`, default ./validation or the source tree's),
    judges every claim against the published result and every A/B claim's negative
    controls. case: one case name or file stem; quick: only the `quick = true` cases;
    runs: runs per side and point for every case (default: each case's own); seed:
    first seed (default 1). Returns a `ValidateResult`; a negative control that
    agrees is reported in `.control_error` (the CLI exits with that error)."""
    spec = {"case": case, "quick": bool(quick), "runs": runs, "jobs": jobs, "dir": _path(dir)}
    if seed is not None:
        spec["seed"] = seed
    return ValidateResult(*_schedlab.validate(_json.dumps(spec)))


def reproduce(name, dir=None, jobs=None):
    """Reproduce a study, as `schedlab reproduce`: an experiment file
    (docs/experiment-format.md) by stem under `dir` (default ./experiments or the
    source tree's) or by path to a .toml file; every comparison is run as
    `compare` runs it. Returns a `ReproduceResult`."""
    spec = {"name": _path(name), "dir": _path(dir), "jobs": jobs}
    text, warnings = _schedlab.reproduce(_json.dumps(spec))
    if warnings:
        import warnings as _w

        for w in warnings:
            _w.warn(w, stacklevel=2)
    return ReproduceResult(text)


def studies(dir=None):
    """The studies `reproduce` takes: name (file stem), description, number of comparisons."""
    return _frame(_json.loads(_schedlab.studies(_path(dir))), ["name", "description", "comparisons"])
