"""The other dialects' spellings of raf's keys, per place in a document: the original
framework's, Microsoft Agent Framework's (MAF) and the original's older JSON format.
`normalize` reads them; `raf schema` lists them; a typo is matched against them too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from raf.decl.documents.context_decls import (
    CompressionDecl,
    KnowledgeConfigDecl,
    MemoryModelDecl,
    WikiConfigDecl,
)
from raf.decl.documents.model_decls import ConnectionDecl, ModelDecl, ModelOptionsDecl
from raf.decl.documents.tool_decls import (
    CodeConfigDecl,
    FunctionToolDecl,
    McpServerDecl,
    McpToolDecl,
    OpenApiToolDecl,
)

DIALECTS = {
    "original": "the original framework's",
    "maf": "Microsoft Agent Framework's",
    "legacy": "the original framework's older JSON",
    "both": "the original framework's and Microsoft Agent Framework's",
}


@dataclass(frozen=True, slots=True)
class Spelling:
    """Key `key` at a place of model `where` is read as `means` (None: it has no meaning
    for raf and is dropped with a warning that says `note`)."""

    where: type[BaseModel]
    key: str
    means: str | None
    dialect: str
    note: str = ""


_IGNORED = "has no meaning for raf and is ignored"

SPELLINGS: tuple[Spelling, ...] = (
    Spelling(ModelDecl, "model", "id", "legacy"),
    Spelling(ModelDecl, "publisher", None, "maf", f"{_IGNORED} (raf finds the model by id)"),
    Spelling(ModelDecl, "kind", None, "maf", f"{_IGNORED} (every raf model is a chat model)"),
    Spelling(ConnectionDecl, "key", "apiKey", "maf"),
    Spelling(ConnectionDecl, "target", None, "maf", _IGNORED),
    Spelling(ConnectionDecl, "authenticationMode", None, "maf", _IGNORED),
    Spelling(ConnectionDecl, "usageDescription", None, "maf", _IGNORED),
    Spelling(ConnectionDecl, "authentication_mode", None, "original", _IGNORED),
    Spelling(ConnectionDecl, "usage_description", None, "original", _IGNORED),
    Spelling(ModelOptionsDecl, "maxOutputTokens", "maxTokens", "maf"),
    Spelling(ModelOptionsDecl, "max_output_tokens", "maxTokens", "original"),
    Spelling(ModelOptionsDecl, "stopSequences", "stop", "maf"),
    Spelling(ModelOptionsDecl, "stop_sequences", "stop", "original"),
    Spelling(ModelOptionsDecl, "chatToolMode", "toolChoice", "maf"),
    Spelling(ModelOptionsDecl, "additionalProperties", "additional", "maf"),
    Spelling(ModelOptionsDecl, "frequency_penalty", "frequencyPenalty", "original"),
    Spelling(ModelOptionsDecl, "presence_penalty", "presencePenalty", "original"),
    Spelling(
        ModelOptionsDecl,
        "kind",
        None,
        "original",
        f"{_IGNORED} (the original framework requires it; raf does not)",
    ),
    Spelling(FunctionToolDecl, "requireApproval", "approvalRequired", "maf"),
    Spelling(FunctionToolDecl, "bindings", None, "maf", f"{_IGNORED} (bind in code instead)"),
    Spelling(McpServerDecl, "serverUrl", "url", "original"),
    Spelling(McpServerDecl, "server_url", "url", "original"),
    Spelling(McpServerDecl, "allowedTools", "tools", "maf"),
    Spelling(McpServerDecl, "approval_mode", "approvalMode", "original"),
    Spelling(McpServerDecl, "requireApproval", "approvalMode", "maf"),
    Spelling(CompressionDecl, "type", "kind", "original"),
    Spelling(CompressionDecl, "token_counter", "tokenCounter", "original"),
    Spelling(McpToolDecl, "url", "config.url", "maf"),
    Spelling(McpToolDecl, "server_url", "config.url", "original"),
    Spelling(McpToolDecl, "allowedTools", "config.tools", "maf"),
    Spelling(McpToolDecl, "tool_name", "config.tools", "original"),
    Spelling(McpToolDecl, "requireApproval", "config.approvalMode", "maf"),
    Spelling(McpToolDecl, "approval_mode", "config.approvalMode", "original"),
    Spelling(OpenApiToolDecl, "specUrl", "config.specUrl", "original"),
    Spelling(OpenApiToolDecl, "operationId", "config.operations", "original"),
    Spelling(CodeConfigDecl, "timeoutSecs", "timeout", "original"),
    Spelling(CodeConfigDecl, "timeout_secs", "timeout", "original"),
    Spelling(KnowledgeConfigDecl, "source", "sources", "original"),
    Spelling(WikiConfigDecl, "source", "directory", "original"),
    Spelling(CompressionDecl, "windowSize", "keepLast", "original"),
    Spelling(CompressionDecl, "window_size", "keepLast", "original"),
    Spelling(
        MemoryModelDecl,
        "tokenizerPath",
        None,
        "original",
        f"{_IGNORED} (the local model reads its tokenizer from the GGUF file)",
    ),
    Spelling(
        MemoryModelDecl,
        "useGpu",
        None,
        "original",
        f"{_IGNORED} (llama.cpp offloads to the GPU as it was built to)",
    ),
)
"""Every other spelling raf reads, with what it means."""

TOP_LEVEL: tuple[tuple[str, str | None, str, str], ...] = (
    ("displayName", "displayName", "both", ""),
    ("outputSchema", "outputSchema", "both", ""),
    ("additionalInstructions", "additionalInstructions", "maf", ""),
    ("inputSchema", "inputSchema", "both", ""),
    ("tokenCounter", "compression.tokenCounter", "original", ""),
    ("token_counter", "compression.tokenCounter", "original", ""),
    ("id", "name", "legacy", ""),
)
"""Top-level keys of the other dialects: (key, raf key, dialect, note)."""


def spellings_at(model: type[BaseModel]) -> list[Spelling]:
    """The other spellings read at a place of `model`."""
    return [s for s in SPELLINGS if s.where is model]


def other_keys(model: type[BaseModel]) -> list[str]:
    """The keys of other dialects accepted at a place of `model` (for did-you-mean)."""
    return [s.key for s in spellings_at(model)]


def describe(schema: dict[str, Any]) -> None:
    """Add the other dialects' spellings to a JSON Schema of agent documents, each saying
    what raf reads it as."""
    defs = schema.get("$defs", {})
    for spelling in SPELLINGS:
        place = defs.get(spelling.where.__name__)
        if place is not None:
            _describe(place, spelling.key, spelling.means, spelling.dialect, spelling.note)
    for key, means, dialect, note in TOP_LEVEL:
        _describe(schema, key, means, dialect, note)


def _describe(place: dict[str, Any], key: str, means: str | None, dialect: str, note: str) -> None:
    properties = place.setdefault("properties", {})
    if key in properties:
        return
    whose = DIALECTS[dialect]
    if means is None:
        properties[key] = {"description": f"{whose} key; {note}, with a warning"}
        return
    entry: dict[str, Any] = {}
    if "." not in means and means in properties:
        entry = {k: v for k, v in properties[means].items() if k != "description"}
    entry["description"] = f"{whose} spelling of {means!r}; read as {means!r}"
    properties[key] = entry
