"""Reads a document written in the original framework's or Microsoft Agent Framework's
dialect as raf's own: other spellings are renamed, keys the other dialect keeps elsewhere are
moved, and keys with no meaning for raf are dropped with a warning that names them."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from raf.decl.context_decls import (
    CompressionDecl,
    KnowledgeConfigDecl,
    MemoryConfigDecl,
    MemoryModelDecl,
    SkillsConfigDecl,
    WikiConfigDecl,
    WorkspaceConfigDecl,
)
from raf.decl.dialects.rewriter import Rewriter
from raf.decl.dialects.spellings import spellings_at
from raf.decl.model_decls import ConnectionDecl, ModelDecl, ModelOptionsDecl
from raf.decl.source import Path_
from raf.decl.tool_decls import (
    CODE_BACKENDS,
    TOOL_KINDS,
    CodeConfigDecl,
    FileConfigDecl,
    FunctionToolDecl,
    McpServerDecl,
    ShellConfigDecl,
    WebConfigDecl,
)

_CONNECTION_KINDS = {
    "apikey": "key",
    "key": "key",
    "remote": "key",
    "externalreferenceconnection": "reference",
    "externalreference": "reference",
    "reference": "reference",
    "anonymous": "anonymous",
    "none": "anonymous",
    "local": "local",
}
_LLAMA = ("llama", "llamacpp", "llama.cpp", "llama_cpp", "gguf")
_PROVIDERS = {"azureopenai": "azure", "azure_openai": "azure", "azure-openai": "azure"}
_COUNTERS = {
    "tiktoken": "tiktoken",
    "bpe": "tiktoken",
    "cl100k": "tiktoken",
    "o200k": "tiktoken",
    "estimate": "estimate",
    "estimating": "estimate",
    "heuristic": "estimate",
    "chars": "estimate",
    "char": "estimate",
    "simple": "estimate",
    "approximate": "estimate",
}
_TOOL_CONFIGS: dict[str, type[BaseModel]] = {
    "file": FileConfigDecl,
    "shell": ShellConfigDecl,
    "web": WebConfigDecl,
    "code": CodeConfigDecl,
}
_CONTEXT_CONFIGS: dict[str, type[BaseModel]] = {
    "memory": MemoryConfigDecl,
    "skills": SkillsConfigDecl,
    "knowledge": KnowledgeConfigDecl,
    "wiki": WikiConfigDecl,
    "workspace": WorkspaceConfigDecl,
    "mcp": McpServerDecl,
    "compression": CompressionDecl,
}
_MCP_TOP = {
    "url": "url",
    "serverUrl": "url",
    "server_url": "url",
    "command": "command",
    "args": "args",
    "env": "env",
    "cwd": "cwd",
    "transport": "transport",
    "headers": "headers",
    "allowedTools": "tools",
    "allowed_tools": "tools",
    "requireApproval": "approvalMode",
    "approvalMode": "approvalMode",
    "approval_mode": "approvalMode",
    "tool_name": "tools",
    "toolName": "tools",
}
_OPENAPI_TOP = {
    "specUrl": "specUrl",
    "spec_url": "specUrl",
    "specification": "specUrl",
    "operationId": "operations",
    "operation_id": "operations",
    "operations": "operations",
    "baseUrl": "baseUrl",
    "base_url": "baseUrl",
    "auth": "auth",
}
HOSTED_TOOLS = {
    "file_search": "declare a knowledge context over the same files instead",
    "bing_grounding": "declare a web tool instead",
    "azure_ai_search": "declare a knowledge context instead",
    "image_generation": "call an image model from a function tool instead",
}
"""Hosted tool kinds of other dialects, and what to declare in raf instead."""
_SNAKE = (
    "is the snake_case spelling of {camel!r}: raf reads it, but the original framework "
    "ignores snake_case keys here, so write {camel!r}"
)


def normalize_agent(rw: Rewriter, base: Path_ = ()) -> None:
    """Rewrite the agent at `base` (and its inline sub-agents) into raf's spelling."""
    from raf.decl.schema import AgentDecl

    top = rw.mapping(base)
    if top is None:
        return
    kind = top.get("kind")
    if isinstance(kind, str) and kind.lower() in ("prompt", "agent"):
        top["kind"] = kind.lower()
    if "id" in top and "name" not in top and isinstance(top["id"], str):
        rw.rename(base, "id", "name")
    elif "id" in top:
        rw.drop((*base, "id"), "is ignored: 'name' names the agent")
    rw.rename(base, "system_prompt", "instructions")
    if "inputSchema" in top:
        rw.drop(
            (*base, "inputSchema"),
            "has no meaning for raf and is ignored (fill placeholders with template.variables)",
        )
    _snake_keys(rw, base, AgentDecl)
    _token_counter(rw, base)
    _template(rw, (*base, "template"))
    if isinstance(top.get("model"), dict):
        _model(rw, (*base, "model"), ModelDecl)
    if isinstance(top.get("tools"), list):
        _drop_hosted_tools(rw, (*base, "tools"))
        for index in range(len(top["tools"])):
            _tool(rw, (*base, "tools", index))
    if isinstance(top.get("contexts"), list):
        _flatten_bundles(rw, (*base, "contexts"))
        for index in range(len(top["contexts"])):
            _context(rw, (*base, "contexts", index))
    if isinstance(top.get("compression"), dict):
        _compression(rw, (*base, "compression"))
    subs = top.get("subAgents")
    if isinstance(subs, list):
        for index, sub in enumerate(subs):
            if isinstance(sub, dict) and "file" not in sub:
                normalize_agent(rw, (*base, "subAgents", index))


