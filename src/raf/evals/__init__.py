"""Evals: datasets of cases, evaluators, runs against agents, reports and comparisons.

dataset = Dataset.from_file("evals/capitals.yaml")
report = await dataset.evaluate(agent, concurrency=4, repeat=3)
print(report.table())
"""

from __future__ import annotations

from raf.evals.case import Case, EvaluationResult, Evaluator, EvaluatorContext, ExpectedCall
from raf.evals.cassette import CassetteChatClient, CassetteMissError, request_fingerprint
from raf.evals.compare import CaseChange, Comparison, compare
from raf.evals.dataset import Dataset, dataset_schema
from raf.evals.evaluator import FunctionEvaluator
from raf.evals.evaluators import (
    Contains,
    Equals,
    IsType,
    Limits,
    MatchesSchema,
    Price,
    Regex,
    ToolCalls,
)
from raf.evals.folder import CaseExistsError, DatasetFolder
from raf.evals.html import report_html
from raf.evals.judge import JudgeVerdictError, LLMJudge
from raf.evals.record import case_from_messages, case_from_session
from raf.evals.report import CaseResult, EvalReport, pass_at_k
from raf.evals.run import ProgressBar
from raf.evals.targets import Outcome, served_target

__all__ = [
    "Case",
    "CaseChange",
    "CaseExistsError",
    "CaseResult",
    "CassetteChatClient",
    "CassetteMissError",
    "Comparison",
    "Contains",
    "Dataset",
    "DatasetFolder",
    "Equals",
    "EvalReport",
    "EvaluationResult",
    "Evaluator",
    "EvaluatorContext",
    "ExpectedCall",
    "FunctionEvaluator",
    "IsType",
    "JudgeVerdictError",
    "LLMJudge",
    "Limits",
    "MatchesSchema",
    "Outcome",
    "Price",
    "ProgressBar",
    "Regex",
    "ToolCalls",
    "case_from_messages",
    "case_from_session",
    "compare",
    "dataset_schema",
    "pass_at_k",
    "report_html",
    "request_fingerprint",
    "served_target",
]
