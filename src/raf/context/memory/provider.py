"""SuperBrainContextProvider: persistent memory read on demand and consolidated in the
background by a curator sub-agent after every few turns."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raf.context.memory.journal import JobJournal
from raf.context.memory.store import MemoryStore
from raf.context.memory.tools import curator_tools, reader_tools
from raf.context.memory.worker import ConsolidationJob, ConsolidationWorker
from raf.core.chat_client import ChatClient
from raf.core.context import ContextResult
from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage, Role
from raf.core.options import AgentRunOptions
from raf.core.responses import AgentResponse
from raf.core.sessions import AgentSession

log = logging.getLogger("raf.context.memory")

NOTICE = (
    "## Persistent memory\n"
    "You have a persistent memory from earlier conversations (who the user is, their "
    "preferences and rules, lessons learned, domain notes). It is not shown here: read it "
    "when it can help, with `read_memory` (start with index.md) and `list_memory`. It is "
    "updated automatically after conversations."
)
CURATOR_PROMPT = (
    "You are the memory curator. Update the memory folder from the conversation you are "
    "given, using only your file tools, following these rules. Today is {today}.\n\n"
)
MAX_TURN_CHARS = 4_000
SMALL_TALK = re.compile(
    r"^\W*(hi|hello|hey|hiya|thanks?( you)?|thx|ok(ay)?|bye|goodbye|cool|great|nice|"
    r"good (morning|afternoon|evening|night)|yes|no|sure|lol|how are you)\W*$",
    re.IGNORECASE,
)


def condense(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    """The user and assistant text of a turn, as JSON for the session's provider state."""
    out = []
    for message in messages:
        if message.role not in (Role.USER, Role.ASSISTANT) or not message.text.strip():
            continue
        out.append({"role": message.role.value, "text": message.text[:MAX_TURN_CHARS]})
    return out


def is_small_talk(turns: Sequence[dict[str, str]]) -> bool:
    said = [t["text"] for t in turns if t.get("role") == "user"]
    return all(SMALL_TALK.match(text.strip()) for text in said)