def _aliases(model: type[BaseModel]) -> set[str]:
    return {f.alias or n for n, f in model.model_fields.items()}


def _snake_keys(rw: Rewriter, path: Path_, model: type[BaseModel]) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    known = _aliases(model)
    for key in list(owner):
        camel = to_camel(key)
        if "_" in key and camel in known and camel != key:
            rw.rename(path, key, camel, why=f"{key!r} " + _SNAKE.format(camel=camel))


def _spellings(rw: Rewriter, path: Path_, model: type[BaseModel]) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    for spelling in spellings_at(model):
        if spelling.key not in owner:
            continue
        if spelling.means is None:
            rw.drop((*path, spelling.key), spelling.note)
        else:
            rw.rename(path, spelling.key, spelling.means)
    _snake_keys(rw, path, model)


def _model(rw: Rewriter, path: Path_, model: type[BaseModel]) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    for key in ("api_key", "apiKey", "key"):
        if key in owner:
            rw.move((*path, key), (*path, "connection", "apiKey"))
    for key in ("endpoint", "baseUrl", "base_url"):
        if key in owner and model is ModelDecl:
            rw.move((*path, key), (*path, "connection", "endpoint"))
    api_type = owner.get("apiType")
    if api_type is not None:
        if str(api_type).lower() in ("chat", "chatcompletions", "chat_completions"):
            del owner["apiType"]
        else:
            rw.drop(
                (*path, "apiType"),
                f"({api_type!r}) has no meaning for raf and is ignored: raf speaks the chat "
                "completions API",
            )
    _spellings(rw, path, model)
    provider = owner.get("provider")
    if isinstance(provider, str):
        lowered = provider.lower()
        owner["provider"] = _PROVIDERS.get(lowered, lowered)
    connection = rw.mapping((*path, "connection"))
    if connection is not None:
        _connection(rw, (*path, "connection"))
    endpoint = connection.get("endpoint") if connection else None
    gguf = isinstance(endpoint, str) and endpoint.lower().endswith(".gguf")
    if owner.get("provider") in _LLAMA and gguf:
        owner["provider"] = "local"
        rw.rename((*path, "connection"), "endpoint", "modelPath")
    if owner.get("provider") in _LLAMA and (
        owner.get("modelPath") or (connection or {}).get("modelPath")
    ):
        owner["provider"] = "local"
    if isinstance(owner.get("options"), dict):
        _options(rw, (*path, "options"))


def _connection(rw: Rewriter, path: Path_) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    kind = owner.get("kind")
    if isinstance(kind, str) and kind.lower() in _CONNECTION_KINDS:
        owner["kind"] = _CONNECTION_KINDS[kind.lower()]
    _spellings(rw, path, ConnectionDecl)


def _options(rw: Rewriter, path: Path_) -> None:
    _spellings(rw, path, ModelOptionsDecl)
    owner = rw.mapping(path)
    if owner is not None and isinstance(owner.get("toolChoice"), str):
        owner["toolChoice"] = owner["toolChoice"].lower()


