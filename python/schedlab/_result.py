"""Result objects: the library's JSON (one serialisation, the same document as
`schedlab run --json`) with its tables as pandas DataFrames (and polars, when
installed)."""

from __future__ import annotations

import json

COUNTERS = ["l2_misses", "llc_misses", "dram_bytes", "remote_bytes", "rq_lock_wait_ns", "idle_exit_ns",
            "mm_switches", "group_switches"]


def _to_polars(df):
    try:
        import polars as pl
    except ImportError as e:  # optional dependency
        raise ImportError("to_polars() needs polars: pip install polars (or schedlab[polars])") from e
    return pl.from_pandas(df)


class Result:
    """One run: `.metric`, `.counters`, `.cpus`, `.levels`, `.groups`, `.latencies`
    (pandas DataFrames), `.json` (the `schedlab run --json` document) and `.data` (it, parsed)."""

    TABLES = ("counters", "cpus", "levels", "groups", "latencies")

    def __init__(self, text, spec):
        self.json = text
        self.data = json.loads(text)
        self.spec = spec

    @property
    def metric(self):
        return self.data["metric"]["value"]

    @property
    def metric_name(self):
        return self.data["metric"]["name"]

    @property
    def metric_unit(self):
        return self.data["metric"]["unit"]

    @property
    def higher_is_better(self):
        return self.data["metric"]["higher_is_better"]

    @property
    def truncated(self):
        return self.data.get("truncated")

    @property
    def counters(self):
        """Scalar counters: context switches, migrations, wakeups, run delay, machine model,
        channel waits (`channel_reads`, `channel_writes`, `channel_pipe_rewaits`)."""
        import pandas as pd

        d = self.data
        rows = {
            "simulated_ns": d["simulated_ns"],
            "voluntary_switches": d["context_switches"]["voluntary"],
            "involuntary_switches": d["context_switches"]["involuntary"],
            "migrations": d["migrations"],
            "wakeups": d["wakeups"],
            "ttwu_count": d["schedstat"]["ttwu_count"],
            "ttwu_local": d["schedstat"]["ttwu_local"],
            **{f"run_delay_{k}_ns": v for k, v in d["run_delay_ns"].items()},
            **{k: v for k, v in d["machine"].items() if k != "name"},
            "group_switches": d["group_switches"],
            # Blocking channel reads / writes (absent from the JSON when none blocked).
            **{f"channel_{k}": v for k, v in (d.get("channel_waits") or {"reads": 0, "writes": 0, "pipe_rewaits": 0}).items()},
            "tasks_created": d["tasks"]["created"],
            "tasks_exited": d["tasks"]["exited"],
            "events": d["events"],
        }
        return pd.DataFrame({"counter": list(rows), "value": list(rows.values())})

    @property
    def cpus(self):
        """Per CPU: busy and idle time (ns) and the busy share."""
        import pandas as pd

        df = pd.DataFrame.from_records(self.data["cpus"], columns=["cpu", "busy_ns", "idle_ns"])
        total = (df["busy_ns"] + df["idle_ns"]).where(lambda s: s > 0)
        df["busy_share"] = (df["busy_ns"] / total).fillna(0.0)
        return df

    @property
    def levels(self):
        """Per sched-domain level (bottom-up): wakeups (remote, affine, shares of all) and load balancing."""
        import pandas as pd

        return pd.DataFrame.from_records(self.data["schedstat"]["levels"],
                                         columns=["level", "ttwu_wake_remote", "ttwu_move_affine",
                                                  "wake_remote_share", "affine_share", "lb_count", "lb_balanced",
                                                  "lb_failed", "lb_gained", "alb_pushed"])

    @property
    def groups(self):
        import pandas as pd

        return pd.DataFrame.from_records(self.data["groups"], columns=["name", "shares", "tasks", "runtime_ns"])

    @property
    def latencies(self):
        import pandas as pd

        return pd.DataFrame.from_records(self.data["latencies"],
                                         columns=["hist", "count", "mean_ns", "p50_ns", "p90_ns", "p95_ns", "p99_ns",
                                                  "p999_ns", "max_ns"])

    def to_polars(self, table="cpus"):
        """One of the tables (`Result.TABLES`) as a polars DataFrame (needs polars)."""
        if table not in self.TABLES:
            raise ValueError(f"unknown table {table!r}; use one of {', '.join(self.TABLES)}")
        return _to_polars(getattr(self, table))

    def __repr__(self):
        d = self.data
        return (f"<schedlab.Result {d['workload']} on {d['machine']['name']}, kernel {d['kernel']}, seed {d['seed']}: "
                f"{self.metric_name} = {self.metric:.6g} {self.metric_unit}>")


