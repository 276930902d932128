"""`raf eval`: the table, reports, the runs folder, cassettes, and exit codes for the
regression and pass-rate gates."""

from __future__ import annotations

import json
from pathlib import Path

from raf.evals import EvalReport
from tests.cli.helpers import raf, script, write_agent

DATASET = """\
name: basics
evaluators: [contains]
cases:
  - {name: capital, input: What is the capital of France?, expected_output: Paris}
  - {name: sum, input: What is 2+2?, expected_output: "4"}
"""

AGENT = """
name: helper
instructions: You answer briefly.
"""


def dataset(tmp_path: Path) -> str:
    path = tmp_path / "basics.yaml"
    path.write_text(DATASET, encoding="utf-8")
    return str(path)


def test_a_passing_run_prints_the_table_and_writes_reports(tmp_path: Path) -> None:
    model = script(tmp_path, ["Paris.", "It is 4."])
    agent = write_agent(tmp_path, AGENT)
    done = raf(
        tmp_path,
        "eval",
        dataset(tmp_path),
        str(agent),
        "--model",
        model,
        "--concurrency",
        "1",
        "--json",
        "run.json",
        "--report",
        "run.html",
        "--min-pass",
        "100%",
    )
    assert done.returncode == 0, done.stderr
    assert "2/2 runs passed (100%)" in done.stdout
    report = EvalReport.read_json(tmp_path / "run.json")
    assert report.summary()["passed"] == 2 and report.target == "helper"
    assert "<!doctype html>" in (tmp_path / "run.html").read_text()
    saved = list((tmp_path / "data" / "evals").glob("*.json"))
    assert len(saved) == 1 and "run saved as" in done.stdout


def test_a_regression_against_the_baseline_exits_3(tmp_path: Path) -> None:
    good = script(tmp_path, ["Paris.", "4"], "good.json")
    first = raf(
        tmp_path,
        "eval",
        dataset(tmp_path),
        "--model",
        good,
        "--concurrency",
        "1",
        "--json",
        "base.json",
        "--no-save",
    )
    assert first.returncode == 0, first.stderr
    bad = script(tmp_path, ["Paris.", "5"], "bad.json")
    second = raf(
        tmp_path,
        "eval",
        dataset(tmp_path),
        "--model",
        bad,
        "--concurrency",
        "1",
        "--baseline",
        "base.json",
        "--no-save",
    )
    assert second.returncode == 3, second.stdout + second.stderr
    assert "regressed  sum  100% -> 0%" in second.stdout
    assert not (tmp_path / "data" / "evals").exists()


def test_a_pass_rate_under_min_pass_exits_3(tmp_path: Path) -> None:
    model = script(tmp_path, ["Lyon.", "4"])
    done = raf(
        tmp_path,
        "eval",
        dataset(tmp_path),
        "--model",
        model,
        "--concurrency",
        "1",
        "--min-pass",
        "0.75",
        "--no-save",
    )
    assert done.returncode == 3
    assert "pass rate 50.0% is under --min-pass 75.0%" in done.stderr
    lenient = raf(
        tmp_path,
        "eval",
        dataset(tmp_path),
        "--model",
        script(tmp_path, ["Lyon.", "4"], "s2.json"),
        "--concurrency",
        "1",
        "--min-pass",
        "0.5",
        "--no-save",
    )
    assert lenient.returncode == 0


def test_a_cassette_records_once_and_then_replays_with_no_model(tmp_path: Path) -> None:
    model = script(tmp_path, ["Paris.", "4"])
    record = raf(
        tmp_path,
        "eval",
        dataset(tmp_path),
        "--model",
        model,
        "--concurrency",
        "1",
        "--cassette",
        "tape.json",
        "--no-save",
    )
    assert record.returncode == 0, record.stderr
    assert len(json.loads((tmp_path / "tape.json").read_text())["responses"]) == 2
    replay = raf(
        tmp_path,
        "eval",
        dataset(tmp_path),
        "--cassette",
        "tape.json",
        "--replay-only",
        "--min-pass",
        "1",
        "--no-save",
    )
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "2/2 runs passed" in replay.stdout


def test_a_malformed_dataset_is_a_located_error_and_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("cases:\n  - name: a\n    inptu: x\n", encoding="utf-8")
    done = raf(tmp_path, "eval", str(path), "--no-save")
    assert done.returncode == 1
    assert f"{path}:3:5 cases[0].inptu: unknown key 'inptu'" in done.stderr


def test_the_schema_is_printed(tmp_path: Path) -> None:
    done = raf(tmp_path, "eval", "--schema")
    assert done.returncode == 0
    assert json.loads(done.stdout)["$id"].endswith("eval-dataset.json")


def test_the_documented_scripted_model_form_saves_the_run(tmp_path: Path) -> None:
    """`--model scripted:replies.json` (a short relative name) once gave a run id ending
    in `.json`, refused after the table was printed: the run was lost."""
    (tmp_path / "replies.json").write_text('["Paris.", "It is 4."]', encoding="utf-8")
    (tmp_path / "basics.yaml").write_text(DATASET, encoding="utf-8")
    done = raf(
        tmp_path, "eval", "basics.yaml", "--model", "scripted:replies.json", "--concurrency", "1"
    )
    assert done.returncode == 0, done.stderr
    assert "2/2 runs passed" in done.stdout and "run saved as" in done.stdout
    (saved,) = (tmp_path / "data" / "evals").glob("*.json")
    assert saved.stem.endswith("scripted-replies-json")
    assert EvalReport.read_json(saved).summary()["passed"] == 2


def test_a_python_file_is_refused_saying_what_raf_eval_takes(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("agent = None\n", encoding="utf-8")
    for args in (["agent.py"], [dataset(tmp_path), "agent.py"]):
        done = raf(tmp_path, "eval", *args, "--no-save")
        assert done.returncode == 2, done.stderr
        assert "agent.py is Python" in done.stderr
        assert "raf eval DATASET.yaml [AGENT.yaml ...]" in done.stderr
        assert ".evaluate(agent)" in done.stderr and done.stdout == ""
