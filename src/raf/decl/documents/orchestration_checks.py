"""The checks of a document's `metadata.orchestration` against its sub-agents."""

from __future__ import annotations

from raf.core.errors import Problem
from raf.decl.documents.loaded import LoadedAgent
from raf.decl.documents.schema import SubAgentRefDecl


def orchestration_problems(loaded: LoadedAgent) -> list[Problem]:
    """The problems of the declared orchestration (kept on `loaded` when it is valid); a
    warning where it gives the document's own agent no role (in the original framework's
    spelling, a sequential, concurrent or vote orchestration runs it, as the original does)."""
    from raf.decl.documents.orchestration import ROOT, check_orchestration, needs_lead

    metadata = loaded.doc.data.get("metadata") if isinstance(loaded.doc.data, dict) else None
    if not isinstance(metadata, dict):
        return []
    names = sub_agent_names(loaded)
    decl = loaded.decl
    own_agent = bool(decl.tools or decl.contexts or decl.instructions)
    loaded.orchestration, problems = check_orchestration(
        loaded.doc, metadata, names, own_agent=own_agent
    )
    if loaded.orchestration is not None and not needs_lead(loaded.orchestration) and own_agent:
        mode = loaded.orchestration.mode
        original = _ORIGINAL_FIRST.get(mode, "")
        loaded.doc.warnings.append(
            loaded.doc.problem(
                ROOT,
                f"a {mode} orchestration gives the document's own agent no role: its "
                f"instructions, tools and contexts are not used{original}",
            )
        )
    return problems


_ORIGINAL_FIRST = {
    "vote": "; the original framework adds it as the first voter (a list of weights "
    "counts from it): write 'includeSelf: true' to have it vote in raf",
    "sequential": "; the original framework runs it first: write 'includeSelf: true' to "
    "have it take part in raf",
    "concurrent": "; the original framework runs it beside the sub-agents: write "
    "'includeSelf: true' to have it take part in raf",
}
"""What the original framework does with the document's own agent in modes where raf
gives it no role."""


def sub_agent_names(loaded: LoadedAgent) -> list[str] | None:
    """The names the sub-agents go by (a reference's `name`, else the document's), or None
    when some could not be read."""
    subs = loaded.decl.sub_agents
    if len(subs) != len(loaded.sub_agents) or any(s is None for s in subs):
        return None
    return [
        (sub.name if isinstance(sub, SubAgentRefDecl) and sub.name else child.decl.name)
        for sub, child in zip(subs, loaded.sub_agents, strict=True)
    ]
