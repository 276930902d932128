"""The parts of a remote MCP server's URL that can carry a credential, and the URL as a
person may see it: scheme, host and port stay (they say which server), the rest that
could be a token becomes `***`.

A server URL often is the credential (`https://mcp.example.com/t/9f8e.../mcp`,
`...?token=...`). What is shown: path segments that are plain words (`mcp`, `sse`,
`api`, `my-server`, `v1`). What is secret: every other path segment, every query value
(and a query key that is not a plain word), a user name and password, and a fragment.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, unquote_plus, urlsplit

__all__ = ["is_plain_segment", "shown_url", "url_secrets"]

_WORD = r"(?:[a-z]{1,16}|[A-Z][a-z]{1,15}|[A-Z]{1,6}|v\d{1,2})"
_PLAIN = re.compile(rf"{_WORD}(?:[-_.]{_WORD}){{0,4}}")
"""A path segment or query key that names something rather than holding a secret: up to
five words of letters (lower case, capitalised, or a short acronym) or a version (`v2`),
joined by `-`, `_` or `.`. Digits elsewhere, mixed case inside a word and long runs
of letters look like a token and are masked."""

MASK = "***"


def is_plain_segment(segment: str) -> bool:
    """Whether a path segment (or query key) is a plain name that can be shown."""
    return _PLAIN.fullmatch(segment) is not None


def _split(url: str) -> tuple[str, str, str, str, str, str] | None:
    """(scheme, userinfo, host and port, path, query, fragment), or None when `url`
    does not parse."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    userinfo, at, hostport = parts.netloc.rpartition("@")
    return parts.scheme, userinfo if at else "", hostport, parts.path, parts.query, parts.fragment


def _query_items(query: str) -> list[tuple[str, str | None]]:
    """`key=value` pairs of a query (value None for an item without `=`)."""
    items: list[tuple[str, str | None]] = []
    for item in query.replace(";", "&").split("&"):
        if item:
            key, eq, value = item.partition("=")
            items.append((key, value if eq else None))
    return items


def url_secrets(url: str) -> list[str]:
    """The values in `url` that must never be shown: token-like path segments, query
    values (and keys that are not plain words), user name and password, fragment; each
    also as it reads percent-decoded. A URL that does not parse is a secret whole."""
    split = _split(url)
    if split is None:
        return [url]
    _scheme, userinfo, _host, path, query, fragment = split
    found: list[str] = []
    if userinfo:
        found += [userinfo, *userinfo.split(":", 1)]
    found += [s for s in path.split("/") if s and not is_plain_segment(s)]
    for key, value in _query_items(query):
        if value is None or not is_plain_segment(key):
            found.append(key)
        if value:
            found.append(value)
    if fragment:
        found.append(fragment)
    decoded = [unquote(v) for v in found] + [unquote_plus(v) for v in found]
    return list(dict.fromkeys(v for v in found + decoded if v))


def shown_url(url: str) -> str:
    """`url` as messages show it: scheme, host and port, plain path segments and query
    keys; every part `url_secrets` names is `***`."""
    split = _split(url)
    if split is None:
        return MASK
    scheme, userinfo, hostport, path, query, fragment = split
    shown = f"{scheme}://" if scheme else ""
    shown += f"{MASK}@" if userinfo else ""
    shown += hostport
    shown += "/".join(s if not s or is_plain_segment(s) else MASK for s in path.split("/"))
    if query:
        items = []
        for key, value in _query_items(query):
            if value is None or not is_plain_segment(key):
                items.append(MASK)
            else:
                items.append(f"{key}={MASK if value else ''}")
        shown += "?" + "&".join(items)
    if fragment:
        shown += f"#{MASK}"
    return shown
