"""Benchmark raf's OpenAI client against calling the openai SDK directly, same local server.

Starts llm-katan (echo mode) on loopback, then alternates raw SDK calls and raf calls,
streaming and not, and prints the median latency of each and raf's overhead (target:
within 10%). Run: python benchmarks/clients_overhead.py [--requests N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import openai

from raf.clients.openai.client import OpenAIChatClient
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions

MODEL = "echo-model"
KEY = "sk-bench-0000000000"
PROMPT = "Tell me about the sea in a few words."


def start_katan(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    binary = Path(sys.executable).parent / "llm-katan"
    command = [str(binary) if binary.exists() else (shutil.which("llm-katan") or "llm-katan")]
    command += ["--model", MODEL, "--backend", "echo", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--providers", "openai", "--log-level", "error"]
    command += ["--stats-file", str(home / "stats.json")]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(home)},
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("llm-katan did not start") from None
            time.sleep(0.2)


async def timed(fn: Callable[[], Awaitable[object]], out: list[float]) -> None:
    start = time.perf_counter()
    await fn()
    out.append(time.perf_counter() - start)


async def main(requests: int) -> None:
    with tempfile.TemporaryDirectory() as home:
        proc, base_url = start_katan(Path(home))
        try:
            await run(base_url, requests)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


async def run(base_url: str, requests: int) -> None:
    sdk = openai.AsyncOpenAI(api_key=KEY, base_url=base_url, max_retries=0)
    raf = OpenAIChatClient(MODEL, api_key=KEY, base_url=base_url)
    body = [{"role": "user", "content": PROMPT}]
    messages = [ChatMessage.user(PROMPT)]
    options = ChatOptions()

    async def sdk_call() -> None:
        await sdk.chat.completions.create(model=MODEL, messages=body)  # type: ignore[arg-type]

    async def sdk_stream() -> None:
        stream = await sdk.chat.completions.create(  # type: ignore[call-overload]
            model=MODEL, messages=body, stream=True, stream_options={"include_usage": True}
        )
        async for _ in stream:
            pass

    async def raf_call() -> None:
        await raf.get_response(messages, options)

    async def raf_stream() -> None:
        async for _ in raf.get_streaming_response(messages, options):
            pass

    cases = {"sdk": sdk_call, "raf": raf_call, "sdk stream": sdk_stream, "raf stream": raf_stream}
    times: dict[str, list[float]] = {name: [] for name in cases}
    for fn in cases.values():  # warm up connections and code paths
        for _ in range(5):
            await fn()
    order = list(cases.items())
    rng = random.Random(1)
    for _ in range(requests):
        rng.shuffle(order)  # no case always runs right after another
        for name, fn in order:
            await timed(fn, times[name])
    median = {name: statistics.median(values) * 1000 for name, values in times.items()}
    print(f"{requests} requests each, median latency against llm-katan on loopback")
    for name, value in median.items():
        print(f"  {name:<11} {value:7.2f} ms")
    for kind in ("", " stream"):
        overhead = (median[f"raf{kind}"] / median[f"sdk{kind}"] - 1) * 100
        print(f"raf overhead{kind or ' (whole)'}: {overhead:+.1f}%")
    await sdk.close()
    await raf.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200)
    asyncio.run(main(parser.parse_args().requests))
