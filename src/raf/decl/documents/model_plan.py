"""Plans a document's `model` block without building anything: the model string and
client settings it names, the provider checks a loaded document is held to, and whether
it speaks the Responses API (clients are imported lazily)."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

from pydantic.alias_generators import to_camel

from raf.clients.models import PROVIDERS  # the prefixes a `model.id` may carry
from raf.core.errors import ConfigurationError
from raf.decl.documents.schema import ConnectionDecl, MemoryModelDecl, ModelDecl

_OWN_CLIENTS = ("openai", "openai-responses", "anthropic", "gemini", "gemini-native", "ollama")
"""Providers with a client of their own whose address is a `base_url`."""
_RESPONSES = ("openai", "openai-responses")
"""Providers `apiType: Responses` applies to: OpenAI's Responses API."""


_AZURE = ("azure", "azureopenai", "azure_openai")
"""Provider names of Azure OpenAI (its endpoint defaults to AZURE_OPENAI_ENDPOINT)."""

DEFAULT_ENDPOINTS = {
    "deepseek": "https://api.deepseek.com/v1",
    "moonshot": "https://api.moonshot.cn/v1",
    "kimi": "https://api.moonshot.cn/v1",
    "dashscope": "https://dashscope.aliyuncs.com/compatible-mode/v1",
    "qwen": "https://dashscope.aliyuncs.com/compatible-mode/v1",
    "zhipu": "https://open.bigmodel.cn/api/paas/v4",
    "glm": "https://open.bigmodel.cn/api/paas/v4",
    "siliconflow": "https://api.siliconflow.cn/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "groq": "https://api.groq.com/openai/v1",
    "together": "https://api.together.xyz/v1",
    "mistral": "https://api.mistral.ai/v1",
    "xai": "https://api.x.ai/v1",
    "fireworks": "https://api.fireworks.ai/inference/v1",
    "perplexity": "https://api.perplexity.ai",
}
"""Providers that speak the OpenAI protocol at a known address: a document may name the
provider without `connection.endpoint`."""


def model_name(model_id: str | None) -> str | None:
    """The name the provider knows a model by: `model.id` without a provider prefix
    (`openai-responses:gpt-5` is `gpt-5`)."""
    if model_id is None or ":" not in model_id:
        return model_id
    prefix = model_id.split(":", 1)[0]
    if prefix not in PROVIDERS or prefix == "local":
        return model_id
    from raf.clients.models import parse_model_spec

    try:
        return parse_model_spec(model_id).model
    except ConfigurationError:
        return model_id


