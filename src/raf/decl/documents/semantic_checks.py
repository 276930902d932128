"""The checks that need a whole declaration: duplicate tool names, context policies and
folders, extras, files a declaration names, template placeholders."""

from __future__ import annotations

import re
from typing import Any

from raf.clients.hosted_tools import HostedTool
from raf.core.errors import ConfigurationError, MissingExtraError, Problem, install_hint
from raf.decl.documents.build_checks import model_problems
from raf.decl.documents.extras import (
    CONTEXT_EXTRAS,
    EMBEDDER_EXTRA,
    SCHEMA_EXTRA,
    TEMPLATE_EXTRA,
    TOOL_EXTRAS,
    missing_extra,
)
from raf.decl.documents.loaded import LoadedAgent
from raf.decl.documents.problems import suggest
from raf.decl.documents.schema import (
    BUILTIN_TOOLS,
    CompressionContextDecl,
    KnowledgeContextDecl,
    SkillsContextDecl,
    WorkspaceContextDecl,
)
from raf.decl.documents.source import Document

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
"""YAML workspace policy values; anything else fails closed to deny."""

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def tool_names_of(decl: Any) -> list[str]:
    """The names a tool declaration stands for, as far as they are known statically."""
    kind = decl.kind
    if kind in BUILTIN_TOOLS:
        return [decl.name] if decl.name else list(BUILTIN_TOOLS[kind])
    if kind in ("function", "custom"):
        return [decl.name]
    if kind == "hosted":
        return [HostedTool(decl.spec(), name=decl.name).name]
    return []  # mcp/openapi: known once their server or document is read


def semantic_problems(loaded: LoadedAgent, *, check_extras: bool) -> list[Problem]:
    """The problems of the declaration's valid parts taken together (a workspace policy
    that is not known is a warning: it fails closed)."""
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
            if check_extras:
                _embedder_problems(doc, cpath, context, problems)
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
    if check_extras:
        problems += _template_extras(loaded)
    problems += _output_schema_problems(loaded)
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
    # template placeholders must have values: a default, or a declared input
    template = decl.template
    text = decl.instructions or (template.content if template is not None else None)
    if template is not None and template.format == "mustache" and text:
        declared = (decl.input_json_schema() or {}).get("properties") or {}
        for name in _PLACEHOLDER.findall(text):
            if name not in template.variables and name not in declared:
                problems.append(
                    doc.problem(
                        ("template", "variables"),
                        f"instructions use {{{{{name}}}}} but neither template.variables nor "
                        f"inputSchema has {name!r}",
                    )
                )
    return problems


def _template_extras(loaded: LoadedAgent) -> list[Problem]:
    """A mustache template needs pystache, and input and output schemas need jsonschema:
    both come with the `templates` extra, so a document that validates also runs."""
    decl, doc = loaded.decl, loaded.doc
    problems: list[Problem] = []
    template = decl.template
    if template is not None and template.format == "mustache":
        missing = missing_extra("an instructions template", TEMPLATE_EXTRA)
        if missing is not None:
            problems.append(doc.problem(("template",), str(missing)))
    for key, schema in (("inputSchema", decl.input_schema), ("outputSchema", decl.output_schema)):
        if schema is not None:
            missing = missing_extra(f"an {key}", SCHEMA_EXTRA)
            if missing is not None:
                problems.append(doc.problem((key,), str(missing)))
    return problems


def _output_schema_problems(loaded: LoadedAgent) -> list[Problem]:
    """`outputSchema` refused as the build refuses it, by the same check (a `$ref` loop,
    a ref outside the schema, a schema past its limits, one that is not JSON Schema)."""
    schema = loaded.decl.output_json_schema()
    if schema is None:
        return []
    from raf.agent.output_type import resolve_output_type

    try:
        resolve_output_type(schema, where="outputSchema")
    except MissingExtraError:
        return []  # told among the missing extras
    except ConfigurationError as exc:
        return [loaded.doc.problem(("outputSchema",), exc.message)]
    return []


def _shown(doc: Document, path: tuple[str | int, ...], value: str) -> str:
    """`value` quoted for a message, unless it came from the environment (never shown)."""
    return "(a value from the environment)" if path in doc.from_env else repr(value)


def _embedder_problems(
    doc: Document,
    cpath: tuple[str | int, ...],
    context: KnowledgeContextDecl,
    problems: list[Problem],
) -> None:
    """Without the embedder's runtime, `embedder: local` cannot run (a problem) and the
    default searches by BM25 alone (a warning that says how to get meaning-based search)."""
    chosen = context.config.embedder
    if chosen == "none":
        return
    missing = missing_extra("the knowledge embedder 'local'", EMBEDDER_EXTRA)
    if missing is None:
        return
    if chosen == "local":
        problems.append(doc.problem((*cpath, "config", "embedder"), str(missing)))
        return
    where = (*cpath, "config", "embedder") if chosen == "auto" else (*cpath, "kind")
    doc.warnings.append(
        doc.problem(
            where,
            f"knowledge {context.name!r} will search by BM25 (words) alone: its embedder "
            f"needs {missing.module or 'onnxruntime'}; {install_hint('rag-embeddings')} "
            "for meaning-based (hybrid) search, or say `embedder: none`",
        )
    )
