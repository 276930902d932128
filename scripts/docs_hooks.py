"""MkDocs hooks for the raf site: pages whose text is generated from the code, so the
reference cannot drift from what raf does.

A page asks for generated text with a line `<!-- generated: NAME -->`:
`python-api` (every name in `raf.__all__`, rendered by mkdocstrings), `cli` (the help of
every `raf` command), `document-schema` (the top-level keys of an agent document),
`http-api` (the operations of `raf serve`'s OpenAPI document), and `file: PATH` (a file
of the repository, such as SECURITY.md or CHANGELOG.md, included as it is).

The site builds with only the `docs` extra installed: the Python reference is read from
the source by mkdocstrings, and the HTTP reference, which needs the `serve` extra to
generate, falls back to `scripts/http_api.md`, the text last generated (a test keeps it
equal to what the server publishes; `python scripts/docs_hooks.py --write-http-api`
writes it anew).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MARK = re.compile(r"^<!-- generated: (?P<name>[a-z-]+)(?:: (?P<arg>[^>]+?))? -->$", re.M)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each generation mark with its text."""
    if str(ROOT / "src") not in sys.path:
        sys.path.insert(0, str(ROOT / "src"))
    return MARK.sub(lambda m: _generate(m.group("name"), m.group("arg")), markdown)


def _generate(name: str, arg: str | None) -> str:
    if name == "python-api":
        return python_api()
    if name == "cli":
        return cli_reference()
    if name == "document-schema":
        return document_schema()
    if name == "http-api":
        return http_api_text()
    if name == "file" and arg:
        text = (ROOT / arg.strip()).read_text(encoding="utf-8")
        return re.sub(r"^# .*\n", "", text, count=1)  # the page has its own title
    raise ValueError(f"unknown generated section {name!r}")


def python_api() -> str:
    """One mkdocstrings block per public name, grouped by the package it comes from (read
    from raf's table of exports, so no optional dependency is imported)."""
    import raf

    groups: dict[str, list[str]] = {}
    for name in sorted(raf.__all__):
        module = raf._EXPORTS.get(name, "raf")
        package = ".".join(module.split(".")[:2])
        groups.setdefault(package, []).append(name)
    out: list[str] = []
    for package in sorted(groups):
        out.append(f"## `{package}`\n")
        for name in groups[package]:
            out.append(f"::: raf.{name}\n")
    return "\n".join(out)


def _walk(parser: argparse.ArgumentParser, prefix: str) -> list[tuple[str, str]]:
    found = [(prefix, parser.format_help())]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _walk(sub, f"{prefix} {name}")
    return found


def cli_reference() -> str:
    """The `--help` text of `raf` and every subcommand, in the order they are registered."""
    from raf.cli.main import build_parser

    out: list[str] = []
    for command, text in _walk(build_parser(), "raf"):
        level = "##" if command.count(" ") <= 1 else "###"
        out.append(f"{level} `{command}`\n\n```text\n{text.rstrip()}\n```\n")
    return "\n".join(out)


def document_schema() -> str:
    """The top-level keys of an agent document with their descriptions (the full JSON
    Schema is what `raf schema` prints)."""
    from raf.decl.documents.schema import json_schema

    schema = json_schema()
    props = schema.get("properties") or {}
    rows = ["| key | what it is |", "| --- | --- |"]
    for key, spec in props.items():
        text = " ".join(str(spec.get("description", "")).split()).replace("|", "\\|")
        rows.append(f"| `{key}` | {text} |")
    return "\n".join(rows) + "\n"


HTTP_GROUPS = (
    ("/agents", "raf's own API"),
    ("/health", "raf's own API"),
    ("/ready", "raf's own API"),
    ("/v1/", "The OpenAI-compatible API"),
    ("/agui/", "AG-UI"),
    ("/ui", "The web UI's API (`raf ui`, or `raf serve --ui`)"),
    ("/", "Other"),
)
"""The sections of the HTTP reference, in order, by path prefix (the first that matches)."""
A2A_ROUTES = {
    "agent-card.json": "The agent's A2A card (public; says whether a bearer token is needed).",
    "": "A2A JSON-RPC: send or stream a message, get or cancel a task.",
}
"""What A2A's routes do: the SDK mounts them without an OpenAPI description."""


HTTP_API_SNAPSHOT = ROOT / "scripts" / "http_api.md"
"""The HTTP reference as last generated, for builds without the `serve` extra."""


def http_api_text() -> str:
    """The HTTP reference: generated when the `serve` extra is installed, else the
    snapshot (kept current by a test)."""
    try:
        import fastapi  # noqa: F401
    except ImportError:
        return HTTP_API_SNAPSHOT.read_text(encoding="utf-8")
    return http_api()


def http_api() -> str:
    """Every operation of `raf serve` with the web UI on, from the OpenAPI document the
    server publishes at /openapi.json, grouped by API; then the routes it serves outside
    that document (A2A's, mounted by its SDK)."""
    from raf import AgentBuilder
    from raf.serve.app import create_app
    from raf.serve.hosting import AgentHost
    from raf.serve.ui import ServeUI
    from raf.testing import ScriptedChatClient

    agent = AgentBuilder("docs").with_chat_client(ScriptedChatClient([])).build()
    host = AgentHost({"docs": agent})
    app: Any = create_app(host, ui=ServeUI.attach(host, tracing=False))
    while not hasattr(app, "openapi") and hasattr(app, "app"):
        app = app.app
    spec = app.openapi()
    groups: dict[str, list[str]] = {title: [] for _, title in HTTP_GROUPS}
    for path, operations in sorted(spec.get("paths", {}).items()):
        title = next(title for prefix, title in HTTP_GROUPS if path.startswith(prefix))
        for method, op in operations.items():
            said = str(op.get("description") or op.get("summary") or "").strip()
            summary = " ".join(said.split("\n\n", 1)[0].split())
            groups[title].append(f"| `{method.upper()}` | `{path}` | {summary.replace('|', '/')} |")
    documented = set(spec.get("paths", {})) | {"/openapi.json"}
    outside = [
        f"| `{' '.join(sorted(route.methods - {'HEAD'}))}` | "
        f"`{route.path.replace('/docs', '/{agent}')}` | "
        f"{A2A_ROUTES['agent-card.json' if route.path.endswith('agent-card.json') else '']} |"
        for route in app.routes
        if getattr(route, "methods", None) and route.path not in documented
    ]
    groups["A2A (served by the A2A SDK, outside the OpenAPI document)"] = outside
    out: list[str] = []
    for title, rows in groups.items():
        if rows:
            out += [f"## {title}", "", "| method | path | what it does |", "| --- | --- | --- |"]
            out += [*rows, ""]
    schema = json.dumps(spec.get("info", {}), ensure_ascii=False)
    return "\n".join(out) + f"\nServer info: `{schema}`\n"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write-http-api"]:
        raise SystemExit("usage: python scripts/docs_hooks.py --write-http-api")
    HTTP_API_SNAPSHOT.write_text(http_api(), encoding="utf-8")
    print(f"wrote {HTTP_API_SNAPSHOT.relative_to(ROOT)}")
