"""Files sent with a run over raf's HTTP API reach the model as data contents; bad ones
are a 422 naming the attachment, and the model is never called."""

from __future__ import annotations

import base64

from raf.core.contents import DataContent

from .conftest import Served

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
