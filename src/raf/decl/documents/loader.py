"""Loads and checks agent documents: syntax, schema, environment, extras, files, cycles —
every problem of a document (and of its sub-agents) reported at once."""

from __future__ import annotations

import copy
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from raf.core.errors import Problem, ValidationProblems
from raf.decl.documents.dialects import normalize
from raf.decl.documents.document_file import read_document
from raf.decl.documents.document_kind import is_workflow_data
from raf.decl.documents.hosted import hosted_as_agent, is_hosted_data
from raf.decl.documents.loaded import DocumentProblems, LoadedAgent
from raf.decl.documents.manifest import is_manifest_data, manifest_as_agent
from raf.decl.documents.orchestration_checks import orchestration_problems, sub_agent_names
from raf.decl.documents.problems import problems_from_validation
from raf.decl.documents.schema import (
    AgentDecl,
    CompressionDecl,
    ContextDecl,
    TemplateDecl,
    ToolDecl,
)
from raf.decl.documents.semantic_checks import POLICIES, semantic_problems, tool_names_of
from raf.decl.documents.source import Document, KeyPath, load_text, substitute_env
from raf.decl.documents.sub_agent_files import load_sub_agents

__all__ = [
    "POLICIES",
    "DocumentProblems",
    "LoadedAgent",
    "check",
    "load",
    "load_dict",
    "load_file",
    "read_document",
    "sub_agent_names",
    "tool_names_of",
]

_TOOL: TypeAdapter[Any] = TypeAdapter(ToolDecl)
_CONTEXT: TypeAdapter[Any] = TypeAdapter(ContextDecl)
_SUB_AGENT: TypeAdapter[Any] = TypeAdapter(
    typing.get_args(AgentDecl.model_fields["sub_agents"].annotation)[0]
)
_MODEL_FIELD: Any = AgentDecl.model_fields["model"].annotation
_MODEL: TypeAdapter[Any] = TypeAdapter(_MODEL_FIELD)


def load_file(
    path: str | Path,
    *,
    environ: Mapping[str, str] | None = None,
    check_extras: bool = True,
    strict: bool = False,
    unset_env_is_warning: bool = False,
    model_given: bool = False,
) -> LoadedAgent:
    """Load a document file; with `strict`, warnings are problems too; with
    `unset_env_is_warning` (what `raf validate` does), an unset environment variable is
    a warning; with `model_given` (a model given on the command line or in code replaces
    the document's), the variables of its model blocks need not be set."""
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
        unset_env_is_warning=unset_env_is_warning,
        model_given=model_given,
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
    unset_env_is_warning: bool = False,
    model_given: bool = False,
) -> LoadedAgent:
    """Parse and check a document; raises `ValidationProblems` listing every problem."""
    doc = load_text(text, fmt=fmt, file=file, base_dir=base_dir)
    loaded = check(
        doc,
        environ=environ,
        check_extras=check_extras,
        unset_env_is_warning=unset_env_is_warning,
        model_given=model_given,
    )
    if strict and loaded.warnings:
        raise DocumentProblems(list(loaded.warnings))
    return loaded


def load_dict(
    data: Mapping[str, Any],
    *,
    base_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    check_extras: bool = True,
    unset_env_is_warning: bool = False,
    model_given: bool = False,
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
    return check(
        doc,
        environ=environ,
        check_extras=check_extras,
        unset_env_is_warning=unset_env_is_warning,
        model_given=model_given,
    )


def check(
    doc: Document,
    *,
    environ: Mapping[str, str] | None = None,
    check_extras: bool = True,
    unset_env_is_warning: bool = False,
    model_given: bool = False,
    _chain: tuple[Path, ...] = (),
) -> LoadedAgent:
    problems = list(doc.problems)
    if problems:
        raise ValidationProblems(problems)
    _refuse_workflow(doc)
    if is_hosted_data(doc.data):
        hosted_as_agent(doc)
    if is_manifest_data(doc.data):
        manifest_as_agent(doc)
        if doc.problems:
            raise DocumentProblems(list(doc.problems), list(doc.warnings))
    substitute_env(
        doc,
        environ,
        unset_is_warning=unset_env_is_warning,
        unused=in_model_block if model_given else None,
    )
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
    later = semantic_problems(loaded, check_extras=check_extras)
    later += load_sub_agents(
        loaded,
        lambda child, chain: check(
            child,
            environ=environ,
            check_extras=check_extras,
            unset_env_is_warning=unset_env_is_warning,
            model_given=model_given,
            _chain=chain,
        ),
        _chain,
    )
    later += orchestration_problems(loaded)
    problems += [p for p in later if p.key_path not in reported or p.file != doc.file]
    loaded.warnings = list(doc.warnings) + [w for s in loaded.sub_agents for w in s.warnings]
    if problems:
        problems.sort(key=lambda p: (p.file != doc.file, p.line or 0, p.column or 0))
        raise DocumentProblems(problems, loaded.warnings)
    return loaded


def in_model_block(path: KeyPath) -> bool:
    """Whether a key path lies in the agent's model block or an inline sub-agent's: what
    a client given on the command line or in code replaces (a compression or memory
    model keeps its own)."""
    while len(path) > 2 and path[0] == "subAgents":
        path = path[2:]
    return bool(path) and path[0] == "model"


def _refuse_workflow(doc: Document) -> None:
    """A workflow document given where an agent is expected is pointed to its builder."""
    if is_workflow_data(doc.data):
        raise ValidationProblems(
            [
                doc.problem(
                    (),
                    "this is a workflow document, not an agent: build it with "
                    "DeclWorkflowBuilder (raf validate, run, chat, serve and ui take it as it is)",
                )
            ]
        )


_PRUNE_ROUNDS = 8
"""How many times a block is tried again without its invalid keys before giving up."""


def _pruned(adapter: TypeAdapter[Any], value: Any) -> Any:
    """`value` validated without the keys pydantic refused (None when that is not enough):
    a block with one wrong key still has the rest checked (a misspelt option beside an
    unknown provider: both are reported)."""
    data = copy.deepcopy(value)
    for _ in range(_PRUNE_ROUNDS):
        try:
            return adapter.validate_python(data)
        except ValidationError as exc:
            if not all(_drop_at(data, tuple(e["loc"])) for e in exc.errors()):
                return None
    return None


def _drop_at(data: Any, loc: tuple[Any, ...]) -> bool:
    """Remove the key at `loc` (a pydantic error's place, union tags skipped); whether
    something was removed. A whole block is never removed: what is wrong with it as a
    whole may be what the rest depends on."""
    current = data
    for part in loc[:-1]:
        in_dict = isinstance(current, dict) and part in current
        if in_dict or (isinstance(current, list) and isinstance(part, int) and part < len(current)):
            current = current[part]
        elif not isinstance(current, dict | list):
            return False
    last = loc[-1] if loc else None
    if isinstance(current, dict) and last in current and not isinstance(current[last], dict):
        del current[last]
        return True
    return False


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
    model = _pruned(_MODEL, data.get("model"))
    return AgentDecl.model_construct(
        name=str(data.get("name", "")),
        instructions=instructions if isinstance(instructions, str) else None,
        model=model,
        tools=each("tools", _TOOL),
        contexts=each("contexts", _CONTEXT),
        sub_agents=each("subAgents", _SUB_AGENT),
        compression=one("compression", CompressionDecl),
        template=one("template", TemplateDecl),
    )
