"""The three pumps that take a run's steps (`raf.agent.run.steps`) one after another:
`run` to the end, `run_stream` yielding the run's updates after each step, and `iter`
handing out each step before it runs (the caller may replace it). Agent middleware wraps
the pump once; a run that raises is recorded as a failure before the error goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from raf.agent.run.output import PartialValues
from raf.agent.run.recording import record_failure
from raf.agent.run.run import PHASE_SET_UP, Run, Step
from raf.agent.run.steps import finish_cancelled, prepare, record
from raf.core.errors import RafError, RunCancelledError
from raf.core.middleware import AgentRunContext, run_chain, stream_through
from raf.core.responses import AgentResponse, AgentResponseUpdate


async def run_to_end(run: Run) -> AgentResponse:
    """Take every step of a run that does not stream; its response."""
    chain = run.context.middleware.agent
    try:
        if not chain:
            step: Step | None = prepare
            while step is not None:
                step = await step(run)
        else:
            assert run.options is not None
            context = AgentRunContext(run=run.context, messages=run.request, options=run.options)

            async def answer(ctx: AgentRunContext) -> None:
                run.request, run.options = ctx.messages, ctx.options
                step: Step | None = prepare
                while step is not None and step is not record:
                    step = await step(run)
                ctx.result = run.response

            await run_chain(chain, context, answer)
            run.response = _result_of(context)
            await record(run)
    except BaseException as exc:
        await record_failure(run, exc)
        raise
    finally:
        run.close()
    assert run.response is not None
    return run.response


async def run_stream(start: Callable[[], Run]) -> AsyncIterator[AgentResponseUpdate]:
    """Set a streaming run up (`start`: its checks raise when the first update is asked
    for) and take every step, yielding its updates as they come; the session is stored
    before the last update (the finish) goes out."""
    run = start()
    chain = run.context.middleware.agent
    try:
        if not chain:
            # `steps_streamed`, written out: a generator fewer for every update
            partials = PartialValues(run.output) if run.output is not None else None
            step: Step | None = prepare
            while step is not None:
                step = await step(run)
                if run.out:
                    out, run.out = run.out, []
                    for update in out:
                        yield update if partials is None else partials.see(update)
                live = run.live
                if live is not None:
                    run.live = None
                    try:
                        async for update in live:
                            yield update if partials is None else partials.see(update)
                    except RunCancelledError:
                        step = finish_cancelled
        else:
            assert run.options is not None
            context = AgentRunContext(
                run=run.context, messages=run.request, options=run.options, stream=True
            )

            async def drive(emit: Callable[[Any], None]) -> None:
                async def answer(ctx: AgentRunContext) -> None:
                    run.request, run.options = ctx.messages, ctx.options
                    async for update in steps_streamed(run, prepare, until=record):
                        emit(update)
                    ctx.result = run.response

                await run_chain(chain, context, answer)

            async for update in stream_through(drive):
                yield update
            run.response = _result_of(context)
            await record(run)
    except BaseException as exc:
        await record_failure(run, exc)
        raise
    finally:
        run.close()
    if run.phase is not PHASE_SET_UP:  # else an agent middleware answered alone
        for update in run.closing_updates():
            yield update


async def take_steps(run: Run, step: Step | None) -> None:
    """Take steps from `step` until one returns none (no update is reported)."""
    try:
        while step is not None:
            step = await step(run)
    finally:
        run.close()


async def steps_streamed(
    run: Run, step: Step | None, *, until: Step | None = None
) -> AsyncIterator[AgentResponseUpdate]:
    """Take steps from `step` until one returns none (or `until` is next), yielding
    after each the updates it made and then its live model call, if it started one
    (text deltas carry partial values when the run has an output type). The closing
    updates are the caller's to send."""
    partials = PartialValues(run.output) if run.output is not None else None
    while step is not None and step is not until:
        step = await step(run)
        for update in _made(run):
            yield update if partials is None else partials.see(update)
        live = run.live
        if live is not None:
            run.live = None
            try:
                async for update in live:
                    yield update if partials is None else partials.see(update)
            except RunCancelledError:
                step = finish_cancelled


def _made(run: Run) -> list[AgentResponseUpdate]:
    """The updates the last step made, taken from the run."""
    out = run.out
    if out:
        run.out = []
    return out


def _stopped(exc: BaseException) -> BaseException:
    """What a run's failure records: leaving a run stepped through early is a stop."""
    if isinstance(exc, GeneratorExit):
        return RunCancelledError("the caller stopped stepping through the run")
    return exc


def _result_of(context: AgentRunContext) -> AgentResponse:
    if context.result is None:
        raise RafError(
            "an agent middleware returned without a result: call call_next() or set result"
        )
    return context.result


# -- iter: the steps handed out one by one --------------------------------------------


