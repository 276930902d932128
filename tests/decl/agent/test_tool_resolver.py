"""ToolResolver: name expansion, single names, config, unknown names and registrations."""

from __future__ import annotations

import builtins
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from raf.core.errors import ConfigurationError, MissingExtraError
from raf.core.function_tool import tool
from raf.core.tools import Tool
from raf.decl.agent.tool_resolver import ToolResolver
from raf.decl.documents.tool_decls import FILE_TOOL_NAMES
from raf.tools.code import CodeInterpreter
from raf.tools.files import ReadFile, SearchFile
from raf.tools.shell import RunCommand
from raf.tools.web import WebFetch, WebSearch, web_tools
from raf.tools.workspace import is_scope_tool


def lazy_factory(name: str | None, config: Mapping[str, Any], base_dir: Path | None) -> list[Tool]:
    """A factory loaded by a 'module:function' registration."""
    return web_tools(allow_private=bool(config.get("allowPrivate")))


def names(tools: list[Tool]) -> list[str]:
    return [t.name for t in tools]


def test_kinds_expand_to_every_tool():
    resolver = ToolResolver()
    files = resolver.resolve("file")
    assert names(files) == list(FILE_TOOL_NAMES) and len(files) == 10
    assert "run_command" not in names(files)  # it comes with kind shell
    assert all(is_scope_tool(t) for t in files)
    assert names(resolver.resolve("web")) == ["web_search", "web_fetch"]
    assert names(resolver.resolve("shell")) == ["run_command"]
    assert names(resolver.resolve("code")) == ["code_interpreter"]
    assert resolver.resolve("file")[0] is not files[0]  # fresh instances


def test_single_names():
    resolver = ToolResolver()
    assert names(resolver.resolve("file", "search_file")) == ["search_file"]
    assert names(resolver.resolve("web", "web_fetch")) == ["web_fetch"]
    assert isinstance(resolver.resolve("shell", "run_command")[0], RunCommand)
    assert isinstance(resolver.resolve("code", "code_interpreter")[0], CodeInterpreter)


def test_config_reaches_the_tools():
    resolver = ToolResolver()
    read = resolver.resolve("file", "read_file", {"maxReadLines": 7})[0]
    assert isinstance(read, ReadFile) and read.limits.max_read_lines == 7
    search = resolver.resolve("file", "search_file", {"max_matches": 3})[0]
    assert isinstance(search, SearchFile) and search.limits.max_matches == 3
    shell = resolver.resolve("shell", None, {"outputCap": 10, "allowEnv": ["X_KEY"]})[0]
    assert isinstance(shell, RunCommand) and shell.output_cap == 10
    assert shell.allow_env == ("X_KEY",)
    fetch = resolver.resolve("web", "web_fetch", {"allowPrivate": True, "maxRedirects": 2})[0]
    assert isinstance(fetch, WebFetch) and fetch.allow_private and fetch.max_redirects == 2
    search_tool = resolver.resolve("web", "web_search", {"url": "http://127.0.0.1:9"})[0]
    assert isinstance(search_tool, WebSearch) and search_tool.backend.name == "searxng"
    code = resolver.resolve("code", None, {"timeout": 3, "memoryMb": 128})[0]
    assert isinstance(code, CodeInterpreter) and code.memory_mb == 128 and code.timeout_s == 3


def test_unknown_kind_name_and_key_list_the_valid_ones():
    resolver = ToolResolver()
    with pytest.raises(ConfigurationError, match="valid kinds: code, file, shell, web"):
        resolver.resolve("webb")
    with pytest.raises(ConfigurationError, match="did you mean 'web'"):
        resolver.resolve("webb")
    with pytest.raises(ConfigurationError, match="did you mean 'read_file'") as info:
        resolver.resolve("file", "reed_file")
    assert "write_file" in str(info.value) and "run_command" in str(info.value)
    with pytest.raises(ConfigurationError, match="valid names: web_search, web_fetch"):
        resolver.resolve("web", "web_crawl")
    with pytest.raises(ConfigurationError, match="unknown config key 'maxReadLine'"):
        resolver.resolve("file", None, {"maxReadLine": 3})


@pytest.mark.parametrize(
    ("kind", "config", "fragment"),
    [
        ("file", {"maxReadBytes": "x"}, "'maxReadBytes' for file tools must be a whole number"),
        ("file", {"maxEntries": -5}, "at least 1"),
        ("file", {"maxMatches": True}, "whole number"),
        ("shell", {"outputCap": "big"}, "'outputCap' for run_command must be a whole number"),
        ("shell", {"network": "yes"}, "true or false"),
        ("shell", {"allowEnv": [1]}, "a list of names"),
        ("web", {"timeout": "soon"}, "positive number of seconds"),
        ("web", {"maxRedirects": -1}, "at least 0"),
        ("web", {"backend": "bing"}, "unknown search backend 'bing'"),
        ("web", {"apiKey": 5}, "must be text"),
        ("code", {"memoryMb": "lots"}, "'memoryMb' for code_interpreter must be a whole number"),
        ("file", "maxReadBytes=3", "must be a mapping"),
    ],
)
def test_bad_config_values_are_configuration_errors(kind: str, config: Any, fragment: str):
    with pytest.raises(ConfigurationError, match=fragment):
        ToolResolver().resolve(kind, None, config)


def test_a_single_name_is_a_one_item_list():
    shell = ToolResolver().resolve("shell", None, {"allowEnv": "OPENAI_API_KEY"})[0]
    assert isinstance(shell, RunCommand) and shell.allow_env == ("OPENAI_API_KEY",)


def test_register_callable_and_lazy_string(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(ToolResolver, "_registry", dict(ToolResolver._registry))

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    seen: list[Any] = []

    def factory(name: str | None, config: Mapping[str, Any], base_dir: Path | None) -> Tool:
        seen.append((name, dict(config), base_dir))
        return ping

    ToolResolver.register("custom", factory)
    made = ToolResolver().resolve("custom", "x", {"a": 1}, base_dir=Path("/b"))
    assert made == [ping] and seen == [("x", {"a": 1}, Path("/b"))]
    ToolResolver.register("lazy", "tests.decl.agent.test_tool_resolver:lazy_factory")
    assert "lazy" in ToolResolver.kinds()
    assert names(ToolResolver().resolve("lazy", None, {"allowPrivate": True})) == [
        "web_search",
        "web_fetch",
    ]
    with pytest.raises(ConfigurationError, match="module:function"):
        ToolResolver.register("bad", "no_colon")
    ToolResolver.register("ghost", "raf.tools.web:does_not_exist")
    with pytest.raises(ConfigurationError, match="not callable"):
        ToolResolver().resolve("ghost")


def test_missing_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch):
    for module in ("raf.tools.web", "raf.tools.web_search", "httpx"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    real_import = builtins.__import__

    def no_httpx(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "httpx" or name.startswith("httpx."):
            raise ImportError("No module named 'httpx'", name="httpx")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_httpx)
    with pytest.raises(MissingExtraError, match=r"the 'web' extra.*\[web\]") as info:
        ToolResolver().resolve("web")
    assert info.value.extra == "web"
    assert names(ToolResolver().resolve("file", "read_file")) == ["read_file"]
