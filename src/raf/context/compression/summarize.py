"""LLM summarisation of the older part of a history, with the transcript saved first and a
circuit breaker that stops calling a failing summariser."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

from raf.context.compression.budget import CompressionSettingError, check_count
from raf.context.compression.pins import keep_pinned
from raf.context.compression.units import Unit, join_units, split_units
from raf.core.chat_client import ChatClient
from raf.core.contents import TextContent
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.private_files import atomic_write_text
from raf.core.tokens import TokenCounter, count_messages_tokens

log = logging.getLogger("raf.context.compression")

SUMMARY_AUTHOR = "raf-summary"
SUMMARY_HEADER = "[Summary of the earlier conversation]"
SUMMARY_PROMPT = (
    "You compress conversations so an assistant can continue its work without the full "
    "history. Write a concise summary of the conversation you are given: the user's goals "
    "and constraints, facts learned, decisions taken, tool results that still matter "
    "(keep names, numbers, paths and identifiers exact), and open questions. Leave out "
    "small talk. If a previous summary is included, merge it into yours. Answer with the "
    "summary only, at most {words} words."
)
CACHE_SIZE = 64
MAX_RENDERED_RESULT = 2_000


class CircuitBreaker:
    """Opens after `max_failures` failures in a row; after `cooldown` seconds one trial
    call is allowed again, and a success closes it."""

    def __init__(
        self,
        max_failures: int = 3,
        cooldown: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.cooldown = cooldown
        self.clock = clock
        self.failures = 0
        self.opened_at: float | None = None

    @property
    def is_open(self) -> bool:
        return self.opened_at is not None

    def allow(self) -> bool:
        if self.opened_at is None:
            return True
        return self.clock() - self.opened_at >= self.cooldown

    def record_success(self) -> None:
        self.failures = 0
        self.opened_at = None

    def record_failure(self) -> None:
        self.failures += 1
        if self.failures >= self.max_failures:
            self.opened_at = self.clock()


class SummarizationStrategy:
    """Above `threshold`, summarise all but the `keep_recent` latest messages with a model.

    `threshold` is a fraction of the budget (≤ 1) or a token count (> 1). The full
    history is written to `transcript_dir` (one JSON-lines file per summary) before the
    model is asked. Summaries are remembered, so a later call only summarises what is
    new. When the summariser fails, the history is returned unchanged (a later strategy
    of a pipeline can still cut it) and after repeated failures the breaker stops asking.
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        threshold: float = 0.8,
        keep_recent: int = 10,
        transcript_dir: str | Path | None = None,
        model_id: str | None = None,
        summary_words: int = 400,
        timeout_s: float = 120.0,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or threshold <= 0:
            raise CompressionSettingError(
                f"threshold must be a fraction of the budget (≤ 1) or a token count, "
                f"not {threshold!r}"
            )
        keep_recent = check_count("keep_recent", keep_recent)
        self.client = client
        self.threshold = threshold
        self.keep_recent = keep_recent
        self.transcript_dir = Path(transcript_dir) if transcript_dir is not None else None
        self.model_id = model_id
        self.summary_words = summary_words
        self.timeout_s = timeout_s
        self.breaker = breaker or CircuitBreaker()
        self.summaries_made = 0
        self.transcripts: list[Path] = []
        self._cache: OrderedDict[str, str] = OrderedDict()

    def limit(self, budget: int) -> int:
        return int(self.threshold * budget) if self.threshold <= 1 else int(self.threshold)

    async def compress(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]:
        """The history with its older part summarised; pinned messages are never
        summarised but kept word for word, their tokens counted first."""
        return await keep_pinned(self._shorten, messages, budget, counter)

    async def _shorten(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]:
        system = [m for m in messages if m.role is Role.SYSTEM]
        units = split_units([m for m in messages if m.role is not Role.SYSTEM])
        hashes = _prefix_hashes(units)
        done, previous = 0, None
        for k in range(len(units), 0, -1):
            cached = self._cache.get(hashes[k])
            if cached is not None:
                done, previous = k, cached
                self._cache.move_to_end(hashes[k])
                break
        view = [
            *system,
            *([summary_message(previous)] if previous else []),
            *join_units(units[done:]),
        ]
        if count_messages_tokens(view, counter) <= self.limit(budget):
            return view
        cut = _recent_start(units, self.keep_recent)
        if cut <= done:
            return view
        if not self.breaker.allow():
            log.warning("summarisation skipped: the circuit breaker is open after failures")
            return view
        try:
            if self.transcript_dir is not None:
                self.transcripts.append(await asyncio.to_thread(self._save, list(messages)))
            summary = await self._summarise(previous, join_units(units[done:cut]))
        except Exception as exc:
            self.breaker.record_failure()
            log.warning("summarisation failed (%d in a row): %s", self.breaker.failures, exc)
            return view
        self.breaker.record_success()
        self.summaries_made += 1
        self._cache[hashes[cut]] = summary
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return [*system, summary_message(summary), *join_units(units[cut:])]

    async def _summarise(self, previous: str | None, older: Sequence[ChatMessage]) -> str:
        parts = []
        if previous:
            parts.append(f"Previous summary:\n{previous}\n")
        parts.append("Conversation:\n" + render_transcript(older))
        request = [
            ChatMessage.system(SUMMARY_PROMPT.format(words=self.summary_words)),
            ChatMessage.user("\n".join(parts)),
        ]
        options = ChatOptions(model_id=self.model_id, max_tokens=self.summary_words * 2)
        response = await asyncio.wait_for(
            self.client.get_response(request, options), self.timeout_s
        )
        text = response.text.strip()
        if not text:
            raise ValueError("the summariser answered with no text")
        return text

    def _save(self, messages: list[ChatMessage]) -> Path:
        assert self.transcript_dir is not None
        lines = [json.dumps(m.to_dict(), ensure_ascii=False) for m in messages]
        digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:12]
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        path = self.transcript_dir / f"transcript-{stamp}-{digest}.jsonl"
        atomic_write_text(path, "\n".join(lines) + "\n")  # private: it is the conversation
        return path

    def __repr__(self) -> str:
        return f"SummarizationStrategy(threshold={self.threshold}, keep_recent={self.keep_recent})"