def plan(
    model_id: str | None,
    provider: str | None,
    connection: ConnectionDecl,
    model_path: str | None,
    base_dir: Path | None = None,
    *,
    api_type: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """The model string and client settings a model block stands for; no client is made,
    so validation and build decide alike. `api_type` "responses" (MAF's `apiType:
    Responses`) puts an OpenAI model on the Responses API."""
    if api_type is not None and api_type.lower() == "responses" and provider not in _AZURE:
        name = model_id or ""
        prefix = name.split(":", 1)[0] if ":" in name else None
        if provider is None and prefix in PROVIDERS:
            provider, model_id = prefix, name.split(":", 1)[1]
        if provider not in (None, *_RESPONSES):
            raise ConfigurationError(
                f"apiType: Responses is OpenAI's Responses API; model provider {provider!r} "
                "does not speak it (use provider openai, or leave apiType out)"
            )
        provider = "openai-responses"
    path = model_path or connection.model_path
    if provider == "local" or connection.kind == "local" or path:
        if path and base_dir is not None:
            path = str(base_dir / Path(path).expanduser())
        return (f"local:{path}" if path else "local"), {}
    settings: dict[str, Any] = {}
    if connection.api_key is not None:
        settings["api_key"] = connection.api_key.get_secret_value()
    if connection.headers:
        settings["headers"] = {k: v.get_secret_value() for k, v in connection.headers.items()}
    if connection.timeout:
        settings["timeout"] = connection.timeout
    if connection.organization and provider in (None, "openai"):
        settings["organization"] = connection.organization
    name = model_id or ""
    prefix = name.split(":", 1)[0] if ":" in name else None
    if provider is None and prefix in ("openai-compatible", "local"):
        spec = name
    elif provider is None and prefix in PROVIDERS:  # the connection's settings still apply
        return plan(name.split(":", 1)[1], prefix, connection, None, base_dir)
    elif (
        provider in _OWN_CLIENTS
        or provider == "ollama-native"
        or (provider is None and not connection.endpoint)
    ):
        spec = f"{provider or 'openai'}:{name}"
        if connection.endpoint:
            settings["base_url"] = connection.endpoint
    elif provider in _AZURE:
        spec = f"azure:{connection.deployment or name}"
        if connection.endpoint:
            settings["endpoint"] = connection.endpoint
        if connection.api_version:
            settings["api_version"] = connection.api_version
    elif provider == "bedrock":
        spec = f"bedrock:{name}"
        for key in ("api_key", "headers"):
            if key in settings:
                raise ConfigurationError(
                    f"model provider 'bedrock' takes no connection.{to_camel(key)}: boto3 "
                    "finds the AWS credentials (environment, profile or role)"
                )
        if connection.endpoint:
            settings["endpoint_url"] = connection.endpoint
    else:  # any other provider (azure, vllm, llamacpp, …) speaks the OpenAI protocol
        endpoint = connection.endpoint or DEFAULT_ENDPOINTS.get(provider or "")
        if not endpoint:
            known = sorted({*PROVIDERS, *DEFAULT_ENDPOINTS, "vllm", "llamacpp", "lmstudio"})
            close = difflib.get_close_matches((provider or "").lower(), known, n=1, cutoff=0.75)
            if close:
                raise ConfigurationError(
                    f"unknown model provider {provider!r}: did you mean {close[0]!r}? (a "
                    "provider raf does not know needs connection.endpoint, its base URL)"
                )
            raise ConfigurationError(
                f"model provider {provider!r} needs connection.endpoint (its base URL)"
            )
        spec = f"openai-compatible:{endpoint}:{name}"
    return spec, settings


def _planned_spec(
    model: ModelDecl | MemoryModelDecl,
    provider: str | None,
    connection: ConnectionDecl,
    base_dir: Path,
) -> Any:
    """The parsed model string (`raf.clients.models.ModelSpec`) a model block plans to."""
    from raf.clients.models import parse_model_spec

    text, _ = plan(
        model.id,
        provider,
        connection,
        getattr(model, "model_path", None),
        base_dir,
        api_type=getattr(model, "api_type", None),
    )
    return parse_model_spec(text)


def check_model(
    model: ModelDecl | MemoryModelDecl | str | None, base_dir: Path
) -> tuple[list[str], list[str]]:
    """What building a client for `model` would refuse (problems) and what would fail
    when it first runs (warnings), without making one."""
    from raf.clients.models import parse_model_spec

    if model is None:
        return [], []
    try:
        if isinstance(model, str):
            spec = parse_model_spec(model)
        else:
            connection = model.connection or ConnectionDecl()
            if connection.kind == "reference":
                return [], []  # bound in code with with_connection()
            provider = (model.provider or "").lower() or None
            if not model.id and provider is None and not connection.endpoint:
                return [], [
                    "the model names no id: give the agent its chat client in code "
                    "(the builder's with_chat_client)"
                ]
            spec = _planned_spec(model, provider, connection, base_dir)
            if spec.provider == "azure":
                warnings = []
                if getattr(model, "api_type", None) == "responses":
                    warnings.append(
                        "apiType: Responses is not available for Azure OpenAI in raf yet: "
                        "the deployment is called over chat completions"
                    )
                if not connection.endpoint and not os.environ.get("AZURE_OPENAI_ENDPOINT"):
                    warnings.append(
                        f"model provider {model.provider!r} has no connection.endpoint; "
                        "set AZURE_OPENAI_ENDPOINT before building or running"
                    )
                return [], warnings
    except ConfigurationError as exc:
        return [str(exc)], []
    if spec.provider == "local" and spec.path and not Path(spec.path).is_file():
        return [], [f"the local model file {spec.path} does not exist (yet)"]
    return [], []


def model_spec_of(model: ModelDecl | MemoryModelDecl | str | None, base_dir: Path) -> Any:
    """The parsed model string (`raf.clients.models.ModelSpec`) a model block stands for;
    None when code gives the client (a `reference` connection, or no id) or when the block
    is wrong (`check_model` reports that)."""
    from raf.clients.models import parse_model_spec

    if model is None:
        return None
    try:
        if isinstance(model, str):
            return parse_model_spec(model)
        connection = model.connection or ConnectionDecl()
        provider = (model.provider or "").lower() or None
        if connection.kind == "reference" or (
            not model.id and provider is None and not connection.endpoint
        ):
            return None
        return _planned_spec(model, provider, connection, base_dir)
    except ConfigurationError:
        return None


def speaks_responses(model: ModelDecl | MemoryModelDecl | str | None) -> bool | None:
    """Whether a model block stands for OpenAI's Responses API; None when only code knows
    (no model, a model without an id, or a connection registered with `with_connection`:
    the client comes from code, which refuses hosted tools before sending if it must)."""
    from raf.clients.models import parse_model_spec

    if model is None:
        return None
    try:
        if isinstance(model, str):
            return parse_model_spec(model).provider == "openai-responses"
        connection = model.connection or ConnectionDecl()
        if connection.kind == "reference" or (not model.id and not model.provider):
            return None
        text, _ = plan(
            model.id,
            (model.provider or "").lower() or None,
            connection,
            getattr(model, "model_path", None),
            api_type=getattr(model, "api_type", None),
        )
        return parse_model_spec(text).provider == "openai-responses"
    except ConfigurationError:
        return None  # the model block's own problem, reported at its place