def _template(rw: Rewriter, path: Path_) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    fmt = owner.get("format")
    if isinstance(fmt, dict) and isinstance(fmt.get("kind"), str):
        owner["format"] = fmt["kind"].lower()
    elif isinstance(fmt, str):
        owner["format"] = fmt.lower()
    if "parser" in owner:
        rw.drop(
            (*path, "parser"),
            "has no meaning for raf and is ignored (instructions are plain text)",
        )


def _token_counter(rw: Rewriter, base: Path_) -> None:
    top = rw.mapping(base)
    if top is None or "tokenCounter" not in top:
        return
    if isinstance(top.get("compression"), dict):
        rw.move((*base, "tokenCounter"), (*base, "compression", "tokenCounter"))
        return
    for index, context in enumerate(top.get("contexts") or []):
        if isinstance(context, dict) and str(context.get("kind")).lower() == "compression":
            rw.move((*base, "tokenCounter"), (*base, "contexts", index, "config", "tokenCounter"))
            return
    rw.drop((*base, "tokenCounter"), "is ignored: the document declares no compression")


def _tool(rw: Rewriter, path: Path_) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    kind = owner.get("kind")
    if isinstance(kind, str):
        kind = kind.lower()
        if kind == "code_interpreter":
            owner.setdefault("name", "code_interpreter")
            kind = "code"
        elif kind == "web_search":
            owner.setdefault("name", "web_search")
            kind = "web"
        if kind in TOOL_KINDS:
            owner["kind"] = kind
    if kind == "mcp":
        if "serverName" in owner and "name" not in owner:
            rw.rename(path, "serverName", "name")
        if "serverDescription" in owner and "description" not in owner:
            rw.rename(path, "serverDescription", "description")
        for key in ("serverName", "serverDescription", "connection"):
            if key in owner:
                rw.drop((*path, key), "has no meaning for raf and is ignored")
        _hoist(rw, path, _MCP_TOP)
        _mcp(rw, (*path, "config"))
    elif kind == "openapi":
        _hoist(rw, path, _OPENAPI_TOP)
        operations = rw.at((*path, "config", "operations"))
        if isinstance(operations, str):
            rw.mapping((*path, "config"))["operations"] = [operations]  # type: ignore[index]
    elif kind == "function":
        _spellings(rw, path, FunctionToolDecl)
    elif isinstance(kind, str) and kind in _TOOL_CONFIGS:
        config = (*path, "config")
        _spellings(rw, config, _TOOL_CONFIGS[kind])
        backend = rw.at((*config, "backend"))
        if kind == "code" and backend is not None and str(backend).lower() not in CODE_BACKENDS:
            rw.warn(
                (*config, "backend"),
                f"code backend {backend!r} is not available in raf: code runs in raf's "
                "sandboxed subprocess instead",
            )


def _drop_hosted_tools(rw: Rewriter, path: Path_) -> None:
    """Tools a provider runs on its own servers (MAF's `file_search`, `bing_grounding`, …)
    have no raf equivalent: each is left out with a warning that says what to use."""
    tools = rw.at(path)
    if not isinstance(tools, list):
        return
    kept: list[tuple[Path_ | None, Any]] = []
    for index, tool in enumerate(tools):
        kind = str(tool.get("kind", "")).lower() if isinstance(tool, dict) else ""
        if kind in HOSTED_TOOLS:
            rw.warn(
                (*path, index, "kind"),
                f"a {kind!r} tool runs on the provider's servers and raf has none: it is "
                f"left out ({HOSTED_TOOLS[kind]})",
            )
            continue
        kept.append(((*path, index), tool))
    if len(kept) != len(tools):
        rw.replace_list(path, kept)


def _hoist(rw: Rewriter, path: Path_, keys: dict[str, str]) -> None:
    """Move keys the other dialects write at the tool's top level into its `config`."""
    owner = rw.mapping(path)
    if owner is None:
        return
    for key, target in keys.items():
        if key in owner:
            if isinstance(owner.get("config"), dict) and target in owner["config"]:
                rw.warn(
                    (*path, key),
                    f"both {key!r} and 'config.{target}' are set: 'config.{target}' wins, "
                    f"{key!r} is ignored",
                )
                del owner[key]
                continue
            rw.move((*path, key), (*path, "config", target))


