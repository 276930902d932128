"""Images, audio and documents: checked before any request, shaped for each API, and
returned by tools; against llm-katan (a real OpenAI and Anthropic wire server that
echoes what it received), the loopback peers of tests/clients, and the scripted fault
server where the exact request body is what is checked."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from raf.agent.builder import AgentBuilder
from raf.clients.anthropic.client import AnthropicChatClient
from raf.clients.local.client import LocalChatClient
from raf.clients.media import MAX_BYTES, MediaError, attachment, decode
from raf.clients.ollama.client import OllamaClient
from raf.clients.openai.client import OpenAIChatClient
from raf.clients.openai.responses import OpenAIResponsesClient
from raf.core.contents import (
    DataContent,
    FunctionResultContent,
    TextContent,
    content_from_dict,
    content_to_dict,
)
from raf.core.function_tool import tool
from raf.core.messages import ChatMessage, Role
from tests.clients.common import PNG
from tests.clients.conftest import KATAN_KEY, KATAN_MODEL
from tests.clients.faultserver import FaultServer, Reply
from tests.clients.ollama_peer import OllamaPeer
from tests.clients.responses_peer import ResponsesPeer


@tool
def snapshot() -> list[object]:
    """Take a picture of the room."""
    return ["the room", attachment(PNG, "image/png")]


def describe(*contents: object) -> ChatMessage:
    return ChatMessage(role=Role.USER, contents=[TextContent(text="describe"), *contents])  # type: ignore[list-item]


def anthropic_reply(text: str = "ok") -> dict[str, object]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }


# -- checks before sending ---------------------------------------------------------------


def test_attachment_reads_a_file_and_guesses_its_type(tmp_path: Path) -> None:
    photo = tmp_path / "photo.png"
    photo.write_bytes(PNG)
    content = attachment(photo)
    assert content.media_type == "image/png"
    assert content.uri == "data:image/png;base64," + base64.b64encode(PNG).decode()


def test_bad_attachments_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(MediaError, match="cannot read attachment .*missing.png"):
        attachment(tmp_path / "missing.png")
    odd = tmp_path / "notes.qqq"
    odd.write_bytes(b"x")
    with pytest.raises(MediaError, match="notes.qqq.*type .unknown.*media_type="):
        attachment(odd)
    big = tmp_path / "huge.png"
    with big.open("wb") as handle:  # sparse: the size is checked before reading
        handle.truncate(MAX_BYTES["image"] + 1)
    with pytest.raises(
        MediaError,
        match="huge.png.*20971521 bytes.*most read is 20971520 bytes .the limit for an image",
    ):
        attachment(big)
    with pytest.raises(MediaError, match="not base64"):
        decode(DataContent(uri="data:image/png;base64,@@@"), ["image/png"], api="x")
    with pytest.raises(MediaError, match="give a data: URI or an http"):
        decode(DataContent(uri="file:///etc/passwd"), ["image/png"], api="x")


def test_attachments_are_regular_files_read_within_the_limit(tmp_path: Path) -> None:
    """A link named like a picture or a PDF that leads to a device, a kernel file or a
    FIFO is refused, naming the file and why, before a byte is sent; a FIFO does not
    hang and /dev/zero does not fill the memory."""
    zero = tmp_path / "zero.png"
    zero.symlink_to("/dev/zero")
    with pytest.raises(MediaError, match=r"zero.png.*kernel file under /dev.*regular files"):
        attachment(zero)
    environ = tmp_path / "report.pdf"
    environ.symlink_to("/proc/self/environ")  # stat() says 0 bytes; it holds the secrets
    with pytest.raises(MediaError, match=r"report.pdf.*kernel file under /proc"):
        attachment(environ)
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    with pytest.raises(MediaError, match=r"pipe.png.*FIFO.*regular files only$"):
        attachment(fifo)  # the size limit has nothing to do with it, and is not named
    folder = tmp_path / "album.png"
    folder.mkdir()
    with pytest.raises(MediaError, match=r"album.png.*a folder"):
        attachment(folder)

    photo = tmp_path / "inside" / "photo.png"
    photo.parent.mkdir()
    photo.write_bytes(PNG)
    outside = tmp_path / "elsewhere.png"
    outside.write_bytes(PNG)
    link = photo.parent / "link.png"
    link.symlink_to(outside)
    assert attachment(photo, root=photo.parent).media_type == "image/png"
    with pytest.raises(MediaError, match=r"link.png.*leads to .*elsewhere.png.*outside"):
        attachment(link, root=photo.parent)
    assert attachment(link).media_type == "image/png"  # no root: a user's own link is read


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    from raf.core.safe_read import FileRefusedError, read_regular_file

    grows = tmp_path / "g.bin"
    grows.write_bytes(b"x" * 10)
    assert read_regular_file(grows, limit=10) == b"x" * 10
    with pytest.raises(FileRefusedError, match="11 bytes; the most read is 10"):
        grows.write_bytes(b"x" * 11)
        read_regular_file(grows, limit=10)


def test_a_tool_image_survives_the_session_and_reads_as_a_placeholder() -> None:
    result = FunctionResultContent(call_id="c1", result=["seen", attachment(PNG, "image/png")])
    assert result.as_text() == "seen\n[image/png attachment]"
    back = content_from_dict(content_to_dict(result))
    assert isinstance(back, FunctionResultContent) and back.result == result.result


async def test_the_local_model_names_itself_when_it_cannot_see() -> None:
    local = LocalChatClient("/nonexistent/smol-model.gguf")
    with pytest.raises(MediaError, match="local model 'smol-model' has no vision projector"):
        await local.get_response([describe(attachment(PNG, "image/png"))])


# -- chat completions and Anthropic against llm-katan --------------------------------------


async def test_an_image_reaches_katan_over_both_apis(katan: str) -> None:
    for made in (
        OpenAIChatClient(KATAN_MODEL, base_url=f"{katan}/v1", api_key=KATAN_KEY),
        AnthropicChatClient(KATAN_MODEL, base_url=katan, api_key=KATAN_KEY),
    ):
        answer = await made.get_response([describe(attachment(PNG, "image/png"))])
        assert "[image:image/png]" in answer.text
        await made.aclose()


async def test_anthropic_blocks_for_images_documents_and_tool_images(fault: FaultServer) -> None:
    fault.reply(Reply(json_body=anthropic_reply()))
    made = AnthropicChatClient("claude-test", base_url=fault.url, api_key="sk-ant-x-0123456789")
    link = DataContent(uri="https://example.com/a.jpg", media_type="image/jpeg")
    await made.get_response([describe(attachment(b"%PDF-1.4", "application/pdf"), link)])
    blocks = fault.seen[-1].body["messages"][0]["content"]
    assert blocks[1] == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQ="},
    }
    assert blocks[2] == {
        "type": "image",
        "source": {"type": "url", "url": "https://example.com/a.jpg"},
    }
    with pytest.raises(MediaError, match="Anthropic's Messages API does not take .*audio/wav"):
        await made.get_response([describe(attachment(b"RIFF", "audio/wav"))])
    assert len(fault.seen) == 1
    # a tool's image goes back inside its tool_result
    fault.reply(
        Reply(
            json_body={
                **anthropic_reply(),
                "content": [{"type": "tool_use", "id": "tu_1", "name": "snapshot", "input": {}}],
                "stop_reason": "tool_use",
            }
        ),
        Reply(json_body=anthropic_reply("a room")),
    )
    agent = AgentBuilder().with_chat_client(made).with_tool(snapshot).build()
    assert (await agent.run("look")).text == "a room"
    result = fault.seen[-1].body["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["content"][0] == {
        "type": "text",
        "text": "the room",
    }
    assert result["content"][1]["type"] == "image"
    assert result["content"][1]["source"]["media_type"] == "image/png"
    await made.aclose()


async def test_chat_completions_sends_a_tools_image_after_its_result(fault: FaultServer) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "snapshot", "arguments": "{}"}}
    fault.reply(
        Reply(
            json_body={
                "id": "c1",
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                        "finish_reason": "tool_calls",
                    }
                ],
            }
        ),
        Reply(
            json_body={
                "id": "c2",
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "a room"},
                        "finish_reason": "stop",
                    }
                ],
            }
        ),
    )
    made = OpenAIChatClient("m", base_url=f"{fault.url}/v1", api_key="sk-x-0123456789")
    agent = AgentBuilder().with_chat_client(made).with_tool(snapshot).build()
    assert (await agent.run("look")).text == "a room"
    sent = fault.seen[-1].body["messages"]
    assert sent[2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "the room\n[image/png attachment]",
    }
    assert sent[3]["role"] == "user" and sent[3]["content"][1]["type"] == "image_url"
    await made.aclose()


# -- the Responses API and Ollama against their peers ----------------------------------------


@pytest.fixture
def responses() -> Iterator[ResponsesPeer]:
    with ResponsesPeer() as server:
        yield server


async def test_responses_tool_output_carries_the_image(responses: ResponsesPeer) -> None:
    made = OpenAIResponsesClient("gpt-5", base_url=responses.url, api_key=responses.key)
    agent = AgentBuilder().with_chat_client(made).with_tool(snapshot).build()
    answer = await agent.run("call snapshot {}")
    assert answer.text == f"The tools said: the room image/png ({len(PNG)} bytes)"
    output = responses.requests[1]["input"][2]["output"]
    assert [p["type"] for p in output] == ["input_text", "input_image"]
    await made.aclose()


async def test_ollama_gets_a_tools_image_as_the_users(tmp_path: Path) -> None:
    with OllamaPeer() as peer:
        made = OllamaClient("llava-peer", base_url=peer.url)
        agent = AgentBuilder().with_chat_client(made).with_tool(snapshot).build()
        answer = await agent.run("call snapshot {}")
        assert answer.text.endswith(f"I saw {len(PNG)} bytes of images.")
        sent = peer.requests[1]["messages"]
        assert sent[2]["role"] == "tool" and sent[3]["images"] == [base64.b64encode(PNG).decode()]
        await made.aclose()


async def test_content_over_the_size_limit_in_a_message_is_refused_before_any_request(
    responses: ResponsesPeer,
) -> None:
    """Contents made without `attachment` (a data: URI written by hand, a tool's result)
    are checked too: nothing reaches the provider."""
    huge = base64.b64encode(b"\0" * (MAX_BYTES["image"] + 1)).decode()
    too_large = DataContent(uri=f"data:image/png;base64,{huge}", media_type="image/png")
    made = OpenAIResponsesClient("gpt-5", base_url=responses.url, api_key=responses.key)
    with pytest.raises(MediaError, match="image of type image/png is 20971521 bytes.*20 MiB"):
        await made.get_response([describe(too_large)])
    with OllamaPeer() as peer:
        ollama = OllamaClient("llava-peer", base_url=peer.url)
        with pytest.raises(MediaError, match="20971521 bytes"):
            await ollama.get_response([describe(too_large)])
        await ollama.aclose()
        assert peer.requests == []

    @tool
    def big_snapshot() -> DataContent:
        """Take a very large picture."""
        return too_large

    agent = AgentBuilder().with_chat_client(made).with_tool(big_snapshot).build()
    with pytest.raises(MediaError, match="20971521 bytes"):
        await agent.run("call big_snapshot {}")
    assert len(responses.requests) == 1  # the call was asked for; its result never sent
    await made.aclose()
