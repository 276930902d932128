"""An LLM judge: a rubric, any raf model, a recorded verdict and reason."""

from __future__ import annotations

import json
import re
from typing import Any

from raf.core.chat_client import ChatClient
from raf.core.errors import RafError
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.evals.case import EvaluationResult, EvaluatorContext

JUDGE_INSTRUCTIONS = """You grade one answer of an AI assistant against a rubric.
Read the rubric, the question and the answer, then reply with ONLY a JSON object:
{"verdict": "pass" or "fail", "score": a number from 0 to 1, "reason": "one sentence"}
No other text."""

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


class JudgeVerdictError(RafError):
    """The judge model's reply holds no verdict that can be read."""


class LLMJudge:
    """Asks a model whether the answer meets `rubric`; its verdict and reason are the
    result. A reply without a readable verdict is an errored result, never a pass."""

    def __init__(
        self,
        rubric: str,
        *,
        model: str | ChatClient | None = None,
        include_input: bool = True,
        include_expected: bool = True,
        name: str = "judge",
    ) -> None:
        if not rubric.strip():
            raise ValueError("a judge needs a rubric")
        self.rubric = rubric
        self.model = model
        """A model string (`openai:gpt-4o-mini`, `local`, …) or a chat client; None is
        the default model."""
        self.include_input = include_input
        self.include_expected = include_expected
        self._name = name
        self._client: ChatClient | None = model if isinstance(model, ChatClient) else None

    @property
    def name(self) -> str:
        return self._name

    def _chat_client(self) -> ChatClient:
        if self._client is None:
            from raf.clients.models import resolve_model

            spec = self.model if isinstance(self.model, str) else None
            self._client = resolve_model(spec) if spec else resolve_model()
        return self._client

    def prompt(self, ctx: EvaluatorContext) -> str:
        parts = [f"Rubric:\n{self.rubric}"]
        if self.include_input:
            parts.append(f"Question:\n{ctx.case.input_text()}")
        if self.include_expected and ctx.expected_output is not None:
            expected = ctx.expected_output
            shown = expected if isinstance(expected, str) else json.dumps(expected, default=str)
            parts.append(f"Expected answer:\n{shown}")
        parts.append(f"Answer to grade:\n{ctx.text}")
        return "\n\n".join(parts)

    async def evaluate(self, ctx: EvaluatorContext) -> EvaluationResult:
        messages = [ChatMessage.system(JUDGE_INSTRUCTIONS), ChatMessage.user(self.prompt(ctx))]
        response = await self._chat_client().get_response(
            messages, ChatOptions(temperature=0.0, max_tokens=300)
        )
        return self.verdict(response.text)

    def verdict(self, reply: str) -> EvaluationResult:
        """The result a judge's reply stands for; raises `JudgeVerdictError` for nonsense."""
        found = _OBJECT.search(reply)
        if found is None:
            raise JudgeVerdictError(f"the judge's reply has no JSON verdict: {reply[:200]!r}")
        try:
            data: Any = json.loads(found.group(0))
        except ValueError:
            raise JudgeVerdictError(
                f"the judge's reply is not valid JSON: {reply[:200]!r}"
            ) from None
        if not isinstance(data, dict):
            raise JudgeVerdictError(f"the judge's verdict is not an object: {reply[:200]!r}")
        verdict = str(data.get("verdict", "")).strip().lower()
        if verdict not in ("pass", "fail"):
            raise JudgeVerdictError(
                f"the judge's verdict must be 'pass' or 'fail', got {data.get('verdict')!r}"
            )
        passed = verdict == "pass"
        score_raw = data.get("score", 1.0 if passed else 0.0)
        if isinstance(score_raw, bool) or not isinstance(score_raw, int | float):
            raise JudgeVerdictError(f"the judge's score is not a number: {score_raw!r}")
        score = float(score_raw)
        if not 0.0 <= score <= 1.0:
            raise JudgeVerdictError(f"the judge's score {score} is outside 0 to 1")
        reason = str(data.get("reason", "")).strip()
        if not reason:
            raise JudgeVerdictError("the judge gave no reason")
        return EvaluationResult(name=self.name, passed=passed, score=score, reason=reason)

    def to_spec(self) -> Any:
        spec: dict[str, Any] = {"rubric": self.rubric}
        if isinstance(self.model, str):
            spec["model"] = self.model
        if not self.include_input:
            spec["include_input"] = False
        if not self.include_expected:
            spec["include_expected"] = False
        return {"judge": spec}
