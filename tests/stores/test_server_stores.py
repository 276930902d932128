"""What the two session stores on a server (PostgreSQL and Redis) each keep, run against
both: event loops that come and go, a missing client library named as the extra to
install, and a server gone mid-use told as a clear error that leaves the copy unsaved."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from raf import (
    AgentSession,
    ChatMessage,
    MissingExtraError,
    PostgresSessionStore,
    RedisSessionStore,
    SessionError,
    SessionStore,
)
from tests.servers import Server, start_postgres, start_redis
from tests.stores.store_kinds import close_store, make_store


@dataclass(frozen=True, kw_only=True)
class Served:
    """One kind of store on a server, as these tests need it."""

    store: str
    """Its class's name, as `raf` exports it."""
    library: str
    """The client library a bare install lacks."""
    extra: str
    """The extra that installs it."""
    address: str
    """A server's address (none answers there: the library is missed before)."""
    start: Callable[[], Server]
    opened: Callable[[str, float], SessionStore]
    """A store on the server at a URL, with a timeout."""
    named: str
    """How its errors start to name the store and the server."""


SERVED = {
    "postgres": Served(
        store="PostgresSessionStore",
        library="psycopg",
        extra="postgres",
        address="postgresql://127.0.0.1/x",
        start=start_postgres,
        opened=lambda url, timeout: PostgresSessionStore(url, timeout=timeout),
        named="PostgreSQL session store at postgresql://raf@",
    ),
    "redis": Served(
        store="RedisSessionStore",
        library="redis",
        extra="redis",
        address="redis://127.0.0.1/0",
        start=start_redis,
        opened=lambda url, timeout: RedisSessionStore(url, timeout=timeout),
        named="Redis session store at redis://127.0.0.1:",
    ),
}


def test_one_store_serves_one_event_loop_after_another(
    kind: str, request: pytest.FixtureRequest
) -> None:
    server: Server = request.getfixturevalue(f"{kind}_server")
    store = make_store(kind, server.url, f"t{uuid.uuid4().hex[:12]}")
    asyncio.run(store.save(AgentSession(id="first")))  # this loop's connections stay open
    loaded = asyncio.run(store.load("first"))
    asyncio.run(store.save(loaded))
    assert asyncio.run(store.list()) == ["first"]


@pytest.mark.parametrize("served", list(SERVED.values()), ids=list(SERVED))
def test_without_its_client_library_the_error_names_the_extra(served: Served) -> None:
    # by the value, not by the kind's name: no server is started, the test is not slow
    code = (
        f"import sys, asyncio; sys.modules[{served.library!r}] = None; "
        f"from raf import {served.store}; "
        f"asyncio.run({served.store}({served.address!r}).list())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert MissingExtraError.__name__ in done.stderr
    assert f'.[{served.extra}]"' in done.stderr or f"raf-agents[{served.extra}]" in done.stderr


async def test_a_server_gone_mid_use_is_a_clear_error_and_the_copy_stays_unsaved(
    kind: str,
) -> None:
    served = SERVED[kind]
    server = served.start()
    try:
        store = served.opened(server.url, 3)
        session = AgentSession(id="s", messages=[ChatMessage.user("one")])
        await store.save(session)
        saved = session.revision
    finally:
        server.stop()
    session.messages.append(ChatMessage.user("two"))
    with pytest.raises(SessionError, match=served.named):
        await store.save(session)
    assert session.revision == saved  # still the stored one: a later save can succeed
    await close_store(store)


@pytest.fixture(params=sorted(SERVED))
def kind(request: pytest.FixtureRequest) -> str:
    """Each kind of store on a server, by the name `make_store` knows it by."""
    value: str = request.param
    return value
