"""Model strings (`openai:gpt-4o-mini`, `local`, ...) to chat clients, and what each model holds.

Forms:

- `openai:<model>`, `anthropic:<model>`: the providers' own APIs (key from
  `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`).
- `openai-responses:<model>`: OpenAI's Responses API (reasoning kept across turns,
  hosted tools); same key and base URL as `openai:`.
- `ollama:<model>`: Ollama's OpenAI-compatible API at `http://127.0.0.1:11434/v1`
  (`OLLAMA_BASE_URL`, or Ollama's own `OLLAMA_HOST`, overrides); the model may contain ':'
  (`ollama:qwen3:8b`). No key is sent unless `OLLAMA_API_KEY` is set.
- `ollama-native:<model>`: Ollama's native API (`/api/chat`) at the same host, for its
  own options (`keep_alive`, `num_ctx`, `format`, `think`).
- `gemini-native:<model>`: Gemini's own API through the `google-genai` SDK (thinking
  budgets, safety settings; key from `GEMINI_API_KEY`).
- `azure:<deployment>`: Azure OpenAI (`AZURE_OPENAI_ENDPOINT`, and `AZURE_OPENAI_API_KEY`
  unless a `token_provider` or `credential` is given for Entra ID).
- `bedrock:<model id>`: Amazon Bedrock's Converse API through boto3 (AWS credentials,
  region and endpoint as boto3 finds them); the model id may contain ':'.
- `gemini:<model>`: Google Gemini through its OpenAI-compatible API (key from
  `GEMINI_API_KEY`; `GEMINI_BASE_URL` overrides the endpoint).
- `openai-compatible:<base_url>:<model>`: any chat-completions server. The base URL runs
  up to the first ':' after its host, port and path (a path has no ':'), and the model
  is everything after it, so `openai-compatible:http://127.0.0.1:8000/v1:qwen3:8b` is
  base URL `http://127.0.0.1:8000/v1` and model `qwen3:8b`. The key, when the server
  wants one, comes from `OPENAI_API_KEY`.
- `local`: the embedded default model (downloaded once by `raf models pull`);
  `local:<path/to/model.gguf>`: any GGUF file.
- `anthropic-compatible:<base_url>:<model>`: any server of Anthropic's Messages API,
  its base URL read as in `openai-compatible:` (the key, when it wants one, comes from
  `ANTHROPIC_API_KEY`).

With no string, `RAF_MODEL` decides, and without it `local`.
"""

from __future__ import annotations

import difflib
import inspect
import os
import re
from dataclasses import dataclass, replace
from typing import Any

from raf.clients.ollama.url import OLLAMA_BASE_URL as OLLAMA_BASE_URL
from raf.clients.ollama.url import ollama_base_url, ollama_native_url
from raf.core.chat_client import ChatClient
from raf.core.errors import ConfigurationError

ENV_VAR = "RAF_MODEL"
DEFAULT_SPEC = "local"
PROVIDERS = (
    "openai",
    "openai-responses",
    "anthropic",
    "gemini",
    "gemini-native",
    "azure",
    "bedrock",
    "ollama",
    "ollama-native",
    "openai-compatible",
    "local",
)

_EXAMPLES = {
    "openai": "openai:gpt-4o-mini",
    "openai-responses": "openai-responses:gpt-5",
    "anthropic": "anthropic:claude-sonnet-4-5",
    "gemini": "gemini:gemini-2.5-flash",
    "azure": "azure:my-gpt-4o-deployment",
    "gemini-native": "gemini-native:gemini-2.5-flash",
    "bedrock": "bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0",
    "ollama": "ollama:qwen3:8b",
    "ollama-native": "ollama-native:qwen3:8b",
    "openai-compatible": "openai-compatible:http://127.0.0.1:8000/v1:my-model",
    "local": "local:/path/model.gguf",
}
ANTHROPIC_COMPATIBLE = "anthropic-compatible"
_COMPATIBLE = re.compile(r"^(https?://[^/:]+(?::\d+)?(?:/[^:]*)?):(.+)$")


@dataclass(kw_only=True, slots=True, frozen=True)
class ModelSpec:
    """A parsed model string."""

    provider: str
    model: str
    base_url: str | None = None
    path: str | None = None
    """For `local:<path>`: the GGUF file."""

    def __str__(self) -> str:
        if self.provider in ("openai-compatible", ANTHROPIC_COMPATIBLE):
            return f"{self.provider}:{self.base_url}:{self.model}"
        if self.provider == "local":
            return f"local:{self.path}" if self.path else "local"
        return f"{self.provider}:{self.model}"


