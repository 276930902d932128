"""The agent document schema (SPEC §9): pydantic models, camelCase keys, unknown keys refused."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    model_validator,
)
from pydantic.alias_generators import to_camel

from raf.decl.tool_resolver import FILE_TOOL_NAMES, TOOL_NAMES

FILE_TOOLS = FILE_TOOL_NAMES
"""The 11 scope tools `kind: file` expands to (seed 001, rule 6)."""

BUILTIN_TOOLS = TOOL_NAMES
"""Tools of each built-in kind; a declaration without `name` means all of them."""

SECRET_KEYS = frozenset({"apiKey", "token", "password", "secret", "headers", "env"})
"""Keys whose values are never shown in an error message."""

NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


class DeclModel(BaseModel):
    """Base of every document model: camelCase keys, unknown keys are errors."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=False,
    )


# -- model ----------------------------------------------------------------------------


class ConnectionDecl(DeclModel):
    """How to reach the model: a key, no key, or a connection registered in code."""

    kind: Literal["key", "anonymous", "reference", "local"] = "key"
    endpoint: str | None = None
    api_key: SecretStr | None = None
    name: str | None = Field(
        default=None, description="for kind: reference, the name given to with_connection()"
    )
    api_version: str | None = None
    organization: str | None = None
    deployment: str | None = None
    model_path: str | None = Field(default=None, description="for local models: a GGUF file")
    timeout: float | None = Field(default=None, gt=0)
    headers: dict[str, SecretStr] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _reference_has_name(self) -> ConnectionDecl:
        if self.kind == "reference" and not self.name:
            raise ValueError("a connection of kind 'reference' needs 'name'")
        return self


class ModelOptionsDecl(DeclModel):
    """Default settings of every model call."""

    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    top_p: float | None = Field(default=None, ge=0, le=1)
    stop: list[str] | None = None
    seed: int | None = None
    tool_choice: str | None = None
    response_format: dict[str, Any] | None = None
    additional: dict[str, Any] = Field(default_factory=dict)


class ModelDecl(DeclModel):
    """The model: `id`, `provider`, how to connect, default options."""

    id: str | None = None
    provider: str | None = Field(
        default=None, description="openai | anthropic | azure | ollama | local | ..."
    )
    connection: ConnectionDecl | None = None
    options: ModelOptionsDecl = Field(default_factory=ModelOptionsDecl)


# -- tools ----------------------------------------------------------------------------


class _ToolBase(DeclModel):
    description: str | None = None


class FileToolDecl(_ToolBase):
    kind: Literal["file"]
    name: (
        Literal[
            "read_file",
            "write_file",
            "edit_file",
            "list_files",
            "inspect_file",
            "make_directory",
            "remove_path",
            "move_file",
            "find_files",
            "search_file",
            "run_command",
        ]
        | None
    ) = None
    config: dict[str, Any] = Field(default_factory=dict)


class WebToolDecl(_ToolBase):
    kind: Literal["web"]
    name: Literal["web_search", "web_fetch"] | None = None
    config: dict[str, Any] = Field(default_factory=dict)


class ShellToolDecl(_ToolBase):
    kind: Literal["shell"]
    name: Literal["run_command"] | None = None
    config: dict[str, Any] = Field(default_factory=dict)


class CodeToolDecl(_ToolBase):
    kind: Literal["code"]
    name: Literal["code_interpreter"] | None = None
    config: dict[str, Any] = Field(default_factory=dict)


class McpOAuthDecl(DeclModel):
    """OAuth 2.1 for a remote MCP server (`raf.tools.mcp.oauth.McpOAuthConfig`)."""

    client_name: str = "raf"
    redirect_uri: str = "http://127.0.0.1:33418/callback"
    scopes: list[str] | None = None
    client_id: str | None = Field(default=None, description="a client registered beforehand")
    client_secret: SecretStr | None = None
    token_endpoint_auth_method: str | None = None
    client_metadata_url: str | None = None
    token_file: str | None = Field(default=None, description="keep tokens here (mode 0600)")

    def to_config(self) -> dict[str, Any]:
        out = self.model_dump(exclude={"client_secret"})
        if self.client_secret is not None:
            out["client_secret"] = self.client_secret.get_secret_value()
        return out