def summary_message(summary: str) -> ChatMessage:
    return ChatMessage(
        role=Role.USER,
        contents=[TextContent(text=f"{SUMMARY_HEADER}\n{summary}")],
        author_name=SUMMARY_AUTHOR,
    )


def render_transcript(messages: Sequence[ChatMessage]) -> str:
    """A history as plain text for the summariser; long tool outputs are cut."""
    lines: list[str] = []
    for message in messages:
        role = message.role.value.upper()
        if message.text:
            lines.append(f"{role}: {message.text}")
        for c in message.function_calls:
            arguments = json.dumps(c.arguments, ensure_ascii=False)[:500]
            lines.append(f"{role} called {c.name}({arguments})")
        for r in message.function_results:
            text = r.as_text()
            if len(text) > MAX_RENDERED_RESULT:
                text = (
                    text[:MAX_RENDERED_RESULT] + f" […{len(text) - MAX_RENDERED_RESULT} chars cut]"
                )
            lines.append(f"RESULT of {r.name or r.call_id}: {text}")
    return "\n".join(lines)


def _prefix_hashes(units: Sequence[Unit]) -> list[str]:
    """hashes[k] identifies units[:k]."""
    hashes = [hashlib.sha256(b"").hexdigest()]
    for unit in units:
        digest = hashlib.sha256(hashes[-1].encode())
        for message in unit.messages:
            digest.update(json.dumps(message.to_dict(), sort_keys=True, default=str).encode())
        hashes.append(digest.hexdigest())
    return hashes


def _recent_start(units: Sequence[Unit], keep_recent: int) -> int:
    """Index of the first unit of the kept tail (at most `keep_recent` messages)."""
    count = 0
    start = len(units)
    for i in range(len(units) - 1, -1, -1):
        count += len(units[i].messages)
        if count > keep_recent:
            break
        start = i
    return start
