"""Every fetcher raf has passes the one outbound guard, each against real loopback
servers: a URL the user configured is reached (loopback included); a URL from inside a
fetched document, from the conversation or from a redirect reaches no loopback service,
and that service receives no request."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from raf.core import outbound
from raf.core.errors import ConfigurationError
from raf.core.tools import ToolContext
from raf.decl.workflow import DeclWorkflowBuilder
from raf.testing import ScriptedChatClient
from raf.tools.mcp.client import McpClient
from raf.tools.openapi import OpenApiToolset, load_spec
from raf.tools.web import WebSearch
from raf.tools.web_search import SearxngBackend
from tests.loopback_http import loopback_server


def spec(server_url: str | None = None, ref: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "object"} if ref is None else {"$ref": ref}
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/items": {
                "get": {
                    "operationId": "listItems",
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {"application/json": {"schema": item}},
                        }
                    },
                }
            }
        },
    }
    if server_url:
        doc["servers"] = [{"url": server_url}]
    return doc


# -- the guard itself -------------------------------------------------------------------


def test_the_rule_trusts_only_what_the_user_wrote() -> None:
    rule = outbound.policy(trusted=["http://127.0.0.1:8000/api/spec.json"])
    assert rule.allows_private("http://127.0.0.1:8000/other", "127.0.0.1")
    assert not rule.allows_private("http://127.0.0.1:8001/", "127.0.0.1")  # another port
    assert not rule.allows_private("https://127.0.0.1:8000/", "127.0.0.1")  # another scheme
    assert not rule.allows_private("http://localhost:8000/", "localhost")  # another name
    assert outbound.policy(allow_hosts=["LocalHost"]).allows_private(
        "http://localhost/", "localhost"
    )
    assert outbound.origin_of("HTTP://Example.org/x") == "http://example.org:80"


async def test_a_redirect_from_a_trusted_origin_to_another_loopback_one_is_refused() -> None:
    with loopback_server() as inner, loopback_server() as configured:
        configured.redirect("/go", f"{inner.url}/secret")
        rule = outbound.policy(trusted=[configured.url])
        async with outbound.guarded_async_client(rule, follow_redirects=True) as client:
            assert (await client.get(f"{configured.url}/fine")).status_code == 200
            with pytest.raises(Exception, match="SSRF") as caught:
                await client.get(f"{configured.url}/go")
        assert outbound.refusal_in(caught.value) is not None
        assert inner.paths == []
        assert configured.paths == ["/fine", "/go"]


# -- OpenAPI ----------------------------------------------------------------------------


async def test_a_remote_spec_ref_to_an_internal_url_is_not_inlined() -> None:
    with loopback_server() as internal, loopback_server() as configured:
        internal.json("/secret.json", {"type": "string", "description": "internal secret"})
        configured.json("/spec.json", spec(ref=f"{internal.url}/secret.json"))
        with pytest.raises(ConfigurationError, match="SSRF"):
            await load_spec(f"{configured.url}/spec.json")
        assert internal.paths == []


async def test_a_remote_spec_cannot_name_a_local_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"type": "string", "description": "local secret"}), "utf-8")
    with loopback_server() as configured:
        configured.json("/spec.json", spec(ref=secret.as_uri()))
        with pytest.raises(ConfigurationError, match="cannot point at local files"):
            await load_spec(f"{configured.url}/spec.json")


async def test_a_relative_ref_within_the_configured_origin_is_inlined() -> None:
    with loopback_server() as configured:
        configured.json("/item.json", {"type": "string", "description": "an item"})
        configured.json("/spec.json", spec(ref="item.json"))
        doc, _ = await load_spec(f"{configured.url}/spec.json")
        schema = doc["paths"]["/items"]["get"]["responses"]["200"]["content"]
        assert schema["application/json"]["schema"]["description"] == "an item"


async def test_operations_reach_a_server_the_remote_spec_names_only_when_configured() -> None:
    with loopback_server() as internal, loopback_server() as configured:
        configured.json("/spec.json", spec(server_url=internal.url))
        tools = await OpenApiToolset(f"{configured.url}/spec.json").load()
        result = await tools[0].invoke({}, ToolContext())
        assert result.error is not None and "SSRF" in result.error
        assert internal.paths == []
        given = await OpenApiToolset(f"{configured.url}/spec.json", base_url=internal.url).load()
        assert (await given[0].invoke({}, ToolContext())).error is None
        assert internal.paths == ["/items"]
        listed = OpenApiToolset(f"{configured.url}/spec.json", allow_hosts=["127.0.0.1"])
        assert (await (await listed.load())[0].invoke({}, ToolContext())).error is None
        assert internal.paths == ["/items", "/items"]


async def test_a_spec_of_the_users_own_reaches_its_loopback_server() -> None:
    with loopback_server() as local:
        tools = await OpenApiToolset(spec(server_url=local.url)).load()
        assert (await tools[0].invoke({}, ToolContext())).error is None
        assert local.paths == ["/items"]


# -- HttpRequestAction ------------------------------------------------------------------


def http_workflow(url: str, allow: list[str] | None = None) -> Any:
    text = (
        "kind: workflow\nname: fetch\ntrigger:\n  kind: OnConversationStart\n  id: t\n"
        f"  actions:\n    - kind: HttpRequestAction\n      id: get\n      url: {json.dumps(url)}\n"
        "      response: Local.reply\n"
        "    - kind: SendActivity\n      id: say\n      activity: done\n"
    )
    builder = DeclWorkflowBuilder().from_yaml_str(text)
    builder.with_chat_client(ScriptedChatClient([]))
    if allow:
        builder.with_http_allow_hosts(allow)
    return builder.build()


async def test_a_url_from_the_conversation_reaches_no_loopback_service() -> None:
    with loopback_server() as internal:
        workflow = http_workflow("=System.LastMessage.Text")
        with pytest.raises(Exception, match="SSRF"):
            await workflow.run(f"{internal.url}/admin")
        assert internal.paths == []
        allowed = http_workflow("=System.LastMessage.Text", allow=["127.0.0.1"])
        assert (await allowed.run(f"{internal.url}/admin")).outputs == ["done"]
        assert internal.paths == ["/admin"]


async def test_a_literal_url_is_trusted_but_its_redirect_elsewhere_is_not() -> None:
    with loopback_server() as internal, loopback_server() as configured:
        configured.redirect("/hop", f"{internal.url}/secret")
        assert (await http_workflow(f"{configured.url}/ok").run("hi")).outputs == ["done"]
        with pytest.raises(Exception, match="SSRF"):
            await http_workflow(f"{configured.url}/hop").run("hi")
        assert internal.paths == []


# -- web_search -------------------------------------------------------------------------


async def test_web_search_reaches_its_configured_local_backend_only() -> None:
    with loopback_server() as internal, loopback_server() as searx:
        searx.json("/search", {"results": [{"title": "t", "url": "https://e.org", "content": "c"}]})
        hits = await WebSearch(SearxngBackend(searx.url)).search("q")
        assert [h.title for h in hits] == ["t"]
        searx.redirect("/search", f"{internal.url}/search")
        with pytest.raises(Exception, match="SSRF"):
            await WebSearch(SearxngBackend(searx.url)).search("q")
        assert internal.paths == []


# -- MCP over HTTP and its OAuth discovery -----------------------------------------------


async def test_mcp_oauth_discovery_reaches_no_other_loopback_service() -> None:
    with loopback_server() as internal, loopback_server() as configured:
        metadata = f"{internal.url}/.well-known/oauth-protected-resource"

        def unauthorized(_path: str) -> tuple[int, dict[str, str], bytes]:
            header = f'Bearer resource_metadata="{metadata}"'
            return 401, {"WWW-Authenticate": header}, b""

        configured.routes["/mcp"] = unauthorized
        client = McpClient(
            {"name": "remote", "url": f"{configured.url}/mcp", "oauth": {}, "connect_timeout": 5}
        )
        try:
            with pytest.raises(Exception):  # noqa: B017 - the flow fails as the SDK reports it
                await asyncio.wait_for(client.list_tools(), timeout=30)
        finally:
            await client.aclose()
        assert configured.paths  # the configured server was reached
        assert internal.paths == []  # the metadata URL it named was not
