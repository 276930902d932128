"""A small FastAPI app the OpenAPI tests call on loopback (run by uvicorn in a thread)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator

import uvicorn
from fastapi import FastAPI, Header, HTTPException
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel

from ..peers import free_port

app = FastAPI(title="raf test API", version="1.0")
ITEMS: dict[int, dict[str, object]] = {1: {"id": 1, "name": "lamp", "price": 12.5}}


class NewItem(BaseModel):
    name: str
    price: float


class Item(BaseModel):
    id: int
    name: str
    price: float


@app.get("/items/{item_id}", operation_id="get_item", response_model=Item)
def get_item(item_id: int, verbose: bool = False, x_trace: str | None = Header(None)) -> object:
    """Fetch one item."""
    if item_id not in ITEMS:
        raise HTTPException(status_code=404, detail=f"no item {item_id}")
    item = dict(ITEMS[item_id])
    if verbose and x_trace:
        item["name"] = f"{item['name']} ({x_trace})"
    return item


@app.post("/items", operation_id="create_item", response_model=Item, status_code=201)
def create_item(item: NewItem) -> object:
    """Create an item."""
    new_id = max(ITEMS) + 1
    ITEMS[new_id] = {"id": new_id, **item.model_dump()}
    return ITEMS[new_id]


@app.post("/payments", operation_id="pay")
def pay(idempotency_key: str | None = Header(None)) -> dict[str, str | None]:
    """Echoes the idempotency key it received, as a payments API would key on it."""
    return {"key": idempotency_key}


@app.get("/payments", operation_id="list_payments")
def list_payments(idempotency_key: str | None = Header(None)) -> dict[str, str | None]:
    return {"key": idempotency_key}


@app.get("/secure", operation_id="secure")
def secure(authorization: str | None = Header(None)) -> dict[str, str]:
    if authorization != "Bearer s3cret":
        raise HTTPException(status_code=401, detail="bad token")
    return {"ok": "bearer"}


@app.get("/keyed", operation_id="keyed")
def keyed(x_api_key: str | None = Header(None)) -> dict[str, str]:
    if x_api_key != "k-123":
        raise HTTPException(status_code=403, detail="bad key")
    return {"ok": "key"}


@app.get("/big", operation_id="big", response_class=PlainTextResponse)
def big() -> str:
    return "x" * 200_000


@app.get("/slow", operation_id="slow")
async def slow() -> dict[str, str]:
    await asyncio.sleep(3)
    return {"ok": "slow"}


@app.get("/wrong", operation_id="wrong", response_model=Item)
def wrong() -> JSONResponse:
    return JSONResponse({"id": "not-a-number", "name": 3})


@contextlib.contextmanager
def running_app() -> Iterator[str]:
    """Serve the app on 127.0.0.1 in a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
