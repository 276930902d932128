"""Pipeline: phases run in order, each of members in sequence or at once; a phase may send
the work back to an earlier one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage
from raf.orchestrations.base import Orchestration, Outcome
from raf.orchestrations.concurrent import AggregateFunction, aggregate, run_together
from raf.orchestrations.runtime import Member, Runtime
from raf.orchestrations.sequential import PassOn, run_in_sequence


@dataclass(kw_only=True, slots=True)
class LoopBack:
    """Send the work back to phase `to` when the phase's answer matches `when`."""

    to: str
    when: str | Callable[[str], bool]
    """A keyword the answer contains (any case), or a test of the answer's text."""
    max_loops: int = 3
    """How many times this phase may send the work back; after that the pipeline goes on."""

    def matches(self, text: str) -> bool:
        if isinstance(self.when, str):
            return self.when.lower() in text.lower()
        return bool(self.when(text))


@dataclass(kw_only=True, slots=True)
class Phase:
    """One phase: its members in sequence (each handed the last answer) or all at once."""

    name: str
    members: Sequence[Member]
    mode: Literal["sequential", "concurrent"] = "sequential"
    aggregator: Member | AggregateFunction | None = None
    """For a concurrent phase: joins the answers (see `ConcurrentOrchestration`)."""
    loop_back: LoopBack | None = None
    pass_on: PassOn = "output"
    """For a sequential phase: what each member after the first is given (see
    `SequentialOrchestration`)."""


class PipelineOrchestration(Orchestration):
    """`PipelineOrchestration([Phase(name="plan", members=[planner]), Phase(...)])`.

    The first phase gets the task; each later phase gets the previous phase's answer
    (`pass_on="task"`: the task again). When a phase's `loop_back` matches its answer,
    the work goes back to the phase named `to`, which gets what it was given before plus
    that answer (the feedback). With `loop_from`, the whole pipeline from that phase on
    runs up to `max_iterations` times, each time fed back the last phase's answer in the
    same way; it ends early when that answer contains `until` (any case). The last
    phase's answer is the result.
    """

    mode = "pipeline"

    def __init__(
        self,
        phases: Sequence[Phase],
        *,
        name: str = "pipeline",
        description: str = "",
        pass_on: Literal["output", "task"] = "output",
        loop_from: str | None = None,
        max_iterations: int = 1,
        until: str | Callable[[str], bool] | None = None,
    ) -> None:
        unique: dict[int, Member] = {}
        for phase in phases:
            for member in phase.members:
                unique.setdefault(id(member), member)
        super().__init__(list(unique.values()), name=name, description=description)
        if not phases:
            raise ConfigurationError(f"pipeline {name!r} needs a phase")
        names = [p.name for p in phases]
        for index, phase in enumerate(phases):
            if not phase.members:
                raise ConfigurationError(f"pipeline {name!r}: phase {phase.name!r} has no member")
            if phase.mode not in ("sequential", "concurrent"):
                raise ConfigurationError(
                    f"phase {phase.name!r}: mode must be 'sequential' or 'concurrent', "
                    f"not {phase.mode!r}"
                )
            if names.count(phase.name) > 1:
                raise ConfigurationError(f"pipeline {name!r}: two phases are named {phase.name!r}")
            back = phase.loop_back
            if back is not None:
                if back.to not in names[: index + 1]:
                    raise ConfigurationError(
                        f"phase {phase.name!r} loops back to {back.to!r}, which is not this "
                        f"or an earlier phase ({', '.join(names[: index + 1])})"
                    )
                if back.max_loops < 1:
                    raise ConfigurationError(f"phase {phase.name!r}: max_loops must be at least 1")
        if loop_from is not None and loop_from not in names:
            raise ConfigurationError(
                f"pipeline {name!r} loops from {loop_from!r}, which is no phase "
                f"({', '.join(names)})"
            )
        if max_iterations < 1:
            raise ConfigurationError("max_iterations must be at least 1")
        if pass_on not in ("output", "task"):
            raise ConfigurationError(f"pass_on must be 'output' or 'task', not {pass_on!r}")
        self.phases = list(phases)
        self.pass_on = pass_on
        self.loop_from = loop_from
        self.max_iterations = max_iterations
        self.until = until

    async def orchestrate(self, rt: Runtime, conversation: list[ChatMessage]) -> Outcome:
        names = [p.name for p in self.phases]
        given: dict[str, list[ChatMessage]] = {}
        first: dict[str, list[ChatMessage]] = {}
        loops = dict.fromkeys(names, 0)
        ran: list[str] = []
        index = 0
        iteration = 1
        inputs = list(conversation)
        answer: ChatMessage | None = None
        while True:
            if index == len(self.phases):
                assert answer is not None  # there is at least one phase
                if not self._again(iteration, answer.text):
                    break
                iteration += 1
                assert self.loop_from is not None  # _again says so
                rt.note(f"pipeline iteration {iteration} from phase {self.loop_from}")
                index = names.index(self.loop_from)
                inputs = [*first[self.loop_from], ChatMessage.user(answer.text)]
            phase = self.phases[index]
            given[phase.name] = inputs
            first.setdefault(phase.name, inputs)
            answer = await self._phase(rt, phase, inputs)
            ran.append(phase.name)
            back = phase.loop_back
            if (
                back is not None
                and loops[phase.name] < back.max_loops
                and back.matches(answer.text)
            ):
                loops[phase.name] += 1
                rt.note(f"phase {phase.name} sends the work back to {back.to}")
                index = names.index(back.to)
                inputs = [*given[back.to], ChatMessage.user(answer.text)]
                continue
            inputs = (
                list(conversation) if self.pass_on == "task" else [ChatMessage.user(answer.text)]
            )
            index += 1
        return Outcome(answer=answer, details={"phases": ran, "iterations": iteration})

    def _again(self, iteration: int, text: str) -> bool:
        """Whether the pipeline runs again from `loop_from` after its last phase."""
        if self.loop_from is None or iteration >= self.max_iterations:
            return False
        if self.until is None:
            return True
        if isinstance(self.until, str):
            return self.until.lower() not in text.lower()
        return not self.until(text)

    async def _phase(self, rt: Runtime, phase: Phase, inputs: list[ChatMessage]) -> ChatMessage:
        if phase.mode == "sequential":
            return await run_in_sequence(rt, phase.members, inputs, phase.pass_on)
        answers = await run_together(rt, phase.members, inputs)
        return await aggregate(rt, phase.name, phase.aggregator, inputs, answers)
