"""Tool declarations of other dialects: hosted tools, keys written at the tool's top level,
MCP approval settings."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from raf.decl.documents.dialects.keys import apply_spellings
from raf.decl.documents.dialects.rewriter import Rewriter
from raf.decl.documents.source import KeyPath
from raf.decl.documents.tool_decls import (
    CODE_BACKENDS,
    CONTAINER_BACKEND,
    TOOL_KINDS,
    CodeConfigDecl,
    FileConfigDecl,
    FunctionToolDecl,
    McpServerDecl,
    ShellConfigDecl,
    WebConfigDecl,
)

_TOOL_CONFIGS: dict[str, type[BaseModel]] = {
    "file": FileConfigDecl,
    "shell": ShellConfigDecl,
    "web": WebConfigDecl,
    "code": CodeConfigDecl,
}
ALWAYS_KEYS = ("alwaysRequireApprovalTools", "alwaysRequireApprovalToolNames")
NEVER_KEYS = ("neverRequireApprovalTools", "neverRequireApprovalToolNames")
_SPECIFIC = ("requirespecific", "require_specific", "specific", "specify")
"""MAF's names of the approval mode that lists the tools that always and never need it."""
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
    **{key: key for key in ALWAYS_KEYS + NEVER_KEYS},
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
    "file_search": "declare a knowledge context over the same files instead, or give the "
    "model apiType: Responses",
    "bing_grounding": "declare a web tool instead",
    "azure_ai_search": "declare a knowledge context instead",
    "image_generation": "call an image model from a function tool instead",
}
"""Hosted tool kinds of other dialects, and what to declare in raf instead."""


_ON_RESPONSES = ("web_search", "file_search", "code_interpreter")
"""MAF's hosted tool kinds that OpenAI's Responses API runs itself."""
_HOSTED_KEYS = {
    "vectorStoreIds": "vector_store_ids",
    "vector_store_ids": "vector_store_ids",
    "maximumResultCount": "max_num_results",
    "maxNumResults": "max_num_results",
    "max_num_results": "max_num_results",
    "ranker": "ranking_options",
    "rankingOptions": "ranking_options",
    "userLocation": "user_location",
    "user_location": "user_location",
    "searchContextSize": "search_context_size",
    "search_context_size": "search_context_size",
    "filters": "filters",
}
"""MAF's keys of a hosted tool, as the Responses API spells them."""


def normalize_tool(rw: Rewriter, path: KeyPath, *, responses: bool = False) -> None:
    """Rewrite the tool at `path` into raf's spelling; on a model that speaks OpenAI's
    Responses API (`responses`), MAF's hosted kinds become `kind: hosted`."""
    owner = rw.mapping(path)
    if owner is None:
        return
    if isinstance(owner.get("parameters"), list):
        # MAF's list form of a function's parameters: the properties themselves
        owner["parameters"] = {"properties": owner["parameters"]}
    kind = owner.get("kind")
    if isinstance(kind, str) and responses and kind.lower() in _ON_RESPONSES:
        _as_hosted(rw, path, kind.lower())
        return
    if isinstance(kind, str):
        kind = kind.lower()
        # MAF names every tool; its web search and code interpreter are one tool each,
        # whatever the document calls them, so their own name is read past
        if kind == "code_interpreter":
            owner["name"] = "code_interpreter"
            kind = "code"
        if kind == "code":
            _default_language(rw, path)
        elif kind == "web_search":
            if owner.get("name") not in ("web_search", "web_fetch"):
                owner["name"] = "web_search"
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
        normalize_mcp(rw, (*path, "config"))
    elif kind == "openapi":
        _hoist(rw, path, _OPENAPI_TOP)
        operations = rw.at((*path, "config", "operations"))
        if isinstance(operations, str):
            rw.mapping((*path, "config"))["operations"] = [operations]  # type: ignore[index]
    elif kind == "function":
        apply_spellings(rw, path, FunctionToolDecl)
    elif isinstance(kind, str) and kind in _TOOL_CONFIGS:
        config = (*path, "config")
        apply_spellings(rw, config, _TOOL_CONFIGS[kind])
        backend = rw.at((*config, "backend"))
        known = (*CODE_BACKENDS, CONTAINER_BACKEND)
        if kind == "code":
            for key in _DOCKER_KEYS:
                rw.drop(
                    (*config, key),
                    "is a setting of the original's docker, podman or wasm sandbox, which raf "
                    "does not have: it is ignored (raf's container backend is `backend: "
                    "container` with a `container` block)",
                )
        if kind == "code" and backend is not None and str(backend).lower() not in known:
            rw.warn(
                (*config, "backend"),
                f"code backend {backend!r} is not available in raf: code runs in raf's "
                "sandboxed subprocess instead",
            )


_DOCKER_KEYS = ("memory_limit", "python_image", "node_image", "cpus", "pids_limit", "export")
"""Settings of the original's docker, podman and wasm code sandboxes."""


_CODE_KINDS = ("code", "code_interpreter")


