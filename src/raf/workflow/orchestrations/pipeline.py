"""Pipeline: phases run in order, each of members in sequence or at once; a phase may send
the work back to an earlier one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage
from raf.workflow.orchestrations.base import Orchestration, Outcome
from raf.workflow.orchestrations.concurrent import AggregateFunction, aggregate, run_together
from raf.workflow.orchestrations.runtime import Member, Runtime
from raf.workflow.orchestrations.sequential import run_in_sequence


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


class PipelineOrchestration(Orchestration):
    """`PipelineOrchestration([Phase(name="plan", members=[planner]), Phase(...)])`.

    The first phase gets the task; each later phase gets the previous phase's answer. When
    a phase's `loop_back` matches its answer, the work goes back to the phase named `to`,
    which gets what it was given before plus that answer (the feedback). The last phase's
    answer is the result.
    """

    mode = "pipeline"

    def __init__(
        self, phases: Sequence[Phase], *, name: str = "pipeline", description: str = ""
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
        self.phases = list(phases)

    async def orchestrate(self, rt: Runtime, conversation: list[ChatMessage]) -> Outcome:
        names = [p.name for p in self.phases]
        given: dict[str, list[ChatMessage]] = {}
        loops = dict.fromkeys(names, 0)
        ran: list[str] = []
        index = 0
        inputs = list(conversation)
        answer: ChatMessage | None = None
        while index < len(self.phases):
            phase = self.phases[index]
            given[phase.name] = inputs
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
            inputs = [ChatMessage.user(answer.text)]
            index += 1
        assert answer is not None  # there is at least one phase
        return Outcome(answer=answer, details={"phases": ran})

    async def _phase(self, rt: Runtime, phase: Phase, inputs: list[ChatMessage]) -> ChatMessage:
        if phase.mode == "sequential":
            return await run_in_sequence(rt, phase.members, inputs, "output")
        answers = await run_together(rt, phase.members, inputs)
        return await aggregate(rt, phase.name, phase.aggregator, inputs, answers)
