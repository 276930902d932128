"""Loads and checks agent documents: syntax, schema, environment, extras, files, cycles —
every problem of a document (and of its sub-agents) reported at once."""

from __future__ import annotations

import re
import stat
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from raf.core.bounded_parse import CONFIG_LIMITS
from raf.core.errors import Problem, ValidationProblems
from raf.decl.build_checks import model_problems
from raf.decl.dialects import normalize
from raf.decl.extras import CONTEXT_EXTRAS, TOOL_EXTRAS, missing_extra
from raf.decl.problems import problems_from_validation, suggest
from raf.decl.schema import (
    BUILTIN_TOOLS,
    AgentDecl,
    CompressionContextDecl,
    CompressionDecl,
    ContextDecl,
    KnowledgeContextDecl,
    SkillsContextDecl,
    SubAgentRefDecl,
    TemplateDecl,
    ToolDecl,
    WorkspaceContextDecl,
)
from raf.decl.source import Document, format_for, load_text, substitute_env

POLICIES: dict[str, str] = {
    "read": "ALLOW_ALL",
    "allow": "ALLOW_ALL",
    "allow_all": "ALLOW_ALL",
    "approve": "APPROVE_OUTSIDE",
    "ask": "APPROVE_OUTSIDE",
    "approve_outside": "APPROVE_OUTSIDE",
    "deny": "DENY_OUTSIDE",
    "restrict": "DENY_OUTSIDE",
    "deny_outside": "DENY_OUTSIDE",
}
"""YAML workspace policy values (seed 001, rule 1); anything else fails closed to deny."""

_TOOL: TypeAdapter[Any] = TypeAdapter(ToolDecl)
_CONTEXT: TypeAdapter[Any] = TypeAdapter(ContextDecl)
_SUB_AGENT: TypeAdapter[Any] = TypeAdapter(
    typing.get_args(AgentDecl.model_fields["sub_agents"].annotation)[0]
)
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


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
    """The checked `metadata.orchestration` (a `raf.decl.orchestration` model), if any."""


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


def load_file(
    path: str | Path,
    *,
    environ: Mapping[str, str] | None = None,
    check_extras: bool = True,
    strict: bool = False,
) -> LoadedAgent:
    """Load a document file; with `strict`, warnings are problems too."""
    text, fmt = read_document(path)
    file = Path(path)
    return load(
        text,
        fmt=fmt,
        file=str(path),
        base_dir=file.parent.resolve(),
        environ=environ,
        check_extras=check_extras,
        strict=strict,
    )


def load(
    text: str,
    *,
    fmt: str = "yaml",
    file: str | None = None,
    base_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    check_extras: bool = True,
    strict: bool = False,
) -> LoadedAgent:
    """Parse and check a document; raises `ValidationProblems` listing every problem."""
    doc = load_text(text, fmt=fmt, file=file, base_dir=base_dir)
    loaded = check(doc, environ=environ, check_extras=check_extras)
    if strict and loaded.warnings:
        raise DocumentProblems(list(loaded.warnings))
    return loaded


def load_dict(
    data: Mapping[str, Any],
    *,
    base_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    check_extras: bool = True,
) -> LoadedAgent:
    if not isinstance(data, Mapping):
        raise ValidationProblems(
            [
                Problem(
                    message="an agent document must be a mapping of keys, "
                    f"got {type(data).__name__}"
                )
            ]
        )
    doc = Document(data=dict(data), base_dir=base_dir or Path.cwd())
    return check(doc, environ=environ, check_extras=check_extras)


