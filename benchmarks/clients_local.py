"""Benchmark the embedded local model: load time, time to first token, tokens per second.

Run: python benchmarks/clients_local.py [--threads N] [--tokens N] [--runs N]
The default model is pulled first (once) by raf's own pull code.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from raf.clients.local import client as local_module
from raf.clients.local.client import LocalChatClient, default_threads
from raf.clients.local.model_store import pull_model
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import UpdateKind

PROMPT = "Write a short paragraph about the sea."


async def main(threads: int, tokens: int, runs: int) -> None:
    await pull_model()
    local_module._ENGINES.clear()
    client = LocalChatClient(threads=threads, max_tokens=tokens)
    start = time.perf_counter()
    await client.load()
    load = time.perf_counter() - start
    ttfts: list[float] = []
    rates: list[float] = []
    options = ChatOptions(max_tokens=tokens, additional={"ignore_eos": True, "cache_prompt": False})
    for _ in range(runs):
        start = time.perf_counter()
        first: float | None = None
        output = 0
        async for update in client.get_streaming_response(
            [ChatMessage.system("You are a writer."), ChatMessage.user(PROMPT)], options
        ):
            if update.kind is UpdateKind.TEXT_DELTA and first is None:
                first = time.perf_counter()
            if update.kind is UpdateKind.USAGE and update.usage is not None:
                output = update.usage.output_tokens
        end = time.perf_counter()
        assert first is not None
        ttfts.append(first - start)
        rates.append((output - 1) / (end - first) if output > 1 else 0.0)
    print(f"model: {client.model}  threads: {threads} (default here: {default_threads()})")
    print(f"load time:            {load * 1000:8.1f} ms")
    print(f"time to first token:  {statistics.median(ttfts) * 1000:8.1f} ms (median of {runs})")
    print(f"generation:           {statistics.median(rates):8.1f} tokens/s ({tokens} tokens)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.threads, args.tokens, args.runs))
