"""`metadata.orchestration`: which orchestration a document's sub-agents form, checked with
located problems (`raf.decl.agent.link_orchestration` builds the orchestration).

The value is a mode name (`orchestration: sequential`) or a mapping with `mode` and that
mode's options in camelCase. The document's own agent (its instructions, model, tools)
plays the mode's leading role where there is one: the triage agent of a handoff, the
coordinator of a group chat whose selector is `coordinator`, the manager of a magentic
orchestration, and the aggregator of a concurrent one when `aggregator: self`. The
sub-agents are the members, referred to by name; one named for a leading role takes that
role instead of a member's place.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from raf.core.errors import Problem
from raf.decl.documents.base import MAX_COUNT, DeclModel
from raf.decl.documents.source import Document, KeyPath
from raf.decl.documents.suggest import suggest

SELF = "self"
"""The name by which options refer to the document's own agent."""


class SequentialDecl(DeclModel):
    """Members one after another."""

    mode: Literal["sequential"]
    pass_on: Literal["output", "conversation", "task"] = "output"
    include_self: bool = False
    """The document's own agent runs first, before the sub-agents (as the original does)."""


class ConcurrentDecl(DeclModel):
    """Members at once; `aggregator` names a sub-agent or `self` (default: answers listed)."""

    mode: Literal["concurrent"]
    aggregator: str | None = None
    max_concurrency: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    include_self: bool = False
    """The document's own agent runs beside the sub-agents (as the original does)."""


class HandoffDecl(DeclModel):
    """The triage agent (`self` by default) hands the conversation to a specialist."""

    mode: Literal["handoff"]
    triage: str = SELF
    handoffs: dict[str, list[str]] | None = None
    routing_field: str | None = None
    max_handoffs: int = Field(default=10, ge=1, le=MAX_COUNT)


class GroupChatDecl(DeclModel):
    """Members take turns; with `selector: coordinator` the document's agent picks them."""

    mode: Literal["group_chat"]
    selector: Literal["round_robin", "fixed", "coordinator"] = "round_robin"
    order: list[str] | None = None
    coordinator: str = SELF
    max_rounds: int = Field(default=10, ge=1, le=MAX_COUNT)
    termination_keywords: list[str] = Field(default_factory=list)


class MagenticDecl(DeclModel):
    """A manager (`self` by default) plans, keeps a progress ledger and re-plans."""

    mode: Literal["magentic"]
    manager: str = SELF
    max_iterations: int = Field(default=15, ge=1, le=MAX_COUNT)
    max_stalls: int = Field(default=3, ge=0, le=MAX_COUNT)


class VoteDecl(DeclModel):
    """Members vote, over up to `rounds` rounds."""

    mode: Literal["vote"]
    method: Literal["majority", "unanimous", "weighted"] = "majority"
    choices: list[str] | None = None
    weights: dict[str, float] | None = None
    rounds: int = Field(default=1, ge=1, le=MAX_COUNT)
    include_self: bool = False
    """The document's own agent is the first voter, its weight under `self` (as the
    original framework runs it)."""


class LoopBackDecl(DeclModel):
    """Back to phase `to` when the phase's answer contains `when`."""

    to: str
    when: str
    max_loops: int = Field(default=3, ge=1, le=MAX_COUNT)


class PhaseDecl(DeclModel):
    """A pipeline phase: members by name, in sequence or at once. A phase written without
    a name is named by its place: `phase-1`, `phase-2`, …"""

    name: str
    members: list[str] = Field(min_length=1)
    mode: Literal["sequential", "concurrent"] = "sequential"
    aggregator: str | None = None
    loop_back: LoopBackDecl | None = None
    pass_on: Literal["output", "conversation", "task"] = "output"


MAX_ITERATIONS = 1000
"""The most times a pipeline may run from `loopFrom` (each run calls every later phase)."""


class PipelineDecl(DeclModel):
    """Phases in order; with `maxIterations`, the phases from `loopFrom` (the first phase
    by default) on run up to that many times in all, each time given the last phase's
    answer, until that answer contains `until` (any case)."""

    mode: Literal["pipeline"]
    phases: list[PhaseDecl] = Field(min_length=1)
    pass_on: Literal["output", "task"] = "output"
    loop_from: str | None = None
    max_iterations: int = Field(default=1, ge=1, le=MAX_ITERATIONS)
    until: str | None = None


