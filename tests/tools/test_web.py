"""web_fetch and web_search against real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest

from raf.core.errors import ToolExecutionError
from raf.core.tools import ToolContext
from raf.tools.web import (
    BraveBackend,
    DuckDuckGoBackend,
    SearxngBackend,
    TavilyBackend,
    WebFetch,
    WebSearch,
    check_address,
    default_backend,
    web_tools,
)

PAGE = """<!doctype html><html><head><title>Test page</title><style>p{}</style></head>
<body><script>alert('x')</script><h1>Hello</h1><p>Some <b>bold</b> text and a
<a href="/other">link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>"""

DDG = """<html><body>
<div class="result"><a class="result__a"
 href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fa&rut=x">Example A</a>
<a class="result__snippet">First snippet</a></div>
<div class="result"><a class="result__a" href="https://example.org/b">Example B</a></div>
</body></html>"""


class Handler(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []  # noqa: RUF012

    def log_message(self, *args: Any) -> None:
        return None

    def _send(self, code: int, body: bytes, ctype: str = "text/html; charset=utf-8") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, where: str) -> None:
        self.send_response(302)
        self.send_header("Location", where)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        Handler.seen.append({"path": self.path, "body": body, "headers": dict(self.headers)})
        if self.path.startswith("/ddg"):
            self._send(200, DDG.encode())
        elif self.path.startswith("/tavily"):
            data = {"results": [{"title": "T", "url": "https://t.example", "content": "c"}]}
            self._send(200, json.dumps(data).encode(), "application/json")
        else:
            self._send(404, b"no")

    def do_GET(self) -> None:
        Handler.seen.append({"path": self.path, "headers": dict(self.headers)})
        port = cast(Any, self.server).server_port
        path = self.path
        if path == "/page":
            self._send(200, PAGE.encode())
        elif path == "/plain":
            self._send(200, b"just text", "text/plain")
        elif path == "/deep":
            deep = "<html><body>" + "<div>" * 5000 + "deep text" + "</div>" * 5000
            self._send(200, deep.encode())
        elif path.startswith("/r/"):
            n = int(path.split("/")[2])
            self._redirect("/page" if n == 0 else f"/r/{n - 1}")
        elif path == "/loop":
            self._redirect("/loop")
        elif path == "/to-localhost":
            self._redirect(f"http://localhost:{port}/page")
        elif path == "/to-metadata":
            self._redirect("http://169.254.169.254/latest/meta-data/")
        elif path == "/huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            chunk = b"x" * 65536
            try:
                for _ in range(400):  # 25 MiB
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif path == "/slow":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b"drip\n")
                    self.wfile.flush()
                    time.sleep(0.2)
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif path == "/binary":
            self._send(200, b"\x89PNG....", "image/png")
        elif path == "/missing":
            self._send(404, b"gone")
        elif path.startswith("/search"):
            data: dict[str, Any] = {
                "query": "q",
                "results": [
                    {"title": f"R{i}", "url": f"https://r{i}.example", "content": f"s{i}"}
                    for i in range(10)
                ],
            }
            self._send(200, json.dumps(data).encode(), "application/json")
        elif path.startswith("/brave"):
            brave: dict[str, Any] = {
                "web": {"results": [{"title": "B", "url": "https://b", "description": "d"}]}
            }
            self._send(200, json.dumps(brave).encode(), "application/json")
        else:
            self._send(404, b"no")


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    Handler.seen.clear()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def local(**kwargs: Any) -> WebFetch:
    return WebFetch(allow_private=True, **kwargs)


async def test_fetch_page_as_markdown(server: str):
    result = await local().invoke({"url": f"{server}/page"}, ToolContext())
    value = result.value
    assert value["title"] == "Test page" and value["status"] == 200
    assert "# Hello" in value["content"] and "**bold**" in value["content"]
    assert "[link](/other)" in value["content"] and "* one" in value["content"]
    assert "alert" not in value["content"] and "p{}" not in value["content"]
    assert Handler.seen[-1]["headers"]["Host"] == server.removeprefix("http://")


async def test_a_deeply_nested_page_still_gives_text(server: str):
    result = await local().fetch(f"{server}/deep")
    assert "deep text" in result["content"]


async def test_plain_text_and_errors(server: str):
    assert (await local().fetch(f"{server}/plain"))["content"] == "just text"
    with pytest.raises(ToolExecutionError, match="HTTP 404"):
        await local().fetch(f"{server}/missing")
    with pytest.raises(ToolExecutionError, match="image/png, not text"):
        await local().fetch(f"{server}/binary")


async def test_redirect_chain_and_limit(server: str):
    ok = await local(max_redirects=3).fetch(f"{server}/r/2")
    assert ok["url"].endswith("/page") and ok["title"] == "Test page"
    with pytest.raises(ToolExecutionError, match="more than 3 redirects"):
        await local(max_redirects=3).fetch(f"{server}/r/5")
    with pytest.raises(ToolExecutionError, match="redirects"):
        await local().fetch(f"{server}/loop")


async def test_huge_body_is_cut(server: str):
    result = await local(max_bytes=100_000, max_chars=50_000).fetch(f"{server}/huge")
    assert len(result["content"]) == 50_000 and "cut" in result["note"]


async def test_slow_body_times_out(server: str):
    start = time.monotonic()
    with pytest.raises(ToolExecutionError, match="longer than 1s"):
        await local(timeout_s=1).fetch(f"{server}/slow")
    assert time.monotonic() - start < 5


async def test_private_addresses_are_refused_by_default(server: str):
    result = await WebFetch().invoke({"url": f"{server}/page"}, ToolContext())
    assert "SSRF" in (result.error or "")
    assert Handler.seen == []  # nothing was sent
    for url in (
        "http://localhost/",
        "http://[::1]/",
        "http://10.1.2.3/",
        "http://169.254.169.254/latest/meta-data/",
        "http://0.0.0.0/",
        "http://[::ffff:127.0.0.1]/",
        "http://2130706433/",
        "file:///etc/passwd",
        "ftp://example.org/",
        "http://user:pw@example.org/",
    ):
        with pytest.raises(ToolExecutionError):
            await WebFetch().fetch(url)


async def test_every_redirect_hop_is_checked(server: str):
    only_ip = WebFetch(allow_hosts=["127.0.0.1"])
    assert (await only_ip.fetch(f"{server}/page"))["title"] == "Test page"
    with pytest.raises(ToolExecutionError, match="SSRF"):
        await only_ip.fetch(f"{server}/to-localhost")
    with pytest.raises(ToolExecutionError, match="SSRF"):
        await only_ip.fetch(f"{server}/to-metadata")
    assert all(s["path"] != "/page" for s in Handler.seen[1:])


def test_check_address():
    check_address("93.184.216.34", allow_private=False)
    for ip in ("127.0.0.1", "10.0.0.1", "192.168.1.1", "172.16.0.1", "169.254.1.1", "::1",
               "fe80::1", "fc00::1", "100.64.0.1", "224.0.0.1", "::ffff:10.0.0.1"):  # fmt: skip
        with pytest.raises(ToolExecutionError):
            check_address(ip, allow_private=False)
    check_address("127.0.0.1", allow_private=True)
    # IPv4 embedded in 6to4 and Teredo addresses is judged too
    for ip in ("2002:7f00:1::", "2002:a00:1::1", "2002:a9fe:a9fe::"):
        with pytest.raises(ToolExecutionError):
            check_address(ip, allow_private=False)
    check_address("2002:5db8:d822::1", allow_private=False)  # 6to4 of a public address


async def test_malformed_urls_are_results_not_exceptions():
    for url in ("http://example.org:99999/", "http://[::1/", "http:///nohost"):
        result = await WebFetch().invoke({"url": url}, ToolContext())
        assert result.is_error and url in (result.error or ""), result.error


async def test_searxng_backend(server: str):
    tool = WebSearch(SearxngBackend(server))
    result = await tool.invoke({"query": "raf agents", "count": 3}, ToolContext())
    assert result.value == [
        {"title": f"R{i}", "url": f"https://r{i}.example", "snippet": f"s{i}"} for i in range(3)
    ]
    assert "format=json" in Handler.seen[-1]["path"] and "q=raf+agents" in Handler.seen[-1]["path"]


async def test_duckduckgo_backend(server: str):
    hits = await WebSearch(DuckDuckGoBackend(f"{server}/ddg")).search("x")
    assert [(h.title, h.url) for h in hits] == [
        ("Example A", "https://example.org/a"),
        ("Example B", "https://example.org/b"),
    ]
    assert hits[0].snippet == "First snippet"
    assert Handler.seen[-1]["body"] == b"q=x"


async def test_keyed_backends(server: str):
    brave = await WebSearch(BraveBackend("k1", endpoint=f"{server}/brave")).search("x")
    assert brave[0].url == "https://b"
    assert Handler.seen[-1]["headers"]["X-Subscription-Token"] == "k1"
    tavily = await WebSearch(TavilyBackend("k2", endpoint=f"{server}/tavily")).search("x")
    assert tavily[0].title == "T"
    assert Handler.seen[-1]["headers"]["Authorization"] == "Bearer k2"
    assert "k1" not in repr(BraveBackend("k1"))


async def test_search_errors_are_results(server: str):
    tool = WebSearch(SearxngBackend(f"{server}/nothing-here"))
    result = await tool.invoke({"query": "x"}, ToolContext())
    assert "HTTP 404" in (result.error or "")


def test_default_backend(monkeypatch: pytest.MonkeyPatch):
    for name in ("SEARXNG_URL", "BRAVE_API_KEY", "TAVILY_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(default_backend(), DuckDuckGoBackend)
    monkeypatch.setenv("TAVILY_API_KEY", "t")
    assert isinstance(default_backend(), TavilyBackend)
    assert isinstance(default_backend({"url": "http://127.0.0.1:1"}), SearxngBackend)
    assert isinstance(default_backend({"backend": "brave", "apiKey": "b"}), BraveBackend)
    with pytest.raises(ToolExecutionError, match="unknown search backend"):
        default_backend({"backend": "altavista"})
    assert [t.name for t in web_tools()] == ["web_search", "web_fetch"]
