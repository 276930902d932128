"""One text per answer on every HTTP surface: an agent that says "Let me check.", calls a
tool, then answers gives the same text on the native API, A2A (both methods) and AG-UI
as on the OpenAI surfaces, whole and streamed, over a real server on loopback."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from raf.agent.builder import AgentBuilder
from raf.core.function_tool import tool
from raf.serve import AgentHost, create_app, serve_in_thread
from raf.testing import ScriptedChatClient, call, reply

from .sse import events

JOINED = "Let me check.\n\nThe weather: sunny in Paris"


@dataclass
class Weather:
    url: str
    model: ScriptedChatClient

    def script(self) -> None:
        self.model.add(
            reply("Let me check.", call("weather", city="Paris")), "The weather: sunny in Paris"
        )


@pytest.fixture(scope="module")
def weather() -> Iterator[Weather]:
    @tool(name="weather", description="The weather in a city.")
    def forecast(city: str) -> str:
        return f"sunny in {city}"

    model = ScriptedChatClient([])
    agent = AgentBuilder().with_name("weatherman").with_chat_client(model).with_tool(forecast)
    with serve_in_thread(create_app(AgentHost([agent.build()]))) as url:
        yield Weather(url, model)


def a2a(weather: Weather, method: str) -> dict[str, Any]:
    message = {
        "kind": "message",
        "messageId": uuid.uuid4().hex,
        "role": "user",
        "parts": [{"kind": "text", "text": "Weather in Paris?"}],
    }
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}


def test_native_a2a_and_ag_ui_give_the_openai_surfaces_text(weather: Weather) -> None:
    texts: dict[str, str] = {}
    ask = {"messages": [{"role": "user", "content": "Weather in Paris?"}]}
    with httpx.Client(base_url=weather.url, timeout=30) as http:
        weather.script()
        whole = http.post("/agents/weatherman/runs", json=ask)
        texts["native"] = whole.json()["text"]
        weather.script()
        with http.stream("POST", "/agents/weatherman/runs", json=ask | {"stream": True}) as got:
            updates = [d for name, d in events(got) if name == "update"]
        texts["native streamed"] = "".join(
            u.get("text", "") for u in updates if u["kind"] == "text_delta"
        )
        weather.script()
        task = http.post("/a2a/weatherman", json=a2a(weather, "message/send")).json()["result"]
        texts["a2a"] = task["artifacts"][0]["parts"][0]["text"]
        weather.script()
        with http.stream("POST", "/a2a/weatherman", json=a2a(weather, "message/stream")) as got:
            results = [d["result"] for _, d in events(got)]
        artifacts = [r["artifact"] for r in results if r.get("kind") == "artifact-update"]
        texts["a2a streamed"] = "".join(p["text"] for a in artifacts for p in a["parts"])
        weather.script()
        body = {
            "threadId": uuid.uuid4().hex,
            "runId": "r1",
            "messages": [{"id": "m1", "role": "user", "content": "Weather in Paris?"}],
        }
        with http.stream("POST", "/agui/weatherman", json=body) as got:
            agui = [d for _, d in events(got)]
        texts["ag-ui"] = "".join(e["delta"] for e in agui if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert set(texts.values()) == {JOINED}, texts