OrchestrationDecl = (
    SequentialDecl
    | ConcurrentDecl
    | HandoffDecl
    | GroupChatDecl
    | MagenticDecl
    | VoteDecl
    | PipelineDecl
)
MODES: dict[str, type[BaseModel]] = {
    "sequential": SequentialDecl,
    "concurrent": ConcurrentDecl,
    "handoff": HandoffDecl,
    "group_chat": GroupChatDecl,
    "magentic": MagenticDecl,
    "vote": VoteDecl,
    "pipeline": PipelineDecl,
}
ROOT: KeyPath = ("metadata", "orchestration")


_MODE_SPELLINGS = {
    "groupchat": "group_chat",
    "group_chat": "group_chat",
    "roundrobin": "group_chat",
    "round_robin": "group_chat",
    "voting": "vote",
    "parallel": "concurrent",
}
"""Mode names as the original framework writes them (read without regard to case)."""


def _original_spellings(doc: Document, data: dict[str, Any]) -> bool:
    """The original framework's keys, read as raf's, each keeping its place in the file:
    `groupChat`/`roundRobin` modes, camelCase selectors (`roundRobin`), `maxIterations` of
    a group chat, vote `votingRounds` and `aggregator` (its method), `passOutput` (true:
    each agent is given the previous answer, `passOn: output`; false: the task alone,
    `passOn: task`), a pipeline's `loopFromPhase` (a phase's name or its place counted
    from 0) and its phases' `agents`; a phase without a name is named by its place
    (`phase-1`, …); its phase keys that mean nothing to raf are dropped with a warning.
    True when the mapping writes something only the original framework writes."""
    from raf.decl.documents.dialects.rewriter import Rewriter

    rw = Rewriter(doc)
    raw_mode = data.get("mode")
    original = _written_by_original(data)
    if isinstance(raw_mode, str):
        key = raw_mode.lower().replace("-", "_")
        mode = _MODE_SPELLINGS.get(key, raw_mode)
        if key in ("roundrobin", "round_robin"):
            data.setdefault("selector", "round_robin")
        data["mode"] = mode
    if data.get("mode") in ("sequential", "pipeline"):  # elsewhere it has no meaning
        _pass_output(rw, ROOT, data)
    if data.get("mode") == "group_chat":
        rw.rename(ROOT, "maxIterations", "maxRounds")
        rw.rename(ROOT, "max_iterations", "maxRounds")
        selector = data.get("selector")
        if isinstance(selector, str):
            snake = _snake(selector)
            data["selector"] = _SELECTORS.get(snake, snake)
        rw.rename(ROOT, "speaker_order", "speakerOrder")
    if data.get("mode") == "vote":
        rw.rename(ROOT, "votingRounds", "rounds")
        rw.rename(ROOT, "voting_rounds", "rounds")
        aggregator = data.get("aggregator")
        if isinstance(aggregator, str) and "method" not in data:
            # the original names the vote's aggregation: majority, unanimous, weighted
            rw.rename(ROOT, "aggregator", "method")
            data["method"] = _vote_method(aggregator)
            if data["method"] not in VOTE_METHODS:
                # the original's vote counts by majority whatever else it is given
                data["method"] = "majority"
                rw.warn(
                    (*ROOT, "method"),
                    f"aggregator {aggregator!r} is read as majority, as the original "
                    "framework reads any value but unanimous and weighted (raf's methods: "
                    + ", ".join(VOTE_METHODS)
                    + ")",
                )
    phases = data.get("phases")
    for index, phase in enumerate(phases if isinstance(phases, list) else []):
        if isinstance(phase, dict):
            here: KeyPath = (*ROOT, "phases", index)
            rw.rename(here, "agents", "members")
            phase.setdefault("name", f"phase-{index + 1}")
            _pass_output(rw, here, phase)
            for key, why in _IGNORED_PHASE_KEYS.items():
                rw.drop((*here, key), why)
    if data.get("mode") == "pipeline":
        rw.rename(ROOT, "loop_from_phase", "loopFromPhase")
        rw.rename(ROOT, "loopFromPhase", "loopFrom")
        start = data.get("loopFrom")
        if isinstance(start, int) and not isinstance(start, bool) and isinstance(phases, list):
            named = [p.get("name") if isinstance(p, dict) else None for p in phases]
            data["loopFrom"] = named[start] if 0 <= start < len(named) else str(start)
    return original


