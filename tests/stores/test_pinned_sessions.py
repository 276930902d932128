"""Pinned messages survive a save and a load in every kind of session store, and so does
unpinning, seen from another handle on the same store."""

from __future__ import annotations

from raf import AgentSession, ChatMessage
from tests.stores.conftest import StoreSpot


async def test_pins_survive_save_and_load(spot: StoreSpot) -> None:
    store = spot.open()
    session = AgentSession(id="pins", messages=[ChatMessage.user("hello")])
    session.messages.append(ChatMessage.user("My flight is LH 454.", pinned=True))
    session.pin("The budget is 4 200 EUR.")
    await store.save(session)
    loaded = await spot.open().load("pins")
    assert [m.pinned for m in loaded.messages] == [False, True, True]
    assert [m.text for m in loaded.pinned] == ["My flight is LH 454.", "The budget is 4 200 EUR."]
    loaded.messages[1].pinned = False
    loaded.messages[0].pinned = True
    await spot.open().save(loaded)
    again = await store.load("pins")
    assert [m.pinned for m in again.messages] == [True, False, True]
