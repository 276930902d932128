"""The policy for paths outside a workspace: its values and the YAML words that name them."""

from __future__ import annotations

import logging
from enum import StrEnum

logger = logging.getLogger("raf.tools.workspace")


class ScopePolicy(StrEnum):
    """What a scoped tool does with a path that leaves the workspace root."""

    ALLOW_ALL = "allow_all"
    APPROVE_OUTSIDE = "approve_outside"
    DENY_OUTSIDE = "deny_outside"

    @classmethod
    def parse(cls, value: str | ScopePolicy) -> ScopePolicy:
        """The policy named by a YAML value; an unknown value fails closed to DENY_OUTSIDE."""
        if isinstance(value, ScopePolicy):
            return value
        key = str(value).strip().lower().replace("-", "_")
        found = _POLICY_ALIASES.get(key)
        if found is None:
            logger.error(
                "unknown workspace policy %r: using deny_outside; valid values are %s",
                value,
                ", ".join(sorted(_POLICY_ALIASES)),
            )
            return cls.DENY_OUTSIDE
        return found


_POLICY_ALIASES = {
    "read": ScopePolicy.ALLOW_ALL,
    "allow": ScopePolicy.ALLOW_ALL,
    "allow_all": ScopePolicy.ALLOW_ALL,
    "approve": ScopePolicy.APPROVE_OUTSIDE,
    "ask": ScopePolicy.APPROVE_OUTSIDE,
    "approve_outside": ScopePolicy.APPROVE_OUTSIDE,
    "deny": ScopePolicy.DENY_OUTSIDE,
    "restrict": ScopePolicy.DENY_OUTSIDE,
    "deny_outside": ScopePolicy.DENY_OUTSIDE,
}
