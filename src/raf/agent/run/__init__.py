"""The tool loop as explicit steps: call the model → run a batch of tool calls → pause
for approval → one final call without tools. `FunctionInvokingChatClient` drives them."""

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