VOTE_METHODS = ("majority", "unanimous", "weighted")
"""The vote's methods, which the original framework writes as its `aggregator`."""
_ORIGINAL_ONLY = (
    "votingRounds",
    "voting_rounds",
    "passOutput",
    "pass_output",
    "speakerOrder",
    "speaker_order",
    "loopFromPhase",
    "loop_from_phase",
)
"""Orchestration keys that only the original framework writes."""
ORIGINAL_MODES = ("parallel", "voting", "groupchat", "roundrobin")
"""Mode names that only the original framework writes (read without regard to case)."""


def _vote_method(value: str) -> str:
    """The original's aggregator (`majority`, `MajorityVote`, `majority_vote`) as a method."""
    method = value.lower().removesuffix("_vote").removesuffix("vote")
    return method.rstrip("_-") or value


def _written_by_original(data: dict[str, Any]) -> bool:
    """Whether an orchestration mapping writes a mode name, key or value only the original
    framework writes (its vote `aggregator`, a list of `weights`, `passOutput`, …)."""
    mode = data.get("mode")
    if isinstance(mode, str) and mode.lower().replace("-", "_") in ORIGINAL_MODES:
        return True
    if any(key in data for key in _ORIGINAL_ONLY):
        return True
    if isinstance(data.get("weights"), list):
        return True
    aggregator = data.get("aggregator")
    vote = isinstance(mode, str) and mode.lower() in ("vote", "voting")
    return isinstance(aggregator, str) and (vote or _vote_method(aggregator) in VOTE_METHODS)


_ORIGINAL_KEYS: dict[str, tuple[str, ...]] = {
    "maxIterations": ("magentic", "pipeline"),
    "triage": ("handoff",),
    "routingField": ("handoff",),
    "coordinator": ("group_chat",),
    "maxRounds": ("group_chat",),
    "selector": ("group_chat",),
    "speakerOrder": ("group_chat",),
    "terminationKeywords": ("group_chat",),
    "aggregator": ("vote", "concurrent"),
    "weights": ("vote",),
    "votingRounds": ("vote",),
    "phases": ("pipeline",),
    "loopFromPhase": ("pipeline",),
    "passOutput": ("sequential", "pipeline"),
}
"""The original framework's orchestration options (one mapping for every mode) and the
modes that use each."""


def _other_modes_keys(doc: Document, data: dict[str, Any], members: Sequence[str] | None) -> None:
    """An option the original framework defines for other modes than this one: its reader
    takes every option in any mode and uses only the mode's own, so raf drops it with a
    warning saying it has no effect; a key of neither framework stays an unknown option.
    A concurrent orchestration's `aggregator` naming a vote's method (`majority`, …) rather
    than a sub-agent is the original's vote option, dropped so too."""
    from raf.decl.documents.dialects.rewriter import Rewriter

    mode = data.get("mode")
    if not isinstance(mode, str) or mode not in MODES:
        return
    rw = Rewriter(doc)
    aggregator = data.get("aggregator")
    if (
        mode == "concurrent"
        and isinstance(aggregator, str)
        and aggregator not in (*(members or ()), SELF)
        and _vote_method(aggregator) in VOTE_METHODS
    ):
        rw.drop(
            (*ROOT, "aggregator"),
            f"names {aggregator!r}, the original framework's vote aggregation rather than a "
            "sub-agent: a concurrent orchestration lists its answers, so it has no effect "
            "(the original framework ignores it here too); name a sub-agent or 'self' to "
            "combine them",
        )
    for key in [k for k in data if mode not in _ORIGINAL_KEYS.get(k, (mode,))]:
        modes = " or ".join(m.replace("_", " ") for m in _ORIGINAL_KEYS[key])
        rw.drop(
            (*ROOT, key),
            f"is an option of the original framework's {modes} orchestration; "
            f"a {mode} orchestration has none, so it has no effect (the original framework "
            "ignores it here too)",
        )


