"""OpenAPI tools against real servers: Prism mocking the petstore document, and a
FastAPI app of our own (OpenAPI 3.1 served by URL, 3.0 YAML files with relative refs)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from raf.core.errors import ConfigurationError, ToolExecutionError
from raf.core.tools import Tool, ToolContext
from raf.tools.openapi import ApiKeyAuth, BearerAuth, OpenApiToolset, load_spec, openapi_tools

from ..peers import PEERS, free_port, npm_bin, serve
from .openapi_app import running_app

EXAMPLES = PEERS / "node_modules" / "@readme" / "oas-examples"


def by_name(tools: list[Tool]) -> dict[str, Tool]:
    return {t.name: t for t in tools}


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    with running_app() as url:
        yield url


@pytest.fixture(scope="module")
def prism() -> Iterator[str]:
    spec = EXAMPLES / "3.0" / "json" / "petstore.json"
    port = free_port()
    cmd = [npm_bin("prism"), "mock", "-h", "127.0.0.1", "-p", str(port), str(spec)]
    with serve(cmd, port, timeout=60):
        yield f"http://127.0.0.1:{port}"


async def test_petstore_30_and_31_documents_become_tools() -> None:
    tools30 = by_name(await openapi_tools(EXAMPLES / "3.0" / "json" / "petstore.json"))
    tools31 = by_name(await openapi_tools(str(EXAMPLES / "3.1" / "yaml" / "petstore.yaml")))
    assert len(tools30) == len(tools31) == 20
    get_pet = tools30["getPetById"]
    assert get_pet.kind == "openapi"
    assert get_pet.parameters["required"] == ["petId"]
    add_pet = tools31["addPet"].parameters["properties"]["body"]
    assert "$ref" not in json.dumps(add_pet) and "photoUrls" in add_pet["properties"]


async def test_prism_petstore_with_api_key_and_bearer(
    prism: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PET_KEY", "special-key")
    monkeypatch.setenv("PET_TOKEN", "t0ken")
    spec = EXAMPLES / "3.0" / "json" / "petstore.json"
    toolset = OpenApiToolset(
        spec,
        base_url=prism,
        operations=["getPetById", "findPetsByStatus", "placeOrder"],
        auth=[ApiKeyAuth(name="api_key", env="PET_KEY"), BearerAuth(env="PET_TOKEN")],
        validate_responses=True,
    )
    tools = by_name(await toolset.load())
    assert set(tools) == {"getPetById", "findPetsByStatus", "placeOrder"}
    pet = await tools["getPetById"].invoke({"petId": 7}, ToolContext())
    assert not pet.is_error, pet.error
    assert pet.value["name"] == "doggie"
    found = await tools["findPetsByStatus"].invoke({"status": ["available"]}, ToolContext())
    assert not found.is_error, found.error
    assert isinstance(found.value, list)
    order = await tools["placeOrder"].invoke(
        {"body": {"petId": 7, "quantity": 1, "status": "placed"}}, ToolContext()
    )
    assert not order.is_error, order.error
    assert "petId" in order.value


async def test_prism_rejects_missing_credentials(prism: str) -> None:
    spec = EXAMPLES / "3.0" / "json" / "petstore.json"
    tools = by_name(await openapi_tools(spec, base_url=prism, operations=["getPetById"]))
    result = await tools["getPetById"].invoke({"petId": 7}, ToolContext())
    assert result.is_error and "HTTP 401" in (result.error or "")


async def test_fastapi_31_by_url_path_query_header_and_body(api: str) -> None:
    tools = by_name(await openapi_tools(f"{api}/openapi.json", validate_responses=True))
    got = await tools["get_item"].invoke(
        {"item_id": 1, "verbose": True, "x-trace": "t-9"}, ToolContext()
    )
    assert got.value == {"id": 1, "name": "lamp (t-9)", "price": 12.5}
    created = await tools["create_item"].invoke(
        {"body": {"name": "desk", "price": 99}}, ToolContext()
    )
    assert created.value["status"] == 201 and created.value["body"]["name"] == "desk"
    missing = await tools["get_item"].invoke({"item_id": 999}, ToolContext())
    assert (
        missing.is_error
        and "HTTP 404" in (missing.error or "")
        and "no item 999" in (missing.error or "")
    )
    wrong = await tools["wrong"].invoke({}, ToolContext())
    assert wrong.is_error and "does not match its schema" in (wrong.error or "")


async def test_fastapi_auth_from_environment(api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_TOKEN", "s3cret")
    monkeypatch.setenv("API_KEY", "k-123")
    url = f"{api}/openapi.json"
    secure = by_name(await openapi_tools(url, auth=BearerAuth(env="API_TOKEN")))["secure"]
    assert (await secure.invoke({}, ToolContext())).value == {"ok": "bearer"}
    keyed = by_name(await openapi_tools(url, auth=ApiKeyAuth(name="X-API-Key", env="API_KEY")))[
        "keyed"
    ]
    assert (await keyed.invoke({}, ToolContext())).value == {"ok": "key"}
    static = await openapi_tools(url, bearer_token="s3cret", approval_required=True)
    wrapped = by_name(static)["secure"]
    assert wrapped.requires_approval
    assert (await wrapped.invoke({}, ToolContext())).value == {"ok": "bearer"}
    monkeypatch.delenv("API_KEY")
    with pytest.raises(ToolExecutionError, match="API_KEY is not set"):
        await keyed.invoke({}, ToolContext())


async def test_a_changing_call_sends_its_idempotency_key(api: str) -> None:
    tools = by_name(await openapi_tools(f"{api}/openapi.json"))
    context = ToolContext(idempotency_key="raf-0123456789abcdef")
    paid = await tools["pay"].invoke({}, context)
    again = await tools["pay"].invoke({}, context)  # a retried call: the same key
    assert paid.value == again.value == {"key": "raf-0123456789abcdef"}
    listed = await tools["list_payments"].invoke({}, context)
    assert listed.value == {"key": None}  # a GET changes nothing: no key is sent
    bare = await tools["pay"].invoke({}, ToolContext())
    assert bare.value == {"key": None}


async def test_timeout_and_response_cap(api: str) -> None:
    url = f"{api}/openapi.json"
    tools = by_name(await openapi_tools(url, timeout=1.0, max_response_bytes=10_000))
    slow = await tools["slow"].invoke({}, ToolContext())
    assert slow.is_error and "no answer within 1s" in (slow.error or "")
    big = await tools["big"].invoke({}, ToolContext())
    assert big.is_error and "10000-byte cap" in (big.error or "")


async def test_30_yaml_with_relative_file_refs(api: str, tmp_path: Path) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "item.yaml").write_text(
        "Item:\n  type: object\n  required: [id, name]\n  properties:\n"
        "    id: {type: integer}\n    name: {type: string}\n    price: {type: number}\n"
        "    note: {type: string, nullable: true}\n"
        "ItemId:\n  name: item_id\n  in: path\n  required: true\n  schema: {type: integer}\n",
        encoding="utf-8",
    )
    (tmp_path / "api.yaml").write_text(
        f"""openapi: 3.0.3
