"""What loading an agent document gives: the checked declaration with its sub-agents, or
its problems with its warnings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from raf.core.errors import Problem, ValidationProblems
from raf.decl.documents.schema import AgentDecl
from raf.decl.documents.source import Document


class DocumentProblems(ValidationProblems):
    """The problems of a document, with its warnings (things allowed but likely wrong)."""

    def __init__(self, problems: list[Problem], warnings: list[Problem] | None = None) -> None:
        super().__init__(problems)
        self.warnings = list(warnings or [])


@dataclass(kw_only=True, slots=True)
class LoadedAgent:
    """A checked document: the declaration, where its parts are, its loaded sub-agents."""

    decl: AgentDecl
    doc: Document
    sub_agents: list[LoadedAgent] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    orchestration: Any = None
    """The checked `metadata.orchestration` (a `raf.decl.documents.orchestration` model), if any."""
