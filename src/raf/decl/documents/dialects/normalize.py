"""Reads a document written in the original framework's or Microsoft Agent Framework's
dialect as raf's own: other spellings are renamed, keys the other dialect keeps elsewhere are
moved, and keys with no meaning for raf are dropped with a warning that names them."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from raf.decl.documents.context_decls import (
    CompressionDecl,
    KnowledgeConfigDecl,
    MemoryConfigDecl,
    MemoryModelDecl,
    SkillsConfigDecl,
    WikiConfigDecl,
    WorkspaceConfigDecl,
)
from raf.decl.documents.dialects.keys import aliases, apply_spellings, snake_keys
from raf.decl.documents.dialects.rewriter import Rewriter
from raf.decl.documents.dialects.spellings import spellings_at
from raf.decl.documents.dialects.tools import (
    drop_hosted_tools,
    normalize_mcp,
    normalize_tool,
    sandbox_defaults,
)
from raf.decl.documents.model_decls import ConnectionDecl, ModelDecl, ModelOptionsDecl
from raf.decl.documents.source import KeyPath
from raf.decl.documents.suggest import suggest
from raf.decl.documents.tool_decls import (
    McpServerDecl,
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
_CONTEXT_CONFIGS: dict[str, type[BaseModel]] = {
    "memory": MemoryConfigDecl,
    "skills": SkillsConfigDecl,
    "knowledge": KnowledgeConfigDecl,
    "wiki": WikiConfigDecl,
    "workspace": WorkspaceConfigDecl,
    "mcp": McpServerDecl,
    "compression": CompressionDecl,
}


def normalize_agent(rw: Rewriter, base: KeyPath = ()) -> None:
    """Rewrite the agent at `base` (and its inline sub-agents) into raf's spelling."""
    from raf.decl.documents.schema import AgentDecl

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
    snake_keys(rw, base, AgentDecl)
    _token_counter(rw, base)
    _template(rw, (*base, "template"))
    if isinstance(top.get("model"), dict):
        _model(rw, (*base, "model"), ModelDecl)
    if "sandbox" in top:
        sandbox_defaults(rw, base)
    if isinstance(top.get("tools"), list):
        responses = _speaks_responses(top.get("model"))
        drop_hosted_tools(rw, (*base, "tools"), responses=responses)
        for index in range(len(top["tools"])):
            normalize_tool(rw, (*base, "tools", index), responses=responses)
    if isinstance(top.get("contexts"), list):
        _flatten_bundles(rw, (*base, "contexts"))
        for index in range(len(top["contexts"])):
            _context(rw, (*base, "contexts", index))
        _drop_sourceless(rw, (*base, "contexts"))
    if isinstance(top.get("compression"), dict):
        _compression(rw, (*base, "compression"))
    subs = top.get("subAgents")
    if isinstance(subs, list):
        for index, sub in enumerate(subs):
            if isinstance(sub, dict) and "file" not in sub:
                normalize_agent(rw, (*base, "subAgents", index))


def _speaks_responses(model: Any) -> bool:
    """Whether the (normalized) model block names OpenAI's Responses API."""
    if isinstance(model, str):
        return model.lower().startswith("openai-responses:")
    if not isinstance(model, dict):
        return False
    model_id = model.get("id")
    return (
        (model.get("apiType") == "responses" and model.get("provider") != "azure")
        or model.get("provider") == "openai-responses"
        or (isinstance(model_id, str) and model_id.lower().startswith("openai-responses:"))
    )


def _model(rw: Rewriter, path: KeyPath, model: type[BaseModel]) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    for key in ("api_key", "apiKey", "key"):
        if key in owner:
            rw.move((*path, key), (*path, "connection", "apiKey"))
    for key in ("endpoint", "baseUrl", "base_url"):
        if key in owner and model is ModelDecl:
            rw.move((*path, key), (*path, "connection", "endpoint"))
    options = owner.get("options")
    if isinstance(options, dict) and "apiType" in options:
        moved = options.pop("apiType")  # MAF also writes it among the options
        owner.setdefault("apiType", moved)
    api_type = owner.get("apiType")
    if api_type is not None and model is ModelDecl:
        spelled = str(api_type).lower()
        if spelled in ("chat", "chatcompletions", "chat_completions"):
            owner["apiType"] = "chat"
        elif spelled == "responses":
            owner["apiType"] = "responses"
        else:
            rw.drop(
                (*path, "apiType"),
                f"({api_type!r}) has no meaning for raf and is ignored: raf speaks the chat "
                "completions API, or OpenAI's Responses API with apiType: Responses",
            )
    elif api_type is not None:
        rw.drop((*path, "apiType"), "has no meaning for this model and is ignored")
    apply_spellings(rw, path, model)
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


def _connection(rw: Rewriter, path: KeyPath) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    kind = owner.get("kind")
    if isinstance(kind, str) and kind.lower() in _CONNECTION_KINDS:
        owner["kind"] = _CONNECTION_KINDS[kind.lower()]
    # the original's connection keys are snake_case (`api_key`, `authentication_mode`)
    apply_spellings(rw, path, ConnectionDecl, native_snake=True)


def _options(rw: Rewriter, path: KeyPath) -> None:
    # the original's model options are snake_case (`top_p`, `stop_sequences`, ...)
    apply_spellings(rw, path, ModelOptionsDecl, native_snake=True)
    owner = rw.mapping(path)
    if owner is not None and isinstance(owner.get("toolChoice"), str):
        owner["toolChoice"] = owner["toolChoice"].lower()


