"""A declarative run's budget: its actions and its wall-clock time are capped with
errors that name the limit and the action, it lets the event loop serve others while it
loops, and formulas that may take long (patterns, large tables) are evaluated on a worker
thread that is given up once the formula's time is spent."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest

from raf import AgentBuilder
from raf.core.bounded_regex import MATCH_SECONDS
from raf.core.errors import ValidationProblems
from raf.decl.powerfx.evaluation import (
    ON_THREAD,
    STOP_GRACE_SECONDS,
    evaluate_here,
)
from raf.decl.powerfx.expressions import Expression
from raf.decl.workflow import DeclWorkflowBuilder, Limits
from raf.testing import ScriptedChatClient
from raf.workflow import Workflow
from raf.workflow.errors import WorkflowRunError
from tests.decl.workflow.helpers import variables

ROOT = Path(__file__).resolve().parents[3]

SPIN = """
kind: Workflow
actions:
  - {kind: SetVariable, id: start, variable: Local.n, value: 0}
  - kind: RepeatUntil
    id: spin
    condition: =false
    actions:
      - {kind: SetVariable, id: count, variable: Local.n, value: =Local.n + 1}
"""

TRAP = "a" * 45 + "b"
"""A text on which `(a|aa)+$` backtracks for far longer than a formula's second."""


def _workflow(doc: str, limits: Limits | None = None, **agents: Any) -> Workflow:
    builder = DeclWorkflowBuilder().from_yaml_str(doc)
    for name, agent in agents.items():
        builder.with_agent(name, agent)
    if limits is not None:
        builder.with_limits(limits)
    return builder.build()


async def _ticking(work: Awaitable[Any]) -> tuple[Any, list[float]]:
    """What `work` gives (or the exception it raises), and the gaps between the ticks of
    a coroutine that wakes every 10 ms meanwhile."""
    gaps: list[float] = []

    async def tick() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = asyncio.ensure_future(tick())
    try:
        outcome: Any = await work
    except Exception as exc:
        outcome = exc
    finally:
        ticker.cancel()
    return outcome, gaps


async def test_the_time_limit_stops_a_loop_with_an_error_naming_the_limit_and_action() -> None:
    workflow = _workflow(SPIN, Limits(max_steps=10**9, max_seconds=0.4))
    started = time.monotonic()
    with pytest.raises(WorkflowRunError) as caught:
        await workflow.run("go")
    took = time.monotonic() - started
    message = str(caught.value)
    assert "ran for more than 0.4 seconds" in message
    assert "Limits.max_seconds" in message and "maxSeconds" in message
    assert "raise the limit" in message
    assert "action 'spin'" in message or "action 'count'" in message
    assert 0.4 <= took < 3, took


async def test_the_action_limit_still_stops_a_loop_and_says_how_to_raise_it() -> None:
    workflow = _workflow(SPIN, Limits(max_steps=50))
    with pytest.raises(WorkflowRunError) as caught:
        await workflow.run("go")
    message = str(caught.value)
    assert "ran more than 50 actions" in message
    assert "Limits.max_steps" in message and "maxTurns" in message


async def test_a_looping_run_lets_other_coroutines_run() -> None:
    workflow = _workflow(SPIN, Limits(max_steps=10**9, max_seconds=0.5))
    outcome, gaps = await _ticking(workflow.run("go"))
    assert isinstance(outcome, WorkflowRunError)
    assert len(gaps) > 10, gaps
    assert max(gaps) < 0.2, f"the loop was held for {max(gaps):.3f} s"


async def test_an_agent_that_outlasts_the_time_limit_is_cancelled_and_named() -> None:
    slow = AgentBuilder("slow").with_chat_client(ScriptedChatClient(["late"], delay=30)).build()
    doc = "kind: Workflow\nactions:\n  - {kind: InvokeAgent, id: ask, agent: slow}\n"
    workflow = _workflow(doc, Limits(max_seconds=0.5), slow=slow)
    started = time.monotonic()
    with pytest.raises(WorkflowRunError, match="action 'ask'.*more than 0.5 seconds"):
        await workflow.run("go")
    assert time.monotonic() - started < 5


async def test_the_time_a_run_waits_for_an_answer_is_not_counted() -> None:
    doc = """
kind: Workflow
actions:
  - {kind: Question, id: ask, variable: Local.name, question: {text: Your name?}}
  - {kind: SendActivity, activity: "Hi {Local.name}"}
"""
    workflow = _workflow(doc, Limits(max_seconds=0.5))
    paused = await workflow.run("start")
    await asyncio.sleep(0.7)  # longer than the whole limit
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id, responses={paused.requests[0].request_id: "Ada"}
    )
    assert done.outputs == ["Hi Ada"]


async def test_the_document_sets_the_time_limit_and_a_wrong_one_is_located() -> None:
    timed = DeclWorkflowBuilder().from_yaml_str(SPIN + "maxSeconds: 0.3\nmaxTurns: 1000000\n")
    with pytest.raises(WorkflowRunError, match="ran for more than 0.3 seconds"):
        await timed.build().run("go")
    with pytest.raises(ValidationProblems, match="maxSeconds is a number of seconds above 0"):
        DeclWorkflowBuilder().from_yaml_str(SPIN + "maxSeconds: never\n")


def test_limits_refuse_values_that_bound_nothing() -> None:
    with pytest.raises(ValueError, match="Limits.max_seconds must be a number above 0"):
        Limits(max_seconds=0)
    with pytest.raises(ValueError, match="Limits.max_steps must be a whole number above 0"):
        Limits(max_steps=0)


