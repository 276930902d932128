"""A chat client on BFCL: each item's question asked once with its functions offered, the
calls the model makes scored by BFCL's AST check, and a table per category."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raf.core.chat_client import ChatClient
from raf.core.contents import FunctionCallContent, TextContent
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.tools import Tool
from raf.evals.bfcl.checker import Verdict, check
from raf.evals.bfcl.data import BfclItem, DeclaredTool, evenly_spaced, load

ANSWER_TOKENS = 48
"""Tokens a written answer may take: BFCL scores the calls, an answer only has to start."""


@dataclass(kw_only=True, slots=True)
class BfclResult:
    """One item: the calls the model made and BFCL's verdict on them."""

    id: str
    category: str
    question: str
    calls: list[dict[str, dict[str, Any]]]
    verdict: Verdict
    seconds: float
    answer: str = ""
    """What the model wrote instead of (or besides) a call."""


@dataclass(kw_only=True, slots=True)
class BfclReport:
    """The results of one client on BFCL's categories."""

    model: str
    results: list[BfclResult] = field(default_factory=list)

    def by_category(self) -> dict[str, tuple[int, int]]:
        """Per category, in the order run: (right, items)."""
        out: dict[str, tuple[int, int]] = {}
        for result in self.results:
            right, count = out.get(result.category, (0, 0))
            out[result.category] = (right + result.verdict.valid, count + 1)
        return out

    def accuracy(self, category: str) -> float:
        right, count = self.by_category().get(category, (0, 0))
        return right / count if count else 0.0

    def table(self) -> str:
        """A Markdown table: a row per category, right / items, share, median seconds."""
        lines = [
            f"BFCL on {self.model}",
            "| category | right | items | accuracy | median s |",
            "|---|---:|---:|---:|---:|",
        ]
        for category, (right, count) in self.by_category().items():
            seconds = [r.seconds for r in self.results if r.category == category]
            lines.append(
                f"| {category} | {right} | {count} | {right / count:.0%} | "
                f"{statistics.median(seconds):.1f} |"
            )
        return "\n".join(lines)

    def failures(self, category: str | None = None) -> list[BfclResult]:
        return [
            r
            for r in self.results
            if not r.verdict.valid and (category is None or r.category == category)
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "by_category": {k: list(v) for k, v in self.by_category().items()},
            "results": [
                {
                    "id": r.id,
                    "category": r.category,
                    "question": r.question,
                    "calls": r.calls,
                    "valid": r.verdict.valid,
                    "error": r.verdict.error,
                    "error_type": r.verdict.kind,
                    "answer": r.answer,
                    "seconds": round(r.seconds, 3),
                }
                for r in self.results
            ],
        }

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2), encoding="utf-8")


_ROLES = {"user": Role.USER, "system": Role.SYSTEM, "assistant": Role.ASSISTANT}


def item_messages(item: BfclItem) -> list[ChatMessage]:
    """The item's conversation as raf messages."""
    return [
        ChatMessage(
            role=_ROLES.get(m.get("role", ""), Role.USER),
            contents=[TextContent(text=m.get("content", ""))],
        )
        for m in item.messages
    ]


async def ask(client: ChatClient, item: BfclItem) -> BfclResult:
    """Ask `client` one item once and score the calls of its reply."""
    tools: list[Tool] = [DeclaredTool(f) for f in item.functions]
    options = ChatOptions(tools=tools, max_tokens=ANSWER_TOKENS)
    started = time.perf_counter()
    response = await client.get_response(item_messages(item), options)
    seconds = time.perf_counter() - started
    calls = [
        {content.name: dict(content.arguments)}
        for message in response.messages
        for content in message.contents
        if isinstance(content, FunctionCallContent)
    ]
    return BfclResult(
        id=item.id,
        category=item.category,
        question=item.question,
        calls=calls,
        verdict=check(item.category, item.functions, calls, item.answers),
        seconds=seconds,
        answer=response.text,
    )


async def run_bfcl(
    client: ChatClient,
    categories: Sequence[str],
    *,
    limit: int | None = None,
    offset: int = 0,
    model: str = "",
    progress: Callable[[BfclResult], None] | None = None,
) -> BfclReport:
    """`client` on each category's items (`limit` of them, evenly spaced, each pick moved
    `offset` items on), one at a time."""
    items = {category: evenly_spaced(load(category), limit, offset) for category in categories}
    report = BfclReport(model=model or getattr(client, "model", "") or type(client).__name__)
    for category in categories:
        for item in items[category]:
            result = await ask(client, item)
            report.results.append(result)
            if progress is not None:
                progress(result)
    return report