def check(
    doc: Document,
    *,
    environ: Mapping[str, str] | None = None,
    check_extras: bool = True,
    _chain: tuple[Path, ...] = (),
) -> LoadedAgent:
    problems = list(doc.problems)
    if problems:
        raise ValidationProblems(problems)
    from raf.decl.workflow.loader import is_workflow_data

    if is_workflow_data(doc.data):
        raise ValidationProblems(
            [
                doc.problem(
                    (),
                    "this is a workflow document, not an agent: build it with "
                    "DeclWorkflowBuilder (raf validate, run and chat take it as it is)",
                )
            ]
        )
    substitute_env(doc, environ)
    normalize(doc)
    problems = list(doc.problems)
    try:
        decl = AgentDecl.model_validate(doc.data)
    except ValidationError as exc:
        problems += problems_from_validation(exc, doc)
        decl = _partial(doc.data)
    loaded = LoadedAgent(decl=decl, doc=doc)
    # checks that need a whole declaration run on the parts that are valid on their own,
    # so one pass reports everything; a place already reported is not reported twice
    reported = {p.key_path for p in problems}
    later = _semantic(loaded, check_extras=check_extras)
    later += _sub_agents(loaded, environ, check_extras, _chain)
    later += _orchestration(loaded)
    problems += [p for p in later if p.key_path not in reported or p.file != doc.file]
    loaded.warnings = list(doc.warnings) + [w for s in loaded.sub_agents for w in s.warnings]
    if problems:
        problems.sort(key=lambda p: (p.file != doc.file, p.line or 0, p.column or 0))
        raise DocumentProblems(problems, loaded.warnings)
    return loaded


def _partial(data: Any) -> AgentDecl:
    """The parts of an invalid document that are valid by themselves (others are None)."""
    if not isinstance(data, dict):
        return AgentDecl.model_construct(name="", tools=[], contexts=[], sub_agents=[])

    def each(key: str, adapter: TypeAdapter[Any]) -> list[Any]:
        items = data.get(key)
        if not isinstance(items, list):
            return []
        out: list[Any] = []
        for item in items:
            try:
                out.append(adapter.validate_python(item))
            except ValidationError:
                out.append(None)
        return out

    def one(key: str, model: type[BaseModel]) -> Any:
        try:
            return model.model_validate(data[key]) if key in data else None
        except ValidationError:
            return None

    instructions = data.get("instructions")
    return AgentDecl.model_construct(
        name=str(data.get("name", "")),
        instructions=instructions if isinstance(instructions, str) else None,
        tools=each("tools", _TOOL),
        contexts=each("contexts", _CONTEXT),
        sub_agents=each("subAgents", _SUB_AGENT),
        compression=one("compression", CompressionDecl),
        template=one("template", TemplateDecl),
    )


def tool_names_of(decl: Any) -> list[str]:
    """The names a tool declaration stands for, as far as they are known statically."""
    kind = decl.kind
    if kind in BUILTIN_TOOLS:
        return [decl.name] if decl.name else list(BUILTIN_TOOLS[kind])
    if kind in ("function", "custom"):
        return [decl.name]
    return []  # mcp/openapi: known once their server or document is read


