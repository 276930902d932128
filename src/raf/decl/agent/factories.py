"""Tool factories: what `with_tool` and `register_factory` are given and may return."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raf.core.errors import ConfigurationError, RafError
from raf.core.function_tool import FunctionTool
from raf.core.tools import Tool


@dataclass(kw_only=True, slots=True)
class ToolFactoryContext:
    """What a tool factory is given: the declaration's name, kind, config and folder."""

    name: str
    kind: str
    description: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    base_dir: Path = field(default_factory=Path.cwd)
    parameters: dict[str, Any] | None = None
    """The arguments the document declares (`parameters`), as JSON Schema."""


ToolFactory = Callable[[ToolFactoryContext], Any]
"""Returns a Tool, a list of tools, or a plain function (made a tool with its name)."""


def tools_from(factory: ToolFactory | Tool, context: ToolFactoryContext, name: str) -> list[Tool]:
    try:
        made: Any = factory if isinstance(factory, Tool) else factory(context)
    except (RafError, ImportError):
        raise
    except Exception as exc:  # a factory is user code: its failure is a located problem
        raise ConfigurationError(
            f"the factory for {name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    items: Sequence[Any] = made if isinstance(made, list | tuple) else [made]
    out: list[Tool] = []
    for item in items:
        if isinstance(item, Tool):
            out.append(item)
        elif callable(item):
            single = len(items) == 1
            out.append(
                FunctionTool(
                    item,
                    name=name if single else None,
                    description=context.description if single else None,
                )
            )
        else:
            raise ConfigurationError(
                f"the factory for {name!r} returned {type(item).__name__}, not a Tool"
            )
    return out
