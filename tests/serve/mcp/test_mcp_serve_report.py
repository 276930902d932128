"""`raf mcp serve` tells a standard MCP client (the official SDK's) what a run does: log
messages at the level the client set, progress per step, and approvals asked as
elicitations, answered yes or no by the client's user."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import mcp
import mcp_types
import pytest
from mcp.shared.exceptions import MCPDeprecationWarning

from raf.tools.mcp import ElicitationAnswer, ElicitationRequest, McpClient
from tests.serve.mcp.test_mcp_serve_http import APPROVAL, _cmd, _env
from tests.tools.peers import free_port, serve


@contextmanager
def _http_server() -> Iterator[str]:
    port = free_port()
    with serve(_cmd(APPROVAL, "--transport", "http", "--port", str(port)), port, env=_env()):
        yield f"http://127.0.0.1:{port}/mcp"


def _answering(approve: bool | None, seen: list[str]) -> Any:
    """An elicitation callback: accept with `approve`, or decline when None."""

    async def answer(context: Any, params: Any) -> mcp_types.ElicitResult:
        seen.append(params.message)
        assert params.requested_schema["required"] == ["approve"]
        if approve is None:
            return mcp_types.ElicitResult(action="decline")
        return mcp_types.ElicitResult(
            action="accept", content={"approve": approve, "reason": "checked by alice"}
        )

    return answer


async def _ask(url: str, approve: bool | None, **client: Any) -> tuple[Any, list[str]]:
    seen: list[str] = []
    async with mcp.Client(
        url, elicitation_callback=_answering(approve, seen), mode="legacy", **client
    ) as session:
        result = await session.call_tool("ask", {"message": "delete it"})
    return result, seen


async def test_an_approval_is_asked_as_an_elicitation_and_a_yes_runs_the_call() -> None:
    with _http_server() as url:
        result, seen = await _ask(url, True)
    assert len(seen) == 1 and "delete_everything" in seen[0] and '"confirm": true' in seen[0]
    assert not result.is_error
    assert result.content[0].text == "not deleted: deleted"  # the tool ran and said so
    assert "denied" not in (result.structured_content or {})


async def test_a_no_or_a_declined_form_denies_the_call() -> None:
    with _http_server() as url:
        said_no, _ = await _ask(url, False)
        declined, seen = await _ask(url, None)
    assert said_no.structured_content["denied"] == ["delete_everything"]
    assert "checked by alice" in said_no.content[0].text
    assert declined.structured_content["denied"] == ["delete_everything"]
    assert "did not approve (decline)" in declined.content[0].text
    assert seen


async def test_logs_follow_the_level_set_and_progress_is_reported() -> None:
    logs: list[tuple[str, str]] = []
    seen_progress: list[tuple[float, str | None]] = []

    async def on_log(params: mcp_types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, str(params.data)))

    class OnProgress:
        async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
            seen_progress.append((progress, message))

    on_progress = OnProgress()

    with _http_server() as url:
        async with mcp.Client(
            url,
            elicitation_callback=_answering(True, []),
            logging_callback=on_log,
            mode="legacy",
        ) as client:
            await client.call_tool("ask", {"message": "delete it"}, progress_callback=on_progress)
            info_logs = list(logs)
            logs.clear()
            with pytest.warns(MCPDeprecationWarning):  # the SDK marks logging as old
                await client.set_logging_level("debug")
            await client.call_tool("ask", {"message": "delete it"})
            debug_logs = list(logs)
            logs.clear()
            with pytest.warns(MCPDeprecationWarning):
                await client.set_logging_level("error")
            await client.call_tool("ask", {"message": "delete it"})
            error_logs = list(logs)
    assert ("info", "calling tool delete_everything") in info_logs
    assert all(level != "debug" for level, _ in info_logs)
    assert ("debug", "run with 0 approval answer(s)") in debug_logs
    assert ("debug", "run with 1 approval answer(s)") in debug_logs
    assert error_logs == []
    steps = [message for _, message in seen_progress]
    assert steps[0] == "the agent is thinking"
    assert "calling tool delete_everything" in steps
    assert [value for value, _ in seen_progress] == sorted(value for value, _ in seen_progress)


async def test_on_the_newest_protocol_the_approval_travels_in_an_input_required_result() -> None:
    """raf's own client speaks the newest protocol, where a server cannot send requests
    mid-call: the form comes back in the call's result, and the retry carries the yes."""
    forms: list[ElicitationRequest] = []

    async def approve(request: ElicitationRequest) -> ElicitationAnswer:
        forms.append(request)
        return ElicitationAnswer(action="accept", content={"approve": True})

    with _http_server() as url:
        client = McpClient({"name": "raf", "url": url}, elicitation=approve)
        try:
            result = await client.call_tool("ask", {"message": "delete it"})
            later = await client.call_tool("ask", {"message": "hello"})
        finally:
            await client.aclose()
    assert [f.schema["required"] for f in forms] == [["approve"]]
    assert "delete_everything" in forms[0].message
    assert result.content[0].text == "not deleted: deleted"  # type: ignore[union-attr]
    assert later.content[0].text == "turn 1: you said 'hello'"  # type: ignore[union-attr]


async def test_a_client_without_elicitation_gets_each_call_denied() -> None:
    with _http_server() as url:
        async with mcp.Client(url, mode="legacy") as client:
            result = await client.call_tool("ask", {"message": "delete it"})
    assert result.structured_content["denied"] == ["delete_everything"]
    assert "no one can approve" in result.content[0].text  # type: ignore[union-attr]


async def test_a_new_ask_declines_the_approvals_a_client_left_unanswered() -> None:
    """A client handed an input-required result that never sends its retry is not stuck:
    its next ask on the session denies the waiting call (the agent hears why), then runs
    the new message; the old retry token no longer answers anything."""

    async def never_called(context: Any, params: Any) -> mcp_types.ElicitResult:
        raise AssertionError("the questions travel in the result, not as a request")

    with _http_server() as url:
        async with mcp.Client(url, elicitation_callback=never_called) as client:
            first = await client.call_tool("ask", {"message": "hello"})
            issued = first.structured_content["session_id"]
            left = await client.session.call_tool(
                "ask", {"message": "delete it", "session_id": issued}, allow_input_required=True
            )
            assert isinstance(left, mcp_types.InputRequiredResult)
            assert left.input_requests is not None
            moved_on = await client.call_tool(
                "ask", {"message": "hello again", "session_id": issued}
            )
            stale = await client.session.call_tool(
                "ask",
                {"message": "delete it", "session_id": issued},
                request_state=left.request_state,
                input_responses={
                    call_id: mcp_types.ElicitResult(action="accept", content={"approve": True})
                    for call_id in left.input_requests
                },
                allow_input_required=True,
            )
            after = await client.call_tool("ask", {"message": "and now?", "session_id": issued})
    assert isinstance(stale, mcp_types.CallToolResult)
    assert not moved_on.is_error, _text(moved_on)
    assert _text(moved_on) == "turn 3: you said 'hello again'"
    assert moved_on.structured_content is not None
    assert moved_on.structured_content["denied"] == ["delete_everything"]
    assert stale.is_error and "no longer waiting" in _text(stale)
    assert _text(after) == "turn 4: you said 'and now?'"
    assert "denied" not in (after.structured_content or {})


def _text(result: mcp_types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, mcp_types.TextContent), content
    return content.text
