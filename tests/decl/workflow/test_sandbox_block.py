"""A workflow document's top-level `sandbox:` block: the limits its ExecuteCode actions
run under, checked where it is written."""

from __future__ import annotations

import pytest

from raf.core.errors import ValidationProblems
from raf.decl.workflow import DeclWorkflowBuilder, load_workflow_file
from raf.workflow.errors import WorkflowRunError
from tests.decl.workflow.helpers import DATA, run

FIXTURE = DATA / "sandboxed_code.yaml"


@pytest.mark.slow
async def test_execute_code_runs_under_the_documents_sandbox():
    assert load_workflow_file(FIXTURE).sandbox == {
        "timeout_s": 20.0,
        "memory_mb": 256,
        "network": False,
    }
    _, result = await run("sandboxed_code.yaml")
    assert result.outputs == ["total 45"]


@pytest.mark.slow
async def test_the_documents_timeout_stops_the_code():
    text = (
        FIXTURE.read_text()
        .replace("timeout: 20", "timeout: 1")
        .replace("print(sum(range(10)))", "'import time; time.sleep(30)'")
    )
    workflow = DeclWorkflowBuilder().from_yaml_str(text).build()
    with pytest.raises(WorkflowRunError, match="timed out"):
        await workflow.run("")


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("false", "sandbox: false is not possible"),
        ("{memory_gb: 2}", "sandbox has no setting 'memory_gb'"),
        ("{timeout: -1}", "sandbox timeout is a number above 0"),
        ("{network: maybe}", "sandbox network is true or false"),
    ],
)
def test_a_bad_sandbox_block_is_located(value, says):
    text = FIXTURE.read_text()
    start = text.index("sandbox:\n")
    end = text.index("trigger:")
    text = text[:start] + f"sandbox: {value}\n" + text[end:]
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_yaml_str(text)
    (problem,) = caught.value.problems
    assert problem.key_path == "sandbox" and problem.line == 5
    assert says in problem.message
