"""`raf serve` under load: requests/s and p50/p99 latency over HTTP against the same agent
called in-process, at 1, 16 and 64 concurrent clients.

The agent is a document on a scripted model that answers at once, so the figures are
the cost of raf's serving path (HTTP, JSON, session create/save, the run lifecycle),
not of a model. The server is the real program (`raf serve`, one uvicorn process,
sessions in memory) in a subprocess; clients are keep-alive connections on one event
loop in this one.
Each request is `POST /agents/bench/runs` (a new session and one run); in-process each
is `create_session` + `agent.run` + `store.save`.

    python benchmarks/serve_http.py [--requests 1000] [--levels 1,16,64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from raf.decl import DeclAgentBuilder
from raf.stores.sessions import InMemorySessionStore
from raf.testing import ScriptFileClient

DOCUMENT = "name: bench\ndescription: Answers pong.\ninstructions: Answer pong.\n"


BODY = json.dumps({"messages": "ping"}).encode()


class Connection:
    """A minimal keep-alive HTTP/1.1 client, so the load generator costs little CPU
    (an httpx client at 64 connections spent more than the server on two cores)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, host: str, port: int) -> Connection:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        head = (
            f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        status_line = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return int(status_line.split()[1]), await self.reader.readexactly(length)


def percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered), p99


async def load(
    call: Callable[[], Awaitable[None]], requests: int, clients: int
) -> tuple[float, float, float]:
    """(requests/s, p50 ms, p99 ms) for `requests` calls spread over `clients` workers."""
    times: list[float] = []
    remaining = requests

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            t0 = time.perf_counter()
            await call()
            times.append((time.perf_counter() - t0) * 1000)

    for _ in range(min(clients, 8)):  # warm up connections and code paths
        await call()
    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    elapsed = time.perf_counter() - start
    p50, p99 = percentiles(times)
    return len(times) / elapsed, p50, p99


def script_file(folder: Path, replies: int) -> Path:
    path = folder / "script.json"
    path.write_text(json.dumps({"replies": ["pong"] * replies}), encoding="utf-8")
    return path


async def over_http(folder: Path, requests: int, levels: list[int]) -> list[tuple[float, ...]]:
    (folder / "bench.yaml").write_text(DOCUMENT, encoding="utf-8")
    script = script_file(folder, (requests + 64) * len(levels) + 100)
    env = dict(os.environ, RAF_DATA_DIR=str(folder / "data"))
    env.pop("RAF_SERVE_TOKEN", None)
    command = [sys.executable, "-m", "raf.cli", "serve", str(folder / "bench.yaml")]
    command += ["--port", "0", "--sessions", "memory", "--model", f"scripted:{script}"]
    server = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        found = re.search(r"on (http://\S+)", line)
        if not found:
            raise RuntimeError(f"raf serve did not start: {line}")
        rows: list[tuple[float, ...]] = []
        host, port = found.group(1).removeprefix("http://").rsplit(":", 1)
        for clients in levels:
            connections = [await Connection.open(host, int(port)) for _ in range(clients)]
            free = asyncio.Queue[Connection]()
            for connection in connections:
                free.put_nowait(connection)

            async def call(free: asyncio.Queue[Connection] = free) -> None:
                connection = await free.get()
                try:
                    status, body = await connection.post("/agents/bench/runs", BODY)
                finally:
                    free.put_nowait(connection)
                if status != 200 or json.loads(body)["text"] != "pong":
                    raise RuntimeError(body.decode())

            rows.append(await load(call, requests, clients))
            for connection in connections:
                connection.writer.close()
        return rows
    finally:
        server.terminate()
        server.wait(timeout=20)


async def in_process(folder: Path, requests: int, levels: list[int]) -> list[tuple[float, ...]]:
    script = script_file(folder, (requests + 64) * len(levels) + 100)
    agent = (
        DeclAgentBuilder()
        .from_yaml_str(DOCUMENT)
        .with_chat_client(ScriptFileClient(script))
        .build()
    )
    store = InMemorySessionStore()

    async def call() -> None:
        session = agent.create_session()
        await store.save(session)
        response = await agent.run("ping", session)
        await store.save(session)
        if response.text != "pong":
            raise RuntimeError(response.text)

    return [await load(call, requests, clients) for clients in levels]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000, help="requests per level")
    parser.add_argument("--levels", default="1,16,64", help="concurrent clients, comma-separated")
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        http_rows = asyncio.run(over_http(Path(tmp), args.requests, levels))
        local_rows = asyncio.run(in_process(Path(tmp), args.requests, levels))
    print(f"{args.requests} requests per level; latency in ms")
    print(
        f"{'clients':>7} | {'HTTP req/s':>10} {'p50':>7} {'p99':>7} | "
        f"{'in-process req/s':>16} {'p50':>7} {'p99':>7}"
    )
    for clients, http_row, local_row in zip(levels, http_rows, local_rows, strict=True):
        print(
            f"{clients:>7} | {http_row[0]:>10.0f} {http_row[1]:>7.2f} {http_row[2]:>7.2f} | "
            f"{local_row[0]:>16.0f} {local_row[1]:>7.2f} {local_row[2]:>7.2f}"
        )


if __name__ == "__main__":
    main()
