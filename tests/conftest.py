"""Fixtures every test folder can use: private PostgreSQL and Redis servers, started once
per test session on loopback and stopped at its end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import Server, start_postgres, start_redis


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    """A PostgreSQL cluster of this test session; `url` carries user and password."""
    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Server]:
    """A Redis server of this test session, keeping nothing on disk."""
    server = start_redis()
    try:
        yield server
    finally:
        server.stop()