class SuperBrainContextProvider:
    """Context provider of kind `memory` (name `super-brain`) over a memory folder.

    Read path: a short notice and `read_memory` / `list_memory`. Write path: every
    `consolidation_interval` turns of a session (0 disables) a job goes to one background
    worker; the curator sub-agent, whose only tools are file tools scoped to the folder,
    merges the new facts. The run never waits for it; call `aclose()` when done.
    """

    kind = "memory"

    def __init__(
        self,
        directory: str | Path,
        *,
        consolidation_interval: int = 3,
        memory_client: ChatClient | None = None,
        name: str = "super-brain",
        curator_max_tool_rounds: int = 12,
        curator_timeout_s: float = 300.0,
        consolidationInterval: int | None = None,
        memoryModel: ChatClient | None = None,
    ) -> None:
        if consolidationInterval is not None:
            consolidation_interval = consolidationInterval
        if memoryModel is not None:
            memory_client = memoryModel
        if isinstance(consolidation_interval, bool) or not isinstance(consolidation_interval, int):
            raise ConfigurationError(
                f"consolidation_interval must be a whole number, not {consolidation_interval!r}"
            )
        if consolidation_interval < 0:
            raise ConfigurationError("consolidation_interval must be 0 or more")
        self.store = MemoryStore(directory)
        if self.store.root.exists() and not self.store.root.is_dir():
            raise ConfigurationError(f"memory folder {self.store.root} is a file, not a folder")
        self.name = name
        self.consolidation_interval = consolidation_interval
        self.memory_client = memory_client
        self.curator_max_tool_rounds = curator_max_tool_rounds
        self.curator_timeout_s = curator_timeout_s
        self.journal = JobJournal(self.store.root)
        self.worker = ConsolidationWorker(
            self._consolidate, finished=self._forget_job, dropped=self._release_job
        )
        self._seeded = False
        self._replayed = False

    @property
    def directory(self) -> Path:
        return self.store.root

    async def ensure_seeded(self) -> None:
        if not self._seeded:
            try:
                made = await asyncio.to_thread(self.store.seed)
            except OSError as exc:
                raise ConfigurationError(
                    f"memory folder {self.store.root} cannot be set up: {exc}"
                ) from exc
            if made:
                log.info("memory %s seeded: %s", self.store.root, ", ".join(made))
            repaired = await asyncio.to_thread(self.store.recover)
            if repaired:
                log.warning(
                    "memory %s repaired after an interrupted write: %s",
                    self.store.root,
                    "; ".join(repaired),
                )
            self._seeded = True

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        await self.ensure_seeded()
        if not self._replayed:
            self._replayed = True
            await self._replay(self.memory_client or getattr(agent, "leaf_client", None))
        return ContextResult(instructions=NOTICE, tools=reader_tools(self.store))

    async def on_invoked(
        self,
        agent: Any,
        session: AgentSession,
        request_messages: Sequence[ChatMessage],
        response: AgentResponse | None,
        error: BaseException | None,
    ) -> None:
        if error is not None or response is None or self.consolidation_interval == 0:
            return
        state = dict(session.get_provider_state(self.name) or {})
        turns = int(state.get("turns", 0)) + 1
        pending = [*state.get("pending", []), *condense([*request_messages, *response.messages])]
        if turns % self.consolidation_interval == 0:
            client = self.memory_client or getattr(agent, "leaf_client", None)
            if client is None:
                log.warning(
                    "memory %r: no model for the curator; turns not consolidated", self.name
                )
            else:
                receipt = await asyncio.to_thread(self.journal.record, session.id, pending)
                self.worker.submit(
                    ConsolidationJob(
                        session_id=session.id, turns=pending, client=client, receipts=[receipt]
                    )
                )
            pending = []
        session.set_provider_state(self.name, {"turns": turns, "pending": pending})

    async def _replay(self, client: ChatClient | None) -> None:
        """Queue the jobs a process killed before running them left on disk."""
        if client is None or self.consolidation_interval == 0:
            return
        for orphan in await asyncio.to_thread(self.journal.claim_orphans):
            log.warning(
                "memory %s: replaying the consolidation of session %s left by a stopped process",
                self.store.root,
                orphan.session_id,
            )
            self.worker.submit(
                ConsolidationJob(
                    session_id=orphan.session_id,
                    turns=orphan.turns,
                    client=client,
                    receipts=[orphan.receipt],
                )
            )

    def _forget_job(self, job: ConsolidationJob) -> None:
        for receipt in job.receipts:
            self.journal.done(receipt)

    def _release_job(self, job: ConsolidationJob) -> None:
        for receipt in job.receipts:
            self.journal.release(receipt)

    async def drain(self, timeout_s: float | None = None) -> bool:
        """Wait for queued consolidations (tests, scripts); the agent itself never does."""
        return await self.worker.drain(timeout_s)

    async def aclose(self, *, drain: bool = True, timeout_s: float = 30.0) -> None:
        """Finish (or, with `drain=False`, cancel) the background consolidation."""
        await self.worker.close(drain=drain, timeout_s=timeout_s)

    async def _consolidate(self, job: ConsolidationJob) -> None:
        await self.ensure_seeded()
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        turns = f"{len(job.turns)} message(s)"
        if not job.turns or is_small_talk(job.turns):
            await asyncio.to_thread(
                self.store.append_log,
                f"- {stamp} · session {job.session_id[:12]} · {turns} · skipped: small talk",
            )
            return
        from raf.agent.builder import AgentBuilder

        changed: set[str] = set()
        async with self.store.curator_lock():
            rules = await asyncio.to_thread(self.store.read, "AGENT.md")
            curator = (
                AgentBuilder("memory-curator")
                .with_chat_client(job.client)
                .with_instructions(
                    CURATOR_PROMPT.format(today=time.strftime("%Y-%m-%d", time.gmtime())) + rules
                )
                .with_tools(curator_tools(self.store, changed))
                .with_max_tool_rounds(self.curator_max_tool_rounds)
                .build()
            )
            transcript = "\n".join(f"{t['role'].upper()}: {t['text']}" for t in job.turns)
            await asyncio.wait_for(
                curator.run(
                    f"Conversation to consolidate (session {job.session_id}):\n\n{transcript}"
                ),
                self.curator_timeout_s,
            )
            what = ", ".join(sorted(changed)) if changed else "nothing worth keeping"
            await asyncio.to_thread(
                self.store.append_log,
                f"- {stamp} · session {job.session_id[:12]} · {turns} · changed: {what}",
            )

    def __repr__(self) -> str:
        return f"SuperBrainContextProvider({str(self.store.root)!r})"