def _is_match_doc(subject: str) -> str:
    return (
        "kind: Workflow\nactions:\n"
        f"  - {{kind: SetVariable, id: check, variable: Local.ok, "
        f'value: \'=IsMatch("{subject}", "(a|aa)+$")\'}}\n'
    )


async def test_a_pattern_that_backtracks_is_stopped_at_its_budget() -> None:
    workflow = _workflow(_is_match_doc(TRAP))
    started = time.monotonic()
    with pytest.raises(WorkflowRunError) as caught:
        await workflow.run("go")
    took = time.monotonic() - started
    assert "action 'check'" in str(caught.value)
    assert f"took longer than the formula's {MATCH_SECONDS:g} s for patterns" in str(caught.value)
    assert took < MATCH_SECONDS + STOP_GRACE_SECONDS + 0.5, took


async def test_a_slow_match_runs_off_the_event_loop() -> None:
    workflow = _workflow(_is_match_doc("a" * 31 + "b"))
    started = time.monotonic()
    outcome, gaps = await _ticking(workflow.run("go"))
    took = time.monotonic() - started
    assert not isinstance(outcome, Exception), outcome
    assert variables(workflow)["Local"]["ok"] is False
    assert took > 0.05, "the match was too quick to show anything"
    # a loop held by the match misses one tick for the whole match; a loaded machine
    # slows the match and the ticks alike, so the bound is a share of the match's time
    held = max(gaps)
    assert len(gaps) >= 3 and held < max(0.05, took / 2), f"the loop was held {held:.3f} s"


async def test_a_formula_that_matches_and_patches_writes_from_its_thread() -> None:
    doc = """
kind: Workflow
actions:
  - {kind: SetVariable, variable: Local.rows, value: '=[{id: 1, ok: false}]'}
  - kind: SetVariable
    variable: Local.changed
    value: '=Patch(Local.rows, {id: 1}, {ok: IsMatch("abc", "a.c")})'
"""
    workflow = _workflow(doc)
    await workflow.run("go")
    local = variables(workflow)["Local"]
    assert local["rows"] == [{"id": 1, "ok": True}]
    assert local["changed"] == {"id": 1, "ok": True}


def test_formulas_over_large_tables_go_to_a_thread_and_small_ones_stay() -> None:
    held: dict[str, Any] = {"big": list(range(5000)), "small": list(range(15))}

    def read(parts: tuple[str, ...]) -> Any:
        return held.get(parts[-1])

    over_big = Expression.compile("Sum(ForAll(Local.big, Value * 2), Value)")
    over_small = Expression.compile("Sum(ForAll(Local.small, Value * 2), Value)")
    nested = Expression.compile("CountRows(ForAll(Local.small, Filter(Local.small, Value > 3)))")
    plain = Expression.compile("Local.small")
    assert evaluate_here(over_big, read, None, read) is ON_THREAD
    assert evaluate_here(over_small, read, None, read) == 210
    # the nested formula reads 15 + 15 rows: 900 visits estimated, on the loop
    assert evaluate_here(nested, read, None, read) == 15
    held["small"] = list(range(20))  # 40 rows read: 1600 visits estimated
    assert evaluate_here(nested, read, None, read) is ON_THREAD
    assert evaluate_here(plain, read, None, read) == list(range(20))


async def test_a_formula_over_a_large_table_is_right_on_its_thread() -> None:
    doc = """
kind: Workflow
actions:
  - {kind: SetVariable, variable: Local.big, value: =Sequence(5000)}
  - kind: SetVariable
    variable: Local.total
    value: =Sum(Filter(Local.big, Value > 4990), Value)
"""
    workflow = _workflow(doc)
    await workflow.run("go")
    assert variables(workflow)["Local"]["total"] == sum(range(4991, 5001))


@pytest.mark.slow
def test_a_match_is_given_up_on_time_when_the_process_gets_half_a_cpu(tmp_path: Path) -> None:
    """The regex engine counts the process's CPU time; sharing one CPU with a busy
    process, a match would run for twice its second, and the waiter gives it up."""
    cpu = min(os.sched_getaffinity(0))
    child = tmp_path / "child.py"
    child.write_text(
        textwrap.dedent(
            f"""
            import asyncio, os, time
            os.sched_setaffinity(0, {{{cpu}}})
            from raf.decl.workflow import DeclWorkflowBuilder

            DOC = {_is_match_doc(TRAP)!r}

            async def main() -> None:
                workflow = DeclWorkflowBuilder().from_yaml_str(DOC).build()
                wall, cpu = time.monotonic(), time.process_time()
                try:
                    await workflow.run("go")
                    print("no error")
                except Exception as exc:
                    took = time.monotonic() - wall
                    print(f"{{took:.3f}} {{(time.process_time() - cpu) / took:.2f}}")
                    print(exc)

            asyncio.run(main())
            """
        ),
        encoding="utf-8",
    )
    busy = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import os, time\nos.sched_setaffinity(0, {{{cpu}}})\nend = time.monotonic() + 60\n"
            "while time.monotonic() < end:\n    pass\n",
        ]
    )
    try:
        time.sleep(0.2)
        done = subprocess.run(
            [sys.executable, str(child)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
    finally:
        busy.kill()
        busy.wait(timeout=10)
    assert done.returncode == 0, done.stderr
    first, message = done.stdout.split("\n", 1)
    took, share = (float(part) for part in first.split())
    assert share < 0.8, f"the process got {share:.0%} of a CPU: the test shows nothing"
    assert "took longer than the formula's 1 s for patterns" in message
    assert took < MATCH_SECONDS + STOP_GRACE_SECONDS + 0.4, took
