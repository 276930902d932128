"""Fixtures every test folder can use: private PostgreSQL and Redis servers, started once
per test session on loopback and stopped at its end.

It also sorts the tests into a fast lane: a test is marked `slow` when it starts a real
peer (a database, a model server, an MCP or mock API server from npm, a browser, the
embedded local model), runs sandboxed subprocesses or the `raf` program in a terminal,
runs on DBOS, or races or kills several processes. `pytest -m "not slow"` runs the rest.
The rules below are by fixture, by parameter, by folder or module, and by test; a test
can also say `@pytest.mark.slow` itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path

import pytest

from tests.servers import Server, start_postgres, start_redis

TESTS = Path(__file__).resolve().parent

SLOW_FIXTURES = {
    "postgres_server",  # a PostgreSQL cluster
    "redis_server",  # a Redis server
    "katan",  # llm-katan, an OpenAI/Anthropic/Gemini-compatible model server
    "katan_with_keys",
    "prism",  # Prism, a mock API server from npm
}
"""A test that uses one of these fixtures (directly or through another fixture) is slow."""

SLOW_PARAMETERS = {"postgres", "redis"}
"""A test run once per store kind is slow for the kinds that need a server."""

SLOW_FOLDERS = {
    "durable": "runs on DBOS",
    "ui": "a browser and the `raf ui` program",
    "cli": "the `raf` program in a terminal or subprocess",
}
FAST_IN_SLOW_FOLDERS = {"durable/test_codec.py"}
"""Modules of a slow folder that start nothing."""

SLOW_MODULES = {
    "tools/test_mcp_*.py": "MCP servers from npm and in subprocesses",
    "context/test_mcp.py": "MCP servers from npm",
    "decl/agent/test_integrations.py": "MCP servers from npm",
    "clients/local/test_client.py": "the embedded local model",
    "clients/local/test_tools.py": "the embedded local model",
    "context/test_knowledge_embeddings.py": "an embedding model",
    "tools/test_code.py": "the code sandbox (bubblewrap)",
    "tools/test_sandbox_hostile.py": "the code sandbox (bubblewrap)",
    "tools/test_shell.py": "sandboxed shell subprocesses",
    "tools/test_container_sandbox.py": "a Docker engine and containers",
    "serve/test_acp.py": "an ACP server in a subprocess",
    "serve/test_cli.py": "`raf serve` in a subprocess",
    "workflow/test_processes.py": "workflows resumed in other processes",
    "workflow/test_readme.py": "README examples run as programs",
    "decl/workflow/test_readme.py": "README examples run as programs",
    "context/test_memory_crashes.py": "processes killed mid-write",
    "context/test_knowledge_crashes.py": "processes killed mid-write",
    "examples/test_example_readmes.py": "the `raf` program and the examples as programs",
    "evals/test_pytest_plugin.py": "pytest in subprocesses",
}

SLOW_TESTS = (
    # several processes racing on one store, or killed in the middle
    "stores/test_store_contract.py::test_processes_appending_to_one_session_lose_no_turn",
    "stores/test_store_contract.py::test_a_process_holding_a_deleted_session_does_not",
    "agent/test_session_conflicts.py::test_kill_9_during_saves",
    "agent/test_approval_claims.py::test_of_eight_resuming_processes",
    "stores/test_stores.py::test_two_processes_writing_at_once",
    "context/test_memory.py::test_concurrent_processes",
    # a server of their own, stopped or refusing in the middle
    "stores/test_redis_store.py::test_a_wrong_password_is_refused",
    # MCP servers from npm
    "decl/workflow/test_actions.py::test_invoke_mcp_tool",
    "decl/workflow/test_actions.py::test_mcp_servers_declared_in_the_document",
    # knowledge declared with its default embedder: the local embedding model
    "examples/test_examples.py::test_support_agent_answers_from_the_faq",
    "decl/agent/test_original_contexts.py::test_the_originals_contexts_build_and_run",
    # mypy on a user's test file, in a subprocess
    "testing/test_test_model.py::test_mypy_checks_deps",
    # `raf validate` as a program, regular expressions stopped in a worker process
    "decl/documents/test_hostile_documents.py::test_raf_validate_gives",
    "tools/test_files.py::test_a_pattern_that",
    # docs pages whose shell blocks start a server or run several `raf` programs
    "test_docs.py::test_every_shell_block_on_the_page_runs[get-started.md]",
    "test_docs.py::test_every_shell_block_on_the_page_runs[guide/serving.md]",
    "test_docs.py::test_every_shell_block_on_the_page_runs[guide/web-ui.md]",
)
"""Node ids (relative to tests/) of slow tests in otherwise fast modules, as prefixes."""


def is_slow(item: pytest.Item) -> bool:
    """Whether `item` falls under one of the rules above."""
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(
        isinstance(value, str) and value in SLOW_PARAMETERS for value in callspec.params.values()
    ):
        return True
    try:
        module = item.path.relative_to(TESTS).as_posix()
    except ValueError:
        return False
    if module.split("/")[0] in SLOW_FOLDERS and module not in FAST_IN_SLOW_FOLDERS:
        return True
    if any(fnmatch(module, pattern) for pattern in SLOW_MODULES):
        return True
    node = module + "::" + item.name
    return node.startswith(SLOW_TESTS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    """A PostgreSQL cluster of this test session; `url` carries user and password."""
    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Server]:
    """A Redis server of this test session, keeping nothing on disk."""
    server = start_redis()
    try:
        yield server
    finally:
        server.stop()
