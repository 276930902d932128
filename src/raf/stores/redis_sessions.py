"""Sessions in Redis, shared by every worker that reaches the server.

redis-py (the `redis` extra) is imported only here, when the store is first used.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from raf.core.errors import (
    MissingExtraError,
    SessionConflictError,
    SessionNotFoundError,
    SessionStoreError,
)
from raf.core.sessions import AgentSession, SessionLease, next_revision
from raf.stores.redis_runs import RedisRuns

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.commands.core import AsyncScript


# KEYS: the session's hash, the index. ARGV: "1" when the copy was never stored, the
# expected revision, the new revision, the JSON, updated_at, the id.
# Returns {1} when stored, else {0, stored revision or ""} and a flag 1 when one exists.
# A failing command does not undo earlier ones in a script, so the commands that can fail
# (a key of another type) come before any write.
_SAVE = """
local stored = redis.call('HGET', KEYS[1], 'revision')
if ARGV[1] == '1' then
  if stored then return {0, stored, 1} end
elseif (not stored) or stored ~= ARGV[2] then
  if stored then return {0, stored, 1} end
  return {0, '', 0}
end
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[6])
redis.call('HSET', KEYS[1], 'data', ARGV[4], 'revision', ARGV[3])
return {1}
"""

# KEYS: the lease's hash. ARGV: the holder, the lease's length in milliseconds.
# Returns the standing holder, its cancel reason ("" for none) and milliseconds left.
_TAKE_LEASE = """
local held = redis.call('HGET', KEYS[1], 'holder')
if not held then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'holder', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
elseif held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return {redis.call('HGET', KEYS[1], 'holder'), redis.call('HGET', KEYS[1], 'cancel') or '',
        redis.call('PTTL', KEYS[1])}
"""

_RELEASE_LEASE = """
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

# KEYS: the lease's hash. ARGV: the reason. Returns {} when no lease stands.
_CANCEL_LEASE = """
local held = redis.call('HGET', KEYS[1], 'holder')
if not held then return {} end
redis.call('HSET', KEYS[1], 'cancel', ARGV[1])
return {held, ARGV[1], redis.call('PTTL', KEYS[1])}
"""

_DELETE = """
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('DEL', KEYS[1])
"""