_SELECTORS = {
    "roundrobin": "round_robin",
    "fixed_order": "fixed",
    "fixedorder": "fixed",
    "llm_coordinator": "coordinator",
    "llmcoordinator": "coordinator",
    "llm": "coordinator",
}
"""The original's group-chat selectors (`roundRobin`, `fixedOrder`, `llmCoordinator`) as
raf's."""


def _by_place(doc: Document, data: dict[str, Any], members: Sequence[str] | None) -> list[Problem]:
    """The original's options that name sub-agents by place, read as names: a group
    chat's `speakerOrder` (places among the speakers, counted from 0; without it a
    `fixedOrder` selector speaks in the sub-agents' order) and a vote's list of `weights`
    (one per voter, in the sub-agents' order)."""
    problems: list[Problem] = []
    order = data.pop("speakerOrder", None)
    weights = data.get("weights")
    if members is None:  # the sub-agents could not all be read: their problems say why
        if isinstance(weights, list):
            del data["weights"]
        return problems
    if data.get("mode") == "group_chat" and order is not None:
        coordinator = data.get("coordinator")
        speakers = [m for m in members if m != coordinator]
        if not isinstance(order, list):
            order = [order]
        names: list[str] = []
        for index, place in enumerate(order):
            path: KeyPath = (*ROOT, "speakerOrder", index)
            if isinstance(place, str) and place in speakers:
                names.append(place)
            elif isinstance(place, int) and not isinstance(place, bool) and place >= 0:
                if place < len(speakers):
                    names.append(speakers[place])
                else:
                    problems.append(
                        doc.problem(
                            path,
                            f"speaker {place} is out of range: there are {len(speakers)} "
                            f"speakers ({', '.join(speakers)}), counted from 0",
                        )
                    )
            else:
                problems.append(
                    doc.problem(path, f"expected a speaker's place counted from 0, not {place!r}")
                )
        data.setdefault("order", names)
    if data.get("mode") == "group_chat" and data.get("selector") == "fixed":
        data.setdefault("order", [m for m in members if m != data.get("coordinator")])
    if data.get("mode") == "vote" and isinstance(weights, list):
        # with the document's own agent voting, it is the first voter (as in the original)
        voters = [SELF, *members] if data.get("includeSelf") is True else list(members)
        if len(weights) != len(voters):
            order = (
                "the document's own agent, then the sub-agents"
                if voters[:1] == [SELF]
                else "the sub-agents' order"
            )
            problems.append(
                doc.problem(
                    (*ROOT, "weights"),
                    f"{len(weights)} weights for {len(voters)} voters: a list of weights "
                    f"gives one per voter, in {order} ({', '.join(voters)})",
                )
            )
            del data["weights"]
        else:
            data["weights"] = dict(zip(voters, weights, strict=True))
    return problems


def _pass_output(rw: Any, path: KeyPath, data: dict[str, Any]) -> None:
    """`passOutput: true|false` (either spelling) read as `passOn: output|task`."""
    for key in ("passOutput", "pass_output"):
        value = data.get(key)
        if isinstance(value, bool) and rw.rename(path, key, "passOn"):
            data["passOn"] = "output" if value else "task"


def _snake(value: str) -> str:
    """`roundRobin`, `RoundRobin` or `round-robin` as `round_robin`."""
    spaced = "".join(f"_{c}" if c.isupper() else c for c in value).lstrip("_")
    return spaced.lower().replace("-", "_").replace("__", "_")


_IGNORED = "is an option of the original framework's orchestration phases that raf ignores"
_IGNORED_PHASE_KEYS = {
    "loopFromPhase": (
        f"{_IGNORED} (the pipeline's own 'loopFromPhase' and 'maxIterations' repeat it "
        "from a phase; a phase that sends the work back says so with 'loopBack')"
    ),
    "loop_from_phase": (
        f"{_IGNORED} (the pipeline's own 'loopFromPhase' and 'maxIterations' repeat it "
        "from a phase; a phase that sends the work back says so with 'loopBack')"
    ),
}
"""Phase keys the original framework writes that have no meaning in raf: dropped with a
located warning (an error under strict loading), not refused as typos."""


