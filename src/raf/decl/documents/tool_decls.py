"""Tool declarations: one model per tool kind, and one config schema per built-in kind, so a
document's tool `config` is checked when it is validated, not first when it is built."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import Field, SecretStr, model_validator

from raf.clients.hosted_tools import HostedTool
from raf.core.errors import ConfigurationError
from raf.decl.documents.base import MAX_COUNT, NAME_PATTERN, DeclModel

FileToolName = Literal[
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
]
"""The name of one of the file tools."""
FILE_TOOL_NAMES: tuple[str, ...] = get_args(FileToolName)
TOOL_NAMES: dict[str, tuple[str, ...]] = {
    "file": FILE_TOOL_NAMES,
    "web": ("web_search", "web_fetch"),
    "shell": ("run_command",),
    "code": ("code_interpreter",),
}
"""The names each built-in kind expands to, in order."""

FILE_TOOLS = FILE_TOOL_NAMES
"""The ten file tools `kind: file` expands to; `run_command` comes with `kind: shell`."""

BUILTIN_TOOLS = TOOL_NAMES
"""Tools of each built-in kind; a declaration without `name` means all of them."""

CODE_BACKENDS = ("process", "subprocess", "local", "native", "sandbox")
"""Code backends that mean raf's own sandboxed subprocess; others are warned about."""
CONTAINER_BACKEND = "container"
"""The backend that runs each call in a fresh container (`config.container` says which)."""

_Count = Annotated[int, Field(ge=1)]


class _ToolBase(DeclModel):
    description: str | None = None


# -- config of the built-in kinds -----------------------------------------------------


class ContainerDecl(DeclModel):
    """The container a `backend: container` tool runs each call in
    (`raf.tools.sandbox.ContainerSandbox`)."""

    image: str = Field(min_length=1, description="an image on the engine (never pulled)")
    memory_mb: _Count | None = None
    cpus: float | None = Field(default=None, gt=0)
    pids: _Count | None = None
    network: bool | None = Field(default=None, description="false unless set (no network)")
    read_only: bool | None = Field(default=None, description="read-only root (the default)")
    tmpfs_mb: _Count | None = None
    user: str | None = Field(default=None, description="'uid:gid', never root")
    docker_host: str | None = Field(
        default=None, description="the engine's API (DOCKER_HOST or Docker's socket if unset)"
    )
    python: str | None = None


def _backend_and_container(backend: str | None, container: ContainerDecl | None) -> None:
    if backend == CONTAINER_BACKEND and container is None:
        raise ValueError("backend 'container' needs a `container` block with its `image`")
    if container is not None and backend not in (None, CONTAINER_BACKEND):
        raise ValueError(f"a `container` block needs backend 'container', not {backend!r}")


class ShellConfigDecl(DeclModel):
    """Settings of `run_command`."""

    output_cap: _Count | None = Field(default=None, description="characters of output kept")
    allow_env: list[str] | None = Field(
        default=None, description="environment variables passed to commands"
    )
    network: bool | None = None
    backend: Literal["process", "container"] | None = Field(
        default=None,
        exclude=True,
        description="process (bubblewrap, the default) or container (see `container`)",
    )
    container: ContainerDecl | None = None

    @model_validator(mode="after")
    def _container_backend(self) -> ShellConfigDecl:
        _backend_and_container(self.backend, self.container)
        return self


class FileConfigDecl(ShellConfigDecl):
    """Limits of the file tools (and of `run_command` when it is named here)."""

    max_read_bytes: _Count | None = None
    max_read_lines: _Count | None = None
    max_write_bytes: _Count | None = None
    max_entries: _Count | None = None
    max_matches: _Count | None = None
    max_search_file_bytes: _Count | None = None


class WebSearchConfigDecl(DeclModel):
    """Settings of `web_search`."""

    backend: Literal["duckduckgo", "ddg", "searxng", "brave", "tavily"] | None = None
    url: str | None = Field(default=None, description="the backend's endpoint (searxng: its URL)")
    api_key: SecretStr | None = None
    timeout: float | None = Field(default=None, gt=0)


class WebConfigDecl(WebSearchConfigDecl):
    """Settings of the web tools: `web_search`'s and `web_fetch`'s."""

    allow_private: bool | None = None
    allow_hosts: list[str] | None = None
    max_bytes: _Count | None = None
    max_chars: _Count | None = None
    max_redirects: int | None = Field(default=None, ge=0, le=MAX_COUNT)


