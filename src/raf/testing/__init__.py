"""Test helpers for raf users: scripted models instead of real LLMs."""

from raf.testing.scripted import (
    FunctionChatClient,
    RecordedRequest,
    ScriptedChatClient,
    ScriptExhaustedError,
    call,
    reply,
    stream_response,
)

__all__ = [
    "FunctionChatClient",
    "RecordedRequest",
    "ScriptExhaustedError",
    "ScriptedChatClient",
    "call",
    "reply",
    "stream_response",
]
