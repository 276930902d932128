"""Who owns what a server keeps: every served object belongs to the token that made it.

Sessions, runs, approvals, A2A tasks and contexts, workflow runs and checkpoints and the
UI's records are all checked here, by one rule: the caller's owner id (a hash of its
bearer token) must be the object's. A name a caller chooses (a session id, an A2A
context id) is stored under a key scoped to its owner, so two tokens choosing the same
name get two objects, and nothing a caller is told depends on what others have stored:
"not yours" and "does not exist" are one answer, and "exists already" only ever means
"you made it".
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from raf.serve.errors import ServeError, not_found

ANONYMOUS = ""
"""The owner of everything when the server runs without tokens (loopback only)."""

KEY_LIMIT = 128
"""Longest stored key (session stores take ids of 1-128 safe characters)."""

_TAG_LENGTH = 16
_TAGGED = re.compile(rf"^[0-9a-f]{{{_TAG_LENGTH}}}\.")


def owner_of(token: str | None) -> str:
    """The owner id of a bearer token: a hash, so the token itself is never stored."""
    if not token:
        return ANONYMOUS
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Tenant:
    """One caller of the server, named by its owner id; all ownership checks go here."""

    owner: str
    """The caller's owner id (`owner_of` its token); `ANONYMOUS` without tokens."""

    def key(self, name: str) -> str:
        """The stored key of the caller's object `name`: `name` itself for the anonymous
        owner (so token-less servers keep their ids), else prefixed with the owner's tag."""
        if self.owner == ANONYMOUS:
            return name
        return f"{self.owner[:_TAG_LENGTH]}.{name}"

    def longest_name(self) -> int:
        """How long a name this caller may choose so that its key still fits."""
        return KEY_LIMIT - (len(self.key("")))

    def owns_key(self, key: str) -> bool:
        """Whether a stored key (a session id, a workflow run id) was made for this caller."""
        if self.owner == ANONYMOUS:
            return _TAGGED.match(key) is None
        return key.startswith(self.key(""))

    def owns(self, owner: str | None) -> bool:
        """Whether an object recorded as made by `owner` is this caller's."""
        return owner is not None and owner == self.owner

    def check(self, owner: str | None, what: str, name: str) -> None:
        """Refuse (with the 404 a missing `what` gets) an object that is not the caller's."""
        if not self.owns(owner):
            raise not_found(what, name)

    def check_key(self, key: str, what: str, name: str) -> None:
        """Refuse (with the 404 a missing `what` gets) a key not made for the caller."""
        if not self.owns_key(key):
            raise not_found(what, name)

    def check_name(self, name: str, pattern: re.Pattern[str], what: str) -> str:
        """The stored key for a name the caller chose; a 400 naming the rule when `name`
        does not fit (the same rule and limit whatever others have stored)."""
        limit = self.longest_name()
        if not pattern.match(name) or len(name) > limit:
            raise ServeError(
                400,
                f"invalid_{what.replace(' ', '_')}_id",
                f"{what} id {name!r} is not valid: use 1-{limit} letters, digits, '_', "
                "'-', '.', not starting with '.'",
            )
        return self.key(name)
