"""One eval case (the input a target gets, what it should answer, which tools it should
call) and the protocol of what judges a run of it: the evaluator, what it sees, what it
returns. They are one module because a case carries its evaluators."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from raf.core.contents import ApprovalRequestContent, FunctionCallContent, FunctionResultContent
from raf.core.messages import ChatMessage
from raf.core.usage import UsageDetails


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


@dataclass(kw_only=True, slots=True)
class EvaluationResult:
    """One evaluator's judgement of one run: a score in [0, 1], pass or fail, and why.

    `error` is set when the evaluator could not judge (it raised, or a judge model gave
    no verdict): such a result never counts as a pass."""

    name: str
    passed: bool
    score: float
    reason: str = ""
    error: str | None = None

    @property
    def errored(self) -> bool:
        return self.error is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "passed": self.passed,
            "score": self.score,
            "reason": self.reason,
        }
        if self.error is not None:
            out["error"] = self.error
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvaluationResult:
        return cls(
            name=str(data["name"]),
            passed=bool(data["passed"]),
            score=float(data["score"]),
            reason=str(data.get("reason", "")),
            error=data.get("error"),
        )


@dataclass(kw_only=True, slots=True)
class EvaluatorContext:
    """What one run of a case produced, as evaluators read it."""

    case: Case
    output: Any
    """The answer: the typed value when the target returned one, else its text."""
    text: str = ""
    """The answer's text."""
    messages: list[ChatMessage] = field(default_factory=list)
    """The run's transcript: the model's messages, tool calls and results."""
    usage: UsageDetails | None = None
    duration: float = 0.0
    """Seconds the target took."""
    requests: int = 0
    """Model calls the run made (0 when the target does not say)."""

    @property
    def tool_calls(self) -> list[FunctionCallContent]:
        return [c for m in self.messages for c in m.function_calls]

    @property
    def tool_results(self) -> list[FunctionResultContent]:
        return [c for m in self.messages for c in m.function_results]

    @property
    def approvals_asked(self) -> list[str]:
        """Names of the tools whose calls asked for approval, in order."""
        found: list[str] = []
        for message in self.messages:
            for content in message.contents:
                if isinstance(content, ApprovalRequestContent):
                    found.append(content.name)
        return found

    @property
    def expected_output(self) -> Any:
        return self.case.expected_output


@runtime_checkable
class Evaluator(Protocol):
    """Judges one run; `to_spec()` is its form in a dataset file."""

    @property
    def name(self) -> str: ...

    async def evaluate(self, ctx: EvaluatorContext) -> EvaluationResult: ...

    def to_spec(self) -> Any: ...
