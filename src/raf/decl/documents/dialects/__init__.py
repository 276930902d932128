"""The dialects of agent documents raf reads: its own, the original framework's (and its
older JSON format) and Microsoft Agent Framework's; all are read as raf's own."""

from __future__ import annotations

from raf.decl.documents.dialects.legacy import is_legacy, upgrade
from raf.decl.documents.dialects.normalize import normalize_agent
from raf.decl.documents.dialects.rewriter import Rewriter
from raf.decl.documents.dialects.spellings import SPELLINGS, TOP_LEVEL, Spelling, other_keys
from raf.decl.documents.source import Document

__all__ = ["SPELLINGS", "TOP_LEVEL", "Spelling", "normalize", "other_keys"]


def normalize(doc: Document) -> None:
    """Rewrite `doc.data` in place into raf's spelling; what has no meaning for raf is
    dropped with a warning in `doc.warnings`."""
    if not isinstance(doc.data, dict):
        return
    rw = Rewriter(doc)
    if is_legacy(doc.data):
        upgrade(rw)
    normalize_agent(rw)