def _semantic(loaded: LoadedAgent, *, check_extras: bool) -> list[Problem]:
    decl, doc = loaded.decl, loaded.doc
    problems: list[Problem] = []
    # duplicate tool names (after name expansion), including sub-agents offered as tools
    owners: dict[str, str] = {}
    for index, tool in enumerate(decl.tools):
        if tool is None:
            continue
        for name in tool_names_of(tool):
            where = f"tools[{index}]"
            if name in owners:
                path: tuple[str | int, ...] = ("tools", index)
                if tool.name:
                    path = (*path, "name")
                problems.append(
                    doc.problem(
                        path, f"duplicate tool name {name!r}: {owners[name]} already provides it"
                    )
                )
            else:
                owners[name] = where
    for index, sub in enumerate(decl.sub_agents):
        if sub is None:
            continue
        sub_name = sub.name if sub.name else None
        if sub_name and sub_name in owners:
            problems.append(
                doc.problem(
                    ("subAgents", index, "name"),
                    f"duplicate tool name {sub_name!r}: {owners[sub_name]} already provides it",
                )
            )
        elif sub_name:
            owners[sub_name] = f"subAgents[{index}]"
    # contexts: policies, directories, compression declared once, extras
    compressions: list[tuple[str | int, ...]] = [("compression",)] if decl.compression else []
    for index, context in enumerate(decl.contexts):
        if context is None:
            continue
        cpath: tuple[str | int, ...] = ("contexts", index)
        if isinstance(context, WorkspaceContextDecl):
            policy = context.config.policy
            ppath = (*cpath, "config", "policy")
            if policy.strip().lower() not in POLICIES:
                hint = None if ppath in doc.from_env else suggest(policy, POLICIES)
                did = f" (did you mean {hint!r}?)" if hint else ""
                doc.warnings.append(
                    doc.problem(
                        ppath,
                        f"unknown workspace policy {_shown(doc, ppath, policy)}{did}: failing "
                        "closed to 'deny' (DENY_OUTSIDE); use one of " + ", ".join(POLICIES),
                    )
                )
            root = doc.base_dir / context.config.root
            if not root.is_dir():
                rpath = (*cpath, "config", "root")
                problems.append(
                    doc.problem(
                        rpath,
                        f"workspace root {_shown(doc, rpath, context.config.root)} "
                        "is not a directory",
                    )
                )
        elif isinstance(context, SkillsContextDecl):
            for directory in context.config.all_directories:
                if not (doc.base_dir / directory).is_dir():
                    key = "directory" if directory == context.config.directory else "directories"
                    problems.append(
                        doc.problem(
                            (*cpath, "config", key),
                            f"skills directory {directory!r} does not exist",
                        )
                    )
        elif isinstance(context, KnowledgeContextDecl):
            for i, source in enumerate(context.config.sources):
                spath = (*cpath, "config", "sources", i)
                if "://" not in source and not (doc.base_dir / source).exists():
                    problems.append(
                        doc.problem(
                            spath,
                            f"knowledge source {_shown(doc, spath, source)} does not exist "
                            "(a file or folder relative to this document, or an http(s) URL)",
                        )
                    )
        elif isinstance(context, CompressionContextDecl):
            compressions.append(cpath)
        if check_extras and context.kind in CONTEXT_EXTRAS:
            missing = missing_extra(f"a '{context.kind}' context", CONTEXT_EXTRAS[context.kind])
            if missing is not None:
                problems.append(doc.problem((*cpath, "kind"), str(missing)))
    if len(compressions) > 1:
        problems.append(
            doc.problem(
                compressions[1],
                "compression is declared more than once; keep one (it always runs last)",
            )
        )
    if check_extras:
        for index, tool in enumerate(decl.tools):
            if tool is not None and tool.kind in TOOL_EXTRAS:
                missing = missing_extra(f"a '{tool.kind}' tool", TOOL_EXTRAS[tool.kind])
                if missing is not None:
                    problems.append(doc.problem(("tools", index, "kind"), str(missing)))
    for index, tool in enumerate(decl.tools):
        if tool is not None and tool.kind == "openapi":
            spec = tool.config.spec_url
            if "://" not in spec and not (doc.base_dir / spec).is_file():
                problems.append(
                    doc.problem(
                        ("tools", index, "config", "specUrl"),
                        f"OpenAPI document {spec!r} does not exist",
                    )
                )
    problems += model_problems(decl, doc)
    # template placeholders must have values
    if decl.template is not None and decl.template.format == "mustache" and decl.instructions:
        for name in _PLACEHOLDER.findall(decl.instructions):
            if name not in decl.template.variables:
                problems.append(
                    doc.problem(
                        ("template", "variables"),
                        f"instructions use {{{{{name}}}}} but template.variables has no {name!r}",
                    )
                )
    return problems


def _shown(doc: Document, path: tuple[str | int, ...], value: str) -> str:
    """`value` quoted for a message, unless it came from the environment (never shown)."""
    return "(a value from the environment)" if path in doc.from_env else repr(value)


def _sub_agents(
    loaded: LoadedAgent,
    environ: Mapping[str, str] | None,
    check_extras: bool,
    chain: tuple[Path, ...],
) -> list[Problem]:
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
            child = check(child_doc, environ=environ, check_extras=check_extras, _chain=chain)
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


def _orchestration(loaded: LoadedAgent) -> list[Problem]:
    from raf.decl.orchestration import ROOT, check_orchestration, needs_lead

    metadata = loaded.doc.data.get("metadata") if isinstance(loaded.doc.data, dict) else None
    if not isinstance(metadata, dict):
        return []
    names = sub_agent_names(loaded)
    loaded.orchestration, problems = check_orchestration(loaded.doc, metadata, names)
    decl = loaded.decl
    if (
        loaded.orchestration is not None
        and not needs_lead(loaded.orchestration)
        and (decl.tools or decl.contexts or decl.instructions)
    ):
        loaded.doc.warnings.append(
            loaded.doc.problem(
                ROOT,
                f"a {loaded.orchestration.mode} orchestration gives the document's own agent "
                "no role: its instructions, tools and contexts are not used",
            )
        )
    return problems


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