class McpServerDecl(DeclModel):
    """An MCP server: a command (stdio) or a URL (streamable HTTP or SSE)."""

    transport: Literal["stdio", "http", "sse"] | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, SecretStr] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    connect_timeout: float = Field(default=30.0, gt=0)
    call_timeout: float = Field(default=60.0, gt=0)
    tool_prefix: str | None = None
    tools: list[str] | None = Field(default=None, description="only these tools (default all)")
    approval_mode: Literal["always", "never"] | dict[str, Literal["always", "never"]] = "never"
    reconnect: bool = True
    protocol: Literal["auto", "legacy"] = "auto"
    elicitation: Literal["ask", "decline"] = "ask"
    sampling: Literal["approve", "always", "never"] = "approve"
    oauth: McpOAuthDecl | None = None

    @model_validator(mode="after")
    def _command_or_url(self) -> McpServerDecl:
        if bool(self.command) == bool(self.url):
            raise ValueError("give exactly one of 'command' (stdio) or 'url' (HTTP)")
        return self

    def to_config(self, name: str) -> dict[str, Any]:
        """The keyword arguments of `raf.tools.mcp.McpServerConfig`, secrets revealed."""
        return {
            "name": name,
            "transport": self.transport,
            "command": self.command,
            "args": list(self.args),
            "env": {k: v.get_secret_value() for k, v in self.env.items()} or None,
            "cwd": self.cwd,
            "url": self.url,
            "headers": {k: v.get_secret_value() for k, v in self.headers.items()},
            "connect_timeout": self.connect_timeout,
            "call_timeout": self.call_timeout,
            "tool_prefix": self.tool_prefix,
            "tools": self.tools,
            "approval_mode": self.approval_mode,
            "reconnect": self.reconnect,
            "protocol": self.protocol,
            "elicitation": self.elicitation,
            "sampling": self.sampling,
            "oauth": self.oauth.to_config() if self.oauth is not None else None,
        }


class McpToolDecl(_ToolBase):
    kind: Literal["mcp"]
    name: str = Field(pattern=NAME_PATTERN)
    config: McpServerDecl


class OpenApiAuthDecl(DeclModel):
    kind: Literal["bearer", "header", "none"] = "bearer"
    token: SecretStr | None = None
    header: str | None = None


class OpenApiConfigDecl(DeclModel):
    spec_url: str = Field(description="a local path or an http(s) URL of the OpenAPI document")
    base_url: str | None = None
    auth: OpenApiAuthDecl | None = None
    operations: list[str] | None = Field(default=None, description="operationIds to expose")
    approval_mode: Literal["always", "never"] = "never"
    timeout: float = Field(default=30.0, gt=0)


class OpenApiToolDecl(_ToolBase):
    kind: Literal["openapi"]
    name: str = Field(pattern=NAME_PATTERN)
    config: OpenApiConfigDecl


class FunctionToolDecl(_ToolBase):
    """A function bound in code with `register_factory(name, factory)`."""

    kind: Literal["function"]
    name: str = Field(pattern=NAME_PATTERN)
    approval_required: bool = False
    config: dict[str, Any] = Field(default_factory=dict)


class CustomToolDecl(_ToolBase):
    """A tool made by a factory registered in code."""

    kind: Literal["custom"]
    name: str = Field(pattern=NAME_PATTERN)
    approval_required: bool = False
    config: dict[str, Any] = Field(default_factory=dict)


ToolDecl = Annotated[
    FileToolDecl
    | WebToolDecl
    | ShellToolDecl
    | CodeToolDecl
    | McpToolDecl
    | OpenApiToolDecl
    | FunctionToolDecl
    | CustomToolDecl,
    Field(discriminator="kind"),
]
TOOL_KINDS: tuple[str, ...] = (
    "file",
    "web",
    "shell",
    "code",
    "mcp",
    "openapi",
    "function",
    "custom",
)