def in_raf_spelling(doc: Document) -> None:
    """Rewrite the document's `metadata.orchestration` in raf's spelling, in place, each
    key keeping its place (what `raf convert --to raf` writes)."""
    metadata = doc.data.get("metadata") if isinstance(doc.data, dict) else None
    if not isinstance(metadata, dict):
        return
    value = metadata.get("orchestration")
    if isinstance(value, str):
        metadata["orchestration"] = _MODE_SPELLINGS.get(value.lower().replace("-", "_"), value)
    elif isinstance(value, dict):
        _original_spellings(doc, value)


_TO_ORIGINAL_MODES = {"group_chat": "groupChat"}
_TO_ORIGINAL_KEYS = {"vote": {"rounds": "votingRounds", "method": "aggregator"}}
_TO_ORIGINAL_SELECTORS = {
    "round_robin": "roundRobin",
    "fixed": "fixedOrder",
    "coordinator": "llmCoordinator",
}


def in_original_spelling(
    value: Any, members: Sequence[str] | None = None, *, own_agent: bool = False
) -> Any:
    """An orchestration in raf's spelling as the original framework writes it: its
    `groupChat` mode and `roundRobin`/`fixedOrder`/`llmCoordinator` selectors, a fixed
    `order` as `speakerOrder` (places among the speakers, from 0), vote `votingRounds` and
    `aggregator`, named `weights` as a list in voter order (1 for a voter not named),
    `passOutput` for `passOn: output|task`, a pipeline's `loopFromPhase` (its place from 0)
    and phases' `agents`, a phase named by its place written without its name. `members`
    are the sub-agents' names in their order (without them, an order or weights that name
    sub-agents stay as names). A setting the original has no word for (`passOn:
    conversation`, `until`, ...) stays in raf's spelling. `includeSelf: true` is the
    original's way (a vote's weights then count from the document's agent); without it,
    where the document's agent has instructions, tools or contexts (`own_agent`),
    `includeSelf: false` is written, so that raf reads the document back as it was."""
    if not isinstance(value, dict):
        return _TO_ORIGINAL_MODES.get(value, value) if isinstance(value, str) else value
    out = dict(value)
    mode = out.get("mode")
    for key, theirs in _TO_ORIGINAL_KEYS.get(str(mode), {}).items():
        if key in out:
            out[theirs] = out.pop(key)
    if mode == "group_chat":
        _group_chat_to_original(out, members)
    own = out.pop("includeSelf", False) is True
    if mode == "vote" and isinstance(out.get("weights"), dict) and members is not None:
        weights = out["weights"]
        voters = [SELF, *members] if own else list(members)
        out["weights"] = [weights.get(name, 1.0) for name in voters]
    if mode in _WITH_OWN_AGENT and own_agent and not own:
        # the original runs the document's agent here; raf reads this back as written
        out["includeSelf"] = False
    if isinstance(mode, str):
        out["mode"] = _TO_ORIGINAL_MODES.get(mode, mode)
    _pass_on_to_original(out)
    phases = out.get("phases")
    if isinstance(phases, list):
        names = [p.get("name") if isinstance(p, dict) else None for p in phases]
        out["phases"] = [_phase_to_original(p, i) for i, p in enumerate(phases)]
        start = out.pop("loopFrom", None)
        if start is not None:
            out["loopFromPhase"] = names.index(start) if start in names else start
    return out


def _group_chat_to_original(out: dict[str, Any], members: Sequence[str] | None) -> None:
    """A group chat's selector, order and coordinator as the original writes them: the
    order as places among the speakers (the sub-agents but the coordinator), and no
    `coordinator` where it is the document's own agent (the original's default)."""
    selector = out.get("selector")
    if isinstance(selector, str):
        out["selector"] = _TO_ORIGINAL_SELECTORS.get(selector, selector)
    if out.get("coordinator") == SELF:
        del out["coordinator"]
    order = out.get("order")
    if isinstance(order, list) and members is not None:
        speakers = [m for m in members if m != out.get("coordinator")]
        if all(name in speakers for name in order):
            del out["order"]
            out["speakerOrder"] = [speakers.index(name) for name in order]


def _phase_to_original(phase: Any, index: int) -> Any:
    if not isinstance(phase, dict):
        return phase
    out = dict(phase)
    if out.get("name") == f"phase-{index + 1}":
        del out["name"]
    if "members" in out:
        out["agents"] = out.pop("members")
    _pass_on_to_original(out)
    return out


