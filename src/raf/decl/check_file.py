"""One check of a document file for `raf validate` and `raf run`: the file is read and
parsed once, told apart (agent, workflow or toolbox), checked with what the command line
supplies (a model, bound tools), and every problem is located; `raf run` builds from what
this check returns, so the two commands cannot disagree about a document."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

from raf.core.errors import Problem, ValidationProblems
from raf.decl.agent.tool_bindings import UNBOUND_HINT
from raf.decl.documents.document_file import read_document
from raf.decl.documents.document_kind import is_workflow_data
from raf.decl.documents.hosted import LoadedToolbox, check_toolbox, is_toolbox_data
from raf.decl.documents.loaded import DocumentProblems, LoadedAgent
from raf.decl.documents.loader import check
from raf.decl.documents.schema import CustomToolDecl, FunctionToolDecl
from raf.decl.documents.source import UNSET_ENV_NOTE, Document, load_text
from raf.decl.workflow.graph import graph_names
from raf.decl.workflow.loader import UNDECLARED_AGENT_NOTE, LoadedWorkflow, check_workflow
from raf.decl.workflow.node import check_services, literal_name
from raf.decl.workflow.program import iter_steps
from raf.decl.workflow.runtime import McpServerLike, Services

_RUN_REFUSES = (UNDECLARED_AGENT_NOTE, UNSET_ENV_NOTE)
"""How the loader's warnings end that `raf run` refuses: an agent nobody declared (a
program may give it in code, the command line cannot) and an unset variable the build
reads."""


@dataclass(kw_only=True, slots=True)
class CheckedFile:
    """A checked document: what it is, what was loaded, its problems and warnings."""

    file: str
    kind: Literal["agent", "workflow", "toolbox"] | None = None
    agent: LoadedAgent | None = None
    workflow: LoadedWorkflow | None = None
    toolbox: LoadedToolbox | None = None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    tool_names: list[str] = field(default_factory=list)
    """The function tools (and graph function nodes) the document names, bound or not."""

    @property
    def summary(self) -> str:
        """What `raf validate` prints after ok: the agent's name, the workflow's, the
        toolbox's size."""
        if self.workflow is not None:
            return f"workflow {self.workflow.name}"
        if self.toolbox is not None:
            return f"toolbox of {len(self.toolbox.decl.tools)} tools"
        return self.agent.decl.name if self.agent is not None else ""

    def raise_problems(self) -> None:
        """Raise `DocumentProblems` (with the warnings) when there are problems."""
        if self.problems:
            raise DocumentProblems(self.problems, self.warnings)


def check_file(
    path: str | Path,
    *,
    for_run: bool = False,
    model_given: bool = False,
    bound_tools: Collection[str] = (),
    check_extras: bool = True,
) -> CheckedFile:
    """Check a document file as `raf run` will use it (`for_run`: an unset environment
    variable the build reads or a name nobody supplies is a problem) or as `raf validate`
    reports it (the same, with the same words, as warnings: the document is valid, the
    machine or command line is not set up; `--strict` makes them errors).
    `model_given`: a model replaces the document's, so its model block's variables are not
    needed. `bound_tools`: the function tool names the command line binds."""
    checked = CheckedFile(file=str(path))
    try:
        text, fmt = read_document(path)
    except ValidationProblems as exc:
        checked.problems = list(exc.problems)
        return checked
    doc = load_text(text, fmt=fmt, file=str(path), base_dir=Path(path).parent.resolve())
    if doc.problems:
        checked.problems = list(doc.problems)
        return checked
    try:
        if is_workflow_data(doc.data):
            checked.kind = "workflow"
            checked.workflow = check_workflow(
                doc, unset_env_is_warning=True, model_given=model_given
            )
            checked.warnings = list(checked.workflow.warnings)
        elif is_toolbox_data(doc.data):
            checked.kind = "toolbox"
            checked.toolbox = check_toolbox(doc)
            checked.warnings = list(checked.toolbox.warnings)
        else:
            checked.kind = "agent"
            checked.agent = check(
                doc,
                check_extras=check_extras,
                unset_env_is_warning=True,
                model_given=model_given,
            )
            checked.warnings = list(checked.agent.warnings)
    except ValidationProblems as exc:
        checked.problems = list(exc.problems)
        checked.warnings = list(getattr(exc, "warnings", []))
    needs = _unsupplied(checked, set(bound_tools), doc)
    if for_run:
        refused = [w for w in checked.warnings if w.message.endswith(_RUN_REFUSES)]
        checked.warnings = [w for w in checked.warnings if w not in refused]
        checked.problems = sorted(
            [*checked.problems, *refused, *needs],
            key=lambda p: (p.file != checked.file, p.line or 0, p.column or 0),
        )
    else:
        checked.warnings += needs
    return checked