LEVEL_COUNTERS = ["ttwu_wake_remote", "ttwu_move_affine", "lb_count", "lb_balanced", "lb_failed", "lb_gained",
                  "alb_pushed"]


class CompareResult:
    """An A/B comparison: `.summary` (one row per machine, workload and point: the
    CLI's means, CV, change and Welch's t-test), `.runs` (one row per run), `.levels`
    (one row per run and sched-domain level: the schedstat counters), `.json` (the
    `schedlab compare --json` document: the library's compare report) and `.data`
    (it, parsed). Records of a table are ordered point, side, seed."""

    TABLES = ("summary", "runs", "levels")

    def __init__(self, text, spec):
        self.json = text
        self.data = json.loads(text)
        self.spec = spec

    @property
    def summary(self):
        import pandas as pd

        rows = []
        for t in self.data["tables"]:
            for r in t["rows"]:
                w = r["welch"] or {}
                rows.append({
                    "machine": t["machine"], "workload": t["workload"], "metric": t["info"]["name"],
                    "unit": t["info"]["unit"], "higher_is_better": t["info"]["higher_is_better"],
                    "mean_type": "Hmean" if t["info"]["higher_is_better"] else "Amean",
                    "param": t["param"], "point": r["label"], "param_value": r["value"],
                    "a_mean": r["a_mean"], "a_cv_pct": r["a_cv"], "b_mean": r["b_mean"], "b_cv_pct": r["b_cv"],
                    "change_pct": r["change_pct"], "welch_t": w.get("t"), "welch_df": w.get("df"),
                    "p_value": w.get("p"), "significant": r["significant"],
                    "affine_share_a": r["affine_a"], "affine_share_b": r["affine_b"],
                    "migrations_a": r["migrations_a"], "migrations_b": r["migrations_b"],
                })
        return pd.DataFrame(rows)

    def _records(self):
        """(run key columns, record) per run, tables in order, records ordered point, side, seed."""
        n = self.data["runs"]
        sides = self.data["sides"]
        for t in self.data["tables"]:
            for i, x in enumerate(t["recs"]):
                pi, si, k = i // n // 2, (i // n) % 2, i % n
                key = {
                    "machine": t["machine"], "workload": t["workload"], "side": "AB"[si],
                    "kernel": sides[si]["kernel"], "point": t["points"][pi][0], "param": t["param"],
                    "param_value": t["rows"][pi]["value"], "seed": k + 1,
                }
                yield key, x

    @property
    def runs(self):
        import pandas as pd

        rows = []
        for key, x in self._records():
            row = dict(key)
            row.update({
                "metric": None if x["missing"] else x["metric"], "truncated": x["missing"],
                "voluntary_switches": x["voluntary"], "involuntary_switches": x["involuntary"],
                "migrations": x["migrations"], "wakeups": x["wakeups"], "ttwu_count": x["ttwu_count"],
                "ttwu_local": x["ttwu_local"], "ttwu_move_affine": x["ttwu_move_affine"],
                **{f"run_delay_{q}_ns": x["run_delay_ns"][q] for q in ("p50", "p90", "p99", "max")},
                "simulated_ns": x["simulated_ns"],
            })
            row.update({c: x["counters"][c] for c in COUNTERS})
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def levels(self):
        """Per run and sched-domain level (bottom-up; `depth` 0 is the lowest): the
        schedstat counters of the engine's per-level type (wakeups remote and
        affine, load balancing) and the wakeup shares of all try_to_wake_up() calls."""
        import pandas as pd

        rows = []
        for key, x in self._records():
            for depth, lv in enumerate(x["levels"]):
                row = dict(key, depth=depth, level=lv["level"])
                row.update({c: lv[c] for c in LEVEL_COUNTERS})
                calls = x["ttwu_count"]
                row["wake_remote_share"] = lv["ttwu_wake_remote"] / calls if calls else 0.0
                row["affine_share"] = lv["ttwu_move_affine"] / calls if calls else 0.0
                rows.append(row)
        cols = ["machine", "workload", "side", "kernel", "point", "param", "param_value", "seed", "depth", "level",
                *LEVEL_COUNTERS, "wake_remote_share", "affine_share"]
        return pd.DataFrame(rows, columns=cols)

    def to_polars(self, table="summary"):
        """One of the tables (`CompareResult.TABLES`) as a polars DataFrame (needs polars)."""
        if table not in self.TABLES:
            raise ValueError(f"unknown table {table!r}; use one of {', '.join(self.TABLES)}")
        return _to_polars(getattr(self, table))

    def __repr__(self):
        s = self.data["sides"]
        return (f"<schedlab.CompareResult A: {s[0]['kernel']} B: {s[1]['kernel']}, {len(self.data['tables'])} table(s), "
                f"{self.data['runs']} runs per side and point>")


