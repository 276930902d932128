"""Things registered by name (middleware, guardrails) and found again with a suggestion."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class NamedRegistry(Generic[T]):
    """A name → thing table whose unknown names get a did-you-mean and the known names."""

    def __init__(self, what: str, how_to_add: str) -> None:
        self.what = what
        """What is registered, as errors say it ("middleware", "guardrail")."""
        self.how_to_add = how_to_add
        """The call that adds one, as errors say it."""
        self._items: dict[str, T] = {}

    def add(self, name: str, item: T) -> None:
        self._items[name] = item

    def copy(self) -> dict[str, T]:
        return dict(self._items)

    def clear(self) -> None:
        self._items.clear()

    def update(self, items: Mapping[str, T]) -> None:
        self._items.update(items)

    def find(self, name: str) -> T:
        """The thing registered as `name`; a KeyError that suggests near names."""
        try:
            return self._items[name]
        except KeyError:
            near = difflib.get_close_matches(name, list(self._items), n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            known = ", ".join(sorted(self._items)) or "none"
            raise KeyError(
                f"no {self.what} is registered as {name!r}{hint} (registered: {known}; add "
                f"one with {self.how_to_add})"
            ) from None
