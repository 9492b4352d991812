"""schedlab.validate() and schedlab.reproduce() against `schedlab validate` and
`schedlab reproduce`: the same library functions, so the same documents."""

import json
import pathlib
import textwrap

import pytest

import schedlab

ROOT = pathlib.Path(__file__).resolve().parents[2]

CASES = ROOT / "validation"
CASE = "seed002-next-buddy"  # a case file (its stem): a few seconds


def test_validate_is_the_cli_validate(cli):
    v = schedlab.validate(case=CASE, dir=CASES)
    p = cli("validate", "--case", CASE, "--json", "--dir", str(CASES), check=False)
    assert v.data == json.loads(p.stdout)
    assert (p.returncode == 0) == (v.control_error is None)
    text = cli("validate", "--case", CASE, "--dir", str(CASES), check=False).stdout
    assert text.rstrip().splitlines()[-1] == v.total_line
    claims = v.claims
    assert len(claims) == v.totals["claims"] + v.totals["not_runnable"] > 0
    assert set(claims["verdict"]) <= {"agree", "disagree", "not modelled", "not runnable"}
    assert (claims["verdict"] == "agree").sum() == v.totals["agree"]
    assert len(v.controls) == v.totals["controls"]
    assert set(claims["case"]) == {c["name"] for c in v.data["cases"]}


def test_validate_settings_and_errors(cli):
    v = schedlab.validate(case=CASE, dir=CASES, runs=2, seed=5, jobs=1)
    assert v.data["seed"] == 5 and all(c["runs"] == 2 for c in v.data["cases"])
    ref = json.loads(cli("validate", "--case", CASE, "--dir", str(CASES), "--runs", "2", "--seed", "5", "--json",
                         check=False).stdout)
    assert v.data == ref
    with pytest.raises(schedlab.SchedlabError) as e:
        schedlab.validate(case="nosuch", dir=CASES)
    p = cli("validate", "--case", "nosuch", "--dir", str(CASES), check=False)
    assert p.returncode != 0
    assert p.stderr.strip().splitlines()[-1] == f"schedlab: error: {e.value}"
    with pytest.raises(schedlab.SchedlabError, match="--runs must be at least 1"):
        schedlab.validate(quick=True, runs=0)


STUDY = textwrap.dedent("""\
    name = "tiny"
    description = "a tiny study"
    source = "none"

    [[comparison]]
    workload = "hackbench"
    set = "groups=1,2,loops=20"
    kernel = "v6.6"
    vs = "v6.12"
    runs = 3
    published = "B faster"

    [[comparison]]
    machine = "laptop-4c8t"
    workload = "hackbench"
    set = "groups=1,loops=30"
    features_b = "NO_WAKEUP_PREEMPTION"
    runs = 2
    """)


def test_reproduce_is_the_cli_reproduce(cli, tmp_path):
    f = tmp_path / "tiny.toml"
    f.write_text(STUDY)
    s = schedlab.reproduce(f)
    out = tmp_path / "tiny.json"
    cli("reproduce", str(f), "--json", str(out))
    ref = json.loads(out.read_text())
    assert (s.name, s.description, s.source) == (ref["name"], ref["description"], ref["source"])
    assert len(s.comparisons) == len(ref["comparisons"]) == 2
    assert [c.published for c in s.comparisons] == [c["published"] for c in ref["comparisons"]]
    for c, r in zip(s.comparisons, ref["comparisons"]):
        # Each comparison's report is the compare --json document.
        assert c.data == r["report"]
        rows = [x for t in r["report"]["tables"] for x in t["rows"]]
        assert list(c.summary["point"]) == [x["label"] for x in rows]
        assert list(c.summary["change_pct"]) == [x["change_pct"] for x in rows]
        assert list(c.runs["metric"]) == [x["metric"] for t in r["report"]["tables"] for x in t["recs"]]
    assert list(s.summary["comparison"]) == [1, 1, 2]
    # The same study by stem under a directory.
    again = schedlab.reproduce("tiny", dir=tmp_path)
    assert again.data == s.data


def test_studies_and_reproduce_errors(cli, tmp_path):
    listed = schedlab.studies(ROOT / "experiments")
    lines = cli("reproduce", "--list", "--dir", str(ROOT / "experiments")).stdout.splitlines()
    assert list(listed["name"]) == [ln.split()[0] for ln in lines]
    assert (listed["comparisons"] > 0).all()
    with pytest.raises(schedlab.SchedlabError) as e:
        schedlab.reproduce("nosuch", dir=tmp_path)
    p = cli("reproduce", "nosuch", "--dir", str(tmp_path), check=False)
    assert p.stderr.strip().splitlines()[-1] == f"schedlab: error: {e.value}"
    (tmp_path / "bad.toml").write_text('name = "bad"\ndescription = "d"\n[[comparison]]\nrunz = 3\n')
    with pytest.raises(schedlab.SchedlabError, match="bad.toml:4"):
        schedlab.reproduce(tmp_path / "bad.toml")
