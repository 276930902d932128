"""The `spot` fixture: one place in one kind of session store, fresh for each test, that
any number of handles (or processes) can open."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from raf import SessionStore
from tests.stores.store_kinds import KINDS, SHARED_KINDS, close_store, make_store


@dataclass(kw_only=True)
class StoreSpot:
    """Where one test keeps its sessions; `open()` gives another handle on them (for the
    memory store, the same one: it cannot be shared)."""

    kind: str
    where: str
    name: str
    opened: list[SessionStore] = field(default_factory=list)

    def open(self) -> SessionStore:
        if self.kind == "memory" and self.opened:
            return self.opened[0]
        store = make_store(self.kind, self.where, self.name)
        self.opened.append(store)
        return store


async def _spot(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreSpot]:
    kind: str = request.param
    name = f"t_{uuid.uuid4().hex[:12]}"
    if kind == "postgres":
        where = request.getfixturevalue("postgres_server").url
    elif kind == "redis":
        where = request.getfixturevalue("redis_server").url
    elif kind == "sqlite":
        where = str(tmp_path / "sessions.sqlite")
    else:
        where = str(tmp_path / "sessions")
    found = StoreSpot(kind=kind, where=where, name=name)
    yield found
    for store in found.opened:
        await close_store(store)


@pytest.fixture(params=KINDS)
async def spot(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreSpot]:
    """A fresh place in each kind of store."""
    async for found in _spot(request, tmp_path):
        yield found


@pytest.fixture(params=SHARED_KINDS)
async def shared_spot(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreSpot]:
    """A fresh place in each kind of store that several processes can share."""
    async for found in _spot(request, tmp_path):
        yield found
