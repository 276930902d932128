"""The agent document schema: pydantic models, camelCase keys, unknown keys refused."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Discriminator,
    Field,
    Tag,
)

from raf.decl.documents.base import MAX_COUNT, MAX_INT64, NAME_PATTERN, SECRET_KEYS, DeclModel
from raf.decl.documents.context_decls import (
    CONTEXT_KINDS,
    DEFAULT_MEMORY_DIRECTORY,
    DEFAULT_SKILLS_DIRECTORY,
    CompressionContextDecl,
    CompressionDecl,
    ContextDecl,
    KnowledgeConfigDecl,
    KnowledgeContextDecl,
    McpContextDecl,
    MemoryConfigDecl,
    MemoryContextDecl,
    MemoryModelDecl,
    SkillsConfigDecl,
    SkillsContextDecl,
    WikiConfigDecl,
    WikiContextDecl,
    WorkspaceConfigDecl,
    WorkspaceContextDecl,
    WorkspaceRuleDecl,
)
from raf.decl.documents.model_decls import ConnectionDecl, ModelDecl, ModelOptionsDecl
from raf.decl.documents.output_schema import PropertySchemaDecl, as_json_schema, is_json_schema
from raf.decl.documents.schedule_decls import ScheduleDecl
from raf.decl.documents.tool_decls import (
    BUILTIN_TOOLS,
    FILE_TOOLS,
    TOOL_KINDS,
    CodeConfigDecl,
    CodeToolDecl,
    CustomToolDecl,
    FileConfigDecl,
    FileToolDecl,
    FunctionToolDecl,
    HostedToolDecl,
    McpOAuthDecl,
    McpServerDecl,
    McpToolDecl,
    OpenApiAuthDecl,
    OpenApiConfigDecl,
    OpenApiToolDecl,
    ShellConfigDecl,
    ShellToolDecl,
    ToolDecl,
    WebConfigDecl,
    WebToolDecl,
)

__all__ = [
    "BUILTIN_TOOLS",
    "CONTEXT_KINDS",
    "DEFAULT_MEMORY_DIRECTORY",
    "DEFAULT_SKILLS_DIRECTORY",
    "FILE_TOOLS",
    "NAME_PATTERN",
    "SECRET_KEYS",
    "TOOL_KINDS",
    "AgentDecl",
    "CodeConfigDecl",
    "CodeToolDecl",
    "CompressionContextDecl",
    "CompressionDecl",
    "ConnectionDecl",
    "ContextDecl",
    "CustomToolDecl",
    "DeclModel",
    "FileConfigDecl",
    "FileToolDecl",
    "FunctionToolDecl",
    "HostedToolDecl",
    "KnowledgeConfigDecl",
    "KnowledgeContextDecl",
    "McpContextDecl",
    "McpOAuthDecl",
    "McpServerDecl",
    "McpToolDecl",
    "MemoryConfigDecl",
    "MemoryContextDecl",
    "MemoryModelDecl",
    "ModelDecl",
    "ModelOptionsDecl",
    "OpenApiAuthDecl",
    "OpenApiConfigDecl",
    "OpenApiToolDecl",
    "PropertySchemaDecl",
    "ShellConfigDecl",
    "ShellToolDecl",
    "SkillsConfigDecl",
    "SkillsContextDecl",
    "SubAgentRefDecl",
    "TemplateDecl",
    "ToolDecl",
    "WebConfigDecl",
    "WebToolDecl",
    "WikiConfigDecl",
    "WikiContextDecl",
    "WorkspaceConfigDecl",
    "WorkspaceContextDecl",
    "WorkspaceRuleDecl",
    "json_schema",
]


# -- sub-agents and template ----------------------------------------------------------


class SubAgentRefDecl(DeclModel):
    """A sub-agent in another document: `{file: coder.yaml}`."""

    file: str
    name: str | None = Field(default=None, pattern=NAME_PATTERN)
    description: str | None = None


class TemplateDecl(DeclModel):
    """Instructions as a mustache template: `{{name}}` filled at each run from the run's
    variables, then from `variables` (defaults), checked against `inputSchema`."""

    format: Literal["mustache", "none"] = "mustache"
    variables: dict[str, Any] = Field(
        default_factory=dict, description="default values of the template's variables"
    )
    content: str | None = Field(
        default=None, description="the instructions template (when `instructions` is not set)"
    )


def _schema_tag(value: Any) -> str:
    if isinstance(value, dict) and ("type" in value or "$schema" in value or "$ref" in value):
        return "json"
    return "properties"


_SchemaDecl = Annotated[
    Annotated[PropertySchemaDecl, Tag("properties")] | Annotated[dict[str, Any], Tag("json")],
    Discriminator(_schema_tag),
]
"""A schema written as `properties` ({name, kind, required, description}) or as JSON Schema."""


def _sub_agent_tag(value: Any) -> str:
    if isinstance(value, dict) and "file" in value:
        return "ref"
    if isinstance(value, SubAgentRefDecl):
        return "ref"
    return "inline"


class LimitsDecl(DeclModel):
    """Caps on usage; a missing cap is no limit."""

    requests: int | None = Field(default=None, gt=0, le=MAX_COUNT, description="model calls")
    tool_calls: int | None = Field(default=None, gt=0, le=MAX_COUNT, description="tool calls run")
    input_tokens: int | None = Field(default=None, gt=0, le=MAX_INT64)
    output_tokens: int | None = Field(default=None, gt=0, le=MAX_INT64)
    total_tokens: int | None = Field(default=None, gt=0, le=MAX_INT64)


class GuardrailsDecl(DeclModel):
    """Guardrails by registered name: `input` checks each request before the model sees
    it, `output` each final answer, `tools` each tool call (a ToolGuardrail)."""

    input: list[str] = Field(default_factory=list)
    output: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)


class UsageLimitsDecl(LimitsDecl):
    """Caps on each run; `session` caps the whole session's totals."""

    session: LimitsDecl | None = None