def _template(rw: Rewriter, path: KeyPath) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    fmt = owner.get("format")
    if isinstance(fmt, dict) and isinstance(fmt.get("kind"), str):
        owner["format"] = fmt["kind"].lower()
    elif isinstance(fmt, str):
        owner["format"] = fmt.lower()
    fmt = owner.get("format")
    if isinstance(fmt, str) and fmt not in ("mustache", "none"):
        # the original reads any format (jinja2 or a custom one) and renders none itself
        rw.warn(
            (*path, "format"),
            f"template format {fmt!r}: raf renders mustache templates only, so the "
            "instructions are given to the model as written, nothing filled in; write them "
            "as a mustache template ({{name}}) with 'format: mustache' to fill in the inputs",
        )
        owner["format"] = "none"
    if "parser" in owner:
        rw.drop(
            (*path, "parser"),
            "has no meaning for raf and is ignored (instructions are plain text)",
        )


def _token_counter(rw: Rewriter, base: KeyPath) -> None:
    """The original's top-level `tokenCounter` (`token_counter` in its snake_case JSON)
    is its compression's token counter."""
    rw.rename(base, "token_counter", "tokenCounter")
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


def _flatten_bundles(rw: Rewriter, path: KeyPath) -> None:
    """A `bundle` context groups other contexts: its members take its place in order."""
    items = rw.at(path)
    if not isinstance(items, list) or not any(_is_bundle(i) for i in items):
        return
    out: list[tuple[KeyPath | None, Any]] = []
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


def _context(rw: Rewriter, path: KeyPath) -> None:
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
    known = aliases(model) | {s.key for s in spellings_at(model)} | {"enabled", "serverUrl"}
    for key in list(owner):
        if key not in ("kind", "name", "config") and (key in known or to_camel(key) in known):
            rw.move((*path, key), (*path, "config", key))
    config = (*path, "config")
    if kind == "mcp":
        normalize_mcp(rw, config)
    elif kind == "compression":
        _compression(rw, config)
    else:
        apply_spellings(rw, config, model)
    if kind == "knowledge":
        sources = rw.at((*config, "sources"))
        if isinstance(sources, str):
            rw.mapping(config)["sources"] = [sources]  # type: ignore[index]
    if kind == "memory" and isinstance(rw.at((*config, "memoryModel")), dict):
        _model(rw, (*config, "memoryModel"), MemoryModelDecl)
    if kind == "memory" and owner.get("name") == ORIGINAL_MEMORY:
        # the original's memory under its older name: raf's super-brain, in its folder
        owner["name"] = "super-brain"
        settings = owner.setdefault("config", {})
        if isinstance(settings, dict):
            settings.setdefault("directory", ORIGINAL_MEMORY_DIRECTORY)


ORIGINAL_MEMORY = "skill-memory"
"""The original framework's name of its memory context (raf's super-brain)."""
ORIGINAL_MEMORY_DIRECTORY = "logs/memory"
"""Where the original keeps a `skill-memory` context's files when its document does not say."""
_SOURCES = {"knowledge": "sources", "wiki": "directory"}
"""The key without which a knowledge or wiki context has nothing to load."""


def _drop_sourceless(rw: Rewriter, path: KeyPath) -> None:
    """A context the original framework reads and skips when building (a knowledge or wiki
    context without a source, a memory under a name it has no memory for): raf drops it
    with a warning saying what to write."""
    items = rw.at(path)
    if not isinstance(items, list):
        return
    kept: list[tuple[KeyPath | None, Any]] = []
    for index, item in enumerate(items):
        why = _skipped(item)
        if why is None:
            kept.append(((*path, index), item))
            continue
        where = (*path, index, "name" if item.get("kind") == "memory" else "kind")
        rw.warn(where, why)
    if len(kept) < len(items):
        rw.replace_list(path, kept)


MEMORY_NAMES = ("super-brain", ORIGINAL_MEMORY)
"""The names under which a memory context is built (raf's and the original's)."""


def _skipped(item: Any) -> str | None:
    """Why the original framework builds nothing of this context, or None."""
    if not isinstance(item, dict):
        return None
    kind = item.get("kind")
    name = item.get("name")
    if kind == "memory" and isinstance(name, str) and name not in MEMORY_NAMES:
        hint = suggest(name, MEMORY_NAMES)
        did = f" (did you mean {hint!r}?)" if hint else ""
        return (
            f"a memory context named {name!r} is ignored{did}: the original framework "
            f"builds a memory only under the name {ORIGINAL_MEMORY!r} and skips any other, "
            "so raf does too; name it 'super-brain' (or 'skill-memory') to keep a memory"
        )
    needed = _SOURCES.get(kind) if isinstance(kind, str) else None
    settings = item.get("config", {})
    if needed is None or not isinstance(settings, dict) or settings.get(needed):
        return None
    return (
        f"a {kind!r} context without config.source has nothing for raf to load and is "
        f"ignored, as the original framework skips it: give config.{needed} (or "
        "config.source) to load one"
    )


def _compression(rw: Rewriter, path: KeyPath) -> None:
    owner = rw.mapping(path)
    if owner is None:
        return
    if "type" in owner and "kind" not in owner:
        rw.rename(path, "type", "kind")  # the original framework's spelling
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
    apply_spellings(rw, path, CompressionDecl)
    counter = owner.get("tokenCounter")
    if isinstance(counter, dict) and len(counter) == 1:
        # the original's tagged form: {kind: estimate} (its older JSON: {type: estimate})
        counter = counter.get("kind", counter.get("type"))
    if isinstance(counter, str):
        owner["tokenCounter"] = _COUNTERS.get(counter.lower(), counter)
    if isinstance(owner.get("model"), dict):
        _model(rw, (*path, "model"), ModelDecl)
    strategies = owner.get("strategies")
    if isinstance(strategies, list):
        for index in range(len(strategies)):
            _compression(rw, (*path, "strategies", index))
