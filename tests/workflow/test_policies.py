"""Per-node retry with backoff and its exhaustion policies, timeouts, bounded
parallelism, and compensation in reverse order when a run fails."""

from __future__ import annotations

import asyncio

import pytest

from raf.workflow import (
    NodeCompensated,
    NodeFailed,
    NodeSkipped,
    RetryPolicy,
    WorkflowBuilder,
    WorkflowFailed,
    WorkflowRunError,
    WorkflowTimeoutError,
    executor,
    runner,
)
from raf.workflow.executor import FunctionExecutor


class Flaky:
    """Fails `failures` times, then returns its input marked."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def __call__(self, text: str) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(f"attempt {self.calls} failed")
        return f"{text} ok"


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Backoff delays the runner asked for, without waiting."""
    asked: list[float] = []

    async def fake(delay: float) -> None:
        asked.append(delay)

    monkeypatch.setattr(runner, "backoff_sleep", fake)
    return asked


def test_backoff_grows_and_is_capped() -> None:
    policy = RetryPolicy(backoff=0.5, multiplier=3, max_backoff=2.0)
    assert [policy.delay(n) for n in (1, 2, 3)] == [0.5, 1.5, 2.0]


async def test_retry_succeeds_after_failures_with_growing_backoff(sleeps: list[float]) -> None:
    flaky = Flaky(failures=2)
    node = FunctionExecutor(flaky, id="flaky")
    workflow = (
        WorkflowBuilder("r", start=node)
        .with_retry(node, RetryPolicy(max_attempts=3, backoff=0.1, multiplier=2))
        .build()
    )
    result = await workflow.run("x")
    assert result.outputs == ["x ok"] and flaky.calls == 3
    assert sleeps == [0.1, 0.2]
    failed = [e for e in result.events if isinstance(e, NodeFailed)]
    assert [(e.attempt, e.will_retry) for e in failed] == [(1, True), (2, True)]


async def test_exhausted_retries_fail_the_run_by_default(sleeps: list[float]) -> None:
    flaky = Flaky(failures=5)
    node = FunctionExecutor(flaky, id="flaky")
    workflow = (
        WorkflowBuilder("r", start=node).with_retry(node, RetryPolicy(max_attempts=2)).build()
    )
    with pytest.raises(WorkflowRunError, match="node 'flaky' failed in superstep 1") as info:
        await workflow.run("x")
    assert info.value.node == "flaky" and flaky.calls == 2


async def test_only_listed_errors_are_retried(sleeps: list[float]) -> None:
    flaky = Flaky(failures=1)
    node = FunctionExecutor(flaky, id="flaky")
    policy = RetryPolicy(max_attempts=3, retry_on=(TimeoutError,))
    workflow = WorkflowBuilder("r", start=node).with_retry(node, policy).build()
    with pytest.raises(WorkflowRunError, match="ConnectionError"):
        await workflow.run("x")
    assert flaky.calls == 1 and sleeps == []


async def test_skip_policy_drops_the_node_and_the_run_goes_on(sleeps: list[float]) -> None:
    flaky = Flaky(failures=5)
    bad = FunctionExecutor(flaky, id="bad")

    @executor
    def start(text: str) -> str:
        return text

    @executor
    def good(text: str) -> str:
        return f"{text} good"

    workflow = (
        WorkflowBuilder("s", start=start)
        .add_fan_out(start, [bad, good])
        .with_retry(bad, RetryPolicy(max_attempts=2, on_exhausted="skip"))
        .build()
    )
    result = await workflow.run("x")
    assert result.status == "completed" and result.outputs == ["x good"]
    assert [e.node for e in result.events if isinstance(e, NodeSkipped)] == ["bad"]


async def test_fallback_node_handles_the_message_instead(sleeps: list[float]) -> None:
    flaky = Flaky(failures=5)
    primary = FunctionExecutor(flaky, id="primary")

    @executor
    def backup(text: str) -> str:
        return f"{text} from backup"

    @executor
    def after(text: str) -> str:
        return f"{text}, then after"

    workflow = (
        WorkflowBuilder("f", start=primary)
        .add_edge(primary, after)
        .add_edge(backup, after)
        .with_retry(
            primary, RetryPolicy(max_attempts=2, on_exhausted="fallback", fallback="backup")
        )
        .build()
    )
    result = await workflow.run("x")
    # The fallback is an ordinary node: what it sends goes along its own edges.
    assert result.outputs == ["x from backup, then after"]
    assert flaky.calls == 2


