"""The address clients reach a server at, when it differs from where it listens (behind a
proxy or a load balancer): checked once, then used for every URL the server publishes."""

from __future__ import annotations

import re
import string
from urllib.parse import quote, urlsplit

from raf.core.errors import ConfigurationError

EXAMPLE = "https://agents.example.com"

URL_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-._~:/?#[]@!$&()*+,;=%")
"""What a public URL may hold as it is: the characters a URL carries unescaped, less the
apostrophe (it ends a quoted attribute or shell word wherever the URL is pasted); `%`
only as the start of an escape such as `%20`."""
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def _unescaped(url: str) -> tuple[int, str] | None:
    """The first character of `url` that a URL must escape (its 1-based position), if any."""
    for index, char in enumerate(url):
        if char not in URL_CHARACTERS or (char == "%" and not _ESCAPE.match(url, index)):
            return index + 1, char
    return None


def check_public_url(url: str, *, where: str = "public_url") -> str:
    """`url` without a trailing slash, or a `ConfigurationError` saying what to change:
    it must be an absolute http(s) URL with a host, nothing in it that a URL must escape
    (a space, a quote, an angle bracket, a bare `%`), and no credentials, query or
    fragment (all of them would be published in every agent card)."""
    if not isinstance(url, str):
        raise ConfigurationError(f"{where} must be a string such as {EXAMPLE!r}", key_path=where)
    bad = _unescaped(url.strip())
    if bad is not None:
        position, char = bad
        position += len(url) - len(url.lstrip())
        escaped = f" or write it escaped ({quote(char, safe='')})"
        if not char.isascii():
            escaped += ", a host name in its ASCII form (xn--...)"
        raise ConfigurationError(
            f"{where} {url!r} holds {char!r} at character {position}, which a URL cannot "
            f"carry as it is: remove it{escaped}; give an address such as {EXAMPLE!r}",
            key_path=where,
        )
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 -- reading it checks the port is a number in range
    except ValueError as exc:
        raise ConfigurationError(
            f"{where} {url!r} is not a valid URL ({exc}); give one such as {EXAMPLE!r}",
            key_path=where,
        ) from None
    problem = None
    if parts.scheme not in ("http", "https"):
        problem = "must start with http:// or https://"
    elif not parts.hostname:
        problem = "has no host name"
    elif parts.username is not None or parts.password is not None:
        problem = "must not hold a user name or password (it is published to every client)"
    elif parts.query or parts.fragment:
        problem = "must not have a query or fragment"
    if problem:
        raise ConfigurationError(
            f"{where} {url!r} {problem}: give the absolute address clients use, such as "
            f"{EXAMPLE!r} or {EXAMPLE + '/raf'!r} behind a proxy that adds a path",
            key_path=where,
        )
    return parts.geturl().rstrip("/")
