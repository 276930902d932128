"""One eval case: the input a target gets, what it should answer and which tools it should call."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from raf.core.messages import ChatMessage

if TYPE_CHECKING:
    from raf.evals.evaluator import Evaluator


@dataclass(kw_only=True, slots=True)
class ExpectedCall:
    """A tool call a case expects: the tool's name and matchers for some of its arguments.

    An argument matcher is a plain value (equal after JSON normalisation, and strings
    compared without case or surrounding space), or a one-key mapping naming an operator:
    `{"contains": "x"}`, `{"regex": "^a"}`, `{"any": true}`, `{"one_of": [1, 2]}`,
    `{"gte": 1}`, `{"lte": 9}`. Arguments not named are not checked."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.arguments:
            out["arguments"] = self.arguments
        return out


@dataclass(kw_only=True, slots=True)
class Case:
    """A scenario to run a target on and judge.

    `input` is a prompt (str), a conversation (list of `ChatMessage`), or any other value
    (a typed input): a plain-function target gets it as it is, an agent gets it as JSON."""

    name: str
    input: Any
    expected_output: Any = None
    """What the answer should be; evaluators such as `Equals()` compare against it."""
    expected_tool_calls: list[ExpectedCall] = field(default_factory=list)
    """The calls `ToolCalls()` expects when it is given none of its own."""
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    evaluators: list[Evaluator] = field(default_factory=list)
    """Evaluators for this case only, run after the dataset's."""

    def messages(self) -> list[ChatMessage]:
        """The input as the messages an agent receives."""
        value = self.input
        if isinstance(value, str):
            return [ChatMessage.user(value)]
        if isinstance(value, list) and all(isinstance(m, ChatMessage) for m in value):
            return list(value)
        return [ChatMessage.user(json.dumps(value, default=str, ensure_ascii=False))]

    def input_text(self) -> str:
        """The input as one line of text, for reports and judges."""
        value = self.input
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(m, ChatMessage) for m in value):
            return "\n".join(f"{m.role.value}: {m.text}" for m in value)
        return json.dumps(value, default=str, ensure_ascii=False)
