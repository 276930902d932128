"""Counting tokens: a fast conservative estimate, and tiktoken when it is installed."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from collections.abc import Sequence
from typing import Any, Protocol

from raf.core.contents import (
    ApprovalRequestContent,
    ApprovalResponseContent,
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
    UsageContent,
)
from raf.core.messages import ChatMessage

MESSAGE_OVERHEAD = 4
"""Tokens a chat format spends around each message (role markers)."""


class TokenCounter(Protocol):
    """Counts the tokens of a text."""

    def count(self, text: str) -> int: ...


class EstimatingCounter:
    """About four characters a token, rounded up: fast, and never far below the truth."""

    def __init__(self, chars_per_token: float = 3.5) -> None:
        self.chars_per_token = chars_per_token

    def count(self, text: str) -> int:
        if not text:
            return 0
        return int(len(text) / self.chars_per_token) + 1


class TiktokenCounter:
    """Exact counts for OpenAI tokenizers (needs `tiktoken`).

    `encoding` is an encoding name or a ready `tiktoken.Encoding`.
    """

    def __init__(self, encoding: Any = "o200k_base") -> None:
        if isinstance(encoding, str):
            import tiktoken

            encoding = tiktoken.get_encoding(encoding)
        self._encoding = encoding

    def count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))


_TIKTOKEN_FILES = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


def tiktoken_cache_path(encoding: str = "o200k_base") -> str | None:
    """Where tiktoken keeps the table of `encoding` once downloaded (its own cache rule)."""
    url = _TIKTOKEN_FILES.get(encoding)
    if url is None:
        return None
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if cache_dir is None:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:
        return None
    return os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())


def tiktoken_ready(encoding: str = "o200k_base") -> bool:
    """True when tiktoken is installed and the table of `encoding` is already cached,
    so counting needs no download."""
    if importlib.util.find_spec("tiktoken") is None:
        return False
    path = tiktoken_cache_path(encoding)
    return path is not None and os.path.exists(path)


def default_counter(*, allow_download: bool = False) -> TokenCounter:
    """tiktoken when installed and its table is cached (or may be downloaded), else the
    estimate. Without `allow_download` no network access is ever tried."""
    if not (allow_download or tiktoken_ready()):
        return EstimatingCounter()
    try:
        return TiktokenCounter()
    except Exception:  # not installed, or its encoding file cannot be loaded
        return EstimatingCounter()


def message_text_for_counting(message: ChatMessage) -> str:
    """Everything in a message that a model is sent, as one text."""
    parts: list[str] = []
    for c in message.contents:
        if isinstance(c, TextContent | ReasoningContent):
            parts.append(c.text)
        elif isinstance(c, FunctionCallContent):
            parts.append(c.name)
            parts.append(c.raw_arguments or json.dumps(c.arguments, ensure_ascii=False))
        elif isinstance(c, FunctionResultContent):
            parts.append(c.as_text())
        elif isinstance(c, ApprovalRequestContent | ApprovalResponseContent | UsageContent):
            continue
        elif isinstance(c, ErrorContent):
            parts.append(c.message)
        elif isinstance(c, DataContent):
            parts.append(c.uri[:256])
    return "\n".join(parts)


def count_message_tokens(message: ChatMessage, counter: TokenCounter) -> int:
    return counter.count(message_text_for_counting(message)) + MESSAGE_OVERHEAD


def count_messages_tokens(messages: Sequence[ChatMessage], counter: TokenCounter) -> int:
    return sum(count_message_tokens(m, counter) for m in messages)
