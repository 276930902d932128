"""The PostgreSQL session store on a real server: bad addresses, missing tables and several
processes creating the table at once (what it shares with Redis is in
test_server_stores.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import psycopg
import pytest

from raf import AgentSession, ChatMessage, SessionError, SessionFormatError
from raf.stores.postgres_sessions import PostgresSessionStore
from tests.servers import PG_PASSWORD, Server, free_port

ROOT = Path(__file__).resolve().parents[2]


def _table() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


async def test_an_unreachable_server_names_the_store_and_address_not_the_password() -> None:
    port = free_port()
    store = PostgresSessionStore(f"postgresql://raf:{PG_PASSWORD}@127.0.0.1:{port}/raf", timeout=2)
    session = AgentSession(id="s", messages=[ChatMessage.user("keep me")])
    with pytest.raises(SessionError) as caught:
        await store.save(session)
    text = str(caught.value)
    assert f"PostgreSQL session store at postgresql://raf@127.0.0.1:{port}/raf" in text
    assert "refused" in text.lower() or "connect" in text.lower()
    assert PG_PASSWORD not in text
    assert session.revision is None  # not marked stored: the caller can save it later


async def test_a_wrong_password_is_refused_without_showing_it(postgres_server: Server) -> None:
    dsn = postgres_server.url.replace(PG_PASSWORD, "wrong-horse-battery")
    store = PostgresSessionStore(dsn, timeout=5)
    with pytest.raises(SessionError, match="password authentication failed") as caught:
        await store.list()
    assert "wrong-horse-battery" not in str(caught.value)


async def test_a_malformed_address_is_a_clear_error() -> None:
    store = PostgresSessionStore("postgresql://raf:pw@127.0.0.1:notaport/raf")
    with pytest.raises(SessionError, match="PostgreSQL session store at") as caught:
        await store.load("s")
    assert ":pw@" not in str(caught.value)
    with pytest.raises(SessionError, match="table name"):
        PostgresSessionStore("postgresql://127.0.0.1/raf", table="x; DROP TABLE y")


async def test_a_missing_table_is_named_when_it_may_not_be_created(
    postgres_server: Server,
) -> None:
    table = _table()
    store = PostgresSessionStore(postgres_server.url, table=table, create_table=False)
    with pytest.raises(SessionError, match=f"table {table}.*does not exist"):
        await store.list()
    await PostgresSessionStore(postgres_server.url, table=table).close()  # creates nothing yet
    creator = PostgresSessionStore(postgres_server.url, table=table)
    await creator.save(AgentSession(id="s"))
    await creator.close()
    assert await PostgresSessionStore(postgres_server.url, table=table, create_table=False).list()


async def test_a_table_dropped_while_in_use_is_an_error_and_other_tables_keep_theirs(
    postgres_server: Server,
) -> None:
    mine, other = _table(), _table()
    store = PostgresSessionStore(postgres_server.url, table=mine)
    neighbour = PostgresSessionStore(postgres_server.url, table=other)
    await store.save(AgentSession(id="s"))
    await neighbour.save(AgentSession(id="n"))
    async with await psycopg.AsyncConnection.connect(postgres_server.url, autocommit=True) as c:
        await c.execute(f"DROP TABLE {mine}")
    with pytest.raises(SessionError, match="does not exist any more"):
        await store.load("s")
    assert await neighbour.list() == ["n"]
    await store.close()
    await neighbour.close()


async def test_a_newer_stored_format_is_refused_with_the_store_named(
    postgres_server: Server,
) -> None:
    table = _table()
    store = PostgresSessionStore(postgres_server.url, table=table)
    await store.save(AgentSession(id="s"))
    async with await psycopg.AsyncConnection.connect(postgres_server.url, autocommit=True) as c:
        await c.execute(
            f"UPDATE {table} SET data = jsonb_set(data::jsonb, '{{format}}', '7')::text"
        )
    with pytest.raises(SessionFormatError, match="format 7"):
        await store.load("s")
    await store.close()


CREATOR = textwrap.dedent(
    """
    import asyncio, sys
    from raf import AgentSession
    from raf.stores.postgres_sessions import PostgresSessionStore

    async def main() -> None:
        store = PostgresSessionStore(sys.argv[1], table=sys.argv[2])
        await store.save(AgentSession(id=sys.argv[3]))
        await store.close()

    asyncio.run(main())
    """
)


def test_processes_creating_the_table_at_once_all_save(postgres_server: Server) -> None:
    table = _table()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CREATOR, postgres_server.url, table, f"p{n}"],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(6)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-3000:]

    async def listed() -> list[str]:
        store = PostgresSessionStore(postgres_server.url, table=table)
        try:
            return await store.list()
        finally:
            await store.close()

    assert sorted(asyncio.run(listed())) == [f"p{n}" for n in range(6)]
