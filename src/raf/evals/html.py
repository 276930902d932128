"""An eval report as one self-contained HTML page: no script, no outside file, every piece
of text escaped, so an answer holding HTML shows as text."""

from __future__ import annotations

import datetime
import json
from html import escape
from typing import Any

from raf.core.contents import (
    ApprovalRequestContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
)
from raf.core.messages import ChatMessage
from raf.evals.case import EvaluationResult
from raf.evals.compare import Comparison
from raf.evals.report import CaseResult, EvalReport

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5rem;color:#1b1f24;background:#fff}
h1{font-size:1.3rem;margin:0 0 .3rem}h2{font-size:1.05rem;margin:1.2rem 0 .4rem}
.meta{color:#57606a;margin-bottom:1rem}
.totals span{display:inline-block;margin-right:1.2rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}
td,th{border-bottom:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}
.passed{color:#1a7f37}.failed{color:#cf222e}.errored{color:#9a6700}
.regressed{color:#cf222e;font-weight:600}.improved{color:#1a7f37}
details{border:1px solid #d0d7de;border-radius:6px;margin:.3rem 0;padding:.3rem .6rem}
summary{cursor:pointer}pre{white-space:pre-wrap;word-break:break-word;margin:.2rem 0;
background:#f6f8fa;padding:.4rem;border-radius:4px}
.msg{margin:.25rem 0}.role{font-weight:600;color:#57606a}
"""


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=1, ensure_ascii=False, default=str)


def _message_html(message: ChatMessage) -> str:
    parts: list[str] = []
    for content in message.contents:
        if isinstance(content, TextContent):
            parts.append(f"<pre>{escape(content.text)}</pre>")
        elif isinstance(content, FunctionCallContent):
            args = json.dumps(content.arguments, ensure_ascii=False, default=str)
            parts.append(f"<pre>call {escape(content.name)}({escape(args)})</pre>")
        elif isinstance(content, FunctionResultContent):
            shown = content.error if content.error is not None else _text(content.result)
            label = "error" if content.error is not None else "result"
            parts.append(f"<pre>{label} of {escape(content.name or '')}: {escape(shown)}</pre>")
        elif isinstance(content, ApprovalRequestContent):
            parts.append(f"<pre>approval asked for {escape(content.name)}</pre>")
    if not parts:
        return ""
    return (
        f'<div class="msg"><span class="role">{escape(message.role.value)}</span>'
        f"{''.join(parts)}</div>"
    )


def _verdict_class(evaluation: EvaluationResult) -> str:
    if evaluation.errored:
        return "errored"
    return "passed" if evaluation.passed else "failed"


def _result_html(result: CaseResult, repeat: int) -> str:
    label = escape(result.case) + (f" #{result.repeat + 1}" if repeat > 1 else "")
    rows = "".join(
        f'<tr><td>{escape(e.name)}</td><td class="{_verdict_class(e)}">'
        f"{'errored' if e.errored else ('pass' if e.passed else 'fail')}</td>"
        f"<td>{e.score:.2f}</td><td>{escape(e.error or e.reason)}</td></tr>"
        for e in result.evaluations
    )
    transcript = "".join(_message_html(m) for m in result.transcript)
    error = f'<p class="errored">{escape(result.error)}</p>' if result.error else ""
    expected = (
        f"<h3>expected</h3><pre>{escape(_text(result.expected))}</pre>"
        if result.expected is not None
        else ""
    )
    return (
        f'<details class="case" data-status="{result.status}"><summary>'
        f'<span class="{result.status}">{result.status}</span> {label} '
        f"<small>{result.duration:.2f}s</small></summary>"
        f"<h3>input</h3><pre>{escape(result.input)}</pre>{expected}"
        f"<h3>answer</h3><pre>{escape(result.text or _text(result.output))}</pre>{error}"
        f"<table><tr><th>evaluator</th><th>verdict</th><th>score</th><th>reason</th></tr>"
        f"{rows}</table>"
        f"{'<h3>transcript</h3>' + transcript if transcript else ''}</details>"
    )


def _comparison_html(comparison: Comparison) -> str:
    rows = "".join(
        f'<tr><td class="{c.kind}">{c.kind}</td><td>{escape(c.case)}</td>'
        f"<td>{'-' if c.before is None else f'{c.before:.0%}'}</td>"
        f"<td>{'-' if c.after is None else f'{c.after:.0%}'}</td>"
        f"<td>{escape(c.reason)}</td></tr>"
        for c in comparison.changes
        if c.kind != "same"
    )
    return (
        f"<h2>Compared with {escape(comparison.before)}</h2>"
        f"<p>pass rate {comparison.before_pass_rate:.0%} → {comparison.after_pass_rate:.0%}; "
        f"{len(comparison.regressions)} regressed, {len(comparison.improvements)} improved</p>"
        f"<table><tr><th>change</th><th>case</th><th>before</th><th>after</th><th>why</th></tr>"
        f"{rows or '<tr><td colspan=5>no case changed</td></tr>'}</table>"
    )


def report_html(report: EvalReport, *, comparison: Comparison | None = None) -> str:
    """The report as a standalone HTML page, failures first."""
    summary = report.summary()
    when = datetime.datetime.fromtimestamp(report.started_at, datetime.UTC).strftime(
        "%Y-%m-%d %H:%M:%S UTC"
    )
    totals = [
        f"<span>{summary['passed']}/{summary['runs']} passed ({summary['pass_rate']:.0%})</span>",
        f"<span class=failed>{summary['failed']} failed</span>",
        f"<span class=errored>{summary['errored']} errored</span>",
        f"<span>median {summary['median_duration']:.2f}s · "
        f"p95 {summary['p95_duration']:.2f}s</span>",
    ]
    if report.repeat > 1:
        key = f"pass@{report.repeat}"
        totals.append(f"<span>{key} {summary[key]:.0%}</span>")
        totals.append(f"<span>flaky: {escape(', '.join(summary['flaky']) or 'none')}</span>")
    tags = "".join(
        f"<tr><td>{escape(tag)}</td><td>{passed}/{total}</td><td>{passed / total:.0%}</td></tr>"
        for tag, (passed, total) in report.by_tag().items()
    )
    order = {"errored": 0, "failed": 1, "passed": 2}
    results = sorted(report.results, key=lambda r: order[r.status])
    cases = "".join(_result_html(r, report.repeat) for r in results)
    title = f"{report.dataset} on {report.target}"
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        f"<div class=meta>{escape(report.name)} · {when} · {report.duration:.1f}s</div>"
        f"<div class=totals>{''.join(totals)}</div>"
        f"{_comparison_html(comparison) if comparison is not None else ''}"
        f"<h2>By tag</h2><table><tr><th>tag</th><th>passed</th><th>rate</th></tr>{tags}</table>"
        f"<h2>Cases</h2>{cases}</body></html>"
    )