# -- compression ----------------------------------------------------------------------


class CompressionDecl(DeclModel):
    """How history is compressed; the provider always runs last (rule 7)."""

    kind: Literal[
        "sliding_window", "token_budget", "observation_masking", "summarization", "pipeline"
    ]
    name: str = "compression"
    budget: int = Field(default=24_000, gt=0, description="token budget of the history")
    keep_last: int | None = Field(default=None, ge=0, description="messages kept verbatim")
    threshold: float | None = Field(
        default=None, gt=0, le=1, description="summarise above this fraction of the budget"
    )
    model: ModelDecl | None = Field(default=None, description="summariser model")
    compact_tool: bool = Field(
        default=True, description="offer the model a `compact` tool to compress on demand"
    )
    strategies: list[CompressionDecl] = Field(default_factory=list)

    @model_validator(mode="after")
    def _pipeline_has_steps(self) -> CompressionDecl:
        if self.kind == "pipeline" and not self.strategies:
            raise ValueError("a 'pipeline' needs at least one entry in 'strategies'")
        if self.kind != "pipeline" and self.strategies:
            raise ValueError("'strategies' is only for kind 'pipeline'")
        return self


# -- contexts -------------------------------------------------------------------------


class MemoryModelDecl(DeclModel):
    id: str | None = None
    provider: str | None = None
    model_path: str | None = None
    connection: ConnectionDecl | None = None


class MemoryConfigDecl(DeclModel):
    directory: str
    consolidation_interval: int = Field(default=3, ge=0)
    memory_model: MemoryModelDecl | None = None


class MemoryContextDecl(DeclModel):
    kind: Literal["memory"]
    name: Literal["super-brain"] = "super-brain"
    config: MemoryConfigDecl


RuleActionDecl = Literal["allow", "approve", "deny"]
RuleAccessDecl = Literal["read", "write", "delete", "execute"]


class WorkspaceRuleDecl(DeclModel):
    """A per-path rule layered over the policy: `{path: "secrets/**", read: deny}` or
    `{path: "build/**", action: allow, access: [write, delete]}`."""

    path: str = Field(description="glob relative to the root (or absolute); ** crosses folders")
    action: RuleActionDecl | None = None
    access: list[RuleAccessDecl] | None = None
    read: RuleActionDecl | None = None
    write: RuleActionDecl | None = None
    delete: RuleActionDecl | None = None
    execute: RuleActionDecl | None = None

    @model_validator(mode="after")
    def _says_something(self) -> WorkspaceRuleDecl:
        if self.action is None and not any((self.read, self.write, self.delete, self.execute)):
            raise ValueError("a rule needs 'action' or one of read/write/delete/execute")
        return self


class WorkspaceConfigDecl(DeclModel):
    root: str = "."
    policy: str = Field(
        default="approve",
        description="read|allow|allow_all, approve|ask|approve_outside, deny|restrict|deny_outside",
    )
    rules: list[WorkspaceRuleDecl] = Field(default_factory=list)


class WorkspaceContextDecl(DeclModel):
    kind: Literal["workspace"]
    name: str = "workspace"
    config: WorkspaceConfigDecl = Field(default_factory=WorkspaceConfigDecl)


class SkillsConfigDecl(DeclModel):
    directory: str | None = None
    directories: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _some_directory(self) -> SkillsConfigDecl:
        if not self.directory and not self.directories:
            raise ValueError("give 'directory' or 'directories'")
        return self

    @property
    def all_directories(self) -> list[str]:
        return ([self.directory] if self.directory else []) + list(self.directories)


class SkillsContextDecl(DeclModel):
    kind: Literal["skills"]
    name: str = "skills"
    config: SkillsConfigDecl


