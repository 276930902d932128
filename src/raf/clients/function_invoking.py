"""Where `FunctionInvokingChatClient` has always been imported from; the loop itself
lives in `raf.clients.tool_loop` and the approval rules in `raf.core.approvals`."""

from raf.clients.tool_loop import (
    CANCELLED_RESULT,
    DEFAULT_MAX_RESULT_CHARS,
    DEFAULT_MAX_TOOL_ROUNDS,
    FunctionInvokingChatClient,
)
from raf.core.approvals import check_approval_responses

__all__ = [
    "CANCELLED_RESULT",
    "DEFAULT_MAX_RESULT_CHARS",
    "DEFAULT_MAX_TOOL_ROUNDS",
    "FunctionInvokingChatClient",
    "check_approval_responses",
]