@dataclass(kw_only=True, slots=True, frozen=True)
class ModelInfo:
    """What a model holds: its context window and the most it writes in one answer."""

    context_window: int
    max_output_tokens: int
    known: bool = True
    """False when these are conservative defaults for a model raf has no entry for."""


UNKNOWN_MODEL = ModelInfo(context_window=8192, max_output_tokens=2048, known=False)

_TABLE: dict[str, ModelInfo] = {
    # OpenAI
    "gpt-4o": ModelInfo(context_window=128_000, max_output_tokens=16_384),
    "gpt-4o-mini": ModelInfo(context_window=128_000, max_output_tokens=16_384),
    "gpt-4.1": ModelInfo(context_window=1_047_576, max_output_tokens=32_768),
    "gpt-4.1-mini": ModelInfo(context_window=1_047_576, max_output_tokens=32_768),
    "gpt-4.1-nano": ModelInfo(context_window=1_047_576, max_output_tokens=32_768),
    "gpt-5": ModelInfo(context_window=400_000, max_output_tokens=128_000),
    "o3": ModelInfo(context_window=200_000, max_output_tokens=100_000),
    "o4-mini": ModelInfo(context_window=200_000, max_output_tokens=100_000),
    "o1": ModelInfo(context_window=200_000, max_output_tokens=100_000),
    "gpt-4-turbo": ModelInfo(context_window=128_000, max_output_tokens=4_096),
    "gpt-4": ModelInfo(context_window=8_192, max_output_tokens=8_192),
    "gpt-3.5-turbo": ModelInfo(context_window=16_385, max_output_tokens=4_096),
    # Anthropic
    "claude-opus-4": ModelInfo(context_window=200_000, max_output_tokens=32_000),
    "claude-sonnet-4": ModelInfo(context_window=200_000, max_output_tokens=64_000),
    "claude-haiku-4-5": ModelInfo(context_window=200_000, max_output_tokens=64_000),
    "claude-3-7-sonnet": ModelInfo(context_window=200_000, max_output_tokens=64_000),
    "claude-3-5-haiku": ModelInfo(context_window=200_000, max_output_tokens=8_192),
    "claude-3-5-sonnet": ModelInfo(context_window=200_000, max_output_tokens=8_192),
    "claude-3": ModelInfo(context_window=200_000, max_output_tokens=4_096),
    "claude-opus-4-5": ModelInfo(context_window=200_000, max_output_tokens=64_000),
    # Open models as Ollama and others name them
    "qwen3": ModelInfo(context_window=40_960, max_output_tokens=8_192),
    "llama3.1": ModelInfo(context_window=131_072, max_output_tokens=8_192),
    "llama3.2": ModelInfo(context_window=131_072, max_output_tokens=8_192),
    "deepseek-chat": ModelInfo(context_window=128_000, max_output_tokens=8_192),
    "deepseek-reasoner": ModelInfo(context_window=128_000, max_output_tokens=65_536),
    "qwen2.5": ModelInfo(context_window=32_768, max_output_tokens=8_192),
    "llama3": ModelInfo(context_window=8_192, max_output_tokens=4_096),
    "mistral": ModelInfo(context_window=32_768, max_output_tokens=8_192),
    "gemma3": ModelInfo(context_window=131_072, max_output_tokens=8_192),
    "gemini-2.5": ModelInfo(context_window=1_048_576, max_output_tokens=65_536),
    "gemini-2.0-flash": ModelInfo(context_window=1_048_576, max_output_tokens=8_192),
    "gemini-1.5-pro": ModelInfo(context_window=2_097_152, max_output_tokens=8_192),
    "gemini-1.5-flash": ModelInfo(context_window=1_048_576, max_output_tokens=8_192),
    # The embedded default: SmolLM2 was trained on 8k; raf loads it with 4k.
    "smollm2-135m-instruct": ModelInfo(context_window=4096, max_output_tokens=1024),
}
_OVERRIDES: dict[str, ModelInfo] = {}


def register_model_info(model: str, info: ModelInfo) -> None:
    """Set (or override) what raf knows about a model name or name prefix."""
    _OVERRIDES[model] = info


def _lookup(name: str) -> ModelInfo | None:
    for table in (_OVERRIDES, _TABLE):
        if name in table:
            return table[name]
    best: tuple[int, ModelInfo] | None = None
    for table in (_OVERRIDES, _TABLE):
        for key, info in table.items():
            if name.startswith(key) and (best is None or len(key) > best[0]):
                best = (len(key), info)
        if best is not None:
            return best[1]
    return None


