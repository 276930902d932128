"""The Redis session store on a real server: bad addresses, keys of the wrong type and
prefixes that keep stores apart (what it shares with PostgreSQL is in
test_server_stores.py)."""

from __future__ import annotations

import uuid

import pytest
import redis

from raf import AgentSession, ChatMessage, SessionError
from raf.stores.redis_sessions import RedisSessionStore
from tests.servers import Server, free_port, start_redis


def _prefix() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


async def test_an_unreachable_server_names_the_store_and_address_not_the_password() -> None:
    port = free_port()
    store = RedisSessionStore(f"redis://user:hunter2@127.0.0.1:{port}/0", timeout=2)
    session = AgentSession(id="s", messages=[ChatMessage.user("keep me")])
    with pytest.raises(SessionError) as caught:
        await store.save(session)
    text = str(caught.value)
    assert f"Redis session store at redis://127.0.0.1:{port}/0" in text
    assert "hunter2" not in text
    assert session.revision is None  # not marked stored: the caller can save it later


async def test_a_wrong_password_is_refused_without_showing_it() -> None:
    server = start_redis(password="right-password")
    try:
        url = server.url.replace("right-password", "wrong-horse-battery")
        store = RedisSessionStore(url)
        with pytest.raises(SessionError, match="Redis session store at") as caught:
            await store.list()
        assert "wrong-horse-battery" not in str(caught.value)
        await store.close()
        right = RedisSessionStore(server.url)
        await right.save(AgentSession(id="s"))
        assert await right.list() == ["s"]
        await right.close()
    finally:
        server.stop()


async def test_a_malformed_address_is_a_clear_error() -> None:
    store = RedisSessionStore("http://127.0.0.1:6379/0")
    with pytest.raises(SessionError, match="Redis session store at"):
        await store.list()


async def test_keys_of_another_kind_are_a_clear_error_and_stay(redis_server: Server) -> None:
    prefix = _prefix()
    other = redis.Redis.from_url(redis_server.url)
    other.set(f"{prefix}:sessions", "not an index")
    store = RedisSessionStore(redis_server.url, prefix=prefix)
    with pytest.raises(SessionError, match="WRONGTYPE"):
        await store.save(AgentSession(id="s"))
    with pytest.raises(SessionError, match="WRONGTYPE"):
        await store.list()
    assert other.get(f"{prefix}:sessions") == b"not an index"
    assert other.exists(f"{prefix}:session:s") == 0  # the script stopped before writing
    other.close()
    await store.close()


async def test_prefixes_keep_stores_apart(redis_server: Server) -> None:
    a = RedisSessionStore(redis_server.url, prefix=_prefix())
    b = RedisSessionStore(redis_server.url, prefix=_prefix())
    await a.save(AgentSession(id="s", messages=[ChatMessage.user("a")]))
    await b.save(AgentSession(id="s", messages=[ChatMessage.user("b")]))
    assert (await a.load("s")).messages[0].text == "a"
    assert await b.delete("s") is True
    assert await a.list() == ["s"]
    await a.close()
    await b.close()
