"""Azure OpenAI (official SDK's `AsyncAzureOpenAI`): chat completions of a deployment,
authenticated by an API key or a Microsoft Entra ID token (azure-identity)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from raf.clients.base import ModelClient
from raf.clients.errors import safe_url
from raf.clients.openai.client import OpenAIProvider
from raf.clients.openai.wire import ChatCompletionsWire
from raf.clients.provider import DEFAULT_TIMEOUT, SdkProvider, lookup_key, setting
from raf.core.errors import ConfigurationError, MissingExtraError

__all__ = ["AZURE_SCOPE", "DEFAULT_API_VERSION", "AzureOpenAIClient", "AzureOpenAIProvider"]

DEFAULT_API_VERSION = "2024-10-21"
"""The generally available data-plane version raf is tested against."""
AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
"""The Entra ID scope Azure OpenAI tokens are issued for."""

TokenProvider = Callable[[], str | Awaitable[str]]


def _from_credential(credential: Any) -> TokenProvider:
    """A bearer-token provider over an azure-identity credential (async or not)."""
    try:
        if hasattr(credential, "__aenter__"):  # azure.identity.aio credentials
            from azure.identity.aio import get_bearer_token_provider as async_provider

            return async_provider(credential, AZURE_SCOPE)
        from azure.identity import get_bearer_token_provider

        return get_bearer_token_provider(credential, AZURE_SCOPE)
    except ImportError:
        raise MissingExtraError("Entra ID authentication", "azure", "azure-identity") from None


class AzureOpenAIProvider(OpenAIProvider):
    """An Azure OpenAI resource: its endpoint, API version and key or token provider."""

    hint = (
        "; check the endpoint (https://<resource>.openai.azure.com, AZURE_OPENAI_ENDPOINT) "
        "and that the model is the deployment's name"
    )

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        api_version: str | None = None,
        api_key: str | None = None,
        token_provider: TokenProvider | None = None,
        credential: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        try:
            import openai
        except ImportError:
            raise MissingExtraError("the Azure OpenAI client", "openai", "openai") from None
        where = setting(endpoint, "AZURE_OPENAI_ENDPOINT")
        if not where:
            raise ConfigurationError(
                "Azure OpenAI needs its endpoint: pass endpoint= or set AZURE_OPENAI_ENDPOINT "
                "(https://<resource>.openai.azure.com)"
            )
        if token_provider is not None and credential is not None:
            raise ConfigurationError("give Azure OpenAI token_provider= or credential=, not both")
        if credential is not None:
            token_provider = _from_credential(credential)
        key = None
        if token_provider is None:
            key = lookup_key("azure", api_key, "AZURE_OPENAI_API_KEY", required=True)
        SdkProvider.__init__(
            self, "azure", key=key, headers=headers, base_url=where, timeout=timeout
        )
        self.auth = "entra-id" if token_provider is not None else "api-key"
        """How requests are authenticated: `api-key` or `entra-id` (a bearer token)."""
        self.client = openai.AsyncAzureOpenAI(
            azure_endpoint=where,
            api_version=setting(api_version, "OPENAI_API_VERSION", DEFAULT_API_VERSION),
            api_key=key,
            azure_ad_token_provider=token_provider,
            **self.connection(),
        )

    @property
    def endpoint(self) -> str:
        return safe_url(self.base_url, self.hidden())


class AzureOpenAIClient(ModelClient[ChatCompletionsWire]):
    """Chat completions of an Azure OpenAI deployment (`model` is the deployment's name).

    Authentication is an API key (`api_key` or `AZURE_OPENAI_API_KEY`, sent as the
    `api-key` header) or a Microsoft Entra ID bearer token: `token_provider` (any callable
    returning a token, sync or async) or `credential` (an azure-identity credential such
    as `azure.identity.aio.DefaultAzureCredential()`, asked for the Cognitive Services
    scope). The endpoint is `endpoint` or `AZURE_OPENAI_ENDPOINT`; the API version
    `api_version` or `OPENAI_API_VERSION`, else a generally available one.
    """

    def __init__(
        self,
        model: str,
        *,
        endpoint: str | None = None,
        api_version: str | None = None,
        api_key: str | None = None,
        token_provider: TokenProvider | None = None,
        credential: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        api = AzureOpenAIProvider(
            endpoint=endpoint,
            api_version=api_version,
            api_key=api_key,
            token_provider=token_provider,
            credential=credential,
            headers=headers,
            timeout=timeout,
        )
        super().__init__(model, api, ChatCompletionsWire(max_tokens_field="max_completion_tokens"))
