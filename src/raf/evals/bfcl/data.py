"""BFCL's questions and possible answers, read in place from the installed `bfcl-eval` wheel.

The Berkeley Function Calling Leaderboard ships its data inside its PyPI package
(Apache-2.0). raf reads the JSON lines where pip put them and never imports the package
(its own imports pull provider SDKs and PyTorch), so `pip install --no-deps bfcl-eval` is
enough. Functions are given to models the way BFCL gives them to function-calling models:
BFCL's types as JSON Schema types (`dict` is `object`, `float` is `number`, `tuple` is
`array`, `any` is `string`) and a `.` in a name as `_`.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raf.core.errors import MissingExtraError, RafError
from raf.core.tools import ToolContext, ToolResult

PACKAGE = "bfcl_eval"
VERSION_PREFIX = "BFCL_v4_"
CATEGORIES = ("simple_python", "multiple", "irrelevance")
"""The categories raf scores: one call of one function, one call chosen among several,
and no call at all when no function fits."""
LIVE_CATEGORIES = ("live_simple", "live_multiple", "live_irrelevance")
"""Real users' questions: for checking a change, never for tuning one."""
KNOWN_CATEGORIES = (*CATEGORIES, *LIVE_CATEGORIES)

TYPES = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "double": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "dict": "object",
    "object": "object",
    "any": "string",
}
"""BFCL's parameter types as JSON Schema types (BFCL's own mapping for function-calling
models); a type it does not name is a string."""


class BfclDataError(RafError):
    """BFCL's data is missing from the installed package or is not what raf reads."""


@dataclass(kw_only=True, slots=True)
class BfclItem:
    """One BFCL question with the functions offered and, unless irrelevant, its answers."""

    id: str
    category: str
    messages: list[dict[str, str]]
    """The conversation: BFCL's first (and, in these categories, only) turn."""
    functions: list[dict[str, Any]]
    """BFCL's own function descriptions (its types), as the checker reads them."""
    answers: list[dict[str, dict[str, list[Any]]]] = field(default_factory=list)
    """BFCL's ground truth: per expected call, each parameter's accepted values ("" in
    the list: the parameter may be left out)."""

    @property
    def question(self) -> str:
        return " ".join(m["content"] for m in self.messages if m.get("role") == "user")


class DeclaredTool:
    """A function offered to the model by its description alone: BFCL scores the call the
    model makes, nothing runs it."""

    kind = "function"
    requires_approval = False

    def __init__(self, function: Mapping[str, Any]) -> None:
        self.name = tool_name(str(function["name"]))
        self.description = str(function.get("description") or "")
        self.parameters = json_schema(function.get("parameters") or {})

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        return False

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.fail(f"{self.name} is only described (a BFCL function), not run")

    def __repr__(self) -> str:
        return f"<DeclaredTool {self.name!r}>"


def tool_name(name: str) -> str:
    """A BFCL function name as function-calling APIs take it: `.` becomes `_`."""
    return name.replace(".", "_")


def json_schema(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """BFCL's parameter description as JSON Schema (a copy; the original is left as is)."""
    schema = copy.deepcopy(dict(parameters))
    schema["type"] = "object"
    schema["properties"] = _properties(schema.get("properties") or {})
    required = schema.get("required")
    if isinstance(required, list):
        schema["required"] = [r for r in required if r in schema["properties"]]
    return schema


def _properties(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _property(prop) for name, prop in properties.items()}


def _property(prop: Any) -> dict[str, Any]:
    out = dict(prop) if isinstance(prop, Mapping) else {}
    out["type"] = TYPES.get(str(out.get("type")), "string")
    out.pop("optional", None)  # not JSON Schema: optional is "not in required"
    if "properties" in out:
        out["properties"] = _properties(out["properties"])
    if "items" in out:
        out["items"] = _property(out["items"])
    if "enum" in out and out["type"] in ("string", "integer", "number"):
        out["enum"] = [v for v in out["enum"] if _fits(v, out["type"])] or out.pop("enum")
    return out


def _fits(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    return isinstance(value, int | float) and not isinstance(value, bool)


def data_dir() -> Path:
    """Where the installed `bfcl-eval` keeps its data (the package is not imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError("BFCL's data", "bfcl", PACKAGE)
    folder = Path(next(iter(spec.submodule_search_locations))) / "data"
    if not folder.is_dir():
        raise BfclDataError(f"the installed bfcl-eval has no data folder at {folder}")
    return folder


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BfclDataError(
            f"{path} is missing: this bfcl-eval has no such category file"
        ) from None
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError as exc:
            raise BfclDataError(f"{path}:{number}: not a JSON line ({exc})") from None
    return out


def load(category: str, *, folder: Path | None = None) -> list[BfclItem]:
    """Every item of a BFCL category, in BFCL's order, with its possible answers."""
    if category not in KNOWN_CATEGORIES:
        raise BfclDataError(
            f"unknown BFCL category {category!r}; raf scores {', '.join(KNOWN_CATEGORIES)}"
        )
    root = folder if folder is not None else data_dir()
    questions = _lines(root / f"{VERSION_PREFIX}{category}.json")
    answers: dict[str, Any] = {}
    if "irrelevance" not in category:
        for row in _lines(root / "possible_answer" / f"{VERSION_PREFIX}{category}.json"):
            answers[str(row["id"])] = row["ground_truth"]
    items = []
    for row in questions:
        key = str(row["id"])
        if "irrelevance" not in category and key not in answers:
            raise BfclDataError(f"BFCL item {key} of {category} has no possible answer")
        turns = row.get("question") or [[]]
        items.append(
            BfclItem(
                id=key,
                category=category,
                messages=[dict(m) for m in turns[0]],
                functions=list(row.get("function") or []),
                answers=answers.get(key, []),
            )
        )
    return items


def evenly_spaced(items: Sequence[BfclItem], limit: int | None, offset: int = 0) -> list[BfclItem]:
    """`limit` items spread evenly over the category (all of them without a limit), so a
    sample covers the whole set rather than its first, often easiest, stretch.

    `offset` moves every pick that many items on, staying inside its own stretch: samples
    of one size with different offsets share no item, so one can tune on offset 0 and
    check on another (a held-out sample)."""
    if offset < 0:
        raise ValueError(f"offset must be 0 or more, got {offset}")
    if limit is None or limit >= len(items):
        if offset:
            raise ValueError(
                f"offset {offset} needs a limit below the category's {len(items)} items: "
                "the whole category has no other items to move to"
            )
        return list(items)
    if limit < 1:
        return []
    step = len(items) / limit
    if offset >= int(step):
        raise ValueError(
            f"offset {offset} must be below {int(step)}, the distance between the picks of "
            f"{limit} items out of {len(items)}: a larger one would pick the next pick's items"
        )
    return [items[int(i * step) + offset] for i in range(limit)]
