"""Chat clients and their decorators (the tool loop that wraps them is `raf.agent.run`).

What every provider shares is here: `provider` (key, base URL, connection, errors),
`wire` (request and answer shapes), `base` (the one request path and stream skeleton),
`errors`, `retry`, `media`, `hosted_tools`, `strict_schema`, and `models` (model strings
such as "openai:gpt-4o-mini"). Each provider has a package of its own: `openai` (chat
completions, the Responses API, Azure OpenAI), `anthropic`, `gemini`, `ollama`,
`bedrock` and `local` (the embedded llama.cpp model). The clients are offered here by
name and load on first use, with their SDKs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from raf.clients.anthropic.client import AnthropicChatClient
    from raf.clients.bedrock.client import BedrockClient
    from raf.clients.gemini.client import GeminiChatClient
    from raf.clients.gemini.native import GoogleGenAIClient
    from raf.clients.local.client import LocalChatClient
    from raf.clients.ollama.client import OllamaClient
    from raf.clients.openai.azure import AzureOpenAIClient
    from raf.clients.openai.client import OpenAIChatClient
    from raf.clients.openai.responses import OpenAIResponsesClient
    from raf.clients.retry import RetryingChatClient

_CLIENTS = {
    "AnthropicChatClient": "raf.clients.anthropic.client",
    "AzureOpenAIClient": "raf.clients.openai.azure",
    "BedrockClient": "raf.clients.bedrock.client",
    "GeminiChatClient": "raf.clients.gemini.client",
    "GoogleGenAIClient": "raf.clients.gemini.native",
    "LocalChatClient": "raf.clients.local.client",
    "OllamaClient": "raf.clients.ollama.client",
    "OpenAIChatClient": "raf.clients.openai.client",
    "OpenAIResponsesClient": "raf.clients.openai.responses",
    "RetryingChatClient": "raf.clients.retry",
}

__all__ = [
    "AnthropicChatClient",
    "AzureOpenAIClient",
    "BedrockClient",
    "GeminiChatClient",
    "GoogleGenAIClient",
    "LocalChatClient",
    "OllamaClient",
    "OpenAIChatClient",
    "OpenAIResponsesClient",
    "RetryingChatClient",
]


def __getattr__(name: str) -> Any:
    if name in _CLIENTS:
        return getattr(importlib.import_module(_CLIENTS[name]), name)
    raise AttributeError(f"module 'raf.clients' has no attribute {name!r}")