info: {{title: items, version: '1'}}
servers: [{{url: '{api}'}}]
paths:
  /items/{{item_id}}:
    parameters:
      - $ref: 'schemas/item.yaml#/ItemId'
    get:
      operationId: fetchItem
      summary: Fetch an item
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {{$ref: '#/components/schemas/Item'}}
components:
  schemas:
    Item: {{$ref: 'schemas/item.yaml#/Item'}}
""",
        encoding="utf-8",
    )
    tools = by_name(await openapi_tools(tmp_path / "api.yaml", validate_responses=True))
    fetch = tools["fetchItem"]
    assert fetch.parameters["properties"]["item_id"]["type"] == "integer"
    result = await fetch.invoke({"item_id": 1}, ToolContext())
    assert result.value["name"] == "lamp"


async def test_recursive_refs_stay_finite_and_bad_documents_are_reported(tmp_path: Path) -> None:
    doc, _ = await load_spec(EXAMPLES / "3.0" / "json" / "circular.json")
    assert "recursive reference" in json.dumps(doc)
    with pytest.raises(ConfigurationError, match="not an OpenAPI 3 document but Swagger 2.0"):
        await load_spec({"swagger": "2.0"})
    with pytest.raises(ConfigurationError, match="cannot fetch OpenAPI document: ConnectError"):
        await load_spec(f"http://127.0.0.1:{free_port()}/openapi.json")
    with pytest.raises(ConfigurationError, match="got int"):
        OpenApiToolset(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="unknown operation"):
        await openapi_tools(EXAMPLES / "3.0" / "json" / "petstore.json", operations=["nope"])
    with pytest.raises(ConfigurationError, match="not found"):
        await load_spec(tmp_path / "missing.yaml")
