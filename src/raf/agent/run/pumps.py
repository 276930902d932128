"""The one loop that takes a run's steps (`raf.agent.run.steps`), and the three pumps
around it: `run` takes each step, `run_stream` also yields what the loop hands out after
each step (the step's updates, then its model call's deltas as they come), and `iter`
hands out each step before it runs (the caller may replace it: its `Visit`). Agent
middleware is a layer around the loop: the chain runs the steps up to `record`, in the
caller's task (updates and steps leave it through `raf.core.hand_out`, with no task or
queue between). A run that raises is recorded as a failure before the error goes on.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType

from raf.agent.run.output import PartialValues
from raf.agent.run.recording import record_failure
from raf.agent.run.run import PHASE_SET_UP, Run, Step
from raf.agent.run.steps import finish_cancelled, prepare, record
from raf.core.errors import RafError, RunCancelledError
from raf.core.hand_out import hand_out, handed_out
from raf.core.middleware import AgentRunContext, Around
from raf.core.responses import AgentResponse, AgentResponseUpdate

Visit = Callable[[Run, Step], Awaitable["Step | None"]]
"""What a pump does with one step: takes it (and whatever else it does), returning the
step that follows."""


async def take_steps(
    run: Run, step: Step | None, visit: Visit | None = None, *, until: Step | None = None
) -> Step | None:
    """The loop: take steps from `step` (each through `visit`, or plainly) until one
    returns none or `until` is next; that next step. After each step, what it made for
    the stream is handed out (`hand_out`): the list of its updates at once, and, when it
    started a model call, that call's deltas one by one as they come (a call the run's
    cancellation stops makes the next step `finish_cancelled`). A run that does not
    stream makes none."""
    while step is not None and step is not until:
        step = await (step(run) if visit is None else visit(run, step))
        if run.out:
            await run.send_out()
        live = run.live
        if live is not None:
            run.live = None
            try:
                await live  # its deltas are relayed to the caller as they come
            except RunCancelledError:
                step = finish_cancelled
    return step


async def agent_steps(run: Run, visit: Visit | None = None) -> None:
    """An agent's run: its steps up to its answer, inside its agent middleware when it
    has any (a layer `Around` the loop: the chain is suspended at its `call_next` while
    the loop runs, and hears how the steps ended), then the `record` step."""
    chain = run.context.middleware.agent
    if not chain:
        await take_steps(run, prepare, visit)
        return
    assert run.options is not None
    context = AgentRunContext(
        run=run.context, messages=run.request, options=run.options, stream=run.stream
    )
    layer = Around(chain, context)
    if await layer.enter():
        run.request, run.options = context.messages, context.options
        try:
            await take_steps(run, prepare, visit, until=record)
        except BaseException as exc:
            await layer.leave(exc)  # the chain may answer instead (else it raises)
        else:
            context.result = run.response
            await layer.leave()
    if context.result is None:
        raise RafError(
            "an agent middleware returned without a result: call call_next() or set result"
        )
    run.response = context.result
    await take_steps(run, record, visit)


# -- run and run_stream ---------------------------------------------------------------


async def run_to_end(run: Run) -> AgentResponse:
    """Take every step of a run that does not stream; its response."""
    try:
        await agent_steps(run)
    except BaseException as exc:
        await record_failure(run, exc)
        raise
    finally:
        run.close()
    assert run.response is not None
    return run.response


async def run_stream(start: Callable[[], Run]) -> AsyncIterator[AgentResponseUpdate]:
    """Set a streaming run up (`start`: its checks raise when the first update is asked
    for) and take every step, yielding its updates as they come (text deltas carry
    partial values when the run has an output type); the session is stored before the
    last update (the finish) goes out."""
    run = start()
    partials = PartialValues(run.output) if run.output is not None else None
    made = handed_out(agent_steps(run))
    try:
        try:
            async for update in made:
                if type(update) is list:  # a step's own updates, at once
                    for one in update:
                        yield one if partials is None else partials.see(one)
                else:
                    yield update if partials is None else partials.see(update)
        finally:
            await made.aclose()  # left early: the steps stop where they wait
    except BaseException as exc:
        await record_failure(run, exc)
        raise
    finally:
        run.close()
    if run.phase is not PHASE_SET_UP:  # else an agent middleware answered alone
        for update in run.closing_updates():
            yield update


async def tool_loop_steps(run: Run, step: Step) -> None:
    """The tool loop on its own (no agent, no agent middleware): every step from `step`."""
    try:
        await take_steps(run, step)
    finally:
        run.close()


async def tool_loop_updates(run: Run, step: Step) -> AsyncIterator[AgentResponseUpdate]:
    """The tool loop on its own, streaming: every step from `step`, yielding its updates
    as they come; the closing updates follow."""
    made = handed_out(take_steps(run, step))
    try:
        try:
            async for update in made:
                if type(update) is list:
                    for one in update:
                        yield one
                else:
                    yield update
        finally:
            await made.aclose()  # left early: the steps stop where they wait
    finally:
        run.close()
    for update in run.closing_updates():
        yield update


def _stopped(exc: BaseException) -> BaseException:
    """What a run's failure records: leaving a run stepped through early is a stop."""
    if isinstance(exc, GeneratorExit):
        return RunCancelledError("the caller stopped stepping through the run")
    return exc


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
        try:
            async with contextlib.aclosing(handed_out(agent_steps(run, self._visit))) as made:
                current = RunStep(name="")
                async for handed in made:
                    if type(handed) is RunStep:
                        self._current = current = handed
                        yield handed
                    elif type(handed) is list:  # what the step made: kept with it
                        current.updates.extend(handed)
                    else:
                        current.updates.append(handed)
        except BaseException as exc:
            self._ended = True
            await record_failure(run, _stopped(exc))
            run.close()
            raise
        run.close()
        self._ended = True
        self._current = RunStep(name="end", updates=run.closing_updates())
        yield self._current

    async def _visit(self, run: Run, step: Step) -> Step | None:
        """`iter`'s visit: hand the step out, then take it (or what replaced it); what
        the loop hands out after it is kept with the step."""
        handed = RunStep(name=step.__name__, step=step)
        await hand_out(handed)
        assert handed.step is not None
        return await handed.step(run)

    def __repr__(self) -> str:
        return f"RunSteps(current={self._current.name if self._current else None!r})"
