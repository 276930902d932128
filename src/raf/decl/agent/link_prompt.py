"""The instructions of a declared agent: plain text, or a mustache template with its input
schema, rendered at each run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raf.agent.template import PromptTemplate
from raf.core.errors import ConfigurationError
from raf.decl.agent.link_base import LinkSite
from raf.decl.documents.output_schema import PropertySchemaDecl
from raf.decl.documents.schema import AgentDecl
from raf.decl.documents.source import KeyPath

if TYPE_CHECKING:
    from raf.agent.builder import AgentBuilder


def plain_instructions(decl: AgentDecl) -> str | None:
    """The plain instructions (a mustache template is rendered at each run instead)."""
    template = decl.template
    text = decl.instructions or (template.content if template is not None else None)
    if template is not None and template.format == "mustache":
        text = None
    extra = decl.additional_instructions
    if extra:
        return f"{text}\n\n{extra}" if text else extra
    return text


def apply_template(linker: LinkSite, agent: AgentBuilder) -> None:
    """A mustache template with its input schema; defaults checked against it now."""
    decl = linker.decl
    template = decl.template
    text = decl.instructions or (template.content if template is not None else None)
    if template is None or template.format != "mustache" or not text:
        return
    schema = decl.input_json_schema()
    where = "instructions" if decl.instructions else "template"
    try:
        built = PromptTemplate(
            text=text,
            input_schema=schema,
            defaults=template.variables,
            declared_at=_declared_inputs(linker, schema),
            source=linker.doc.file or "",
        )
    except ConfigurationError as exc:
        linker.fail((where,) if "inputSchema" not in str(exc) else ("inputSchema",), exc.message)
        return
    for name, message in built.default_problems():
        linker.fail(("template", "variables", name), message)
    agent.with_instructions_template(built)


def _declared_inputs(linker: LinkSite, schema: dict[str, Any] | None) -> dict[str, str]:
    """Where each input is declared in the document, as `file:line:col`."""
    raw = linker.decl.input_schema
    names = list((schema or {}).get("properties") or {})
    out: dict[str, str] = {}
    for index, name in enumerate(names):
        listed = isinstance(raw, PropertySchemaDecl) and isinstance(raw.properties, list)
        path: KeyPath = ("inputSchema", "properties", index if listed else name)
        problem = linker.doc.problem(path, "")
        if problem.line is not None:
            out[name] = f"{problem.file or 'the document'}:{problem.line}:{problem.column}"
    return out
