"""Run records and run events in the Redis session store (`SessionRuns`), so every
worker that reaches the server sees each session's runs and their queue.

Keys (under the store's prefix): `run:<id>` a hash (data, seq, cancel, ended, expired);
`runs:seq` the counter that gives arrival order; `session-runs:<session>` the session's
runs ordered by seq; `run-events:<id>` the run's events ordered by number;
`runs:ended` ended runs by end time (what `purge_runs` reads).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from raf.stores.runs import RunRecord, run_json, stored_run

# KEYS: the run's hash, the counter, the session's runs. ARGV: the JSON, the id.
_ADD = """
local seq = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'seq', seq)
redis.call('ZADD', KEYS[3], seq, ARGV[2])
return seq
"""

# KEYS: the run's hash, ended runs. ARGV: the JSON, the id, ended_at or "".
_SAVE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'data', ARGV[1])
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'ended', '1')
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
end
return 1
"""

# KEYS: the run's hash. ARGV: the reason.
_CANCEL = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if not redis.call('HGET', KEYS[1], 'ended') then
  redis.call('HSET', KEYS[1], 'cancel', ARGV[1])
end
return 1
"""

_FIELDS = ["data", "seq", "cancel", "expired"]


def _record(found: Sequence[Any]) -> RunRecord | None:
    data, seq, cancel, expired = found
    if data is None:
        return None
    return stored_run(seq, data, cancel, expired is not None)


class RedisRuns:
    """`SessionRuns` on the server of `RedisSessionStore` (mixed into it)."""

    prefix: str
    _open: Callable[[], Any]
    """The store's own client (`RedisSessionStore._open`)."""
    _call: Callable[[Any], Awaitable[Any]]
    """The store's own call with its errors and time limit (`RedisSessionStore._call`)."""

    def _run_key(self, run_id: str) -> str:
        return f"{self.prefix}:run:{run_id}"

    def _session_runs_key(self, session: str) -> str:
        return f"{self.prefix}:session-runs:{session}"

    def _events_key(self, run_id: str) -> str:
        return f"{self.prefix}:run-events:{run_id}"

    def _ended_key(self) -> str:
        return f"{self.prefix}:runs:ended"

    async def add_run(self, run: RunRecord) -> RunRecord:
        client = self._open()
        keys = [
            self._run_key(run.id),
            f"{self.prefix}:runs:seq",
            self._session_runs_key(run.session),
        ]
        seq = await self._call(client.eval(_ADD, len(keys), *keys, run_json(run), run.id))
        return RunRecord.from_dict({**run.to_dict(), "seq": int(seq)})

    async def save_run(self, run: RunRecord) -> None:
        client = self._open()
        ended = "" if run.ended_at is None else repr(run.ended_at)
        keys = [self._run_key(run.id), self._ended_key()]
        await self._call(client.eval(_SAVE, len(keys), *keys, run_json(run), run.id, ended))

    async def load_run(self, run_id: str) -> RunRecord | None:
        client = self._open()
        return _record(await self._call(client.hmget(self._run_key(run_id), _FIELDS)))

    async def cancel_run(self, run_id: str, reason: str) -> RunRecord | None:
        client = self._open()
        await self._call(client.eval(_CANCEL, 1, self._run_key(run_id), reason))
        return await self.load_run(run_id)

    async def session_runs(self, session: str, *, active: bool = False) -> list[RunRecord]:
        client = self._open()
        ids = await self._call(client.zrange(self._session_runs_key(session), 0, -1))
        if not ids:
            return []
        async with client.pipeline(transaction=False) as pipe:
            for run_id in ids:
                pipe.hmget(self._run_key(str(run_id)), _FIELDS)
            found = await self._call(pipe.execute())
        runs = [r for r in (_record(f) for f in found) if r is not None]
        return [r for r in runs if not (active and r.ended_at is not None)]

    async def add_run_events(self, run_id: str, first: int, events: Sequence[str]) -> None:
        client = self._open()
        scored = {f"{first + i}:{event}": first + i for i, event in enumerate(events)}
        await self._call(client.zadd(self._events_key(run_id), scored))

    async def run_events(self, run_id: str, after: int, limit: int = 500) -> list[tuple[int, str]]:
        client = self._open()
        found = await self._call(
            client.zrangebyscore(self._events_key(run_id), f"({after}", "+inf", start=0, num=limit)
        )
        out = []
        for member in found:
            number, _, event = str(member).partition(":")
            out.append((int(number), event))
        return out

    async def purge_runs(self, ended_before: float) -> int:
        client = self._open()
        ids = await self._call(client.zrangebyscore(self._ended_key(), "-inf", f"({ended_before}"))
        for run_id in ids:
            async with client.pipeline(transaction=True) as pipe:
                pipe.delete(self._events_key(str(run_id)))
                pipe.hset(self._run_key(str(run_id)), "expired", "1")
                pipe.zrem(self._ended_key(), run_id)
                await self._call(pipe.execute())
        return len(ids)
