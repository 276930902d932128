"""Reading a document file: a regular file, within the size limit, UTF-8 text; the
documents of a folder."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from raf.core.bounded_parse import CONFIG_LIMITS
from raf.core.errors import Problem, ValidationProblems
from raf.decl.documents.source import format_for, load_text

DOCUMENT_SUFFIXES = (".yaml", ".yml", ".json", ".toml")
"""Files in a folder that are read as documents."""


def documents_in(folder: str | Path) -> list[Path]:
    """The documents directly in `folder`, sorted by name."""
    return [
        p for p in sorted(Path(folder).iterdir()) if p.is_file() and p.suffix in DOCUMENT_SUFFIXES
    ]


def read_document(path: str | Path) -> tuple[str, str]:
    """The text and format of a document file; unreadable files are a located problem."""
    file = Path(path)
    try:
        info = file.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ValidationProblems(
                [Problem(message="not a regular file: a document must be one", file=str(path))]
            )
        if info.st_size > CONFIG_LIMITS.max_bytes:
            raise ValidationProblems(
                [
                    Problem(
                        message=f"the document is larger than {CONFIG_LIMITS.max_bytes} bytes",
                        file=str(path),
                    )
                ]
            )
        data = file.read_bytes()
        return data.decode("utf-8"), format_for(file)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ValidationProblems(
            [
                Problem(
                    message=f"not UTF-8 text: byte 0x{data[exc.start]:02x} starts no character",
                    file=str(path),
                    line=line,
                    column=column,
                )
            ]
        ) from None
    except OSError as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValidationProblems(
            [Problem(message=f"cannot read the document: {reason}", file=str(path))]
        ) from None


def holds_document(path: str | Path, is_kind: Callable[[Any], bool]) -> bool:
    """Whether the file is a readable, well-formed document whose data `is_kind` accepts
    (false for an unreadable or malformed file: its loader reports what is wrong)."""
    try:
        text, fmt = read_document(path)
    except ValidationProblems:
        return False
    doc = load_text(text, fmt=fmt, file=str(path))
    return not doc.problems and is_kind(doc.data)