def _unsupplied(
    checked: CheckedFile, bound: set[str], doc: Document | None = None
) -> list[Problem]:
    """The function tools, graph function nodes and MCP servers a document names that
    nobody supplies; fills `checked.tool_names`."""
    out: list[Problem] = []
    if checked.agent is not None:
        out += _agent_tools(checked.agent, bound, checked.tool_names)
    elif checked.kind == "agent" and doc is not None:
        out += _raw_agent_tools(doc, bound)
    workflow = checked.workflow
    if workflow is None:
        return out
    doc = workflow.doc
    if workflow.form == "graph":
        for path, what, name in graph_names(doc.data):
            if what != "function":
                continue
            checked.tool_names.append(name)
            if name not in bound:
                out.append(
                    doc.problem(path, f"function node {name!r} is not bound: {UNBOUND_HINT}")
                )
        return out
    program = workflow.program
    assert program is not None  # the loader compiled the actions, or raised their problems
    known = Services(
        agents=dict.fromkeys(workflow.agents),
        tools=dict.fromkeys(bound),
        # check_services reads only the names of what is known
        mcp_servers=cast(dict[str, McpServerLike], dict.fromkeys(workflow.mcp_servers)),
    )
    for issue in check_services(program, known):
        if issue.path[-1] == "functionName":
            out.append(doc.problem(issue.path, f"{issue.message}; {UNBOUND_HINT}"))
        elif issue.path[-1] != "agent":
            out.append(doc.problem(issue.path, issue.message))
    for step in iter_steps(program):
        tool = literal_name(step, "functionName") if step.kind == "InvokeFunctionTool" else None
        if tool is not None and tool not in checked.tool_names:
            checked.tool_names.append(tool)
    return out


def _raw_agent_tools(doc: Document, bound: set[str]) -> list[Problem]:
    """The function and custom tools of an agent document that has other problems (so
    no declaration was made), read from its data: reported with those problems."""
    tools = doc.data.get("tools") if isinstance(doc.data, dict) else None
    out: list[Problem] = []
    for index, item in enumerate(tools if isinstance(tools, list) else []):
        if not isinstance(item, dict) or item.get("kind") not in ("function", "custom"):
            continue
        name = item.get("name")
        if isinstance(name, str) and name not in bound and item["kind"] not in bound:
            out.append(
                doc.problem(
                    ("tools", index, "name"),
                    f"{item['kind']} tool {name!r} is not bound: {UNBOUND_HINT}",
                )
            )
    return out


def _agent_tools(loaded: LoadedAgent, bound: set[str], names: list[str]) -> list[Problem]:
    """The agent's (and its sub-agents') function and custom tools nobody binds."""
    out: list[Problem] = []
    for index, decl in enumerate(loaded.decl.tools):
        if not isinstance(decl, FunctionToolDecl | CustomToolDecl):
            continue
        name = decl.name
        names.append(name)
        if name not in bound and decl.kind not in bound:
            out.append(
                loaded.doc.problem(
                    ("tools", index, "name"),
                    f"{decl.kind} tool {name!r} is not bound: {UNBOUND_HINT}",
                )
            )
    for sub in loaded.sub_agents:
        out += _agent_tools(sub, bound, names)
    return out