def model_info(
    spec: str | ModelSpec | None = None,
    *,
    context_window: int | None = None,
    max_output_tokens: int | None = None,
) -> ModelInfo:
    """What the model of `spec` holds; unknown models get conservative defaults.

    `context_window=` and `max_output_tokens=` replace the table's values.
    """
    parsed = spec if isinstance(spec, ModelSpec) else parse_model_spec(spec)
    if parsed.provider == "local":
        name = parsed.path.rsplit("/", 1)[-1].lower() if parsed.path else "smollm2-135m-instruct"
        name = name.removesuffix(".gguf")
    else:
        name = parsed.model.rsplit("/", 1)[-1].lower()
    info = _OVERRIDES.get(str(parsed)) or _lookup(name)
    if info is None and ":" in name:  # ollama tags: qwen3:8b -> qwen3
        info = _lookup(name.split(":", 1)[0])
    info = info or UNKNOWN_MODEL
    if context_window is not None:
        info = replace(info, context_window=context_window, known=True)
    if max_output_tokens is not None:
        info = replace(info, max_output_tokens=max_output_tokens, known=True)
    return info


_FAMILIES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("claude",), "anthropic"),
    (("gpt", "chatgpt", "o1", "o3", "o4", "text-embedding"), "openai"),
    (("gemini",), "gemini"),
)
"""Model-name prefixes that only one provider serves, for suggestions."""


def _suggest_for_bare_name(name: str) -> str:
    """A suggestion for a model name written without its provider (`claude`, `gpt-4o`):
    the provider that serves that family, or Ollama for open-weight names."""
    lowered = name.lower()
    for prefixes, provider in _FAMILIES:
        for prefix in prefixes:
            if lowered == prefix:
                return f"did you mean {_EXAMPLES[provider]}? write {provider}:<model>"
            if lowered.startswith((prefix + "-", prefix + ".")) or (
                len(prefix) == 2 and lowered.startswith(prefix)
            ):
                return f"did you mean {provider}:{name}?"
    return f"for example ollama:{name} for a model Ollama serves, or openai:{name}"


def parse_model_spec(spec: str | None = None) -> ModelSpec:
    """Parse a model string (see the module doc); `None` reads `RAF_MODEL`, then `local`."""
    text = (spec if spec is not None else os.environ.get(ENV_VAR, "")).strip() or DEFAULT_SPEC
    provider, sep, rest = text.partition(":")
    provider = provider.lower()
    if provider == ANTHROPIC_COMPATIBLE:
        found = _COMPATIBLE.match(rest)
        if found is None:
            raise ConfigurationError(
                f"model {text!r}: write anthropic-compatible:<base_url>:<model>, for example "
                "anthropic-compatible:http://127.0.0.1:8000:my-model (the base URL starts "
                "with http:// or https://)"
            )
        return ModelSpec(provider=provider, model=found.group(2), base_url=found.group(1))
    if provider == "local":
        return ModelSpec(provider="local", model="local", path=rest or None)
    where = ENV_VAR if spec is None else None
    if provider in PROVIDERS and not rest:
        raise ConfigurationError(
            f"model {text!r} names no model; write {provider}:<model>, for example "
            f"{_EXAMPLES[provider]}",
            key_path=where,
        )
    if provider not in PROVIDERS or not sep:
        close = difflib.get_close_matches(provider, PROVIDERS, n=1, cutoff=0.6)
        example = (
            f"did you mean {close[0]}:{rest}?" if close and sep else _suggest_for_bare_name(text)
        )
        raise ConfigurationError(
            f"model {text!r} is not a model string raf knows ({example}); use one of "
            "openai:<model>, openai-responses:<model>, anthropic:<model>, gemini:<model>, "
            "gemini-native:<model>, azure:<deployment>, bedrock:<model id>, ollama:<model>, "
            "ollama-native:<model>, "
            "openai-compatible:<base_url>:<model>, local or local:<path.gguf>",
            key_path=where,
        )
    if provider == "openai-compatible":
        match = _COMPATIBLE.match(rest)
        if match is None:
            raise ConfigurationError(
                f"model {text!r}: write openai-compatible:<base_url>:<model>, for example "
                f"{_EXAMPLES[provider]} (the base URL starts with http:// or https://)",
                key_path=where,
            )
        return ModelSpec(provider=provider, model=match.group(2), base_url=match.group(1))
    if provider == "ollama":
        return ModelSpec(provider=provider, model=rest, base_url=ollama_base_url())
    if provider == "ollama-native":
        return ModelSpec(provider=provider, model=rest, base_url=ollama_native_url())
    return ModelSpec(provider=provider, model=rest)


