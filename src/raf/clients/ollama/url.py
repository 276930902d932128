"""Where Ollama listens, from the variables its users set (`OLLAMA_BASE_URL`, `OLLAMA_HOST`)."""

from __future__ import annotations

import os
import re

OLLAMA_BASE_URL = "http://127.0.0.1:11434/v1"
"""Ollama's OpenAI-compatible API on this machine."""


def ollama_base_url() -> str:
    """`OLLAMA_BASE_URL`, else Ollama's own `OLLAMA_HOST` (`host[:port]`) + `/v1`, else local."""
    explicit = os.environ.get("OLLAMA_BASE_URL", "").strip()
    if explicit:
        return explicit
    host = os.environ.get("OLLAMA_HOST", "").strip().rstrip("/")
    if not host:
        return OLLAMA_BASE_URL
    scheme, sep, rest = host.partition("://")
    if not sep:
        scheme, rest = "http", host
    if not re.search(r":\d+$", rest):
        rest += ":443" if scheme == "https" else ":11434"
    if rest.startswith("0.0.0.0:"):  # a listening address; connect over loopback
        rest = "127.0.0.1:" + rest.split(":", 1)[1]
    return f"{scheme}://{rest}/v1"


def ollama_native_url() -> str:
    """Where Ollama's native API (`/api/chat`) is: `ollama_base_url()` without its `/v1`."""
    return ollama_base_url().rstrip("/").removesuffix("/v1")
