"""Session store speed: sessions saved (new), loaded and saved again (an update with the
revision check) per second, on every store — memory, JSON files, SQLite, PostgreSQL and
Redis — one caller at a time and 16 at once.

Starts a private PostgreSQL (fsync on: PostgreSQL's defaults) and Redis (nothing kept on
disk, as a cache would run) on loopback, from the Debian packages, and stops them after.
Each session holds 10 messages (about 2 KB of JSON).

    python benchmarks/session_stores.py [--sessions 1000] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the test servers' helpers live in tests/servers.py

from tests.servers import start_postgres, start_redis  # noqa: E402

from raf import (  # noqa: E402
    AgentSession,
    ChatMessage,
    InMemorySessionStore,
    JsonDirectorySessionStore,
    PostgresSessionStore,
    RedisSessionStore,
    SessionStore,
    SqliteSessionStore,
)


def _session(n: int) -> AgentSession:
    messages = []
    for turn in range(5):
        messages.append(ChatMessage.user(f"question {turn} of session {n}: " + "words " * 20))
        messages.append(ChatMessage.assistant(f"answer {turn}: " + "more words " * 20))
    return AgentSession(id=f"s{n}", messages=messages)


async def _rate(count: int, concurrency: int, work: Callable[[int], Awaitable[object]]) -> float:
    """Operations per second doing `work(0..count-1)` with `concurrency` callers."""
    queue = iter(range(count))

    async def caller() -> None:
        for n in queue:
            await work(n)

    start = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    return count / (time.perf_counter() - start)


async def measure(store: SessionStore, count: int, concurrency: int) -> tuple[float, ...]:
    sessions = [_session(n) for n in range(count)]
    await store.save(AgentSession(id="warm-up"))  # connections and tables made first
    loaded: dict[int, AgentSession] = {}

    async def load(n: int) -> None:
        loaded[n] = await store.load(f"s{n}")

    async def update(n: int) -> None:
        session = loaded[n]
        session.messages.append(ChatMessage.user("one more"))
        await store.save(session)

    saved = await _rate(count, concurrency, lambda n: store.save(sessions[n]))
    read = await _rate(count, concurrency, load)
    updated = await _rate(count, concurrency, update)
    return saved, read, updated


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args(argv)
    postgres = start_postgres(durable=True)
    redis = start_redis()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            makers: list[tuple[str, Callable[[str], SessionStore]]] = [
                ("memory", lambda tag: InMemorySessionStore()),
                ("json files", lambda tag: JsonDirectorySessionStore(folder / f"json-{tag}")),
                ("sqlite", lambda tag: SqliteSessionStore(folder / f"{tag}.sqlite")),
                ("postgresql", lambda tag: PostgresSessionStore(postgres.url, table=f"b_{tag}")),
                ("redis", lambda tag: RedisSessionStore(redis.url, prefix=f"b{tag}")),
            ]
            print(
                f"{args.sessions} sessions of 10 messages; operations per second "
                f"(1 caller / {args.concurrency} callers)"
            )
            print(f"{'store':<12} {'save new':>17} {'load':>17} {'save again':>17}")
            for name, make in makers:
                figures = []
                for concurrency in (1, args.concurrency):
                    store = make(f"c{concurrency}")
                    figures.append(await measure(store, args.sessions, concurrency))
                    close = getattr(store, "close", None)
                    if close is not None:
                        await close()
                cells = [
                    f"{one:>7,.0f} / {many:>7,.0f}" for one, many in zip(*figures, strict=True)
                ]
                print(f"{name:<12} " + " ".join(f"{c:>17}" for c in cells))
    finally:
        postgres.stop()
        redis.stop()


if __name__ == "__main__":
    asyncio.run(main())
