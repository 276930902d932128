"""`raf.__all__` is the public contract: every name resolves, nothing disappears."""

from __future__ import annotations

import subprocess
import sys

import raf

CONTRACT = {
    "Agent",
    "AgentBuilder",
    "AgentResponse",
    "AgentResponseUpdate",
    "AgentRunOptions",
    "AgentSession",
    "ApprovalError",
    "ApprovalAlreadyClaimed",
    "ApprovalRequiredTool",
    "ChatClient",
    "ChatMessage",
    "ContextProvider",
    "ContextResult",
    "FinishReason",
    "FunctionInvokingChatClient",
    "InMemoryHistoryProvider",
    "RafError",
    "SessionStore",
    "Tool",
    "ToolApprovalResponse",
    "tool",
    "CancellationToken",
    "SqliteSessionStore",
    "JsonDirectorySessionStore",
    "InMemorySessionStore",
    "ChatClientBuilder",
    "UpdateKind",
    "SessionConflictError",
    "PostgresSessionStore",
    "RedisSessionStore",
    "OutputValidationError",
    "ModelRetry",
    "PromptTemplate",
    "InputGuardrailTripped",
    "OutputGuardrailTripped",
}


def test_every_public_name_resolves() -> None:
    for name in raf.__all__:
        assert getattr(raf, name) is not None, name


def test_contract_names_are_public() -> None:
    missing = CONTRACT - set(raf.__all__)
    assert not missing, f"public names removed: {sorted(missing)}"


def test_testing_helpers_are_public() -> None:
    import raf.testing

    assert {"ScriptedChatClient", "FunctionChatClient"} <= set(raf.testing.__all__)


def test_import_raf_loads_no_optional_dependency() -> None:
    code = (
        "import sys, raf; from raf import Agent, tool; "
        "from raf import PostgresSessionStore, RedisSessionStore; "
        "bad = [m for m in ('openai', 'anthropic', 'mcp', 'httpx', 'yaml', 'xllamacpp', "
        "'psycopg', 'psycopg_pool', 'redis', 'opentelemetry') "
        "if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
