""" "Did you mean …?": the closest of the allowed words to a misspelt one."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to a misspelt `word`, if any is close enough."""
    choices = list(choices)
    found = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if found:
        return found[0]
    lowered = {c.lower(): c for c in choices}
    return lowered.get(word.lower().replace("_", "").replace("-", ""))
