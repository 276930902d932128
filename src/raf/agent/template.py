"""Instructions as a mustache template: `{{variables}}` filled at each run, checked
against an input schema first."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from raf.core.errors import ConfigurationError, MissingExtraError


@dataclass(kw_only=True, slots=True)
class PromptTemplate:
    """A mustache template for the instructions, its input schema and default values.

    `{{name}}` is filled from the run's variables (then `defaults`, then the schema's own
    `default`s); values are not HTML-escaped, since a prompt is not a web page. Every
    variable the template uses must have a value, and the values must match
    `input_schema` (JSON Schema) when there is one.
    """

    text: str
    input_schema: dict[str, Any] | None = None
    """JSON Schema of the variables (an object schema: one property per variable)."""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """Values used when a run gives none."""
    declared_at: Mapping[str, str] = field(default_factory=dict)
    """Where each variable is declared (`file:line:col`), for messages."""
    source: str = ""
    """Where the template itself comes from, for messages."""
    names: list[str] = field(init=False, default_factory=list)
    """The variables the template writes out (each needs a value)."""
    sections: list[str] = field(init=False, default_factory=list)
    """The variables that only open sections (false when missing)."""

    def __post_init__(self) -> None:
        # a syntax error or a partial fails here, when the agent is built
        self.names, self.sections = _top_names(_parse(self.text, self.source), self.source)
        if self.input_schema is not None:
            _validator(self.input_schema, self.source)

    def render(self, variables: Mapping[str, Any] | None = None) -> str:
        """The instructions for one run; a located `ConfigurationError` when a variable
        is missing or does not match the input schema."""
        values = self.values(variables)
        import pystache

        # no partials: a template never reads a file
        renderer = pystache.Renderer(missing_tags="strict", escape=lambda text: text, partials={})
        try:
            return str(renderer.render(self.text, values))
        except pystache.context.KeyNotFoundError as exc:  # a name inside a section
            raise ConfigurationError(
                f"the instructions template has no value for {exc.key!r} "
                f"(given: {', '.join(sorted(values)) or 'nothing'})",
                key_path=self._where("variables"),
            ) from None
        except pystache.common.TemplateNotFoundError:
            raise ConfigurationError(
                "the instructions template includes a partial; raf templates are one text, "
                "with no partials",
                key_path=self.source or None,
            ) from None

    def values(self, variables: Mapping[str, Any] | None) -> dict[str, Any]:
        """The variables of one run with defaults filled in, checked."""
        values: dict[str, Any] = {}
        properties = (self.input_schema or {}).get("properties") or {}
        for name, spec in properties.items():
            if isinstance(spec, dict) and "default" in spec:
                values[name] = spec["default"]
        values.update(self.defaults)
        values.update(variables or {})
        for name in self.sections:
            values.setdefault(name, False)
        missing = [name for name in self.names if name not in values]
        if missing:
            name = missing[0]
            raise ConfigurationError(
                f"the instructions template uses {{{{{name}}}}} but no value was given for "
                f"it{self._declared(name)}; pass it with agent.run(..., variables={{{name!r}: "
                "...}) or AgentRunOptions(template_variables=...)",
                key_path=self._where(f"variables.{name}"),
            )
        if self.input_schema is not None:
            self._check(values)
        return values

    def default_problems(self) -> list[tuple[str, str]]:
        """(variable, what is wrong) for each default the input schema refuses."""
        if self.input_schema is None or not self.defaults:
            return []
        validator = _validator(self.input_schema, self.source)
        out: list[tuple[str, str]] = []
        for error in validator.iter_errors(dict(self.defaults)):
            path = list(error.absolute_path)
            if path:  # a required input with no default is for the run to give
                out.append((str(path[0]), f"does not match inputSchema: {error.message}"))
        return out

    def _check(self, values: dict[str, Any]) -> None:
        assert self.input_schema is not None
        errors = sorted(
            _validator(self.input_schema, self.source).iter_errors(values),
            key=lambda e: list(e.absolute_path),
        )
        if not errors:
            return
        error = errors[0]
        path = [str(p) for p in error.absolute_path]
        name = path[0] if path else ""
        raise ConfigurationError(
            f"template variable {name!r}: {error.message}{self._declared(name)}"
            if name
            else f"the template variables do not match the input schema: {error.message}",
            key_path=self._where(".".join(["variables", *path])),
        )

    def _declared(self, name: str) -> str:
        where = self.declared_at.get(name)
        return f" (declared at {where})" if where else ""

    def _where(self, key: str) -> str:
        return f"{self.source} {key}" if self.source else key


def _parse(text: str, source: str) -> Any:
    try:
        import pystache.parser
    except ImportError:
        raise MissingExtraError("instructions templates", "templates", "pystache") from None
    try:
        return pystache.parser.parse(text)
    except pystache.parser.ParsingError as exc:
        raise ConfigurationError(
            f"the instructions template is not valid mustache: {exc}", key_path=source or None
        ) from None


def _top_names(parsed: Any, source: str) -> tuple[list[str], list[str]]:
    """The variables a template writes out at its top level (each needs a value) and
    those that only open a section (a missing one is false, as mustache has it)."""
    written: list[str] = []
    sections: list[str] = []
    for node in getattr(parsed, "_parse_tree", ()):
        kind = type(node).__name__
        key = getattr(node, "key", None)
        if kind == "_PartialNode":
            raise ConfigurationError(
                f"the instructions template includes a partial ({{{{>{key}}}}}); raf "
                "templates are one text, with no partials",
                key_path=source or None,
            )
        if not isinstance(key, str) or key in ("", "."):
            continue
        first = key.split(".")[0]
        into = sections if kind in ("_SectionNode", "_InvertedNode") else written
        if first not in into:
            into.append(first)
    return written, [name for name in sections if name not in written]


def _validator(schema: dict[str, Any], source: str) -> Any:
    try:
        import jsonschema
    except ImportError:
        raise MissingExtraError("an input schema", "templates", "jsonschema") from None
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigurationError(
            f"the input schema is not a valid JSON Schema: {exc.message}",
            key_path=f"{source} inputSchema" if source else "inputSchema",
        ) from None
    from raf.core.schema_refs import schema_validator

    where = f"{source} inputSchema" if source else "inputSchema"
    return schema_validator(schema, where=where, feature="an input schema")


def render_instructions(agent: Any, variables: Mapping[str, Any] | None) -> str | None:
    """The agent's instructions template rendered with a run's variables; variables
    for an agent without a template are refused rather than ignored."""
    template: PromptTemplate | None = getattr(agent, "instructions_template", None)
    if template is None:
        if variables:
            raise ConfigurationError(
                f"agent {getattr(agent, 'name', '')!r} has no instructions template, so "
                f"its variables ({', '.join(sorted(variables))}) would fill nothing",
                key_path="variables",
            )
        return None
    return template.render(variables)
