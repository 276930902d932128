"""ToolResolver: tool declarations (kind, name, config) to tools, with name expansion: a kind
without a name means every tool of that kind (`file` gives the ten file tools, `shell` gives
`run_command`, so declaring both is fine)."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from raf.core.errors import ConfigurationError, MissingExtraError, ToolExecutionError
from raf.core.tools import Tool
from raf.decl.documents.tool_decls import TOOL_NAMES

ToolFactory = Callable[[str | None, Mapping[str, Any], Path | None], list[Tool] | Tool]
"""`(name, config, base_dir) -> tools` for one declaration."""

_LIMIT_KEYS = {
    "maxReadBytes": "max_read_bytes",
    "maxReadLines": "max_read_lines",
    "maxWriteBytes": "max_write_bytes",
    "maxEntries": "max_entries",
    "maxMatches": "max_matches",
    "maxSearchFileBytes": "max_search_file_bytes",
}
_SHELL_KEYS = {
    "outputCap": "output_cap",
    "allowEnv": "allow_env",
    "network": "network",
    "container": "container",
}
_FETCH_KEYS = {
    "allowPrivate": "allow_private",
    "allowHosts": "allow_hosts",
    "timeout": "timeout_s",
    "maxBytes": "max_bytes",
    "maxChars": "max_chars",
    "maxRedirects": "max_redirects",
}
_SEARCH_KEYS = {"backend": "backend", "url": "url", "apiKey": "apiKey", "timeout": "timeout_s"}
_CODE_KEYS = {
    "timeout": "timeout_s",
    "cpuSeconds": "cpu_s",
    "memoryMb": "memory_mb",
    "fileMb": "file_mb",
    "maxProcesses": "max_processes",
    "outputCap": "output_cap",
    "network": "network",
    "container": "container",
}
_CONTAINER_KEYS = {
    "image": "image",
    "memoryMb": "memory_mb",
    "cpus": "cpus",
    "pids": "pids",
    "network": "network",
    "readOnly": "read_only",
    "tmpfsMb": "tmpfs_mb",
    "user": "user",
    "dockerHost": "docker_host",
    "python": "python",
}
"""Keys of a `container` block: `raf.tools.sandbox.ContainerSandbox`'s fields."""


_COUNTS = {
    "max_read_bytes", "max_read_lines", "max_write_bytes", "max_entries", "max_matches",
    "max_search_file_bytes", "output_cap", "max_bytes", "max_chars", "memory_mb", "file_mb",
    "max_processes", "cpu_s",
}  # fmt: skip
_FLAGS = {"network", "allow_private"}
_NAME_LISTS = {"allow_env", "allow_hosts"}
_TEXTS = {"backend", "url", "apiKey"}


def _checked(target: str, key: str, value: Any, what: str) -> Any:
    """`value` for constructor argument `target`, or a ConfigurationError saying what was
    expected (a single name given for a list is taken as a one-item list)."""
    problem = ""
    if target in _COUNTS or target == "max_redirects":
        least = 0 if target == "max_redirects" else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            problem = f"a whole number of at least {least}"
    elif target == "timeout_s":
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            problem = "a positive number of seconds"
    elif target in _FLAGS:
        if not isinstance(value, bool):
            problem = "true or false"
    elif target in _NAME_LISTS:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            problem = "a list of names"
    elif target in _TEXTS and not isinstance(value, str):
        problem = "text"
    elif target == "container":
        return _container(key, value, what)
    if problem:
        raise ConfigurationError(
            f"config key {key!r} for {what} must be {problem}, not {value!r}",
            key_path=f"config.{key}",
        )
    return value