def _pass_on_to_original(data: dict[str, Any]) -> None:
    if data.get("passOn") in ("output", "task"):
        data["passOutput"] = data.pop("passOn") == "output"


def check_orchestration(
    doc: Document,
    metadata: Mapping[str, Any],
    members: Sequence[str] | None,
    *,
    own_agent: bool = False,
) -> tuple[OrchestrationDecl | None, list[Problem]]:
    """The document's orchestration, or None; every problem located. `members` are the
    sub-agents' names (None when they could not all be read: names are not checked).
    `own_agent`: the document's agent has instructions, tools or contexts of its own; an
    orchestration in the original framework's spelling then runs it as the original does
    (the first of a sequential or vote, beside the others in a concurrent one)."""
    if "orchestration" not in metadata:
        return _without_orchestration(doc, metadata, members)
    value = metadata["orchestration"]
    mode_path: KeyPath = ROOT
    if isinstance(value, str):
        data: dict[str, Any] = {"mode": value}
    elif isinstance(value, dict):
        data = value
        mode_path = (*ROOT, "mode")
        if "mode" not in data:
            # the original's orchestration object defaults its mode to magentic
            data["mode"] = "magentic"
            doc.warnings.append(
                doc.problem(ROOT, "no 'mode': read as magentic, the original framework's default")
            )
    else:
        return None, [
            doc.problem(
                ROOT, "expected an orchestration mode, or a mapping with 'mode' and options"
            )
        ]
    if isinstance(value, str):
        key = value.lower().replace("-", "_")
        original = key in ORIGINAL_MODES
        data = {"mode": _MODE_SPELLINGS.get(key, value)}
    else:
        original = _original_spellings(doc, data)
    _hoist_iterations(doc, metadata, data)
    _other_modes_keys(doc, data, members)
    if original and own_agent and data.get("mode") in _WITH_OWN_AGENT:
        data.setdefault("includeSelf", True)
    placed = _by_place(doc, data, members)
    mode = data.get("mode")
    if mode is None:
        return None, [
            doc.problem(ROOT, "missing required key 'mode' (one of: " + ", ".join(MODES) + ")")
        ]
    if isinstance(mode, str) and mode.lower() in ("workflow", "custom"):
        return None, [
            doc.problem(
                mode_path,
                f"{mode!r} is no orchestration mode: a workflow is a document of its own "
                "(kind: workflow with trigger.actions, or a graph of nodes and edges) that "
                "names its agents; the original framework refuses this mode too",
            )
        ]
    if not isinstance(mode, str) or mode not in MODES:
        hint = suggest(str(mode), MODES)
        did = f"; did you mean {hint!r}?" if hint else ""
        return None, [
            doc.problem(
                mode_path,
                f"unknown orchestration mode {mode!r}{did} (expected one of: "
                + ", ".join(MODES)
                + ")",
            )
        ]
    model = MODES[mode]
    try:
        decl = typing.cast(OrchestrationDecl, model.model_validate(data))
    except ValidationError as exc:
        return None, [*placed, *(_problem(doc, model, error) for error in exc.errors())]
    if members is None:
        return decl, []
    problems = [*placed, *_names(doc, decl, data, list(members))]
    if not members:
        problems.insert(0, doc.problem(ROOT, f"a {mode} orchestration needs subAgents"))
    return decl, problems


_WITH_OWN_AGENT = ("sequential", "concurrent", "vote")
"""Modes in which the original framework runs the document's own agent among the
sub-agents (raf does so with `includeSelf: true`)."""


LEGACY_ITERATIONS = ("maxIterations", "max_iterations")
"""The original's older place for a magentic or pipeline orchestration's iterations:
directly under `metadata`."""
ORIGINAL_MAGENTIC_ITERATIONS = 15
"""The iterations of the magentic orchestration the original framework forms of sub-agents
written without an orchestration."""


