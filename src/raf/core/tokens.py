"""Counting tokens: a fast conservative estimate, and tiktoken when it is installed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol

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
    """Exact counts for OpenAI tokenizers (needs `tiktoken`)."""

    def __init__(self, encoding: str = "o200k_base") -> None:
        import tiktoken

        self._encoding = tiktoken.get_encoding(encoding)

    def count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))


def default_counter() -> TokenCounter:
    """tiktoken when installed and its tables are available, else the estimate."""
    try:
        return TiktokenCounter()
    except Exception:  # not installed, or its encoding file cannot be loaded offline
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
