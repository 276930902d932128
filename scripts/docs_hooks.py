"""MkDocs hooks for the raf site: pages whose text is generated from the code, so the
reference cannot drift from what raf does.

A page asks for generated text with a line `<!-- generated: NAME -->`:
`python-api` (every name in `raf.__all__`, rendered by mkdocstrings), `cli` (the help of
every `raf` command), `document-schema` (the top-level keys of an agent document),
`http-api` (the operations of `raf serve`'s OpenAPI document), and `file: PATH` (a file
of the repository, such as SECURITY.md or CHANGELOG.md, included as it is).
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
        return http_api()
    if name == "file" and arg:
        text = (ROOT / arg.strip()).read_text(encoding="utf-8")
        return re.sub(r"^# .*\n", "", text, count=1)  # the page has its own title
    raise ValueError(f"unknown generated section {name!r}")


def python_api() -> str:
    """One mkdocstrings block per public name, grouped by the module that defines it."""
    import raf

    groups: dict[str, list[str]] = {}
    for name in sorted(raf.__all__):
        obj = getattr(raf, name)
        module = getattr(obj, "__module__", None) or "raf"
        if not module.startswith("raf"):
            module = "raf"
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
    from raf.decl.schema import json_schema

    schema = json_schema()
    props = schema.get("properties") or {}
    rows = ["| key | what it is |", "| --- | --- |"]
    for key, spec in props.items():
        text = " ".join(str(spec.get("description", "")).split()).replace("|", "\\|")
        rows.append(f"| `{key}` | {text} |")
    return "\n".join(rows) + "\n"


def http_api() -> str:
    """Every operation of `raf serve` (native, OpenAI-compatible, A2A), from the OpenAPI
    document the server publishes at /openapi.json."""
    from raf import AgentBuilder
    from raf.serve.app import create_app
    from raf.serve.hosting import AgentHost
    from raf.testing import ScriptedChatClient

    agent = AgentBuilder("docs").with_chat_client(ScriptedChatClient([])).build()
    app: Any = create_app(AgentHost({"docs": agent}))
    while not hasattr(app, "openapi") and hasattr(app, "app"):
        app = app.app
    spec = app.openapi()
    rows = ["| method | path | what it does |", "| --- | --- | --- |"]
    for path, operations in sorted(spec.get("paths", {}).items()):
        for method, op in operations.items():
            summary = " ".join(str(op.get("summary") or op.get("description") or "").split())
            rows.append(f"| `{method.upper()}` | `{path}` | {summary.replace('|', '/')} |")
    schema = json.dumps(spec.get("info", {}), ensure_ascii=False)
    return "\n".join(rows) + f"\n\nServer info: `{schema}`\n"