class AgentDecl(DeclModel):
    """An agent document."""

    kind: Literal["prompt", "agent"] = "prompt"
    name: str = Field(pattern=NAME_PATTERN)
    display_name: str | None = Field(default=None, description="a human-readable name")
    description: str = ""
    instructions: str | None = None
    additional_instructions: str | None = Field(
        default=None, description="appended to the instructions"
    )
    model: (
        Annotated[
            Annotated[ModelDecl, Tag("block")] | Annotated[str, Tag("string")],
            Discriminator(lambda v: "string" if isinstance(v, str) else "block"),
        ]
        | None
    ) = Field(
        default=None, description="a model block, or a model string such as 'openai:gpt-4o-mini'"
    )
    max_tool_rounds: int = Field(default=10, ge=0, le=MAX_COUNT)
    tools: list[ToolDecl] = Field(default_factory=list)
    contexts: list[ContextDecl] = Field(default_factory=list)
    compression: CompressionDecl | None = None
    sub_agents: list[
        Annotated[
            Annotated[SubAgentRefDecl, Tag("ref")] | Annotated[AgentDecl, Tag("inline")],
            Discriminator(_sub_agent_tag),
        ]
    ] = Field(default_factory=list)
    template: TemplateDecl | None = None
    middleware: list[str] = Field(
        default_factory=list,
        description="names of middleware registered with raf.register_middleware or "
        "DeclAgentBuilder.with_middleware, outermost first",
    )
    guardrails: GuardrailsDecl | None = Field(
        default=None,
        description="guardrails registered with raf.register_guardrail or "
        "DeclAgentBuilder.with_guardrail, by name",
    )
    usage_limits: UsageLimitsDecl | None = None
    schedule: list[ScheduleDecl] = Field(
        default_factory=list,
        description="runs started on a cron schedule, each tick once across all workers "
        "(served with `raf serve --durable`)",
    )
    tool_timeout: float | None = Field(
        default=None, gt=0, description="seconds a tool call may take when its tool sets none"
    )
    metadata: dict[str, Any] = Field(default_factory=dict)
    output_schema: _SchemaDecl | None = Field(
        default=None,
        description="the shape of the answer: `properties` ({name, kind, required, "
        "description}) or JSON Schema; kept on the agent as `output_schema`",
    )

    input_schema: _SchemaDecl | None = Field(
        default=None,
        description="the template's variables: `properties` ({name, kind, required, "
        "description, default}) or JSON Schema; a run's variables are checked against it",
    )

    def input_json_schema(self) -> dict[str, Any] | None:
        """`inputSchema` as JSON Schema, or None when the document has none."""
        if self.input_schema is None:
            return None
        if isinstance(self.input_schema, PropertySchemaDecl):
            schema = self.input_schema.json_schema()
        else:
            schema = as_json_schema(self.input_schema)
        if not isinstance(self.input_schema, dict) or not is_json_schema(self.input_schema):
            # a property list names the inputs it checks; defaults in template.variables
            # may fill others
            schema.pop("additionalProperties", None)
        return schema

    def output_json_schema(self) -> dict[str, Any] | None:
        """`outputSchema` as JSON Schema, or None when the document has none."""
        if self.output_schema is None:
            return None
        if isinstance(self.output_schema, PropertySchemaDecl):
            return self.output_schema.json_schema()
        return as_json_schema(self.output_schema)


AgentDecl.model_rebuild()


def json_schema() -> dict[str, Any]:
    """The JSON Schema of an agent document, for editors."""
    schema = AgentDecl.model_json_schema(by_alias=True)
    reference = schema.pop("$ref", None)
    if reference:  # the top level refers to its own definition (sub-agents nest): inline it
        schema.update(schema["$defs"][reference.rsplit("/", 1)[-1]])
    from raf.decl.documents.orchestration import orchestration_json_schema

    orchestration, definitions = orchestration_json_schema()
    schema.setdefault("$defs", {}).update(definitions)
    for agent in (schema, schema["$defs"].get("AgentDecl", {})):
        if "metadata" in agent.get("properties", {}):
            agent["properties"]["metadata"]["properties"] = {"orchestration": orchestration}

    from raf.decl.documents.dialects.spellings import describe

    describe(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "raf agent document"
    return schema