def _container(key: str, value: Any, what: str) -> Any:
    """A `container` block as a ContainerSandbox (its docker SDK must be installed)."""
    from raf.decl.documents.extras import module_available
    from raf.tools.sandbox import ContainerSandbox

    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"config key {key!r} for {what} must be a mapping such as {{image: ...}}, "
            f"not {value!r}",
            key_path=f"config.{key}",
        )
    by_name = {**_CONTAINER_KEYS, **{v: v for v in _CONTAINER_KEYS.values()}}
    fields: dict[str, Any] = {}
    for name, item in value.items():
        field = by_name.get(name)
        if field is None:
            valid = ", ".join(_CONTAINER_KEYS)
            raise ConfigurationError(
                f"unknown key {name!r} in the container of {what} (valid keys: {valid})",
                key_path=f"config.{key}.{name}",
            )
        fields[field] = item
    if "image" not in fields:
        raise ConfigurationError(
            f"the container of {what} needs an `image`", key_path=f"config.{key}.image"
        )
    try:
        sandbox = ContainerSandbox(**fields)
    except (ConfigurationError, TypeError) as exc:
        raise ConfigurationError(str(exc), key_path=f"config.{key}") from None
    if not module_available("docker"):
        raise MissingExtraError("the container sandbox", "sandbox", "docker")
    return sandbox


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def _options(config: Mapping[str, Any], allowed: Mapping[str, str], what: str) -> dict[str, Any]:
    """Config keys (camelCase or snake_case) mapped to constructor arguments; an unknown
    key is an error that lists the valid ones."""
    if not isinstance(config, Mapping):
        raise ConfigurationError(
            f"the config of {what} must be a mapping of keys, not {config!r}", key_path="config"
        )
    by_name = {**allowed, **{_snake(k): v for k, v in allowed.items()}}
    out: dict[str, Any] = {}
    for key, value in config.items():
        target = by_name.get(key)
        if target is None:
            valid = ", ".join(sorted(allowed)) or "none"
            hint = difflib.get_close_matches(key, list(by_name), n=1)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
            raise ConfigurationError(
                f"unknown config key {key!r} for {what}{suggestion} (valid keys: {valid})",
                key_path=f"config.{key}",
            )
        out[target] = _checked(target, key, value, what)
    return out


def _file_tools(name: str | None, config: Mapping[str, Any], base_dir: Path | None) -> list[Tool]:
    from raf.tools.files import file_tools
    from raf.tools.scope.scoped_tool import FileLimits
    from raf.tools.shell import RunCommand

    options = _options(config, {**_LIMIT_KEYS, **_SHELL_KEYS}, "file tools")
    limits = FileLimits(**{k: v for k, v in options.items() if k in _LIMIT_KEYS.values()})
    shell = {k: v for k, v in options.items() if k in _SHELL_KEYS.values()}
    if name == "run_command":  # still accepted by name; not part of the expansion
        return [RunCommand(limits=limits, **shell)]
    tools: list[Tool] = []
    for tool in file_tools():
        if isinstance(tool, RunCommand) or (name is not None and tool.name != name):
            continue
        tools.append(type(tool)(limits=limits))  # type: ignore[call-arg]
    return tools


def _shell_tools(name: str | None, config: Mapping[str, Any], base_dir: Path | None) -> list[Tool]:
    from raf.tools.shell import RunCommand

    return [RunCommand(**_options(config, _SHELL_KEYS, "run_command"))]


def _web_tools(name: str | None, config: Mapping[str, Any], base_dir: Path | None) -> list[Tool]:
    try:
        from raf.tools.web import WebFetch, WebSearch, default_backend
    except ImportError as exc:  # pragma: no cover - MissingExtraError is raised by the module
        raise MissingExtraError("web tools", "web", exc.name) from exc
    tools: list[Tool] = []
    if name in (None, "web_search"):
        what = "web_search" if name else "web tools"
        allowed = _SEARCH_KEYS if name else {**_SEARCH_KEYS, **_FETCH_KEYS}
        options = _options(config, allowed, what)
        search: dict[str, Any] = {
            k: options[k] for k in ("backend", "url", "apiKey") if k in options
        }
        timeout = options.get("timeout_s", 15.0)
        try:
            backend = default_backend(search)
        except ToolExecutionError as exc:
            raise ConfigurationError(f"web_search: {exc}", key_path="config.backend") from None
        tools.append(WebSearch(backend, timeout_s=timeout))
    if name in (None, "web_fetch"):
        allowed = _FETCH_KEYS if name else {**_SEARCH_KEYS, **_FETCH_KEYS}
        options = _options(config, allowed, "web_fetch" if name else "web tools")
        fetch = {k: v for k, v in options.items() if k in _FETCH_KEYS.values()}
        tools.append(WebFetch(**fetch))
    return tools


