"""Characters that hide or disguise text: C0 and C1 controls (but newline and tab),
DEL, bidirectional overrides and isolates, zero-width and other format characters, line
and paragraph separators, lone surrogates. A terminal acts on some of them; the others
make text read differently from what it is (U+202E reverses what follows). Printing
paths remove them (`raf.cli.terminal_text`); documents raf writes escape them."""

from __future__ import annotations

import unicodedata

__all__ = ["escape_hidden_characters", "has_hidden_characters", "is_hidden_character"]

_KEEP = frozenset("\n\t")
_JOINER = "\u200d"
"""Zero-width joiner: kept, since emoji sequences need it and it disguises nothing."""


def is_hidden_character(char: str) -> bool:
    """Whether `char` is one of the characters the module names."""
    if char in _KEEP:
        return False
    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return True
    if code < 0xA0:
        return False
    category = unicodedata.category(char)
    if category == "Cf":
        return char != _JOINER
    return category in ("Zl", "Zp", "Cs")


def has_hidden_characters(text: str) -> bool:
    if text.isascii() and text.isprintable():
        return False
    return any(is_hidden_character(c) for c in text)


def escape_hidden_characters(text: str, *, surrogate_pairs: bool = True) -> str:
    """`text` with each hidden character written as a `\\u` escape of four hex digits
    (JSON's and YAML's), one beyond the basic plane as a surrogate pair (JSON) or, with
    `surrogate_pairs=False`, as `\\U` and eight digits (YAML). Valid inside the quoted
    strings of either format only."""
    if not has_hidden_characters(text):
        return text
    return "".join(_escaped(c, surrogate_pairs) if is_hidden_character(c) else c for c in text)


def _escaped(char: str, surrogate_pairs: bool) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    if not surrogate_pairs:
        return f"\\U{code:08x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
