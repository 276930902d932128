"""`raf run` on every workflow document of Microsoft Agent Framework's shapes that needs no
model: each exits 0, and one that ends without sending a message says so (it is the
workflow's outcome, not a model's empty answer, which exits 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raf.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data" / "workflows"
FOLDERS = ("", "actions", "maf-tests", "maf-patterns", "quiet")
"""The folders of MAF-shaped workflow documents (`quiet/` holds the shapes of MAF's own
declarative unit documents that run to their end without sending a message)."""

NEEDS: dict[str, str] = {
    "maf_http_agent.yaml": "a model (agent 'OrderAgent')",
    "actions/InvokeAgent.yaml": "a model",
    "actions/CreateConversation.yaml": "a model",
    "maf-patterns/student-teacher.yaml": "a model",
    "actions/HttpRequestAction.yaml": "an HTTP server",
    "actions/InvokeMcpTool.yaml": "an MCP server",
    "actions/InvokeFunctionTool.yaml": "a function bound with --tools",
    "actions/Question.yaml": "an answer to its question",
    "actions/Confirmation.yaml": "an answer to its question",
    "actions/WaitForInput.yaml": "an answer to its question",
    "actions/RequestExternalInput.yaml": "an answer to its question",
    "maf-patterns/customer-survey.yaml": "answers to its questions",
    "maf-tests/question_entities.yaml": "answers to its questions",
}
"""Documents left out, and what each needs beyond `raf run FILE PROMPT`."""

PROMPTS = {
    "maf_conditional.yaml": "42",
    "workflow_with_if.yaml": "42",
    "actions/ConditionGroup.yaml": "12",
    "actions/ExecuteCode.yaml": "42",
    "actions/ParseValue.yaml": '{"item": "tea", "qty": 3}',
}
"""The prompt a document reads as its input, where "hello" is not one (a number, JSON)."""

QUIET = sorted(p.stem for p in (DATA / "quiet").glob("*.yaml"))


def _documents() -> list[str]:
    found = []
    for folder in FOLDERS:
        for path in sorted((DATA / folder).glob("*.yaml")):
            found.append(path.relative_to(DATA).as_posix())
    return found


DOCUMENTS = [name for name in _documents() if name not in NEEDS]


@pytest.fixture(autouse=True)
def _private_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAF_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("RAF_MODEL", raising=False)
    monkeypatch.delenv("RAF_SESSION_STORE", raising=False)


def test_every_left_out_document_is_there_and_the_quiet_shapes_are_all_here() -> None:
    assert set(NEEDS) <= set(_documents())
    assert len(DOCUMENTS) >= 40
    assert len(QUIET) == 15  # MAF's unit documents that end without a message


@pytest.mark.parametrize("name", DOCUMENTS)
def test_a_document_that_needs_no_model_runs_to_exit_0(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", str(DATA / name), PROMPTS.get(name, "hello")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "no whole answer" not in err
    if not out.strip():  # it ended without a message, and says so
        assert err.strip().endswith("raf: the workflow completed, no message"), err


@pytest.mark.parametrize("name", QUIET)
def test_a_quiet_workflow_prints_nothing_and_names_its_end(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", str(DATA / "quiet" / f"{name}.yaml"), "hello"])
    out, err = capsys.readouterr()
    assert (code, out) == (0, "")
    assert err == "raf: the workflow completed, no message\n"


def test_the_json_stream_ends_with_the_workflow_completed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", str(DATA / "quiet" / "SetVariable.yaml"), "hello", "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert json.loads(out.splitlines()[-1]) == {"kind": "finished", "finish_reason": "completed"}
