"""Tenancy's second line: a session's stored mark names the token that made it, and a
caller who reaches its key another way — a token-less server (whose keys are the bare
ids) sharing the store with a server that has tokens, and asking for the other token's
whole key — still gets the 404 of a session that does not exist."""

from __future__ import annotations

import pytest

from raf import AgentBuilder
from raf.serve import AgentHost
from raf.serve.errors import ServeError
from raf.serve.hosting import public_id
from raf.serve.tenancy import ANONYMOUS, Tenant
from raf.stores.sessions import InMemorySessionStore
from raf.testing import ScriptedChatClient


async def test_a_session_reached_by_its_stored_key_is_still_its_owners() -> None:
    agent = AgentBuilder("helper").with_chat_client(ScriptedChatClient([])).build()
    host = AgentHost([agent], store=InMemorySessionStore())
    alice = "owner-alice-0123456789abcdef"
    made = await host.create_session("helper", alice)
    own_id = public_id(made)  # the id Alice's client knows
    assert (await host.session("helper", own_id, alice)).id == made.id
    stored_key = Tenant(alice).key(own_id)
    assert made.id == stored_key != own_id
    # the token-less caller's key for a name is the name itself: the stored key leads
    # straight to Alice's session, and only the mark stops it
    assert Tenant(ANONYMOUS).key(stored_key) == stored_key
    with pytest.raises(ServeError) as refused:
        await host.session("helper", stored_key, ANONYMOUS)
    assert refused.value.status == 404
    with pytest.raises(ServeError):
        await host.session("helper", own_id, "owner-bob-0123456789abcdef")
