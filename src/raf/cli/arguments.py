"""Argument types the commands share, so that the same option reads and refuses the same
way in each: a bad value is a usage error (exit 2) that says what was wanted."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def positive(unit: str = "") -> Callable[[str], int]:
    """An argument type taking a whole number >= 1; `unit` (e.g. "tokens") names what is
    counted in the refusal."""
    counted = f" of {unit}" if unit else ""

    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number{counted} >= 1")
        return value

    read.__name__ = f"whole number{counted}"
    return read


__all__ = ["positive"]