async def test_a_node_timeout_fails_the_attempt_and_can_be_retried(sleeps: list[float]) -> None:
    calls: list[int] = []

    async def slow_then_fast(text: str) -> str:
        calls.append(1)
        if len(calls) == 1:
            await asyncio.sleep(10)
        return f"{text} done"

    node = FunctionExecutor(slow_then_fast, id="slow")
    workflow = (
        WorkflowBuilder("t", start=node)
        .with_timeout(node, 0.05)
        .with_retry(node, RetryPolicy(max_attempts=2))
        .build()
    )
    result = await workflow.run("x")
    assert result.outputs == ["x done"] and len(calls) == 2
    failed = [e for e in result.events if isinstance(e, NodeFailed)]
    assert "timed out after 0.05 s" in failed[0].error


async def test_the_whole_run_timeout_fails_with_the_last_checkpoint() -> None:
    @executor
    def first(text: str) -> str:
        return text

    @executor
    async def stuck(text: str) -> str:
        await asyncio.sleep(10)
        return text

    workflow = WorkflowBuilder("t", start=first).add_edge(first, stuck).build()
    with pytest.raises(WorkflowTimeoutError, match="timed out after 0.05 s in superstep 2") as info:
        await workflow.run("x", timeout=0.05)
    checkpoint_id = info.value.checkpoint_id
    assert checkpoint_id is not None
    stored = await workflow.checkpoint_store.load(checkpoint_id)
    assert stored.superstep == 1 and stored.pending[0]["target"] == "stuck"


async def test_parallel_nodes_overlap_up_to_the_concurrency_bound() -> None:
    running = 0
    peak = 0

    def worker(i: int) -> FunctionExecutor:
        async def work(text: str) -> str:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.01)
            running -= 1
            return f"{text}{i}"

        return FunctionExecutor(work, id=f"w{i}")

    @executor
    def start(text: str) -> str:
        return text

    workers = [worker(i) for i in range(6)]
    for bound, expected in ((2, 2), (8, 6)):
        peak = 0
        workflow = (
            WorkflowBuilder("p", start=start)
            .add_fan_out(start, workers)
            .with_max_concurrency(bound)
            .build()
        )
        result = await workflow.run("x")
        assert len(result.outputs) == 6
        assert peak == expected


async def test_compensations_run_in_reverse_order_when_the_run_fails() -> None:
    undone: list[str] = []

    @executor
    def book_flight(trip: str) -> str:
        return f"{trip}+flight"

    @executor
    def book_hotel(trip: str) -> str:
        return f"{trip}+hotel"

    @executor
    def charge_card(trip: str) -> str:
        raise RuntimeError("card declined")

    async def cancel_hotel(message: str) -> None:
        undone.append(f"hotel for {message}")

    workflow = (
        WorkflowBuilder("trip", start=book_flight)
        .add_chain([book_flight, book_hotel, charge_card])
        .with_compensation(book_flight, lambda m: undone.append(f"flight for {m}"))
        .with_compensation(book_hotel, cancel_hotel)
        .build()
    )
    events: list[object] = []
    with pytest.raises(WorkflowRunError, match="card declined"):
        await workflow.run("paris", on_event=events.append)
    assert undone == ["hotel for paris+flight", "flight for paris"]
    kinds = [type(e).__name__ for e in events[-3:]]
    assert kinds == ["NodeCompensated", "NodeCompensated", "WorkflowFailed"]
    assert [e.node for e in events if isinstance(e, NodeCompensated)] == [
        "book_hotel",
        "book_flight",
    ]
    assert isinstance(events[-1], WorkflowFailed) and events[-1].node == "charge_card"


async def test_a_failing_compensation_does_not_stop_the_others() -> None:
    undone: list[str] = []

    @executor
    def one(text: str) -> str:
        return text

    @executor
    def two(text: str) -> str:
        return text

    @executor
    def boom(text: str) -> str:
        raise ValueError("boom")

    def broken(message: str) -> None:
        raise OSError("cannot undo")

    workflow = (
        WorkflowBuilder("c", start=one)
        .add_chain([one, two, boom])
        .with_compensation(one, lambda m: undone.append("one"))
        .with_compensation(two, broken)
        .build()
    )
    events: list[object] = []
    with pytest.raises(WorkflowRunError):
        await workflow.run("x", on_event=events.append)
    assert undone == ["one"]
    compensated = [(e.node, e.error) for e in events if isinstance(e, NodeCompensated)]
    assert compensated == [("two", "OSError: cannot undo"), ("one", None)]
