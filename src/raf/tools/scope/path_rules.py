"""Per-path rules of a workspace: the accesses, the actions, and globs compiled to regexes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from raf.core.errors import ConfigurationError


class Access(StrEnum):
    """The kind of access a tool call makes to a path."""

    READ = "read"
    WRITE = "write"
    DELETE = "delete"
    EXECUTE = "execute"


class RuleAction(StrEnum):
    """What a per-path rule decides; the strictest matching rule wins."""

    ALLOW = "allow"
    APPROVE = "approve"
    DENY = "deny"


_STRICTNESS = {RuleAction.ALLOW: 0, RuleAction.APPROVE: 1, RuleAction.DENY: 2}


@dataclass(frozen=True, kw_only=True, slots=True)
class PathRule:
    """A glob (relative to the root, or absolute) deciding allow/approve/deny for accesses.

    A pattern also covers everything below a directory it matches. `**` crosses folders,
    `*` and `?` do not. As in .gitignore, a pattern without '/' (`*.pem`, `.env`) matches
    a name at any depth, one with '/' (`secrets/**`, `config/*.yaml`) is anchored at the
    root, and one starting with '/' is an absolute path. Rules are judged on the real path
    after symlinks and on the name as written; the strictest matching rule wins, and
    deny/approve also match case and Unicode (NFKC) look-alikes.
    """

    pattern: str
    action: RuleAction
    access: frozenset[Access] = frozenset(Access)

    @classmethod
    def parse(cls, value: PathRule | Mapping[str, Any]) -> list[PathRule]:
        """Rules from `{path, action, access}` or `{path, read: deny, write: approve, …}`."""
        if isinstance(value, PathRule):
            return [value]
        pattern = value.get("path") or value.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ConfigurationError(f"workspace rule {dict(value)!r} needs a 'path' glob")
        out: list[PathRule] = []
        try:
            if "action" in value:
                raw_access = value.get("access") or [a.value for a in Access]
                if isinstance(raw_access, str):
                    raw_access = [raw_access]
                access = frozenset(Access(str(a).lower()) for a in raw_access)
                out.append(cls(pattern=pattern, action=RuleAction(value["action"]), access=access))
            for kind in Access:
                if kind.value in value:
                    action = RuleAction(str(value[kind.value]).lower())
                    out.append(cls(pattern=pattern, action=action, access=frozenset({kind})))
        except ValueError as exc:
            raise ConfigurationError(
                f"workspace rule for {pattern!r}: {exc}; actions are allow, approve, deny and "
                "accesses are read, write, delete, execute"
            ) from exc
        if not out:
            raise ConfigurationError(
                f"workspace rule for {pattern!r} says nothing: give 'action' or read/write/…"
            )
        return out


@dataclass(kw_only=True, slots=True)
class _CompiledRule:
    rule: PathRule
    regex: re.Pattern[str]
    absolute: bool


def glob_to_regex(pattern: str) -> str:
    """A glob as a regular expression: `**` crosses folders, `*` and `?` do not."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                i += 2
                if pattern.startswith("/", i):
                    out.append("(?:.*/)?")
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)
