"""Text from outside raf (a model, a tool, a server, a document) made safe to print on a
terminal: control sequences and invisible formatting characters are removed, so the text
can neither move the cursor, recolour or hide what follows, retitle the window, nor
disguise itself; newlines and tabs are kept."""

from __future__ import annotations

import re

from raf.core.safe_text import escape_hidden_characters, is_hidden_character

_ST = r"(?:\x1b\\|\x9c|\x07)"
"""String terminator of OSC, DCS, SOS, PM and APC strings (BEL ends OSC in xterm)."""

_SEQUENCES = re.compile(
    # string commands: OSC, DCS, SOS, PM, APC (7-bit and 8-bit introducers) to their end
    rf"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*{_ST}"
    # control sequences: CSI with parameters, intermediates and a final byte
    r"|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    # other escape sequences: ESC, intermediates, a final byte
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]"
)
"""Whole control sequences, removed with their parameters so no debris is left."""


def terminal_safe(text: str) -> str:
    """`text` with every control sequence and control or invisible formatting character
    removed (newlines and tabs kept; a carriage return, which could overwrite the line,
    is removed too). Safe on pieces of a stream: a sequence cut in two loses its
    introducer in the first piece, and what is left of it prints as plain text."""
    if text.isascii() and text.isprintable():
        return text
    text = _SEQUENCES.sub("", text.replace("\r\n", "\n"))
    return "".join(c for c in text if not is_hidden_character(c))


def json_text_safe(text: str) -> str:
    """JSON text with the characters `terminal_safe` removes written as `\\u` escapes
    (four hex digits) instead: the same JSON value, but nothing a terminal acts on.
    (Outside strings JSON is ASCII punctuation, so every such character is inside a
    string.)"""
    return escape_hidden_characters(text)
