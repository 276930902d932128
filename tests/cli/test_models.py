"""`raf models pull|list|path` and `raf ask`, run as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from raf.clients.local.model_store import model_path, pull_model_sync
from tests.clients.conftest import KATAN_MODEL, katan  # noqa: F401  (the llm-katan fixture)

TIMEOUT = 300


def raf(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "RAF_MODEL"}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "raf.cli", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=full,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def pulled() -> Path:
    return pull_model_sync()


def test_pull_is_idempotent_and_prints_the_path(pulled: Path) -> None:
    proc = raf("models", "pull")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(pulled) == str(model_path())


def test_list_and_path_show_the_cached_model(pulled: Path) -> None:
    listing = raf("models", "list", "--verify")
    assert listing.returncode == 0, listing.stderr
    assert "smollm2-135m-instruct" in listing.stdout and "checksum ok" in listing.stdout
    path = raf("models", "path")
    assert path.returncode == 0 and path.stdout.strip() == str(pulled)


def test_path_fails_when_nothing_is_cached(tmp_path: Path) -> None:
    proc = raf("models", "path", env={"RAF_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 1 and proc.stdout.strip().startswith(str(tmp_path))


def test_ask_answers_on_the_local_model_with_no_key(pulled: Path) -> None:
    env = {k: "" for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    proc = raf("ask", "What is the capital of France?", "--max-tokens", "32", env=env)
    assert proc.returncode == 0, proc.stderr
    # greedy decoding by default: the README's question gets the right answer every time
    assert "Paris" in proc.stdout, proc.stdout


def test_ask_stays_local_when_only_an_api_key_is_set(pulled: Path) -> None:
    # The key alone never switches the model; raf says how to use it and never shows it.
    key = "sk-proj-NOTUSED-0123456789abcdef"
    env = {"OPENAI_API_KEY": key, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = raf("ask", "What is the capital of France?", "--max-tokens", "24", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip(), "no answer was printed"
    assert "--model openai:gpt-4o-mini" in proc.stderr and "RAF_MODEL=" in proc.stderr
    assert "NOTUSED" not in proc.stderr + proc.stdout


def test_ask_uses_the_model_string(katan: str) -> None:  # noqa: F811
    proc = raf(
        "ask",
        "hello over the wire",
        "--model",
        f"openai-compatible:{katan}/v1:{KATAN_MODEL}",
    )
    assert proc.returncode == 0, proc.stderr
    assert "hello over the wire" in proc.stdout


def test_ask_with_a_missing_key_says_what_to_do() -> None:
    proc = raf("ask", "hi", "--model", "openai:gpt-4o-mini", env={"OPENAI_API_KEY": ""})
    assert proc.returncode == 1
    assert "OPENAI_API_KEY" in proc.stderr and "RAF_MODEL=local" in proc.stderr


def test_ask_refuses_a_token_limit_below_one() -> None:
    proc = raf("ask", "hi", "--max-tokens", "0")
    assert proc.returncode == 2 and "whole number of tokens" in proc.stderr


def test_pull_embedder_fetches_the_embedding_model_and_its_vocabulary() -> None:
    from raf.clients.local.model_store import EMBEDDING_MODEL, EMBEDDING_TOKENIZER

    proc = raf("models", "pull", "--embedder")
    assert proc.returncode == 0, proc.stderr
    want = [str(model_path(EMBEDDING_MODEL)), str(model_path(EMBEDDING_TOKENIZER))]
    assert proc.stdout.split() == want
    listing = raf("models", "list")
    assert "all-minilm-l6-v2-int8" in listing.stdout and "Apache-2.0" in listing.stdout
