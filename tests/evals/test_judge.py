"""The LLM judge: its verdict and reason recorded; a reply without a verdict is errored."""

from __future__ import annotations

from raf.core.messages import Role
from raf.evals import Case, Dataset, LLMJudge
from raf.testing import ScriptedChatClient


def dataset(judge: LLMJudge) -> Dataset:
    case = Case(name="capital", input="Capital of France?", expected_output="Paris")
    return Dataset(cases=[case], evaluators=[judge])


async def test_a_pass_verdict_and_its_reason_are_recorded() -> None:
    model = ScriptedChatClient(
        ['{"verdict": "pass", "score": 0.9, "reason": "It names Paris correctly."}']
    )
    report = await dataset(LLMJudge("Names the right city.", model=model)).evaluate(
        lambda q: "Paris", progress=False
    )
    (result,) = report.results
    (verdict,) = result.evaluations
    assert result.passed and verdict.score == 0.9
    assert verdict.reason == "It names Paris correctly."
    prompt = model.requests[0].messages[-1].text
    assert "Names the right city." in prompt and "Capital of France?" in prompt
    assert "Expected answer:\nParis" in prompt and prompt.endswith("Answer to grade:\nParis")
    assert model.requests[0].messages[0].role is Role.SYSTEM


async def test_a_fail_verdict_fails_the_case() -> None:
    model = ScriptedChatClient(['Sure! {"verdict": "fail", "reason": "Says Lyon."}'])
    report = await dataset(LLMJudge("Right city.", model=model)).evaluate(
        lambda q: "Lyon", progress=False
    )
    (verdict,) = report.results[0].evaluations
    assert not verdict.passed and verdict.score == 0.0 and verdict.reason == "Says Lyon."
    assert report.results[0].status == "failed"


async def test_nonsense_from_the_judge_is_an_errored_verdict_never_a_pass() -> None:
    replies = [
        "PASS, looks great",
        '{"verdict": "maybe", "reason": "hm"}',
        '{"verdict": "pass", "score": 7, "reason": "x"}',
        '{"verdict": "pass", "reason": ""}',
        '{"verdict": "pass", "reason": "ok"',
    ]
    for reply in replies:
        model = ScriptedChatClient([reply])
        report = await dataset(LLMJudge("Right city.", model=model)).evaluate(
            lambda q: "Paris", progress=False
        )
        result = report.results[0]
        (verdict,) = result.evaluations
        assert verdict.errored and not verdict.passed, reply
        assert result.status == "errored", reply
        assert "JudgeVerdictError" in (verdict.error or ""), reply
