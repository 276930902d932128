"""Tokens sent per model call over a long conversation, with and without compression.

A 300-turn scripted conversation: in each turn the user asks about a log, the model calls
`fetch_log` (about 1,700 tokens of output), then answers. The same conversation runs on
a plain agent and on one with a `CompressionProvider` (masking → LLM summary → token
budget) sized from model metadata: 16k window, 2k max output, 4k margin. Prints the
tokens of every request, their maximum and total, and checks the targets: every request
with compression within the window less the output (14k), and at least 60% fewer tokens
in total (the summariser's own requests are counted on the compressed side).

    python benchmarks/context_compression.py [--turns 300] [--check]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

from raf import AgentBuilder, ChatMessage, ChatOptions, Role, tool
from raf.context.compression import (
    CompressionPipeline,
    CompressionProvider,
    ObservationMaskingStrategy,
    SummarizationStrategy,
    TokenBudgetStrategy,
)
from raf.core.tokens import EstimatingCounter, count_messages_tokens
from raf.testing import FunctionChatClient, call, reply

COUNTER = EstimatingCounter()
WORDS = [
    "error",
    "warning",
    "retry",
    "timeout",
    "connected",
    "disk",
    "cpu",
    "memory",
    "request",
    "latency",
    "user",
]


@dataclass
class ModelInfo:
    context_window: int = 16_000
    max_output_tokens: int = 2_000


@tool(run_in_thread=False)
def fetch_log(service: str, hour: int) -> str:
    """Fetch one hour of a service's log.

    Args:
        service: the service name
        hour: the hour, 0-23
    """
    rng = random.Random(f"{service}-{hour}")
    lines = [
        f"{hour:02d}:{m:02d} {service} {' '.join(rng.choice(WORDS) for _ in range(8))}"
        for m in range(0, 60)
        for _ in range(2)
    ]
    return "\n".join(lines)[:6_000]


class Model:
    """The main model: calls fetch_log for each question, then answers briefly."""

    def __init__(self) -> None:
        self.sent: list[int] = []
        self.turn = 0

    def __call__(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage | str:
        self.sent.append(count_messages_tokens(messages, COUNTER))
        last = messages[-1]
        if last.role is Role.USER:
            self.turn += 1
            return reply("", call("fetch_log", service=f"svc{self.turn % 7}", hour=self.turn % 24))
        return f"Turn {self.turn}: the log shows {self.turn % 5} timeouts and normal latency."


class Summariser:
    def __init__(self) -> None:
        self.sent: list[int] = []

    def __call__(self, messages: Sequence[ChatMessage], options: ChatOptions) -> str:
        self.sent.append(count_messages_tokens(messages, COUNTER))
        return (
            "The user asked about service logs hour by hour; each fetch showed a few "
            "timeouts and normal latency. No open questions."
        )


async def conversation(turns: int, compress: bool) -> tuple[Model, Summariser, float]:
    model = Model()
    summariser = Summariser()
    builder = (
        AgentBuilder()
        .with_instructions("You are an SRE assistant. Use fetch_log to read logs.")
        .with_chat_client(FunctionChatClient(model))
        .with_tool(fetch_log)
    )
    transcripts = tempfile.mkdtemp(prefix="raf-bench-transcripts-")
    if compress:
        pipeline = CompressionPipeline(
            [
                ObservationMaskingStrategy(keep_last=3),
                SummarizationStrategy(
                    FunctionChatClient(summariser),
                    threshold=0.8,
                    keep_recent=12,
                    transcript_dir=transcripts,
                ),
                TokenBudgetStrategy(),
            ]
        )
        builder.with_context_provider(
            CompressionProvider(
                pipeline, model_info=ModelInfo(), margin=4_000, counter=COUNTER, compact_tool=False
            )
        )
    agent = builder.build()
    session = agent.create_session()
    start = time.perf_counter()
    for i in range(turns):
        await agent.run(f"What happened in hour {i % 24} of svc{(i + 1) % 7}?", session=session)
    return model, summariser, time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args(argv)
    limit = ModelInfo().context_window - ModelInfo().max_output_tokens
    plain, _, plain_s = asyncio.run(conversation(args.turns, compress=False))
    small, summariser, small_s = asyncio.run(conversation(args.turns, compress=True))
    plain_total = sum(plain.sent)
    small_total = sum(small.sent) + sum(summariser.sent)
    saving = 1 - small_total / plain_total
    print(f"turns: {args.turns}, model calls: {len(plain.sent)} (each side)")
    print(f"without compression: max {max(plain.sent):>9,} tokens/call, total {plain_total:>13,}")
    print(
        f"with compression:    max {max(small.sent):>9,} tokens/call, total {small_total:>13,} "
        f"(incl. {len(summariser.sent)} summary calls, {sum(summariser.sent):,} tokens)"
    )
    print(f"window less output: {limit:,} tokens; saving: {saving:.1%}")
    print(f"time: {plain_s:.2f}s without, {small_s:.2f}s with")
    ok = max(small.sent) <= limit and saving >= 0.60
    print("targets:", "met" if ok else "MISSED")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
