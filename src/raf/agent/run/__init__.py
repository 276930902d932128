"""The run, in one place: `run` (the `Run` state object), `begin` (the checks and the set
up), `steps` (every step of a run, each returning the next), `pumps` (`run`, `run_stream`
and `iter` taking the steps), and what the steps call: `providers`, `model_call`,
`invoke`, `output`, `repeats`, `recording`. `client` is the tool loop as a chat client of
its own (`FunctionInvokingChatClient`), on the same steps."""

from raf.agent.run.client import (
    DEFAULT_MAX_RESULT_CHARS,
    DEFAULT_MAX_TOOL_ROUNDS,
    FunctionInvokingChatClient,
)
from raf.agent.run.repeats import DEFAULT_MAX_REPEATED_CALLS
from raf.agent.run.steps import CANCELLED_RESULT

__all__ = [
    "CANCELLED_RESULT",
    "DEFAULT_MAX_REPEATED_CALLS",
    "DEFAULT_MAX_RESULT_CHARS",
    "DEFAULT_MAX_TOOL_ROUNDS",
    "FunctionInvokingChatClient",
]
