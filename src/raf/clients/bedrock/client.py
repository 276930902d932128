"""Amazon Bedrock's Converse and ConverseStream APIs through boto3 (the AWS SDK).

boto3 is synchronous: each call, and each event read from a stream, runs in a worker
thread so the event loop never blocks. Credentials come from the usual AWS chain
(environment, profile, instance role) unless given; boto3's own retries are off so
`RetryingChatClient` decides, as for every other client.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from raf.clients.base import ModelClient
from raf.clients.bedrock.wire import ConverseWire
from raf.clients.provider import DEFAULT_TIMEOUT, ChunkStream, ErrorTable, Provider
from raf.core.errors import ConfigurationError, MissingExtraError

__all__ = ["BedrockClient", "BedrockProvider"]

_STREAM_ERRORS = {
    "throttlingException": 429,
    "serviceUnavailableException": 503,
    "internalServerException": 500,
    "validationException": 400,
    "modelStreamErrorException": 424,
}
"""Errors that arrive inside a stream carry no HTTP status; these are the statuses the
same errors have when a request fails outright."""
_END = object()


class _EventStream(ChunkStream):
    """boto3's blocking event stream, read one event at a time in a worker thread."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._events = iter(stream)

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            event = await asyncio.to_thread(next, self._events, _END)
            if not isinstance(event, dict):  # the end
                return
            yield event

    async def aclose(self) -> None:
        await asyncio.to_thread(self._stream.close)


class BedrockProvider(Provider):
    """The `bedrock-runtime` service of one AWS region."""

    protocol = "Bedrock's Converse API"
    hint = "; check endpoint_url and the region"

    def __init__(
        self,
        *,
        region: str | None = None,
        profile: str | None = None,
        endpoint_url: str | None = None,
        aws_access_key_id: str | None = None,
        aws_secret_access_key: str | None = None,
        aws_session_token: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        try:
            import boto3
            from botocore.config import Config
        except ImportError:
            raise MissingExtraError("the Bedrock client", "bedrock", "boto3") from None
        super().__init__(
            "bedrock",
            key=aws_secret_access_key,
            base_url=endpoint_url,
            timeout=timeout,
            secrets=[aws_session_token],
        )
        session = boto3.Session(profile_name=profile, region_name=region)
        if session.region_name is None:
            raise ConfigurationError(
                "Bedrock needs an AWS region: pass region= or set AWS_REGION (for example "
                "us-east-1)"
            )
        self.region = session.region_name
        config = Config(
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=timeout or 60,
            read_timeout=timeout or 0,
        )
        self.client = session.client(
            "bedrock-runtime",
            endpoint_url=endpoint_url,
            aws_access_key_id=aws_access_key_id,
            aws_secret_access_key=aws_secret_access_key,
            aws_session_token=aws_session_token,
            config=config,
        )

    @property
    def endpoint(self) -> str:
        return self.base_url or f"https://bedrock-runtime.{self.region}.amazonaws.com"

    def error_table(self) -> ErrorTable:
        from botocore import exceptions, parsers

        return (
            ((exceptions.NoCredentialsError, exceptions.PartialCredentialsError), "failed"),
            ((exceptions.ClientError,), "status"),
            ((exceptions.ConnectTimeoutError, exceptions.ReadTimeoutError), "timeout"),
            ((exceptions.EndpointConnectionError, exceptions.ConnectionClosedError), "connection"),
            ((parsers.ResponseParserError,), "invalid"),
            ((exceptions.BotoCoreError,), "failed"),
        )

    def status_code(self, exc: BaseException) -> int:
        response = getattr(exc, "response", None) or {}
        error = response.get("Error") or {}
        code = str(error.get("Code") or "")
        if code in _STREAM_ERRORS:  # an error event inside a stream
            return _STREAM_ERRORS[code]
        status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
        return int(status or 500)

    def status_detail(self, exc: BaseException) -> str:
        response = getattr(exc, "response", None) or {}
        error = response.get("Error") or {}
        message = str(error.get("Message") or exc)
        code = error.get("Code")
        return f"{message} ({code})" if code and code not in message else message

    def request_id(self, exc: BaseException) -> str | None:
        response = getattr(exc, "response", None) or {}
        found = (response.get("ResponseMetadata") or {}).get("RequestId")
        return str(found) if found else None

    async def complete(self, body: dict[str, Any]) -> Any:
        answer = await asyncio.to_thread(lambda: self.client.converse(**body))
        answer["id"] = (answer.get("ResponseMetadata") or {}).get("RequestId")
        return answer

    async def open_stream(self, body: dict[str, Any]) -> ChunkStream:
        answer = await asyncio.to_thread(lambda: self.client.converse_stream(**body))
        return _EventStream(answer["stream"])

    async def aclose(self) -> None:
        await asyncio.to_thread(self.client.close)


class BedrockClient(ModelClient[ConverseWire]):
    """Models on Amazon Bedrock (`anthropic.claude-...`, `amazon.nova-...`, inference
    profiles such as `us.anthropic.claude-...`) through Converse: tools, streaming,
    reasoning, images, documents and audio, structured output, usage.

    `region` (or `AWS_REGION`), `profile`, explicit keys and `endpoint_url` (a VPC
    endpoint, a gateway) are passed to boto3; `additional_fields` goes to the model as
    `additionalModelRequestFields` (`{"top_k": 50}`, thinking settings, ...).
    """

    reports_model = False

    def __init__(
        self,
        model: str,
        *,
        region: str | None = None,
        profile: str | None = None,
        endpoint_url: str | None = None,
        aws_access_key_id: str | None = None,
        aws_secret_access_key: str | None = None,
        aws_session_token: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        additional_fields: dict[str, Any] | None = None,
    ) -> None:
        api = BedrockProvider(
            region=region,
            profile=profile,
            endpoint_url=endpoint_url,
            aws_access_key_id=aws_access_key_id,
            aws_secret_access_key=aws_secret_access_key,
            aws_session_token=aws_session_token,
            timeout=timeout,
        )
        super().__init__(model, api, ConverseWire(additional_fields=dict(additional_fields or {})))
