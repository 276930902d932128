"""Test helpers for raf users: scripted models instead of real LLMs."""

from raf.testing.script_file import SCRIPTED_PREFIX, ScriptFileClient
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
    "SCRIPTED_PREFIX",
    "FunctionChatClient",
    "RecordedRequest",
    "ScriptExhaustedError",
    "ScriptFileClient",
    "ScriptedChatClient",
    "TestModel",
    "call",
    "example_value",
    "reply",
    "stream_response",
]
