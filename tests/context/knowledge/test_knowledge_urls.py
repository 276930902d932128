"""Knowledge sources by URL pass raf's outbound guard: the URL the user configured is
fetched even on loopback, but a redirect to another private address is refused before
any byte is sent there, and a body past the cap is not read to its end."""

from __future__ import annotations

import pytest

from raf.context.knowledge.loaders import load_url
from raf.core.errors import ConfigurationError
from tests.loopback_http import loopback_server


def test_the_configured_url_is_fetched_even_on_loopback() -> None:
    with loopback_server() as server:
        server.routes["/faq.md"] = lambda _p: (200, {"Content-Type": "text/markdown"}, b"# FAQ")
        document = load_url(f"{server.url}/faq.md")
    assert document.text == "# FAQ" and document.kind == "markdown"


def test_a_redirect_to_another_private_address_is_refused() -> None:
    with loopback_server() as internal, loopback_server() as source:
        internal.routes["/secret"] = lambda _p: (200, {}, b"metadata")
        source.redirect("/doc", f"{internal.url}/secret")
        with pytest.raises(ConfigurationError) as info:
            load_url(f"{source.url}/doc")
        assert internal.paths == []  # the internal server heard nothing
    assert "cannot fetch knowledge source" in str(info.value)
    assert "127.0.0.1" in str(info.value)


def test_a_body_past_the_cap_is_refused() -> None:
    with loopback_server() as server:
        server.routes["/big.txt"] = lambda _p: (200, {}, b"x" * 5000)
        with pytest.raises(ConfigurationError, match="larger than 1000 bytes"):
            load_url(f"{server.url}/big.txt", max_bytes=1000)