@dataclass(kw_only=True, slots=True)
class RunStep:
    """One step of a run, handed out before it runs."""

    name: str
    """The step: prepare, call_model, after_reply, run_batch, pause, resume,
    check_output, record, finish_cancelled, finish_limit, raise_limit; and last `end`
    (the run recorded: `RunSteps.response` holds the answer; its updates are the
    stream's last: the usage and the finish)."""
    step: Step | None = None
    """What runs for it: `RunSteps.replace` puts another step here before it runs."""
    updates: list[AgentResponseUpdate] = field(default_factory=list)
    """What the step reported to the stream, in order (a model call's deltas included);
    complete once the next step is handed out."""


class RunSteps:
    """`async with agent.iter(...) as steps: async for step in steps: ...`: the run's
    steps, each handed out before it runs. `steps.replace(other)` runs `other` in its
    place (a step is a coroutine function of the run that returns the next step); the
    steps' updates, joined, are what `run_stream` yields; once the `end` step is out,
    `response` holds what `run` returns. Leaving the loop early stops the run there (it
    is recorded as cancelled)."""

    def __init__(self, start: Callable[[], Run]) -> None:
        self._start = start
        self._run: Run | None = None
        self._current: RunStep | None = None
        self._steps: AsyncIterator[RunStep] | None = None
        self._ended = False

    @property
    def run(self) -> Run:
        """The run being stepped through (set up, and checked, on first use)."""
        if self._run is None:
            self._run = self._start()
        return self._run

    @property
    def response(self) -> AgentResponse | None:
        """The run's response, once the `end` step has been handed out."""
        return self.run.response if self._ended else None

    def replace(self, step: Step) -> None:
        """Run `step` instead of the step handed out last (before it runs)."""
        if self._current is None or self._current.name == "end":
            raise RafError("no step waits to run: replace() is called on the step handed out")
        self._current.step = step

    async def __aenter__(self) -> RunSteps:
        _ = self.run
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        steps = self._steps
        if steps is not None and not self._ended:
            # left early: the step handed out never runs, and the run is recorded as
            # stopped (by the steps themselves, as they close)
            close = getattr(steps, "aclose", None)
            if close is not None:
                await close()

    def __aiter__(self) -> AsyncIterator[RunStep]:
        if self._steps is not None:
            raise RafError("a run can be stepped through once")
        self._steps = self._each()
        return self._steps

    async def _each(self) -> AsyncIterator[RunStep]:
        run = self.run
        chain = run.context.middleware.agent
        if not chain:
            async for handed in self._own(run):
                yield handed
        else:
            async for handed in self._through(run, chain):
                yield handed
        run.close()
        self._ended = True
        self._current = RunStep(name="end", updates=run.closing_updates())
        yield self._current

    async def _own(self, run: Run) -> AsyncIterator[RunStep]:
        """Hand out each step, then take it (or what replaced it)."""
        try:
            step: Step | None = prepare
            while step is not None:
                handed = self._current = RunStep(name=step.__name__, step=step)
                yield handed
                step = await self._take(run, handed)
        except BaseException as exc:
            self._ended = True
            await record_failure(run, _stopped(exc))
            run.close()
            raise

    async def _take(self, run: Run, handed: RunStep) -> Step | None:
        """Take one handed-out step, keeping what it reports."""
        assert handed.step is not None
        step = await handed.step(run)
        handed.updates.extend(_made(run))
        live = run.live
        if live is not None:
            run.live = None
            try:
                async for update in live:
                    handed.updates.append(update)
            except RunCancelledError:
                step = finish_cancelled
        return step

    async def _through(self, run: Run, chain: Any) -> AsyncIterator[RunStep]:
        """Hand out the steps of a run inside its agent middleware: the chain runs in a
        task that waits, before each step, until the caller asks for the next one."""
        handoff: asyncio.Queue[RunStep | None] = asyncio.Queue()
        go: list[asyncio.Future[None]] = []
        assert run.options is not None
        context = AgentRunContext(
            run=run.context, messages=run.request, options=run.options, stream=True
        )

        async def answer(ctx: AgentRunContext) -> None:
            run.request, run.options = ctx.messages, ctx.options
            step: Step | None = prepare
            while step is not None and step is not record:
                handed = RunStep(name=step.__name__, step=step)
                waiting = asyncio.get_running_loop().create_future()
                go.append(waiting)
                handoff.put_nowait(handed)
                await waiting
                step = await self._take(run, handed)
            ctx.result = run.response

        async def drive() -> None:
            try:
                await run_chain(chain, context, answer)
            finally:
                handoff.put_nowait(None)

        task = asyncio.ensure_future(drive())
        try:
            while True:
                handed = await handoff.get()
                if handed is None:
                    break
                self._current = handed
                yield handed
                go.pop(0).set_result(None)
            await task
            run.response = _result_of(context)
            handed = self._current = RunStep(name=record.__name__, step=record)
            yield handed
            await self._take(run, handed)
        except BaseException as exc:
            self._ended = True
            await record_failure(run, _stopped(exc))
            run.close()
            raise
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        run.close()

    def __repr__(self) -> str:
        return f"RunSteps(current={self._current.name if self._current else None!r})"
