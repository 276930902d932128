"""The pytest plugin, run in a real pytest subprocess: one test per case, failures that
give the evaluators' reasons, and datasets collected from eval_*.yaml files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

DATASET = """\
evaluators: [contains]
cases:
  - {name: capital, input: capital of France, expected_output: Paris}
  - {name: sum, input: 2+2, expected_output: "4"}
  - {name: wrong, input: capital of Peru, expected_output: Lima}
"""

TARGETS = """\
ANSWERS = {"capital of France": "Paris", "2+2": "4", "capital of Peru": "Cusco"}


def answer(question):
    return ANSWERS[question]
"""

TESTS = """\
import pytest

from raf.evals.pytest_plugin import dataset_cases
from targets import answer


@pytest.mark.parametrize("case", dataset_cases("basics.yaml"))
def test_basics(case, raf_eval):
    raf_eval.check(case, answer)
"""


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(folder)])
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "raf.evals.pytest_plugin",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            *args,
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_parametrized_cases_and_the_fixture(tmp_path: Path) -> None:
    (tmp_path / "basics.yaml").write_text(DATASET)
    (tmp_path / "targets.py").write_text(TARGETS)
    (tmp_path / "test_basics.py").write_text(TESTS)
    done = run_pytest(tmp_path, "-rA", "test_basics.py")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "PASSED test_basics.py::test_basics[capital]" in out
    assert "PASSED test_basics.py::test_basics[sum]" in out
    assert "FAILED test_basics.py::test_basics[wrong]" in out
    assert "contains: missing 'Lima' in 'Cusco'" in out


def test_eval_yaml_files_are_collected_with_a_target_option(tmp_path: Path) -> None:
    (tmp_path / "eval_basics.yaml").write_text(DATASET)
    (tmp_path / "targets.py").write_text(TARGETS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nraf_eval_target = targets:answer\n")
    done = run_pytest(tmp_path, "-rA")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "PASSED eval_basics.yaml::capital" in out
    assert "FAILED eval_basics.yaml::wrong" in out
    assert "1 failed, 2 passed" in out


def test_without_the_option_eval_files_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / "eval_basics.yaml").write_text(DATASET)
    (tmp_path / "test_nothing.py").write_text("def test_ok():\n    pass\n")
    done = run_pytest(tmp_path)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout
