"""Which extra each declaration needs checked without importing it."""

from __future__ import annotations

import importlib.util

from raf.clients.local.embedder import RUNTIME_MODULES
from raf.core.errors import MissingExtraError

TOOL_EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "web": ("web", ("httpx", "markdownify")),
    "mcp": ("mcp", ("mcp",)),
    "openapi": ("openapi", ("httpx", "yaml", "jsonschema")),
    "code": ("sandbox", ()),
}
"""Tool kind → (extra, modules it must provide)."""

CONTEXT_EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "mcp": ("mcp", ("mcp",)),
    "knowledge": ("rag", ("pypdf",)),
    "wiki": ("wiki", ("yaml", "jsonschema")),
    "skills": ("yaml", ("yaml",)),
    "memory": ("yaml", ("yaml",)),
}
"""Context kind → (extra, modules it must provide)."""

EMBEDDER_EXTRA: tuple[str, tuple[str, ...]] = ("rag-embeddings", RUNTIME_MODULES)
"""What knowledge's local embedder runs on (its search is BM25 alone without it)."""

_OPENAI = ("openai", ("openai",))
MODEL_EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "openai": _OPENAI,
    "openai-responses": _OPENAI,
    "openai-compatible": _OPENAI,
    "azure": _OPENAI,  # an API key needs only the OpenAI SDK; Entra ID is checked when used
    "gemini": _OPENAI,  # Gemini's OpenAI-compatible endpoint
    "ollama": _OPENAI,  # Ollama's OpenAI-compatible endpoint
    "ollama-native": ("ollama", ("httpx",)),
    "gemini-native": ("google", ("google.genai",)),
    "anthropic": ("anthropic", ("anthropic",)),
    "anthropic-compatible": ("anthropic", ("anthropic",)),
    "bedrock": ("bedrock", ("boto3",)),
    "local": ("local", ("xllamacpp",)),
}
"""Model provider → (extra, modules its client needs)."""

TEMPLATE_EXTRA: tuple[str, tuple[str, ...]] = ("templates", ("pystache",))
"""What a mustache instructions template needs."""

SCHEMA_EXTRA: tuple[str, tuple[str, ...]] = ("templates", ("jsonschema",))
"""What a document's inputSchema or outputSchema needs (checked with jsonschema)."""


def module_available(module: str) -> bool:
    """True when `module` can be imported (looked up, not imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_extra(
    feature: str, table_entry: tuple[str, tuple[str, ...]]
) -> MissingExtraError | None:
    """The error to raise when an extra's modules are absent, else None."""
    extra, modules = table_entry
    for module in modules:
        if not module_available(module):
            return MissingExtraError(feature, extra, module)
    return None


def require(feature: str, extra: str, exc: ImportError) -> MissingExtraError:
    """Turn an ImportError met while building `feature` into the error naming its extra."""
    return MissingExtraError(feature, extra, getattr(exc, "name", None))