def _check_settings(parsed: ModelSpec, cls: type, settings: dict[str, Any], *fixed: str) -> None:
    """Refuse settings the client does not take, naming those it does."""
    accepted = [
        name
        for name, parameter in inspect.signature(cls).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name not in fixed
    ]
    unknown = sorted(set(settings) - set(accepted))
    if unknown:
        raise ConfigurationError(
            f"model {str(parsed)!r}: {cls.__name__} takes no setting "
            f"{', '.join(repr(u) for u in unknown)}; it takes {', '.join(accepted)}"
        )


def resolve_model(spec: str | None = None, *, retry: bool = True, **settings: Any) -> ChatClient:
    """The chat client a model string names; `None` reads `RAF_MODEL`, then `local`.

    Network clients are wrapped in `RetryingChatClient` unless `retry=False`; extra
    keyword settings go to the client's constructor (`timeout=`, `headers=`, ...).
    """
    parsed = parse_model_spec(spec)
    if parsed.provider == ANTHROPIC_COMPATIBLE:  # the Anthropic client, at another URL
        settings.setdefault("base_url", parsed.base_url)
        parsed = replace(parsed, provider="anthropic", base_url=None)
    client: ChatClient
    if parsed.provider == "local":
        from raf.clients.local.client import LocalChatClient

        _check_settings(parsed, LocalChatClient, settings)
        return LocalChatClient(parsed.path, **settings)
    if parsed.provider == "openai-responses":
        from raf.clients.openai.responses import OpenAIResponsesClient

        _check_settings(parsed, OpenAIResponsesClient, settings)
        client = OpenAIResponsesClient(parsed.model, **settings)
    elif parsed.provider == "azure":
        from raf.clients.openai.azure import AzureOpenAIClient

        _check_settings(parsed, AzureOpenAIClient, settings)
        client = AzureOpenAIClient(parsed.model, **settings)
    elif parsed.provider == "gemini-native":
        from raf.clients.gemini.native import GoogleGenAIClient

        _check_settings(parsed, GoogleGenAIClient, settings)
        client = GoogleGenAIClient(parsed.model, **settings)
    elif parsed.provider == "bedrock":
        from raf.clients.bedrock.client import BedrockClient

        _check_settings(parsed, BedrockClient, settings)
        client = BedrockClient(parsed.model, **settings)
    elif parsed.provider == "ollama-native":
        from raf.clients.ollama.client import OllamaClient

        _check_settings(parsed, OllamaClient, settings)
        settings.setdefault("api_key", os.environ.get("OLLAMA_API_KEY") or None)
        client = OllamaClient(
            parsed.model, base_url=settings.pop("base_url", parsed.base_url), **settings
        )
    elif parsed.provider == "gemini":
        from raf.clients.gemini.client import GeminiChatClient

        _check_settings(parsed, GeminiChatClient, settings)
        client = GeminiChatClient(parsed.model, **settings)
    elif parsed.provider == "anthropic":
        from raf.clients.anthropic.client import AnthropicChatClient

        _check_settings(parsed, AnthropicChatClient, settings)
        settings.setdefault("max_tokens", min(model_info(parsed).max_output_tokens, 8192))
        client = AnthropicChatClient(parsed.model, **settings)
    else:
        from raf.clients.openai.client import OpenAIChatClient

        if parsed.provider == "openai":
            _check_settings(parsed, OpenAIChatClient, settings)
            client = OpenAIChatClient(parsed.model, **settings)
        else:
            _check_settings(parsed, OpenAIChatClient, settings, "provider", "require_key")
            if parsed.provider == "ollama":
                # Ollama needs no key; never hand it (perhaps a shared host) the OpenAI one.
                settings.setdefault("api_key_env", "OLLAMA_API_KEY")
            client = OpenAIChatClient(
                parsed.model,
                base_url=settings.pop("base_url", parsed.base_url),
                provider=parsed.provider,
                require_key=False,
                **settings,
            )
    if retry:
        from raf.clients.retry import RetryingChatClient

        client = RetryingChatClient(client)
    return client


def as_chat_client(value: ChatClient | str, *, where: str) -> ChatClient:
    """`value` as a chat client: a model string (`"openai:gpt-4o"`) resolves as
    `resolve_model` does, so an unknown provider, a missing extra or a missing key is
    refused here, when the agent is built; anything that is neither is a clear error
    naming `where` (the parameter or method that took it)."""
    if isinstance(value, str):
        return resolve_model(value)
    if callable(getattr(value, "get_response", None)):
        return value
    raise ConfigurationError(
        f"{where}: {value!r} is not a chat client; give a model string such as "
        "'openai:gpt-4o-mini' or 'local', or a client (raf.resolve_model(...), "
        "raf.testing.ScriptedChatClient(...), or a class with get_response and "
        "get_streaming_response)"
    )
