"""Bytes a stored message costs: raf against the hand-written loop, in one process.

1 000 sessions from `agent.create_session()` each take 10 turns through `agent.run` (a
short user message, a short answer; the agent has three tools), and the growth of the
process's resident set (two `gc.collect()`s before each reading) is divided by the
20 000 messages the sessions keep. The hand-written floor keeps plain dicts
(`overhead_scenario.floor_turn`) and is measured in the same process, first; each
measurement's sessions stay alive to the end, so no freed page is reused by the next.
`--trace` also lists what one turn keeps, by the line that allocated it (tracemalloc),
for finding what a stored message need not carry.

    python benchmarks/message_memory.py [--sessions 1000] [--turns 10] [--trace]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tracemalloc
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks import overhead_scenario as scenario  # noqa: E402

TARGET = 500
"""The most bytes a stored message may cost raf."""


def build_agent() -> Any:
    """An agent with the scenario's three tools on a model that answers at once."""
    from raf import (
        AgentBuilder,
        AgentResponseUpdate,
        ChatMessage,
        ChatOptions,
        ChatResponse,
        FinishReason,
    )

    class Model:
        """Answers every request with a short text, as a fresh message (a real client
        builds one per reply)."""

        async def get_response(
            self, messages: Sequence[ChatMessage], options: ChatOptions
        ) -> ChatResponse:
            return ChatResponse(
                messages=[ChatMessage.assistant(scenario.MEMORY_ANSWER)],
                finish_reason=FinishReason.STOP,
            )

        async def get_streaming_response(
            self, messages: Sequence[ChatMessage], options: ChatOptions
        ) -> AsyncIterator[AgentResponseUpdate]:
            raise NotImplementedError
            yield

    return (
        AgentBuilder()
        .with_instructions(scenario.INSTRUCTIONS)
        .with_chat_client(Model())
        .with_tools([scenario.add, scenario.upper, scenario.lookup])
        .build()
    )


async def raf_bytes(sessions: int, turns: int) -> dict[str, float]:
    agent = build_agent()

    async def turn(session: Any, text: str) -> Any:
        return await agent.run(text, session)

    return await scenario.bytes_per_stored_message(
        agent.create_session,
        turn,
        lambda session: len(session.messages),
        sessions=sessions,
        turns=turns,
    )


async def floor_bytes(sessions: int, turns: int) -> dict[str, float]:
    return await scenario.bytes_per_stored_message(
        scenario.FloorSession,
        scenario.floor_turn,
        scenario.floor_count,
        sessions=sessions,
        turns=turns,
    )


async def trace(turns: int = 50, top: int = 15) -> None:
    """What `turns` turns of one session keep, by allocating line."""
    agent = build_agent()
    session = agent.create_session()
    await agent.run("warm", session)
    gc.collect()
    tracemalloc.start(1)
    before = tracemalloc.take_snapshot()
    for index in range(turns):
        await agent.run(f"question {index}", session)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    stats = after.compare_to(before, "lineno")
    kept = sum(s.size_diff for s in stats)
    print(f"\none session, {turns} turns: {kept / (2 * turns):.0f} B per message (tracemalloc)")
    for stat in stats[:top]:
        per = stat.size_diff / (2 * turns)
        print(
            f"  {per:7.1f} B/msg  {stat.count_diff / (2 * turns):5.2f} blocks/msg  {stat.traceback}"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=scenario.MEMORY_SESSIONS)
    parser.add_argument("--turns", type=int, default=scenario.MEMORY_TURNS)
    parser.add_argument("--trace", action="store_true", help="list what a turn keeps")
    args = parser.parse_args()
    floor = await floor_bytes(args.sessions, args.turns)
    raf = await raf_bytes(args.sessions, args.turns)
    print(
        f"bytes per stored message ({args.sessions} sessions x {args.turns} turns, RSS growth):"
        f"\n  hand-written loop (plain dicts) {floor['bytes']:6.0f} B"
        f"\n  raf                             {raf['bytes']:6.0f} B  (target <= {TARGET} B)"
        f"\n  over {raf['messages']:.0f} messages each"
    )
    if args.trace:
        await trace()


if __name__ == "__main__":
    asyncio.run(main())
