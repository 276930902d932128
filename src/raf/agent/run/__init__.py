"""The run, in one place: `driver` (set up → agent middleware → answer → record, the one
path `Agent.run`, `run_stream` and `iter` share), `agent_run` (the run object), `answer`
and `providers`, `recording`, and the tool loop as explicit steps (`steps`, `state`,
`client`: call the model → run a batch of tool calls → pause for approval → one final
call without tools), which `FunctionInvokingChatClient` also drives on its own."""

from raf.agent.run.client import (
    DEFAULT_MAX_RESULT_CHARS,
    DEFAULT_MAX_TOOL_ROUNDS,
    FunctionInvokingChatClient,
    drive,
)
from raf.agent.run.repeats import DEFAULT_MAX_REPEATED_CALLS
from raf.agent.run.state import LoopState
from raf.agent.run.steps import CANCELLED_RESULT

__all__ = [
    "CANCELLED_RESULT",
    "DEFAULT_MAX_REPEATED_CALLS",
    "DEFAULT_MAX_RESULT_CHARS",
    "DEFAULT_MAX_TOOL_ROUNDS",
    "FunctionInvokingChatClient",
    "LoopState",
    "drive",
]
