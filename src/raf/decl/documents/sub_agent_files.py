"""Loading the sub-agents of a document: inline ones, and files that must be agent documents
inside the top document's folder, with no cycle among them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from raf.core.errors import Problem, ValidationProblems
from raf.decl.documents.document_file import read_document
from raf.decl.documents.loaded import LoadedAgent
from raf.decl.documents.schema import SubAgentRefDecl
from raf.decl.documents.source import Document, load_text

CheckChild = Callable[[Document, tuple[Path, ...]], LoadedAgent]
"""Checks a sub-agent's document, given the files that lead to it."""


def load_sub_agents(
    loaded: LoadedAgent, check: CheckChild, chain: tuple[Path, ...]
) -> list[Problem]:
    """Each sub-agent checked and added to `loaded.sub_agents`; the problems of those that
    are not (an inline one's located under its place in this document)."""
    doc = loaded.doc
    problems: list[Problem] = []
    here = Path(doc.file).resolve() if doc.file else None
    chain = (*chain, here) if here else chain
    root = chain[0].parent if chain else doc.base_dir.resolve()
    for index, sub in enumerate(loaded.decl.sub_agents):
        if sub is None:
            continue
        spath: tuple[str | int, ...] = ("subAgents", index)
        try:
            if isinstance(sub, SubAgentRefDecl):
                target = (doc.base_dir / sub.file).resolve()
                refusal = _sub_agent_file_refusal(target, root)
                if refusal:
                    problems.append(doc.problem((*spath, "file"), f"sub-agent file: {refusal}"))
                    continue
                if target in chain:
                    names = " → ".join(p.name for p in (*chain[chain.index(target) :], target))
                    problems.append(doc.problem((*spath, "file"), f"sub-agent cycle: {names}"))
                    continue
                if not target.is_file():
                    problems.append(
                        doc.problem((*spath, "file"), f"sub-agent file {sub.file!r} does not exist")
                    )
                    continue
                text, fmt = read_document(target)
                child_doc = load_text(
                    text, fmt=fmt, file=_display(target, doc), base_dir=target.parent
                )
                child_doc.quiet = True
            else:
                data = (doc.data or {}).get("subAgents", [])[index]
                child_doc = Document(
                    data=data,
                    file=doc.file,
                    base_dir=doc.base_dir,
                    values={k[2:]: v for k, v in doc.values.items() if k[:2] == spath},
                    keys={k[2:]: v for k, v in doc.keys.items() if k[:2] == spath},
                )
            child = check(child_doc, chain)
        except ValidationProblems as exc:
            inline = not isinstance(sub, SubAgentRefDecl)
            for problem in exc.problems:
                if inline:
                    prefix = f"subAgents[{index}]"
                    problem.key_path = (
                        f"{prefix}.{problem.key_path}" if problem.key_path else prefix
                    )
                problems.append(problem)
            continue
        loaded.sub_agents.append(child)
    return problems


_AGENT_SUFFIXES = (".yaml", ".yml", ".json", ".toml")


def _sub_agent_file_refusal(target: Path, root: Path) -> str | None:
    """Why a sub-agent file may not be read: it must be an agent document inside the
    folder of the top document (so a document cannot make raf read any file)."""
    if not target.is_relative_to(root):
        return (
            "it lies outside the folder of the top document; "
            "sub-agent files must be in that folder or below it"
        )
    if target.suffix.lower() not in _AGENT_SUFFIXES:
        return f"it must be an agent document ({', '.join(_AGENT_SUFFIXES)})"
    return None


def _display(target: Path, parent: Document) -> str:
    if parent.file is None:
        return str(target)
    return str(Path(parent.file).parent / target.name)
