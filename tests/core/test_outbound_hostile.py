"""The hostile URL corpus against the one outbound guard: each is refused before a byte
is sent, and the loopback server behind most of them receives nothing."""

from __future__ import annotations

import pytest

from raf.core import outbound
from tests.loopback_http import loopback_server

HOSTILE = [
    "http://127.0.0.1:{port}/",
    "http://localhost:{port}/",
    "http://127.1:{port}/",  # short form
    "http://2130706433:{port}/",  # decimal
    "http://0x7f000001:{port}/",  # hexadecimal
    "http://0177.0.0.1:{port}/",  # octal
    "http://[::ffff:127.0.0.1]:{port}/",  # IPv4-mapped IPv6
    "http://[::ffff:7f00:1]:{port}/",
    "http://0.0.0.0:{port}/",
    "http://[::]:{port}/",
    "http://[::1]:{port}/",
    "http://127.0.0.1.:{port}/",  # trailing dot
    "http://LOCALHOST:{port}/",
    "http://169.254.169.254/latest/meta-data/",  # cloud metadata
    "http://[fd00:ec2::254]/",  # AWS metadata over IPv6 (unique local)
    "http://10.0.0.1/",
    "http://192.168.0.1/",
    "http://172.16.0.1/",
    "http://100.64.0.1/",  # shared address space
    "http://[2002:7f00:1::]/",  # 6to4 carrying 127.0.0.1
    "http://[fe80::1]/",
    "http://224.0.0.1/",
    "http://user:pw@127.0.0.1:{port}/",  # credentials
    "file:///etc/passwd",
    "ftp://127.0.0.1:{port}/",
    "gopher://127.0.0.1:{port}/_",
    "http:///no-host",
    "http://127.0.0.1:99999/",  # a port that does not exist
]


@pytest.mark.parametrize("template", HOSTILE)
async def test_each_hostile_url_is_refused_and_nothing_is_sent(template: str) -> None:
    with loopback_server() as server:
        port = server.url.rsplit(":", 1)[1]
        url = template.format(port=port)
        with pytest.raises(outbound.OutboundRefused):
            await outbound.check_url(url, outbound.policy())
        async with outbound.guarded_async_client(outbound.policy(), timeout=5) as client:
            with pytest.raises(Exception):  # noqa: B017 - refused or not even a request
                await client.get(url)
        assert server.paths == []


def test_the_corpus_is_large_enough() -> None:
    assert len(HOSTILE) >= 25