def _without_orchestration(
    doc: Document, metadata: Mapping[str, Any], members: Sequence[str] | None
) -> tuple[OrchestrationDecl | None, list[Problem]]:
    """Sub-agents without `metadata.orchestration`: raf offers them as tools of the
    document's agent. The original framework forms a magentic orchestration of them
    instead, and `metadata.maxIterations` (its older spelling) only means something there:
    a document that writes it is read as that magentic orchestration; any other is told the
    difference where its sub-agents stand."""
    if not members:
        return None, []
    legacy = next((key for key in LEGACY_ITERATIONS if key in metadata), None)
    if legacy is None:
        doc.warnings.append(
            doc.problem(
                ("subAgents",),
                "sub-agents without metadata.orchestration are offered as tools of this "
                "agent; the original framework runs them as a magentic orchestration of "
                f"{ORIGINAL_MAGENTIC_ITERATIONS} iterations instead: write "
                "'orchestration: magentic' under metadata to run them so (or another mode)",
            )
        )
        return None, []
    data: dict[str, Any] = {"mode": "magentic"}
    _hoist_iterations(doc, metadata, data)
    try:
        decl = MagenticDecl.model_validate(data)
    except ValidationError as exc:
        return None, [
            doc.problem(("metadata", legacy), str(e["msg"]).replace("Input should be", "expected"))
            for e in exc.errors()
        ]
    return decl, []


def _hoist_iterations(doc: Document, metadata: Mapping[str, Any], data: dict[str, Any]) -> None:
    """`metadata.maxIterations` (or `max_iterations`) as the orchestration's own
    `maxIterations` where it gives none, as the original reads it; where the mode has no
    iterations it is ignored, as in the original, with a warning."""
    key = next((k for k in LEGACY_ITERATIONS if k in metadata), None)
    if key is None or "maxIterations" in data or "max_iterations" in data:
        return
    if data.get("mode") in ("magentic", "pipeline"):
        data["maxIterations"] = metadata[key]
        return
    doc.warnings.append(
        doc.problem(
            ("metadata", key),
            f"metadata.{key} is the iterations of a magentic or pipeline orchestration; "
            f"a {data.get('mode')} orchestration has none, so it is ignored (as the original "
            "framework ignores it)",
        )
    )


def orchestration_json_schema() -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON Schema of `metadata.orchestration` and the definitions it refers to."""
    union = TypeAdapter(OrchestrationDecl).json_schema(by_alias=True)
    definitions = union.pop("$defs", {})
    value = {
        "description": "a mode name, or a mapping with 'mode' and that mode's options",
        "anyOf": [{"type": "string", "enum": list(MODES)}, union],
    }
    return value, definitions


def needs_lead(decl: OrchestrationDecl) -> bool:
    """Whether the document's own agent takes part."""
    if isinstance(decl, HandoffDecl):
        routes = decl.handoffs or {}
        return decl.triage == SELF or any(
            SELF in (source, *targets) for source, targets in routes.items()
        )
    if isinstance(decl, GroupChatDecl):
        return decl.selector == "coordinator" and decl.coordinator == SELF
    if isinstance(decl, MagenticDecl):
        return decl.manager == SELF
    if isinstance(decl, ConcurrentDecl):
        return decl.aggregator == SELF or decl.include_self
    if isinstance(decl, PipelineDecl):
        return any(p.aggregator == SELF for p in decl.phases)
    return decl.include_self


# -- names ---------------------------------------------------------------------------