_FETCH_ONLY = ("allow_private", "allow_hosts", "max_bytes", "max_chars", "max_redirects")
_SEARCH_ONLY = ("backend", "url", "api_key")


class CodeConfigDecl(DeclModel):
    """Settings of `code_interpreter` (a sandboxed Python subprocess)."""

    backend: str | None = Field(
        default=None,
        exclude=True,
        description="process (the default) or container (see `container`); any other value "
        "is warned about",
    )
    timeout: float | None = Field(default=None, gt=0, description="seconds per run")
    cpu_seconds: _Count | None = None
    memory_mb: _Count | None = None
    file_mb: _Count | None = None
    max_processes: _Count | None = None
    output_cap: _Count | None = None
    network: bool | None = None
    container: ContainerDecl | None = None

    @model_validator(mode="after")
    def _container_backend(self) -> CodeConfigDecl:
        backend = self.backend.lower() if self.backend is not None else None
        _backend_and_container(backend, self.container)
        return self


def config_dict(config: DeclModel) -> dict[str, Any]:
    """The keys a document set, camelCase, secrets revealed: what the tool resolver takes."""
    out: dict[str, Any] = {}
    for key, value in config.model_dump(by_alias=True, exclude_none=True).items():
        out[key] = value.get_secret_value() if isinstance(value, SecretStr) else value
    return out


# -- the tool kinds -------------------------------------------------------------------


class FileToolDecl(_ToolBase):
    kind: Literal["file"]
    name: Literal[FileToolName, "run_command"] | None = None
    config: FileConfigDecl = Field(default_factory=FileConfigDecl)


class WebToolDecl(_ToolBase):
    kind: Literal["web"]
    name: Literal["web_search", "web_fetch"] | None = None
    config: WebConfigDecl = Field(default_factory=WebConfigDecl)

    @model_validator(mode="after")
    def _keys_of_the_named_tool(self) -> WebToolDecl:
        others = {"web_search": _FETCH_ONLY, "web_fetch": _SEARCH_ONLY}.get(self.name or "", ())
        for key in others:
            if getattr(self.config, key) is not None:
                alias = WebConfigDecl.model_fields[key].alias or key
                raise ValueError(f"config key {alias!r} does not apply to {self.name}")
        if self.config.backend == "searxng" and not self.config.url:
            raise ValueError("the searxng backend needs config.url")
        return self


class ShellToolDecl(_ToolBase):
    kind: Literal["shell"]
    name: Literal["run_command"] | None = None
    config: ShellConfigDecl = Field(default_factory=ShellConfigDecl)


class CodeToolDecl(_ToolBase):
    kind: Literal["code"]
    name: Literal["code_interpreter"] | None = None
    config: CodeConfigDecl = Field(default_factory=CodeConfigDecl)


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
    parameters: dict[str, Any] | None = Field(
        default=None,
        description="the arguments as a JSON Schema, or as `properties` of {kind, required, "
        "description}; given to the factory",
    )
    config: dict[str, Any] = Field(default_factory=dict)


class CustomToolDecl(_ToolBase):
    """A tool made by a factory registered in code."""

    kind: Literal["custom"]
    name: str = Field(pattern=NAME_PATTERN)
    approval_required: bool = False
    config: dict[str, Any] = Field(default_factory=dict)


class HostedToolDecl(_ToolBase):
    """A tool the model's provider runs (OpenAI's Responses API): its `type` and the rest
    of the API's tool object in `config`, spelled as the API spells it."""

    kind: Literal["hosted"]
    name: str | None = Field(default=None, pattern=NAME_PATTERN)
    type: str = Field(description="web_search | file_search | code_interpreter | mcp | ...")
    config: dict[str, Any] = Field(
        default_factory=dict,
        description="the tool object's other keys (vector_store_ids, server_url, ...)",
    )

    @model_validator(mode="after")
    def _a_tool_the_api_knows(self) -> HostedToolDecl:
        try:
            HostedTool({**self.config, "type": self.type}, name=self.name)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None
        return self

    def spec(self) -> dict[str, Any]:
        """The API's tool object."""
        return {**self.config, "type": self.type}


ToolDecl = Annotated[
    FileToolDecl
    | WebToolDecl
    | ShellToolDecl
    | CodeToolDecl
    | McpToolDecl
    | OpenApiToolDecl
    | FunctionToolDecl
    | CustomToolDecl
    | HostedToolDecl,
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
    "hosted",
)
