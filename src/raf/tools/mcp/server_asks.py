"""The SDK callbacks of an `McpClient`: a server's questions and notices, each handed to
the client's handlers or to the one call in flight (see `interaction.py`)."""

from __future__ import annotations

import json
from typing import Any, Protocol

from raf.tools.mcp.config import McpServerConfig
from raf.tools.mcp.interaction import (
    CallScope,
    ElicitationHandler,
    McpNotice,
    NoticeHandler,
    SamplingHandler,
    elicitation_from_params,
    sampling_from_params,
    with_defaults,
)


class _Client(Protocol):
    @property
    def name(self) -> str: ...

    config: McpServerConfig
    elicitation: ElicitationHandler | None
    sampling: SamplingHandler | None
    on_notice: NoticeHandler | None


class ServerAsks:
    """Routes what the server asks and reports; `scopes` are the calls in flight."""

    def __init__(self, client: _Client) -> None:
        self.client = client
        self.scopes: list[CallScope] = []

    def scope(self) -> CallScope | None:
        """The call a server request belongs to: known only when one call is in flight."""
        return self.scopes[0] if len(self.scopes) == 1 else None

    async def notify(self, notice: McpNotice, scope: CallScope | None) -> None:
        for handler in (scope.notice if scope else None, self.client.on_notice):
            if handler is not None:
                outcome = handler(notice)
                if outcome is not None:
                    await outcome

    async def on_log(self, params: Any) -> None:
        data = params.data
        text = data if isinstance(data, str) else json.dumps(data, default=str)
        notice = McpNotice(
            server=self.client.name, kind="log", level=str(params.level), message=text
        )
        await self.notify(notice, self.scope())

    async def on_elicit(self, context: Any, params: Any) -> Any:
        import mcp_types

        request = elicitation_from_params(self.client.name, params)
        scope = self.scope()
        handler = self.client.elicitation or (scope.elicitation if scope else None)
        if handler is None or self.client.config.elicitation == "decline":
            return mcp_types.ElicitResult(action="decline")
        answer = await handler(request)
        content = None
        if answer.action == "accept" and request.url is None:
            content = with_defaults(request.schema, answer.content)
        return mcp_types.ElicitResult(action=answer.action, content=content)

    async def on_sample(self, context: Any, params: Any) -> Any:
        import mcp_types

        request = sampling_from_params(self.client.name, params)
        scope = self.scope()
        handler = self.client.sampling or (scope.sampling if scope else None)
        if handler is None:
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST, message="this client has no model to sample"
            )
        answer = await handler(request)
        if answer.text is None:
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST, message=answer.refused or "sampling refused"
            )
        return mcp_types.CreateMessageResult(
            role="assistant",
            content=mcp_types.TextContent(type="text", text=answer.text),
            model=answer.model,
            stop_reason="endTurn",
        )
