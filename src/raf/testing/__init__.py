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
from raf.testing.test_model import TestModel, example_value

__all__ = [
    "FunctionChatClient",
    "RecordedRequest",
    "ScriptExhaustedError",
    "ScriptedChatClient",
    "TestModel",
    "call",
    "example_value",
    "reply",
    "stream_response",
]