def sandbox_defaults(rw: Rewriter, base: KeyPath) -> None:
    """The agent's `sandbox:` block (the original framework's) gives every `kind: code`
    tool its settings; a tool's own `config` wins where both set one."""
    top = rw.mapping(base)
    assert top is not None
    sandbox = top.get("sandbox")
    if not isinstance(sandbox, dict):
        return  # not a mapping: the schema says so at its place
    tools = top.get("tools")
    code = [
        index
        for index, tool in enumerate(tools if isinstance(tools, list) else [])
        if isinstance(tool, dict)
        and str(tool.get("kind", "")).lower() in ("code", "code_interpreter")
    ]
    if not code:
        rw.drop(
            (*base, "sandbox"),
            "is ignored: it gives its settings to the agent's 'kind: code' tools, and there "
            "are none",
        )
        return
    for index in code:
        path = (*base, "tools", index)
        tool = rw.mapping(path)
        assert tool is not None
        config = tool.get("config")
        if config is None:
            config = tool["config"] = {}
            rw.relocate((*base, "sandbox"), (*path, "config"), exact=True)
        if not isinstance(config, dict):
            continue
        for key, value in sandbox.items():
            if key not in config:
                config[key] = value
                rw.relocate((*base, "sandbox", key), (*path, "config", key))
    del top["sandbox"]


def _default_language(rw: Rewriter, path: KeyPath) -> None:
    """`default_language` (the original framework's): raf's code interpreter runs Python,
    so `python` is read and dropped, and any other language is a problem at its place."""
    for where in (path, (*path, "config")):
        owner = rw.mapping(where)
        if owner is None:
            continue
        for key in ("default_language", "defaultLanguage", "language"):
            if key not in owner:
                continue
            language = owner[key]
            if str(language).lower() in ("python", "python3", "py"):
                del owner[key]
            else:
                rw.doc.problems.append(
                    rw.doc.problem(
                        (*where, key),
                        f"raf's code_interpreter runs Python only; {language!r} cannot be "
                        "its language",
                    )
                )
                del owner[key]


def _as_hosted(rw: Rewriter, path: KeyPath, kind: str) -> None:
    """MAF's `web_search`, `file_search` or `code_interpreter` as raf's `kind: hosted`:
    its settings move into `config` under the API's names; keys not known stay where they
    are, so the schema names them at their place."""
    owner = rw.mapping(path)
    assert owner is not None
    owner["kind"] = "hosted"
    owner["type"] = kind
    for key, target in _HOSTED_KEYS.items():
        if key in owner:
            rw.move((*path, key), (*path, "config", target))
    for key in ("fileIds", "file_ids"):
        if key in owner and kind == "code_interpreter":
            files = owner.pop(key)
            owner.setdefault("config", {})["container"] = {"type": "auto", "file_ids": files}
    for key in ("options", "connection"):
        if key in owner:
            rw.drop((*path, key), "has no meaning for a hosted tool and is ignored")
    config = owner.get("config")
    if kind == "code_interpreter" and not (isinstance(config, dict) and "container" in config):
        owner.setdefault("config", {})["container"] = {"type": "auto"}


def drop_hosted_tools(rw: Rewriter, path: KeyPath, *, responses: bool = False) -> None:
    """Tools a provider runs on its own servers (MAF's `file_search`, `bing_grounding`, …)
    have no raf equivalent off OpenAI's Responses API: each is left out with a warning that
    says what to use (on the Responses API, those it runs are kept)."""
    tools = rw.at(path)
    if not isinstance(tools, list):
        return
    kept: list[tuple[KeyPath | None, Any]] = []
    for index, tool in enumerate(tools):
        kind = str(tool.get("kind", "")).lower() if isinstance(tool, dict) else ""
        if kind in HOSTED_TOOLS and not (responses and kind in _ON_RESPONSES):
            rw.warn(
                (*path, index, "kind"),
                f"a {kind!r} tool runs on the provider's servers and raf has none: it is "
                f"left out ({HOSTED_TOOLS[kind]})",
            )
            continue
        kept.append(((*path, index), tool))
    if len(kept) != len(tools):
        rw.replace_list(path, kept)


def _hoist(rw: Rewriter, path: KeyPath, keys: dict[str, str]) -> None:
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


def normalize_mcp(rw: Rewriter, path: KeyPath) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    for key in ("tool_name", "toolName"):
        if key in owner:
            rw.rename(path, key, "tools")
    tools = owner.get("tools")
    if isinstance(tools, str):
        owner["tools"] = [tools]
    apply_spellings(rw, path, McpServerDecl)
    mode = owner.get("approvalMode")
    if isinstance(mode, str) and mode.lower() in _SPECIFIC:
        # `approvalMode: requireSpecific` with the lists beside it
        owner["approvalMode"] = {"kind": mode, **{k: owner.pop(k) for k in _LISTS if k in owner}}
    if "approvalMode" in owner:
        owner["approvalMode"] = _approval(owner["approvalMode"])


_LISTS = ALWAYS_KEYS + NEVER_KEYS


def _approval(value: Any) -> Any:
    """MAF's and the original's approval settings as raf's: always, never, or per tool.
    MAF's `requireSpecific` (any case) lists the tools that always and never need
    approval; a tool it lists in neither needs it (`"*": "always"`), as in MAF."""
    if isinstance(value, bool):
        return "always" if value else "never"
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, dict) and "kind" in value:
        kind = str(value.get("kind", "")).lower()
        if kind in ("always", "never"):
            return kind
        if kind not in _SPECIFIC or not set(value) <= {"kind", *_LISTS}:
            return value  # not a form raf knows: refused by the schema, at its place
        per_tool: dict[str, str] = {"*": "always"}
        for key in _LISTS:
            names = value.get(key) or []
            for name in [names] if isinstance(names, str) else names:
                per_tool[str(name)] = "always" if key in ALWAYS_KEYS else "never"
        return per_tool
    return value