def _names(
    doc: Document, decl: OrchestrationDecl, data: dict[str, Any], members: list[str]
) -> list[Problem]:
    problems: list[Problem] = []

    def check(path: KeyPath, name: str, *, lead: bool = False) -> None:
        allowed = [*members, SELF] if lead else members
        if name in allowed:
            return
        hint = suggest(name, allowed)
        did = f"; did you mean {hint!r}?" if hint else ""
        extra = f" or {SELF!r}" if lead else ""
        problems.append(
            doc.problem(
                (*ROOT, *path),
                f"{name!r} is no sub-agent{did} (sub-agents: {', '.join(members) or 'none'}"
                f"{extra})",
            )
        )

    if isinstance(decl, ConcurrentDecl) and decl.aggregator is not None:
        check(("aggregator",), decl.aggregator, lead=True)
    elif isinstance(decl, HandoffDecl):
        check(("triage",), decl.triage, lead=True)
        for source, targets in (decl.handoffs or {}).items():
            check(("handoffs", source), source, lead=True)
            for index, target in enumerate(targets):
                check(("handoffs", source, index), target, lead=True)
    elif isinstance(decl, GroupChatDecl):
        for index, name in enumerate(decl.order or []):
            check(("order", index), name)
        if decl.selector == "fixed" and not decl.order:
            problems.append(doc.problem((*ROOT, "selector"), "a 'fixed' selector needs 'order'"))
        if decl.order and decl.selector != "fixed":
            problems.append(
                doc.problem((*ROOT, "order"), "'order' is only for the 'fixed' selector")
            )
        if "coordinator" in data:
            check(("coordinator",), decl.coordinator, lead=True)
    elif isinstance(decl, MagenticDecl):
        check(("manager",), decl.manager, lead=True)
    elif isinstance(decl, VoteDecl):
        for name in decl.weights or {}:
            check(("weights", name), name, lead=decl.include_self)
        if decl.weights and decl.method != "weighted":
            problems.append(
                doc.problem((*ROOT, "weights"), "'weights' is only for method 'weighted'")
            )
    elif isinstance(decl, PipelineDecl):
        phases = [p.name for p in decl.phases]
        if decl.loop_from is not None and decl.loop_from not in phases:
            hint = suggest(decl.loop_from, phases)
            did = f"; did you mean {hint!r}?" if hint else ""
            problems.append(
                doc.problem(
                    (*ROOT, "loopFrom"),
                    f"{decl.loop_from!r} is no phase{did} (phases: {', '.join(phases)}; "
                    "a place counts from 0)",
                )
            )
        for index, phase in enumerate(decl.phases):
            for m, name in enumerate(phase.members):
                check(("phases", index, "members", m), name)
            if phase.aggregator is not None:
                check(("phases", index, "aggregator"), phase.aggregator, lead=True)
            if phases.count(phase.name) > 1 and phases.index(phase.name) < index:
                problems.append(
                    doc.problem(
                        (*ROOT, "phases", index, "name"), f"two phases are named {phase.name!r}"
                    )
                )
            back = phase.loop_back
            if back is not None and back.to not in phases[: index + 1]:
                hint = suggest(back.to, phases[: index + 1])
                did = f"; did you mean {hint!r}?" if hint else ""
                problems.append(
                    doc.problem(
                        (*ROOT, "phases", index, "loopBack", "to"),
                        f"{back.to!r} is not this or an earlier phase{did}",
                    )
                )
    return problems


# -- pydantic errors, located -------------------------------------------------------


def _problem(doc: Document, model: type[BaseModel], error: Any) -> Problem:
    loc = tuple(error["loc"])
    path: KeyPath = (*ROOT, *loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = _keys_at(model, loc[:-1])
        key = str(loc[-1])
        hint = suggest(key, allowed)
        if hint:
            message = f"unknown option {key!r}; did you mean {hint!r}?"
        else:
            message = f"unknown option {key!r}; allowed here: {', '.join(allowed)}"
        return doc.problem(path, message, key=True)
    if kind == "missing":
        return doc.problem(path, f"missing required key {loc[-1]!r}")
    if kind == "literal_error":
        expected = [
            e.strip().strip("'")
            for e in str(error.get("ctx", {}).get("expected", "")).replace(" or ", ", ").split(",")
        ]
        value = error.get("input")
        hint = suggest(str(value), expected) if isinstance(value, str) else None
        did = f"; did you mean {hint!r}?" if hint else ""
        return doc.problem(
            path, f"{value!r} is not allowed here{did} (expected one of: {', '.join(expected)})"
        )
    message = str(error["msg"]).replace("Input should be", "expected")
    return doc.problem(path, message)


def _keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    annotation: Any = model
    for part in loc:
        annotation = _unwrap(annotation, part)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [f.alias or n for n, f in annotation.model_fields.items()]
    return []


def _unwrap(annotation: Any, part: Any) -> Any:
    for arg in _union_args(annotation):
        if isinstance(arg, type) and issubclass(arg, BaseModel) and isinstance(part, str):
            for name, field in arg.model_fields.items():
                if part in (name, field.alias):
                    return field.annotation
        origin = typing.get_origin(arg)
        if origin is list and isinstance(part, int):
            return typing.get_args(arg)[0]
        if origin is dict and isinstance(part, str):
            return typing.get_args(arg)[1]
    return None


def _union_args(annotation: Any) -> tuple[Any, ...]:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(annotation)
    return (annotation,)


# -- building ------------------------------------------------------------------------