class KnowledgeConfigDecl(DeclModel):
    sources: list[str] = Field(
        min_length=1, description="files or folders (relative to this document) or http(s) URLs"
    )
    mode: Literal["instructions", "tool"] | None = Field(
        default=None, description="inject the best passages, or offer a search tool"
    )
    top_k: int | None = Field(default=None, gt=0)
    max_chars: int | None = Field(default=None, gt=0, description="chunk size in characters")
    overlap: int | None = Field(default=None, ge=0)
    index_path: str | None = None
    min_score: float | None = None


class KnowledgeContextDecl(DeclModel):
    kind: Literal["knowledge"]
    name: str = "knowledge"
    config: KnowledgeConfigDecl


class WikiConfigDecl(DeclModel):
    directory: str


class WikiContextDecl(DeclModel):
    kind: Literal["wiki"]
    name: str = "wiki"
    config: WikiConfigDecl


class McpContextDecl(DeclModel):
    kind: Literal["mcp"]
    name: str = Field(pattern=NAME_PATTERN)
    config: McpServerDecl


class CompressionContextDecl(DeclModel):
    """`compression` may also be listed among contexts; it still runs last (rule 7)."""

    kind: Literal["compression"]
    name: str = "compression"
    config: CompressionDecl


ContextDecl = Annotated[
    MemoryContextDecl
    | WorkspaceContextDecl
    | SkillsContextDecl
    | KnowledgeContextDecl
    | WikiContextDecl
    | McpContextDecl
    | CompressionContextDecl,
    Field(discriminator="kind"),
]
CONTEXT_KINDS: tuple[str, ...] = (
    "memory",
    "workspace",
    "skills",
    "knowledge",
    "wiki",
    "mcp",
    "compression",
)

# -- sub-agents and template ----------------------------------------------------------


class SubAgentRefDecl(DeclModel):
    """A sub-agent in another document: `{file: coder.yaml}`."""

    file: str
    name: str | None = Field(default=None, pattern=NAME_PATTERN)
    description: str | None = None


class TemplateDecl(DeclModel):
    """Instructions as a template: `{{name}}` placeholders filled from `variables`."""

    format: Literal["mustache", "none"] = "mustache"
    variables: dict[str, str] = Field(default_factory=dict)


def _sub_agent_tag(value: Any) -> str:
    if isinstance(value, dict) and "file" in value:
        return "ref"
    if isinstance(value, SubAgentRefDecl):
        return "ref"
    return "inline"


class AgentDecl(DeclModel):
    """An agent document (SPEC §9)."""

    kind: Literal["prompt", "agent"] = "prompt"
    name: str = Field(pattern=NAME_PATTERN)
    description: str = ""
    instructions: str | None = None
    model: (
        Annotated[
            Annotated[ModelDecl, Tag("block")] | Annotated[str, Tag("string")],
            Discriminator(lambda v: "string" if isinstance(v, str) else "block"),
        ]
        | None
    ) = Field(
        default=None, description="a model block, or a model string such as 'openai:gpt-4o-mini'"
    )
    max_tool_rounds: int = Field(default=10, ge=0)
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
    metadata: dict[str, Any] = Field(default_factory=dict)


AgentDecl.model_rebuild()
CompressionDecl.model_rebuild()


def json_schema() -> dict[str, Any]:
    """The JSON Schema of an agent document, for editors."""
    schema = AgentDecl.model_json_schema(by_alias=True)
    reference = schema.pop("$ref", None)
    if reference:  # the top level refers to its own definition (sub-agents nest): inline it
        schema.update(schema["$defs"][reference.rsplit("/", 1)[-1]])
    from raf.decl.orchestration import orchestration_json_schema

    orchestration, definitions = orchestration_json_schema()
    schema.setdefault("$defs", {}).update(definitions)
    for agent in (schema, schema["$defs"].get("AgentDecl", {})):
        if "metadata" in agent.get("properties", {}):
            agent["properties"]["metadata"]["properties"] = {"orchestration": orchestration}
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "raf agent document"
    return schema
