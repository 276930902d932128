"""Per-run objects that raf builds as `__init__` on `object.__new__(cls)` (cheaper than
calling the class in Python 3.11, which packs the keywords into a dict) must stay
classes for which that is the same as calling them: no metaclass, no `__new__`."""

from __future__ import annotations

import pytest

from raf import ChatOptions, FunctionResultContent, ToolResult
from raf.agent.run.agent_run import AgentRun
from raf.agent.run.state import LoopState
from raf.core.run_context import RunContext


@pytest.mark.parametrize(
    "cls", [AgentRun, RunContext, ChatOptions, LoopState, ToolResult, FunctionResultContent]
)
def test_built_without_calling_the_class_and_still_the_same(cls: type) -> None:
    assert type(cls) is type
    # every class before `object` in its MRO, itself included
    assert all("__new__" not in base.__dict__ for base in cls.__mro__[:-1])
