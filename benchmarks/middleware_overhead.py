"""What the middleware seam costs: one agent run with no middleware, and with one
pass-through middleware of each kind (agent, chat, function), in one process.

The run is three model turns with three tool calls (one parallel pair) against a
scripted model, as in `overhead.py`; `run` and `run_stream` are both measured.
With nothing registered no chain is built, so "none" is the loop's own cost.

To show that the seam itself costs nothing when empty, the same agent is also run on a
build that bypasses it: the agent's run, the model call and the tool call each replaced
(for those batches only) by a copy with the middleware branch cut out. The difference
between "no middleware" and "seam bypassed" is printed with the spread of the batch-pair
differences; "nothing measurable" means the spread straddles zero.

    python benchmarks/middleware_overhead.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from raf import Agent, AgentBuilder, AgentResponse, ChatOptions, ChatResponse, tool
from raf.agent.run import invoke as invoke_module
from raf.agent.run import model_call, steps
from raf.agent.run.answer import answer_quietly, answered
from raf.agent.run.providers import prepare
from raf.agent.run.recording import finish, record_failure
from raf.agent.run.state import LoopState, Outcome
from raf.core.contents import FunctionCallContent, FunctionResultContent
from raf.core.errors import RunCancelledError
from raf.core.middleware import AgentRunContext, CallNext, ChatContext, FunctionInvocationContext
from raf.core.responses import AgentResponseUpdate
from raf.testing import ScriptedChatClient, call, reply


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def upper(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


async def lookup(key: str) -> str:
    """Look a key up."""
    return {"k": "value"}.get(key, "missing")


class CyclingModel(ScriptedChatClient):
    """The scripted model, replaying its three turns forever."""

    def __init__(self) -> None:
        super().__init__(
            [
                reply("", call("add", a=2, b=3, call_id="c1")),
                reply("", call("upper", text="x", call_id="c2"), call("lookup", key="k")),
                "done",
            ]
        )

    def _cycle(self) -> None:
        if self.remaining == 0:
            self._next = 0
        self.requests.clear()

    async def get_response(self, messages: Any, options: ChatOptions | None = None) -> ChatResponse:
        self._cycle()
        return await super().get_response(messages, options)

    async def get_streaming_response(self, messages: Any, options: Any = None) -> Any:
        self._cycle()
        async for update in super().get_streaming_response(messages, options):
            yield update


async def through_agent(context: AgentRunContext, call_next: CallNext) -> None:
    await call_next()


async def through_chat(context: ChatContext, call_next: CallNext) -> None:
    await call_next()


async def through_function(context: FunctionInvocationContext, call_next: CallNext) -> None:
    await call_next()


def _agent(*middleware: Any) -> Any:
    builder = AgentBuilder().with_chat_client(CyclingModel())
    builder.with_tools([tool(add), tool(upper), tool(lookup)])
    return builder.use_middleware(*middleware).build()


PLAIN = _agent()
WRAPPED = _agent(through_agent, through_chat, through_function)


async def _run(agent: Any) -> str:
    return str((await agent.run("go")).text)


async def _stream(agent: Any) -> str:
    return "".join([u.text async for u in agent.run_stream("go")])


# -- the build that bypasses the seam ---------------------------------------------------


class BareAgent(Agent):
    """`Agent.run` without the agent-middleware branch."""

    async def run(
        self,
        messages: Any = None,
        session: Any = None,
        options: Any = None,
        *,
        output_type: Any = None,
        variables: Any = None,
        deps: Any = None,
    ) -> Any:
        run = self._begin(messages, session, options, output_type, variables, deps, stream=False)
        try:
            await prepare(run)
            await answer_quietly(run)
            answered(run)
        except BaseException as exc:
            await record_failure(run, exc)
            raise
        assert run.response is not None
        response: AgentResponse = await finish(run, run.response)
        return response


async def bare_model_response(state: LoopState, options: ChatOptions) -> None:
    """`model_response` without the chat-middleware branch."""
    try:
        call = state.inner.get_response(state.conversation, options)
        response: ChatResponse = await (
            call if state.run.cancellation is None else state.race(call)
        )
    except RunCancelledError:
        raise
    except Exception as exc:
        state.model_error = exc
        raise
    model_call._accept(state, response)


def bare_model_updates(
    state: LoopState, options: ChatOptions
) -> AsyncIterator[AgentResponseUpdate]:
    """`model_updates` without the chat-middleware branch."""
    return model_call._leaf_stream(state, state.conversation, options, None)


async def bare_invoke(state: LoopState, call: FunctionCallContent) -> Outcome:
    """`invoke` without the function-middleware branch (these tools never pause)."""
    tool_ = state.tools.get(call.name)
    result = await invoke_module._run_tool(state, tool_, call, call.arguments)
    if result.error is not None:
        return FunctionResultContent(call_id=call.call_id, name=call.name, error=result.error)
    value = result.value
    if type(value) is not int:  # these tools answer ints and short texts
        value = invoke_module._cap(value, state.max_result_chars)
    outcome = object.__new__(FunctionResultContent)
    FunctionResultContent.__init__(outcome, call_id=call.call_id, name=call.name, result=value)
    return outcome


@contextlib.contextmanager
def seam_bypassed() -> Iterator[None]:
    """Swap in the bare steps for the duration of a batch."""
    swaps = [
        (steps, "model_response", bare_model_response),
        (steps, "model_updates", bare_model_updates),
        (invoke_module, "invoke", bare_invoke),
    ]
    saved = [(module, name, getattr(module, name)) for module, name, _ in swaps]
    for module, name, bare in swaps:
        setattr(module, name, bare)
    try:
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


BARE = _agent()
BARE.__class__ = BareAgent


# -- timing ----------------------------------------------------------------------------

Case = tuple[Callable[[], Awaitable[str]], Callable[[], contextlib.AbstractContextManager[None]]]


async def measure(cases: dict[str, Case], runs: int, batches: int = 10) -> dict[str, list[float]]:
    """Microseconds per run of each case in every batch, batches interleaved."""
    for fn, around in cases.values():
        with around():
            for _ in range(50):
                assert await fn() == "done"
    samples: dict[str, list[float]] = {name: [] for name in cases}
    per_batch = max(1, runs // batches)
    for _ in range(batches):
        for name, (fn, around) in cases.items():
            with around():
                started = time.perf_counter()
                for _ in range(per_batch):
                    await fn()
                samples[name].append((time.perf_counter() - started) / per_batch * 1e6)
    return samples


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args()
    plain = contextlib.nullcontext
    got = await measure(
        {
            "run, seam bypassed": (lambda: _run(BARE), seam_bypassed),
            "run, no middleware": (lambda: _run(PLAIN), plain),
            "run, 3 pass-through": (lambda: _run(WRAPPED), plain),
            "stream, seam bypassed": (lambda: _stream(BARE), seam_bypassed),
            "stream, no middleware": (lambda: _stream(PLAIN), plain),
            "stream, 3 pass-through": (lambda: _stream(WRAPPED), plain),
        },
        args.runs,
        args.batches,
    )
    for name, samples in got.items():
        print(f"{name:24}: {statistics.median(samples):8.1f} us/run")
    for kind in ("run", "stream"):
        pairs = zip(got[f"{kind}, no middleware"], got[f"{kind}, seam bypassed"], strict=True)
        diffs = sorted(a - b for a, b in pairs)
        low, high = diffs[len(diffs) // 10], diffs[-1 - len(diffs) // 10]
        verdict = "nothing measurable" if low <= 0 <= high else "measurable"
        print(
            f"{kind}: empty seam costs {statistics.median(diffs):+.1f} us/run "
            f"(batch pairs, 10th-90th percentile {low:+.1f} to {high:+.1f}): {verdict}"
        )


if __name__ == "__main__":
    asyncio.run(main())
