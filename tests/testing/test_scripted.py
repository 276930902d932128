"""raf.testing: the scripted model records requests, streams in chunks, fails clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf import ChatMessage, ChatOptions, ModelError, UpdateKind, fold_updates
from raf.testing import FunctionChatClient, ScriptedChatClient, ScriptExhaustedError, call, reply
from tests.agent.helpers import make_tool


async def test_replies_in_order_records_requests_and_runs_out_clearly() -> None:
    model = ScriptedChatClient(["one", reply("two", call("t", call_id="c"))])
    tool = make_tool("t")
    first = await model.get_response([ChatMessage.user("a")], ChatOptions(tools=[tool]))
    second = await model.get_response([ChatMessage.user("b")], ChatOptions(temperature=0.5))
    assert first.text == "one"
    assert second.messages[0].function_calls[0].name == "t"
    assert model.requests[0].tool_names == ["t"]
    assert model.requests[1].options.temperature == 0.5
    assert model.requests[1].messages == [ChatMessage.user("b")]
    with pytest.raises(ScriptExhaustedError, match="the script has 2 and call 3 was made"):
        await model.get_response([], ChatOptions())


async def test_exceptions_in_the_script_are_raised() -> None:
    model = ScriptedChatClient([ModelError("rate limited", retryable=True), "ok"])
    with pytest.raises(ModelError, match="rate limited"):
        await model.get_response([], ChatOptions())
    assert (await model.get_response([], ChatOptions())).text == "ok"


async def test_streams_in_chunks_and_folds_back() -> None:
    model = ScriptedChatClient([reply("abcdefghij", call("t", x=1, call_id="c"))], chunk_size=3)
    updates = [u async for u in model.get_streaming_response([], ChatOptions())]
    deltas = [u.text for u in updates if u.kind is UpdateKind.TEXT_DELTA]
    assert deltas == ["abc", "def", "ghi", "j"]
    folded = fold_updates(updates)
    assert folded.messages[0].text == "abcdefghij"
    assert folded.messages[0].function_calls[0].arguments == {"x": 1}
    assert model.requests[0].stream is True


async def test_function_chat_client_answers_from_a_function() -> None:
    async def answer(messages: object, options: ChatOptions) -> str:
        return f"you said {len(messages)} things"  # type: ignore[arg-type]

    model = FunctionChatClient(answer)
    response = await model.get_response(
        [ChatMessage.user("a"), ChatMessage.user("b")], ChatOptions()
    )
    assert response.text == "you said 2 things"


async def test_options_may_be_left_out_when_calling_a_client_directly() -> None:
    model = ScriptedChatClient(["plain", "streamed"])
    assert (await model.get_response([ChatMessage.user("hi")])).text == "plain"
    updates = [u async for u in model.get_streaming_response([ChatMessage.user("hi")])]
    assert fold_updates(updates).text == "streamed"


async def test_a_scripted_model_can_play_one_that_reads_text_only(tmp_path: Path) -> None:
    from raf.core.contents import DataContent, TextContent
    from raf.core.errors import ConfigurationError
    from raf.core.messages import Role
    from raf.testing.script_file import ScriptFileClient

    text_only = ScriptedChatClient(["fine"], media_types=())
    image = DataContent(uri="data:image/png;base64,AA==", media_type="image/png")
    picture = ChatMessage(role=Role.USER, contents=[TextContent(text="what is it?"), image])
    with pytest.raises(ConfigurationError, match=r"does not take image/png \(it takes text only\)"):
        await text_only.get_response([picture], ChatOptions())
    assert (await text_only.get_response([ChatMessage.user("hi")], ChatOptions())).text == "fine"
    path = tmp_path / "model.json"
    path.write_text('{"replies": ["x"], "mediaTypes": ["image/png"]}')
    assert ScriptFileClient(path).inner.media_types == ("image/png",)
    path.write_text('{"replies": ["x"], "mediaTypes": "image/png"}')
    with pytest.raises(ConfigurationError, match="'mediaTypes' is a list of media types"):
        ScriptFileClient(path)
