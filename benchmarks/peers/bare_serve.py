"""The bare reference of `benchmarks/serve_load.py`: plain FastAPI on uvicorn answering a
fixed chat completion (JSON) or a fixed SSE stream, with no raf code at all.

    python benchmarks/peers/bare_serve.py PORT [uvloop|asyncio]

Its uvicorn settings are raf's where that is fair: one process, httptools, log level
warning, the same keep-alive and backlog. The body is read, as any real endpoint must,
but not parsed; the answer is bytes encoded once, so nothing here costs more than the
framework itself.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator

import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.responses import StreamingResponse

COMPLETION = json.dumps(
    {
        "id": "chatcmpl-0123456789abcdef0123456789abcdef",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "pong"},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }
).encode()


def _chunk(delta: dict[str, str], finish: str | None) -> str:
    body = {
        "id": "chatcmpl-0123456789abcdef0123456789abcdef",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    return f"data: {json.dumps(body, separators=(',', ':'))}\n\n"


EVENTS = [
    _chunk({"role": "assistant", "content": ""}, None),
    _chunk({"content": "pong"}, None),
    _chunk({}, "stop"),
    "data: [DONE]\n\n",
]
"""The events raf's `/v1` stream sends for a one-piece answer, sent one by one as it does."""

app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)


@app.get("/health")
async def health() -> Response:
    """Liveness, for the benchmark to know the server is up."""
    return Response(b'{"status":"ok"}', media_type="application/json")


@app.post("/json")
async def completion(request: Request) -> Response:
    """A fixed chat completion."""
    await request.body()
    return Response(COMPLETION, media_type="application/json")


@app.post("/sse")
async def stream(request: Request) -> StreamingResponse:
    """A fixed chat-completion stream."""
    await request.body()

    async def events() -> AsyncIterator[str]:
        for event in EVENTS:
            yield event

    return StreamingResponse(
        events(),
        media_type="text/event-stream",
        headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
    )


def main() -> None:
    port = int(sys.argv[1])
    loop = sys.argv[2] if len(sys.argv) > 2 else "uvloop"
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        loop=loop,
        http="httptools",
        log_level="warning",
        timeout_keep_alive=5,
        backlog=2048,
    )


if __name__ == "__main__":
    main()