class ValidateResult:
    """The fidelity scorecard (`schedlab validate --json`, one document): `.claims`
    (one row per claim: case, claim, kind, label, published, schedlab, tolerance,
    verdict), `.controls` (the negative controls, each of which must disagree),
    `.totals`, `.total_line` (the CLI's last line), `.control_error` (None, or the
    CLI's error when a control agrees), `.json` and `.data` (it, parsed)."""

    def __init__(self, text, control_error=None):
        self.json = text
        self.data = json.loads(text)
        self.control_error = control_error

    @property
    def totals(self):
        return self.data["totals"]

    @property
    def total_line(self):
        return self.data["total_line"]

    def _rows(self, key, extra):
        import pandas as pd

        rows = []
        for c in self.data["cases"]:
            for x in c[key]:
                row = {"case": c["name"], "claim": x["claim"]}
                row.update({k: x[k] for k in extra})
                row.update({k: x[k] for k in ("published", "schedlab", "tolerance", "verdict", "reason")})
                rows.append(row)
        return pd.DataFrame(rows, columns=["case", "claim", *extra, "published", "schedlab", "tolerance", "verdict",
                                           "reason"])

    @property
    def claims(self):
        return self._rows("claims", ("kind", "label"))

    @property
    def controls(self):
        return self._rows("controls", ("control",))

    def __repr__(self):
        return f"<schedlab.ValidateResult {len(self.data['cases'])} cases: {self.total_line}>"


class ReproduceResult:
    """A reproduced study (`schedlab reproduce`): `.name`, `.description`, `.source`,
    `.comparisons` (one `CompareResult` per comparison of the experiment file, each
    with `.published`, the numbers it is read against), `.summary` (every
    comparison's summary rows, with a `comparison` column, 1-based), `.json`."""

    def __init__(self, text):
        self.json = text
        self.data = json.loads(text)
        self.comparisons = []
        for c in self.data["comparisons"]:
            r = CompareResult(json.dumps(c["report"]), c["comparison"]["spec"])
            r.published = c["comparison"]["published"]
            self.comparisons.append(r)

    @property
    def name(self):
        return self.data["name"]

    @property
    def description(self):
        return self.data["description"]

    @property
    def source(self):
        return self.data["source"]

    @property
    def summary(self):
        import pandas as pd

        frames = []
        for i, c in enumerate(self.comparisons):
            s = c.summary
            s.insert(0, "comparison", i + 1)
            frames.append(s)
        return pd.concat(frames, ignore_index=True)

    def __repr__(self):
        return f"<schedlab.ReproduceResult {self.name}: {len(self.comparisons)} comparison(s)>"
