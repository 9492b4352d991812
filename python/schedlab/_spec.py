"""Building the library's specs (ScenarioSpec, CompareSpec, SweepSpec as JSON)
from Python values. Defaults are not written here: a field left out takes the
library's default (crates/lab/src/spec.rs)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile

from . import _schedlab


def _str(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def dict_file(kind, data, directory=None):
    """Write a machine/workload dict as TOML to a content-addressed file; return its path."""
    name = str(data.get("name", kind)) if isinstance(data, dict) else kind
    text = _schedlab.to_toml(kind, json.dumps(data), name)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    directory = directory or os.path.join(tempfile.gettempdir(), "schedlab-specs")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{kind}-{digest}.toml")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    return path


def _machine(v):
    return dict_file("machine", v) if isinstance(v, dict) else (os.fspath(v) if v is not None else None)


def _workload(v):
    return dict_file("workload", v) if isinstance(v, dict) else (os.fspath(v) if v is not None else None)


def _params(p):
    if p is None:
        return []
    if isinstance(p, dict):
        return [[str(k), _str(v)] for k, v in p.items()]
    return [[str(k), _str(v)] for k, v in p]


def scenario_spec(machine=None, kernel=None, workload=None, params=None, seed=None, duration=None, patch=None,
                  features=None, machine_model=None, schedstat=False):
    spec = {
        "machine": _machine(machine),
        "kernel": kernel,
        "workload": _workload(workload),
        "params": _params(params),
        "seed": seed,
        "duration": duration,
        "patch": patch,
        "features": features,
        "machine_model": machine_model,
        "schedstat": bool(schedstat),
    }
    spec = {k: v for k, v in spec.items() if v is not None}
    return json.loads(_schedlab.canonical_spec(json.dumps(spec)))


def _names(v):
    if v is None:
        return None
    if isinstance(v, (str, os.PathLike, dict)):
        v = [v]
    return list(v)


def compare_spec(machine=None, workload=None, kernel=None, vs=None, params=None, runs=None, duration=None,
                 patch=None, patch_b=None, features=None, features_b=None, machine_model=None,
                 machine_model_b=None, jobs=None):
    sets = []
    for k, v in (params or {}).items():
        vals = v if isinstance(v, (list, tuple)) else [v]
        sets.append(f"{k}=" + ",".join(_str(x) for x in vals))
    machines = _names(machine)
    workloads = _names(workload)
    spec = {
        "machines": [_machine(m) for m in machines] if machines else None,
        "workloads": [_workload(w) for w in workloads] if workloads else None,
        "set": sets,
        "kernel": kernel,
        "patch": patch,
        "features": features,
        "machine_model": machine_model,
        "vs": vs,
        "patch_b": patch_b,
        "features_b": features_b,
        "machine_model_b": machine_model_b,
        "runs": runs,
        "duration": duration,
        "jobs": jobs,
    }
    return {k: v for k, v in spec.items() if v is not None}


_SWEEP_LISTS = {"machine": "machines", "kernel": "kernels", "patch": "patches", "workload": "workloads",
                "seed": "seeds"}
_SWEEP_BASE = {"duration", "features", "machine_model", "schedstat"}


def sweep_spec(matrix, runs=None):
    """A SweepSpec from a matrix dict: machine/kernel/patch/workload/seed as a value or a
    list, params as {key: value or list}, plus fixed duration/features/machine_model."""
    unknown = set(matrix) - set(_SWEEP_LISTS) - {"params"} - _SWEEP_BASE
    if unknown:
        raise _schedlab.SchedlabError(
            f"sweep matrix has unknown keys {sorted(unknown)}; use machine, kernel, patch, workload, params, seed, "
            "duration, features, machine_model")
    spec = {"base": {}}
    for key, field in _SWEEP_LISTS.items():
        if key not in matrix:
            continue
        v = matrix[key]
        vals = list(v) if isinstance(v, (list, tuple)) else [v]
        if key == "machine":
            vals = [_machine(x) for x in vals]
        elif key == "workload":
            vals = [_workload(x) for x in vals]
        elif key == "seed":
            vals = [int(x) for x in vals]
        spec[field] = vals
    params = []
    for k, v in (matrix.get("params") or {}).items():
        vals = v if isinstance(v, (list, tuple)) else [v]
        params.append([str(k), [_str(x) for x in vals]])
    spec["params"] = params
    for k in _SWEEP_BASE & set(matrix):
        spec["base"][k] = matrix[k]
    if runs is not None:
        spec["runs"] = int(runs)
    return spec
