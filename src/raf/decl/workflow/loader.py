"""Loads and checks workflow documents: the original's `kind: workflow` with a trigger
and its actions, Microsoft Agent Framework's `kind: Workflow` (top-level `actions` and
`inputs` too), and the older graph JSON (`nodes`, `edges`). Every problem is located
(file, line, column, key path) and reported at once."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

from raf.core.errors import Problem, ValidationProblems
from raf.decl.documents.base import MAX_COUNT
from raf.decl.documents.dialects.workflow import normalize_workflow
from raf.decl.documents.document_file import holds_document
from raf.decl.documents.document_kind import is_workflow_data
from raf.decl.documents.loader import (
    DocumentProblems,
    LoadedAgent,
    load_dict,
    load_file,
    read_document,
)
from raf.decl.documents.problems import suggest
from raf.decl.documents.source import Document, KeyPath, load_text
from raf.decl.workflow.graph import check_graph, graph_names
from raf.decl.workflow.invoke import sandbox_settings
from raf.decl.workflow.node import check_services
from raf.decl.workflow.original_graph import read_original_graph
from raf.decl.workflow.program import (
    Program,
    WorkflowDefinitionError,
    compile_actions,
    hint,
)
from raf.decl.workflow.runtime import Services

UNDECLARED_AGENT_NOTE = "declare it under agents:"
"""How the warning about an agent nobody declared ends (`raf run` refuses it: a program
may give it in code, the command line cannot)."""

TRIGGERS = ("OnConversationStart",)
_ACTION_KEYS = (
    "kind",
    "name",
    "id",
    "displayName",
    "description",
    "version",
    "trigger",
    "actions",
    "inputs",
    "outputs",
    "agents",
    "mcpServers",
    "maxTurns",
    "maxSeconds",
    "metadata",
    "sandbox",
    "$schema",
)
_GRAPH_KEYS = (
    "kind",
    "name",
    "id",
    "description",
    "version",
    "nodes",
    "edges",
    "start_node_id",
    "output_node_ids",
    "agents",
    "metadata",
    "$schema",
    "ports",
)
_TRIGGER_KEYS = ("kind", "id", "displayName", "actions")


@dataclass(kw_only=True, slots=True)
class LoadedWorkflow:
    """A checked workflow document: its form, actions or graph, and the agents it names."""

    doc: Document
    form: Literal["actions", "graph"]
    name: str
    description: str = ""
    actions: list[Any] = field(default_factory=list)
    actions_path: KeyPath = ("actions",)
    program: Program | None = None
    """The actions compiled when they were checked (None for a graph)."""
    agents: dict[str, LoadedAgent] = field(default_factory=dict)
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    """Declared inputs: name to `{type, description, default}`."""
    max_turns: int | None = None
    """`maxTurns`: the most actions one run may execute."""
    max_seconds: float | None = None
    """`maxSeconds`: the most wall-clock seconds one run may spend executing (the time it
    waits paused for input does not count)."""
    sandbox: dict[str, Any] = field(default_factory=dict)
    """`sandbox:` (the original framework's): the code sandbox's settings for every
    ExecuteCode action (an action's own `sandbox:` overrides them)."""
    warnings: list[Problem] = field(default_factory=list)


class _AgentOptions(TypedDict):
    """How the agents a workflow declares are loaded."""

    unset_env_is_warning: bool
    model_given: bool


def is_workflow_file(path: str | Path) -> bool:
    """Whether the file holds a workflow document (false for unreadable files, which the
    agent loader then reports)."""
    return holds_document(path, is_workflow_data)


def load_workflow_file(path: str | Path) -> LoadedWorkflow:
    """Read and check a workflow document file."""
    text, fmt = read_document(path)
    return load_workflow(text, fmt=fmt, file=str(path), base_dir=Path(path).parent.resolve())


def load_workflow(
    text: str, *, fmt: str = "yaml", file: str | None = None, base_dir: Path | None = None
) -> LoadedWorkflow:
    """Parse and check a workflow document; raises `ValidationProblems` listing all."""
    doc = load_text(text, fmt=fmt, file=file, base_dir=base_dir)
    if doc.problems:
        raise ValidationProblems(doc.problems)
    return check_workflow(doc)


def load_workflow_dict(data: Mapping[str, Any], *, base_dir: Path | None = None) -> LoadedWorkflow:
    """Check a workflow document given as data (problems carry key paths, no lines)."""
    doc = Document(data=dict(data), base_dir=base_dir or Path.cwd())
    return check_workflow(doc)


def check_workflow(
    doc: Document, *, unset_env_is_warning: bool = False, model_given: bool = False
) -> LoadedWorkflow:
    """Check a parsed workflow document and the agents it declares (loaded with
    `unset_env_is_warning` and `model_given`, as `raf.decl.documents.loader.load_file`
    takes them)."""
    normalize_workflow(doc)  # the original framework's spellings, read as raf's
    data: dict[str, Any] = doc.data
    options = _AgentOptions(unset_env_is_warning=unset_env_is_warning, model_given=model_given)
    problems: list[Problem] = []
    graph = "nodes" in data or "edges" in data
    if graph:
        read_original_graph(doc)
    allowed = _GRAPH_KEYS if graph else _ACTION_KEYS
    for key in data:
        if key not in allowed:
            close = suggest(str(key), allowed)
            hint = f" (did you mean {close!r}?)" if close else ""
            problems.append(doc.problem((key,), f"{key!r} is not allowed here{hint}", key=True))
    kind = data.get("kind")
    if kind is not None and str(kind).lower() != "workflow":
        problems.append(
            doc.problem(("kind",), f"a workflow document has kind workflow, not {kind!r}")
        )
    name = data.get("name")
    if kind == "workflow" and not graph and not isinstance(name, str):  # the raf spelling
        problems.append(doc.problem((), "a kind: workflow document needs a name"))
    loaded = LoadedWorkflow(
        doc=doc,
        form="graph" if graph else "actions",
        name=str(name or data.get("id") or _trigger_id(data) or Path(doc.file or "workflow").stem),
        description=str(data.get("description") or ""),
    )
    max_turns = data.get("maxTurns")
    if max_turns is not None:
        if (
            isinstance(max_turns, int)
            and not isinstance(max_turns, bool)
            and 0 < max_turns <= MAX_COUNT
        ):
            loaded.max_turns = max_turns
        else:
            problems.append(
                doc.problem(("maxTurns",), f"maxTurns is a whole number from 1 to {MAX_COUNT}")
            )
    max_seconds = data.get("maxSeconds")
    if max_seconds is not None:
        if (
            isinstance(max_seconds, int | float)
            and not isinstance(max_seconds, bool)
            and 0 < max_seconds < float("inf")
        ):
            loaded.max_seconds = max_seconds
        else:
            problems.append(
                doc.problem(("maxSeconds",), "maxSeconds is a number of seconds above 0")
            )
    if "sandbox" in data:
        try:
            loaded.sandbox = sandbox_settings(data["sandbox"])
        except ValueError as exc:
            problems.append(doc.problem(("sandbox",), str(exc)))
    if not graph:
        problems += _actions(doc, data, loaded)
        problems += _inputs(doc, data, loaded)
    problems += _agents(doc, data, loaded, options)
    if graph:
        problems += _inline_node_agents(doc, data, loaded, options)
        problems += _graph(doc, data, loaded)
    problems += _mcp_servers(doc, data, loaded)
    _unset_environment(doc, data, ())
    loaded.warnings = list(doc.warnings)
    if problems:
        problems.sort(key=lambda p: (p.file != doc.file, p.line or 0, p.column or 0))
        raise DocumentProblems(problems, loaded.warnings)
    return loaded


_ENV_NAME = re.compile(r"\bEnv\.([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


def _unset_environment(doc: Document, value: Any, path: KeyPath) -> None:
    """An expression reading `Env.NAME` that the environment lacks is a warning naming
    it where it is read: the document is valid, the machine is not yet configured
    (running it is an error that names the variable). Agents the workflow declares are
    left to the agent loader, which warns about their variables itself."""
    if path == ("agents",) or (len(path) == 3 and path[0] == "nodes" and path[2] == "agent"):
        return
    if isinstance(value, Mapping):
        for key, inner in value.items():
            _unset_environment(doc, inner, (*path, str(key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            _unset_environment(doc, inner, (*path, index))
    elif isinstance(value, str) and value.startswith("="):
        for name in dict.fromkeys(_ENV_NAME.findall(value)):
            if name not in os.environ:
                doc.warnings.append(
                    doc.problem(
                        path,
                        f"environment variable {name} is not set (set it before running)",
                    )
                )


def _actions(doc: Document, data: dict[str, Any], loaded: LoadedWorkflow) -> list[Problem]:
    problems: list[Problem] = []
    trigger = data.get("trigger")
    if trigger is not None and "actions" in data:
        problems.append(
            doc.problem(("actions",), "give the actions in trigger.actions or at the top, not both")
        )
    if trigger is None:
        if "actions" not in data:
            problems.append(
                doc.problem((), "a workflow needs trigger.actions (or top-level actions)")
            )
            return problems
        loaded.actions, loaded.actions_path = data["actions"], ("actions",)
    elif not isinstance(trigger, Mapping):
        problems.append(doc.problem(("trigger",), "a trigger is a mapping with kind and actions"))
        return problems
    else:
        for key in trigger:
            if key not in _TRIGGER_KEYS:
                close = suggest(str(key), _TRIGGER_KEYS)
                hint = f" (did you mean {close!r}?)" if close else ""
                problems.append(
                    doc.problem(("trigger", key), f"a trigger has no key {key!r}{hint}", key=True)
                )
        trigger_kind = trigger.get("kind", "OnConversationStart")
        if str(trigger_kind).lower() not in {t.lower() for t in TRIGGERS}:
            close = suggest(str(trigger_kind), TRIGGERS)
            hint = f" (did you mean {close!r}?)" if close else ""
            problems.append(
                doc.problem(("trigger", "kind"), f"unknown trigger kind {trigger_kind!r}{hint}")
            )
        if "id" not in trigger and _maf_form(data):
            problems.append(doc.problem(("trigger",), "a trigger needs an 'id'"))
        if "actions" not in trigger:
            problems.append(doc.problem(("trigger",), "a trigger needs actions"))
            return problems
        loaded.actions, loaded.actions_path = trigger["actions"], ("trigger", "actions")
    try:
        program = compile_actions(
            loaded.actions, loaded.actions_path, require_ids=trigger is not None and _maf_form(data)
        )
    except WorkflowDefinitionError as exc:
        problems += [doc.problem(i.path, i.message, key=i.key) for i in exc.issues]
        if exc.partial is None:
            return problems
        program = exc.partial  # the actions that compiled are still checked for names
    else:
        loaded.program = program
    declared = data.get("agents")
    known = Services(agents=dict.fromkeys(declared) if isinstance(declared, Mapping) else {})
    for issue in check_services(program, known):
        if issue.path[-1] == "agent":
            # a program may still give it with with_agent: a warning, not an error
            doc.warnings.append(
                doc.problem(issue.path, f"{issue.message}; {UNDECLARED_AGENT_NOTE}")
            )
    return problems


_INPUT_TYPES = ("string", "integer", "number", "boolean", "record", "table", "object", "array")


def _inputs(doc: Document, data: dict[str, Any], loaded: LoadedWorkflow) -> list[Problem]:
    """`inputs:` maps each input's name to its type, description and default."""
    inputs = data.get("inputs")
    if inputs is None:
        return []
    if not isinstance(inputs, Mapping):
        return [doc.problem(("inputs",), "inputs is a mapping of name to {type, description}")]
    problems: list[Problem] = []
    for name, spec in inputs.items():
        kind = spec.get("type", "string") if isinstance(spec, Mapping) else None
        if kind not in _INPUT_TYPES:
            close = suggest(str(kind), _INPUT_TYPES)
            hint = f" (did you mean {close!r}?)" if close else ""
            problems.append(
                doc.problem(("inputs", name, "type"), f"unknown input type {kind!r}{hint}")
            )
            continue
        loaded.inputs[str(name)] = dict(spec) if isinstance(spec, Mapping) else {}
    return problems


def _graph(doc: Document, data: dict[str, Any], loaded: LoadedWorkflow) -> list[Problem]:
    """The graph's shape, located; a node naming an agent nobody declared is a warning
    (a program may still give it with `with_agent`)."""
    problems = [doc.problem(i.path, i.message, key=i.key) for i in check_graph(data)]
    for path, what, name in graph_names(data):
        if what == "agent" and name not in loaded.agents:
            known = ", ".join(sorted(loaded.agents)) or "none"
            doc.warnings.append(
                doc.problem(
                    path,
                    f"no agent {name!r}{hint(name, loaded.agents)} (known: {known}); "
                    f"{UNDECLARED_AGENT_NOTE}",
                )
            )
    return problems


def _inline_node_agents(
    doc: Document, data: dict[str, Any], loaded: LoadedWorkflow, options: _AgentOptions
) -> list[Problem]:
    """Agent nodes of a graph that carry their agent inline (`agent: {instructions, …}`):
    each is loaded under its node's id."""
    problems: list[Problem] = []
    for index, node in enumerate(data.get("nodes") or []):
        if not isinstance(node, Mapping) or not isinstance(node.get("agent"), Mapping):
            continue
        node_id = str(node.get("id"))
        inline = dict(node["agent"])
        if "name" not in inline and "id" not in inline:
            inline["name"] = node_id
        try:
            loaded.agents[node_id] = load_dict(inline, base_dir=doc.base_dir, **options)
            doc.warnings += [
                doc.problem(("nodes", index, "agent"), f"node {node_id!r}: {w.message}")
                for w in loaded.agents[node_id].warnings
            ]
        except ValidationProblems as exc:
            problems += [
                doc.problem(("nodes", index, "agent"), f"node {node_id!r}: {p.message}")
                for p in exc.problems
            ]
    return problems


def _agents(
    doc: Document, data: dict[str, Any], loaded: LoadedWorkflow, options: _AgentOptions
) -> list[Problem]:
    """Agents named in `agents:`, each a path to an agent document or one written inline."""
    agents = data.get("agents")
    if agents is None:
        return []
    if not isinstance(agents, Mapping):
        return [doc.problem(("agents",), "agents is a mapping of name to an agent document")]
    problems: list[Problem] = []
    for name, ref in agents.items():
        where: KeyPath = ("agents", name)
        try:
            if isinstance(ref, str):
                target = (doc.base_dir / ref).resolve()
                if not target.is_file():
                    problems.append(doc.problem(where, f"no agent document {ref!r}"))
                    continue
                loaded.agents[str(name)] = load_file(target, **options)
            elif isinstance(ref, Mapping):
                inline = dict(ref)
                inline.setdefault("name", str(name))
                loaded.agents[str(name)] = load_dict(inline, base_dir=doc.base_dir, **options)
            else:
                problems.append(
                    doc.problem(where, "an agent is a path to its document or the document itself")
                )
                continue
            # the agent's warnings are the workflow's: `raf run` refuses an unset variable
            doc.warnings += _located(doc, where, loaded.agents[str(name)].warnings)
        except ValidationProblems as exc:
            problems += _located(doc, where, exc.problems)
    return problems


def _located(doc: Document, where: KeyPath, found: list[Problem]) -> list[Problem]:
    """An agent's problems as the workflow reports them: located in the agent's own file,
    else under the agent's place in the workflow document."""
    out: list[Problem] = []
    for p in found:
        if p.file and p.line:
            out.append(p)
        else:
            out.append(doc.problem((*where, *_parse_key_path(p.key_path)), p.message))
    return out


def _mcp_servers(doc: Document, data: dict[str, Any], loaded: LoadedWorkflow) -> list[Problem]:
    servers = data.get("mcpServers")
    if servers is None:
        return []
    if not isinstance(servers, Mapping):
        return [doc.problem(("mcpServers",), "mcpServers is a mapping of name to a server")]
    problems: list[Problem] = []
    for name, config in servers.items():
        if not isinstance(config, Mapping) or not ({"command", "url"} & set(config)):
            problems.append(
                doc.problem(
                    ("mcpServers", name), "an MCP server has a command (with args) or a url"
                )
            )
            continue
        loaded.mcp_servers[str(name)] = {"name": str(name), **dict(config)}
    return problems


def _maf_form(data: Mapping[str, Any]) -> bool:
    """Whether a trigger document is in Microsoft Agent Framework's spelling (`kind:
    Workflow`, or no kind), whose reader needs the trigger's `id` and that of each of its
    actions; raf's own `kind: workflow` lets them go without."""
    return data.get("kind") != "workflow"


def _trigger_id(data: Mapping[str, Any]) -> str | None:
    trigger = data.get("trigger")
    found = trigger.get("id") if isinstance(trigger, Mapping) else None
    return found if isinstance(found, str) else None


def _parse_key_path(text: str | None) -> KeyPath:
    """('tools', 2, 'config') for `tools[2].config`."""
    out: list[str | int] = []
    for part in (text or "").replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("[") and part.endswith("]") and part[1:-1].isdigit():
            out.append(int(part[1:-1]))
        else:
            out.append(part)
    return tuple(out)
