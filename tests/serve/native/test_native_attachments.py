"""Files sent with a run over raf's HTTP API reach the model as data contents; bad ones
are a 422 naming the attachment, and the model is never called."""

from __future__ import annotations

import base64

import httpx

from raf.agent.builder import AgentBuilder
from raf.core.contents import DataContent
from raf.serve import AgentHost, ServeSecurity, create_app, serve_in_thread
from raf.testing import ScriptedChatClient
from tests.serve.conftest import Served

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def test_attachments_join_the_last_message(served: Served) -> None:
    served.helper.add("A tiny picture.")
    data = base64.b64encode(PNG).decode()
    with served.client() as client:
        answer = client.post(
            "/agents/helper/runs",
            json={
                "messages": "describe this",
                "attachments": [
                    {"media_type": "image/png", "data": data},
                    {"media_type": "image/jpeg", "url": "https://example.com/cat.jpg"},
                ],
            },
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["text"] == "A tiny picture."
        sent = served.helper.requests[-1].messages[-1].contents
        assert sent[0].text == "describe this"  # type: ignore[union-attr]
        assert sent[1:] == [
            DataContent(uri=f"data:image/png;base64,{data}", media_type="image/png"),
            DataContent(uri="https://example.com/cat.jpg", media_type="image/jpeg"),
        ]
        session = client.get(f"/agents/helper/sessions/{answer.json()['session_id']}").json()
        assert session["messages"][0]["contents"][1]["type"] == "data"


def test_bad_attachments_are_refused_before_the_model(served: Served) -> None:
    calls = len(served.helper.requests)
    bad = [
        ({"media_type": "text/html", "data": "PGI+"}, "does not take data content of type"),
        ({"media_type": "image/png", "data": "@@@"}, "not base64"),
        ({"media_type": "image/png"}, "give either data or url"),
        ({"media_type": "image/png", "data": "AA==", "url": "https://x"}, "either data or url"),
    ]
    with served.client() as client:
        for attachment, words in bad:
            answer = client.post(
                "/agents/helper/runs", json={"messages": "hi", "attachments": [attachment]}
            )
            assert answer.status_code == 422, answer.text
            message = answer.json()["error"]["message"]
            assert message.startswith("attachments.0: ") and words in message
        inline = {
            "role": "user",
            "contents": [{"type": "data", "uri": "data:application/zip;base64,UEs="}],
        }
        answer = client.post("/agents/helper/runs", json={"messages": [inline]})
        assert answer.status_code == 422 and "messages.0:" in answer.json()["error"]["message"]
    assert len(served.helper.requests) == calls


def test_an_attachment_over_the_size_limit_is_a_422_before_the_model() -> None:
    """With a body limit raised for large files, a file over the image limit itself
    (20 MiB) is still refused, naming the attachment, and the model is never called."""
    model = ScriptedChatClient(["never"])
    agent = AgentBuilder("looker").with_chat_client(model).build()
    security = ServeSecurity.for_bind("127.0.0.1", max_body_bytes=40 * 1024 * 1024)
    data = base64.b64encode(b"\0" * (20 * 1024 * 1024 + 1)).decode()
    with serve_in_thread(create_app(AgentHost([agent]), security)) as url:
        answer = httpx.post(
            f"{url}/agents/looker/runs",
            json={"messages": "look", "attachments": [{"media_type": "image/png", "data": data}]},
            timeout=60,
        )
    assert answer.status_code == 422, answer.text
    message = answer.json()["error"]["message"]
    assert message.startswith("attachments.0: ") and "20971521 bytes" in message
    assert model.requests == []
