"""Chunkers: a recursive splitter and a Markdown-aware one that keeps heading paths."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from raf.context.knowledge.loaders import Document


@dataclass(kw_only=True, slots=True)
class Chunk:
    """A passage of a document, small enough to inject, with where it came from."""

    source: str
    text: str
    ordinal: int
    heading: str = ""
    """The heading path (`Guide > Install > Linux`) of a Markdown section."""


class Chunker(Protocol):
    def chunk(self, document: Document) -> list[Chunk]: ...


class RecursiveChunker:
    """Split on paragraphs, then lines, sentences, words and characters until pieces fit."""

    def __init__(
        self,
        *,
        max_chars: int = 1200,
        overlap: int = 150,
        separators: Sequence[str] = ("\n\n", "\n", ". ", " ", ""),
    ) -> None:
        if max_chars < 50:
            raise ValueError("max_chars must be at least 50")
        if not 0 <= overlap < max_chars // 2:
            raise ValueError("overlap must be >= 0 and less than half of max_chars")
        self.max_chars = max_chars
        self.overlap = overlap
        self.separators = tuple(separators)

    def split(self, text: str) -> list[str]:
        """Pieces of at most `max_chars` characters, adjacent pieces overlapping."""
        stripped = text.strip()
        if len(stripped) <= self.max_chars:
            return [stripped] if stripped else []
        # Pieces leave room for the overlap carried over from the previous piece.
        pieces = self._split(stripped, 0, self.max_chars - self.overlap)
        if self.overlap == 0 or len(pieces) < 2:
            return pieces
        out = [pieces[0]]
        for prev, piece in itertools.pairwise(pieces):
            tail = prev[-self.overlap :]
            cut = tail.find(" ")
            tail = tail[cut + 1 :] if 0 <= cut < len(tail) - 1 else tail
            joined = f"{tail} {piece}" if tail else piece
            out.append(joined if len(joined) <= self.max_chars else piece)
        return out

    def _split(self, text: str, level: int, limit: int) -> list[str]:
        if len(text) <= limit:
            return [text] if text.strip() else []
        sep = self.separators[min(level, len(self.separators) - 1)]
        if sep == "":
            return [text[i : i + limit] for i in range(0, len(text), limit)]
        parts = text.split(sep)
        out: list[str] = []
        current = ""
        for part in parts:
            candidate = f"{current}{sep}{part}" if current else part
            if len(candidate) <= limit:
                current = candidate
                continue
            if current.strip():
                out.append(current.strip())
            if len(part) > limit:
                out.extend(self._split(part, level + 1, limit))
                current = ""
            else:
                current = part
        if current.strip():
            out.append(current.strip())
        return out

    def chunk(self, document: Document) -> list[Chunk]:
        return [
            Chunk(source=document.source, text=piece, ordinal=i)
            for i, piece in enumerate(self.split(document.text))
        ]


_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


class MarkdownChunker:
    """One chunk per section (heading path kept), big sections split recursively."""

    def __init__(self, *, max_chars: int = 1200, overlap: int = 150) -> None:
        self.inner = RecursiveChunker(max_chars=max_chars, overlap=overlap)

    def sections(self, text: str) -> list[tuple[str, str]]:
        """(heading path, body) pairs in document order; code fences never split headings."""
        path: list[tuple[int, str]] = []
        out: list[tuple[str, str]] = []
        body: list[str] = []
        in_fence = False

        def flush() -> None:
            content = "\n".join(body).strip()
            if content:
                out.append((" > ".join(t for _, t in path), content))
            body.clear()

        for line in text.splitlines():
            if _FENCE.match(line):
                in_fence = not in_fence
            match = None if in_fence else _HEADING.match(line)
            if match:
                flush()
                level = len(match.group(1))
                path = [(lvl, t) for lvl, t in path if lvl < level]
                path.append((level, match.group(2)))
                continue
            body.append(line)
        flush()
        return out

    def chunk(self, document: Document) -> list[Chunk]:
        chunks: list[Chunk] = []
        for heading, body in self.sections(document.text):
            for piece in self.inner.split(body):
                chunks.append(
                    Chunk(source=document.source, text=piece, ordinal=len(chunks), heading=heading)
                )
        return chunks


def default_chunker_for(
    document: Document, *, max_chars: int = 1200, overlap: int = 150
) -> Chunker:
    """Markdown-aware for Markdown and HTML (converted to Markdown headings), else recursive."""
    if document.kind in ("markdown", "html"):
        return MarkdownChunker(max_chars=max_chars, overlap=overlap)
    return RecursiveChunker(max_chars=max_chars, overlap=overlap)