def _mcp(rw: Rewriter, path: Path_) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    for key in ("tool_name", "toolName"):
        if key in owner:
            rw.rename(path, key, "tools")
    tools = owner.get("tools")
    if isinstance(tools, str):
        owner["tools"] = [tools]
    _spellings(rw, path, McpServerDecl)
    if "approvalMode" in owner:
        owner["approvalMode"] = _approval(owner["approvalMode"])


def _approval(value: Any) -> Any:
    """MAF's and the original's approval settings as raf's: always, never, or per tool."""
    if isinstance(value, bool):
        return "always" if value else "never"
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, dict) and "kind" in value:
        kind = str(value.get("kind", "")).lower()
        if kind in ("always", "never"):
            return kind
        per_tool: dict[str, str] = {}
        for name in value.get("alwaysRequireApprovalTools") or []:
            per_tool[str(name)] = "always"
        for name in value.get("neverRequireApprovalTools") or []:
            per_tool[str(name)] = "never"
        return per_tool
    return value


def _flatten_bundles(rw: Rewriter, path: Path_) -> None:
    """A `bundle` context groups other contexts: its members take its place in order."""
    items = rw.at(path)
    if not isinstance(items, list) or not any(_is_bundle(i) for i in items):
        return
    out: list[tuple[Path_ | None, Any]] = []
    for index, item in enumerate(items):
        if not _is_bundle(item):
            out.append(((*path, index), item))
            continue
        members, where = item.get("contexts"), (*path, index, "contexts")
        config = item.get("config")
        if members is None and isinstance(config, dict):
            members, where = config.get("contexts"), (*path, index, "config", "contexts")
        if not isinstance(members, list):
            rw.warn(
                (*path, index, "kind"),
                "a 'bundle' context without a 'contexts' list has nothing for raf to load "
                "and is ignored",
            )
            continue
        out.extend(((*where, i), member) for i, member in enumerate(members))
    rw.replace_list(path, out)


def _is_bundle(item: Any) -> bool:
    return isinstance(item, dict) and str(item.get("kind", "")).lower() == "bundle"


def _context(rw: Rewriter, path: Path_) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    kind = owner.get("kind")
    if isinstance(kind, str):
        kind = kind.lower()
        owner["kind"] = kind
    model = _CONTEXT_CONFIGS.get(str(kind))
    if model is None:
        return
    # a context written without a `config` block: its keys are taken as the config
    known = _aliases(model) | {s.key for s in spellings_at(model)} | {"enabled", "serverUrl"}
    for key in list(owner):
        if key not in ("kind", "name", "config") and (key in known or to_camel(key) in known):
            rw.move((*path, key), (*path, "config", key))
    config = (*path, "config")
    if kind == "mcp":
        _mcp(rw, config)
    elif kind == "compression":
        _compression(rw, config)
    else:
        _spellings(rw, config, model)
    if kind == "knowledge":
        sources = rw.at((*config, "sources"))
        if isinstance(sources, str):
            rw.mapping(config)["sources"] = [sources]  # type: ignore[index]
    if kind == "memory" and isinstance(rw.at((*config, "memoryModel")), dict):
        _model(rw, (*config, "memoryModel"), MemoryModelDecl)


def _compression(rw: Rewriter, path: Path_) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    kind = owner.get("kind")
    if isinstance(kind, str):
        owner["kind"] = re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower().replace("-", "_")
    for key in ("toolResultEvictionThreshold", "tool_result_eviction_threshold"):
        if key in owner:
            if owner.get("kind") == "observation_masking":
                rw.rename(path, key, "keepLast")
            else:
                rw.drop(
                    (*path, key),
                    "is ignored: it applies to kind observation_masking (the tool results "
                    "kept verbatim)",
                )
    _spellings(rw, path, CompressionDecl)
    counter = owner.get("tokenCounter")
    if isinstance(counter, dict):
        counter = counter.get("kind")
    if isinstance(counter, str):
        owner["tokenCounter"] = _COUNTERS.get(counter.lower(), counter)
    if isinstance(owner.get("model"), dict):
        _model(rw, (*path, "model"), ModelDecl)
    strategies = owner.get("strategies")
    if isinstance(strategies, list):
        for index in range(len(strategies)):
            _compression(rw, (*path, "strategies", index))