def _code_tools(name: str | None, config: Mapping[str, Any], base_dir: Path | None) -> list[Tool]:
    from raf.tools.code import CodeInterpreter

    return [CodeInterpreter(**_options(config, _CODE_KEYS, "code_interpreter"))]


_EXTRAS = {"web": "web", "code": "sandbox"}


class ToolResolver:
    """Turns `kind`/`name`/`config` declarations into tools.

    Built in: file (the ten file tools), web (web_search, web_fetch), shell
    (run_command) and code (code_interpreter). Other kinds are added with `register`,
    which takes a factory `(name, config, base_dir) -> list[Tool]` or a lazy
    "module:function" string; registrations are shared by every resolver.
    """

    _registry: ClassVar[dict[str, ToolFactory | str]] = {
        "file": _file_tools,
        "web": _web_tools,
        "shell": _shell_tools,
        "code": _code_tools,
    }

    @classmethod
    def register(cls, kind: str, factory: ToolFactory | str) -> None:
        """Add (or replace) the factory of a tool kind."""
        if isinstance(factory, str) and ":" not in factory:
            raise ConfigurationError(
                f"tool factory {factory!r} for kind {kind!r} must look like 'module:function'"
            )
        cls._registry[kind] = factory

    @classmethod
    def kinds(cls) -> list[str]:
        return sorted(cls._registry)

    def resolve(
        self,
        kind: str,
        name: str | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        base_dir: Path | None = None,
    ) -> list[Tool]:
        """The tools one declaration stands for (all of the kind when `name` is None)."""
        factory = self._registry.get(kind)
        if factory is None:
            hint = difflib.get_close_matches(kind, list(self._registry), n=1)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
            raise ConfigurationError(
                f"unknown tool kind {kind!r}{suggestion} (valid kinds: {', '.join(self.kinds())})",
                key_path="kind",
            )
        names = TOOL_NAMES.get(kind)
        if kind == "file" and names is not None:
            names = (*names, "run_command")
        if name is not None and names is not None and name not in names:
            hint = difflib.get_close_matches(name, list(names), n=1)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
            raise ConfigurationError(
                f"unknown {kind} tool {name!r}{suggestion} (valid names: {', '.join(names)})",
                key_path="name",
            )
        if isinstance(factory, str):
            factory = self._load(kind, factory)
        try:
            if config is not None and not isinstance(config, Mapping):
                raise ConfigurationError(
                    f"the config of tool kind {kind!r} must be a mapping of keys, not {config!r}",
                    key_path="config",
                )
            made = factory(name, dict(config or {}), base_dir)
        except MissingExtraError:
            raise
        except ImportError as exc:
            extra = _EXTRAS.get(kind, kind)
            raise MissingExtraError(f"'{kind}' tools", extra, exc.name) from exc
        return list(made) if isinstance(made, list | tuple) else [made]

    def _load(self, kind: str, spec: str) -> ToolFactory:
        module_name, _, attr = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except MissingExtraError:
            raise
        except ImportError as exc:
            raise MissingExtraError(f"'{kind}' tools", _EXTRAS.get(kind, kind), exc.name) from exc
        factory = getattr(module, attr, None)
        if not callable(factory):
            raise ConfigurationError(f"{spec!r} (factory of tool kind {kind!r}) is not callable")
        return factory  # type: ignore[no-any-return]
