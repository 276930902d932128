"""A base for hand-written tools whose arguments are a pydantic model."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from raf.core.function_tool import describe_validation_error, strip_titles
from raf.core.tools import ToolContext, ToolResult

_SCHEMAS: dict[type[BaseModel], dict[str, Any]] = {}


def arguments_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of an arguments model, titles dropped; computed once per model."""
    schema = _SCHEMAS.get(model)
    if schema is None:
        schema = strip_titles(model.model_json_schema())
        _SCHEMAS[model] = schema
    return schema


class ModelTool(ABC):
    """Set `name`, `description`, `kind` and an `Arguments` model; write `call(args, ctx)`.

    Arguments are validated before `call` runs; invalid ones become an error result the
    model reads. `call` returns a `ToolResult` or any JSON-able value.
    """

    name: str = ""
    description: str = ""
    kind: str = "function"
    requires_approval: bool = False
    Arguments: ClassVar[type[BaseModel]]

    @property
    def parameters(self) -> dict[str, Any]:
        return arguments_schema(self.Arguments)

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        return self.requires_approval

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        try:
            args = self.Arguments.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult.fail(describe_validation_error(self.name, exc))
        value = await self.call(args, context)
        return value if isinstance(value, ToolResult) else ToolResult.ok(value)

    @abstractmethod
    async def call(self, args: Any, context: ToolContext) -> Any:
        """Run the tool with validated arguments."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