def redis_address(url: str) -> str:
    """The URL as people read it, without user name or password."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "redis://<unparsable address>"
    return f"{parts.scheme or 'redis'}://{host}{port}{parts.path}"


class RedisSessionStore(RedisRuns):
    """Each session a hash `<prefix>:session:<id>` (JSON and revision) and an index
    `<prefix>:sessions` ordered by time; saves compare the revision in one server-side
    script, so several workers can share the sessions. Their runs and run events are
    kept beside them (`RedisRuns`)."""

    def __init__(self, url: str, *, prefix: str = "raf", timeout: float = 10.0) -> None:
        self.url = url
        self.prefix = prefix
        self.timeout = timeout
        self.address = redis_address(url)
        self._client: Redis | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._save: AsyncScript | None = None
        self._delete: AsyncScript | None = None
        self._scripts: dict[str, AsyncScript] = {}

    def _where(self) -> str:
        return f"Redis session store at {self.address} (prefix {self.prefix!r})"

    def _key(self, session_id: str) -> str:
        return f"{self.prefix}:session:{session_id}"

    def _index(self) -> str:
        return f"{self.prefix}:sessions"

    def _error(self, exc: BaseException) -> SessionStoreError:
        text = str(exc).strip() or type(exc).__name__
        from urllib.parse import urlsplit

        try:
            password = urlsplit(self.url).password
        except ValueError:
            password = None
        if password:
            text = text.replace(password, "***")
        return SessionStoreError(f"{self._where()}: {text}")

    def _open(self) -> Redis:
        """The client of this event loop: connections belong to the loop that made them."""
        loop = asyncio.get_running_loop()
        if self._client is not None and self._client_loop is loop:
            return self._client
        try:
            from redis.asyncio import Redis
        except ImportError as exc:
            raise MissingExtraError("the Redis session store", "redis", exc.name) from exc
        try:
            client = Redis.from_url(
                self.url,
                socket_timeout=self.timeout,
                socket_connect_timeout=self.timeout,
                decode_responses=True,
            )
        except ValueError as exc:
            raise self._error(exc) from None
        self._save = client.register_script(_SAVE)
        self._delete = client.register_script(_DELETE)
        self._scripts = {
            "take": client.register_script(_TAKE_LEASE),
            "release": client.register_script(_RELEASE_LEASE),
            "cancel": client.register_script(_CANCEL_LEASE),
        }
        self._client, self._client_loop = client, loop
        return client

    async def _call(self, what: Any) -> Any:
        """Await a Redis command; every driver failure becomes a `SessionStoreError` here."""
        from redis.exceptions import RedisError

        try:
            return await what
        except (RedisError, OSError) as exc:
            raise self._error(exc) from None

    async def save(self, session: AgentSession) -> None:
        self._open()
        assert self._save is not None
        expected = session.revision
        revision = next_revision(expected)
        text = session.to_json(revision=revision)
        args = [
            "1" if expected is None else "0",
            expected or "",
            revision,
            text,
            repr(session.updated_at),
            session.id,
        ]
        result = await self._call(
            self._save(keys=[self._key(session.id), self._index()], args=args)
        )
        if int(result[0]) != 1:
            stored = str(result[1]) if int(result[2]) == 1 else None
            raise SessionConflictError(
                session.id, expected=expected, stored=stored, where=self._where()
            )
        session.mark_stored(revision, text)

    async def load(self, session_id: str) -> AgentSession:
        client = self._open()
        text, revision = await self._call(client.hmget(self._key(session_id), ["data", "revision"]))
        if text is None:
            raise SessionNotFoundError(f"no session {session_id!r} in {self._where()}")
        session = AgentSession.from_json(text, source=f"session {session_id!r} in {self._where()}")
        session.mark_stored(str(revision or ""), text)
        return session

    async def delete(self, session_id: str) -> bool:
        self._open()
        assert self._delete is not None
        gone = await self._call(
            self._delete(keys=[self._key(session_id), self._index()], args=[session_id])
        )
        return int(gone) > 0

    async def list(self) -> list[str]:
        client = self._open()
        ids = await self._call(client.zrevrange(self._index(), 0, -1))
        return [str(i) for i in ids]

    # -- leases: a hash `<prefix>:lease:<id>` (holder, cancel) that expires by itself ----

    def _lease_key(self, session_id: str) -> str:
        return f"{self.prefix}:lease:{session_id}"

    def _lease(self, session_id: str, found: Any) -> SessionLease | None:
        if not found or not found[0]:
            return None
        left = int(found[2])
        return SessionLease(
            session_id=session_id,
            holder=str(found[0]),
            expires_at=time.time() + max(left, 0) / 1000,
            cancel=str(found[1]) or None,
        )

    async def take_lease(self, session_id: str, holder: str, seconds: float) -> SessionLease:
        self._open()
        found = await self._call(
            self._scripts["take"](
                keys=[self._lease_key(session_id)], args=[holder, max(1, round(seconds * 1000))]
            )
        )
        lease = self._lease(session_id, found)
        assert lease is not None  # the script leaves a holder in every case
        return lease

    async def release_lease(self, session_id: str, holder: str) -> None:
        self._open()
        await self._call(
            self._scripts["release"](keys=[self._lease_key(session_id)], args=[holder])
        )

    async def read_lease(self, session_id: str) -> SessionLease | None:
        client = self._open()
        key = self._lease_key(session_id)
        async with client.pipeline(transaction=True) as pipe:
            pipe.hmget(key, ["holder", "cancel"])
            pipe.pttl(key)
            (holder, cancel), left = await self._call(pipe.execute())
        return self._lease(session_id, [holder, cancel or "", left])

    async def cancel_lease(self, session_id: str, reason: str) -> SessionLease | None:
        self._open()
        found = await self._call(
            self._scripts["cancel"](keys=[self._lease_key(session_id)], args=[reason])
        )
        return self._lease(session_id, found)

    async def close(self) -> None:
        """Close this event loop's connections (the store opens new ones if used again)."""
        client, self._client = self._client, None
        if client is not None and self._client_loop is asyncio.get_running_loop():
            await client.aclose()
        self._client_loop = None
