"""Vote: members vote on the task, by majority, unanimity or weight, over several rounds."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage
from raf.orchestrations.base import Orchestration, Outcome
from raf.orchestrations.parsing import json_object
from raf.orchestrations.runtime import Member, Runtime, TurnResult, said

METHODS: tuple[str, ...] = ("majority", "unanimous", "weighted")
_VOTE_LINE = re.compile(r"^\s*vote\s*[:=]\s*(.+)$", re.IGNORECASE | re.MULTILINE)


@dataclass(kw_only=True, slots=True)
class Ballot:
    """One member's vote in one round (`vote` is None when it named no valid choice)."""

    voter: str
    vote: str | None
    reason: str = ""


class VoteOrchestration(Orchestration):
    """`VoteOrchestration([a, b, c], choices=["yes", "no"], method="majority", rounds=2)`.

    Each round every member votes at once, answering `{"vote": ..., "reason": ...}`.
    "majority" needs more than half of the members, "unanimous" all of them, "weighted"
    more than half of the total weight (`weights`, 1 for a member not listed). Without a
    decision, the next round shows every member the ballots and reasons of the last one;
    after `rounds` rounds the result says no decision was reached.
    """

    mode = "vote"

    def __init__(
        self,
        members: Sequence[Member],
        *,
        name: str = "vote",
        description: str = "",
        choices: Sequence[str] | None = None,
        method: Literal["majority", "unanimous", "weighted"] = "majority",
        weights: Mapping[str, float] | None = None,
        rounds: int = 1,
    ) -> None:
        super().__init__(members, name=name, description=description)
        if not self.members:
            raise ConfigurationError(f"vote {name!r} needs a member")
        if method not in METHODS:
            raise ConfigurationError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
        if rounds < 1:
            raise ConfigurationError("rounds must be at least 1")
        names = {m.name for m in self.members}
        for voter, weight in (weights or {}).items():
            if voter not in names:
                raise ConfigurationError(
                    f"vote {name!r}: 'weights' names {voter!r}, which is no member"
                )
            if weight < 0:
                raise ConfigurationError(f"vote {name!r}: the weight of {voter!r} is negative")
        if weights and method != "weighted":
            raise ConfigurationError("'weights' is only for the 'weighted' method")
        self.choices = list(choices or [])
        self.method = method
        self.weights = dict(weights or {})
        self.rounds = rounds

    async def orchestrate(self, rt: Runtime, conversation: list[ChatMessage]) -> Outcome:
        history: list[list[Ballot]] = []
        tally: dict[str, float] = {}
        decision: str | None = None
        for _ in range(self.rounds):
            ask = ChatMessage.user(self._prompt(history))
            turns = await rt.gather([rt.turn(m, [*conversation, ask]) for m in self.members])
            ballots = [self._ballot(t) for t in turns]
            history.append(ballots)
            tally, decision = self._count(ballots)
            rt.note(f"round {len(history)}: {_shown(tally)}")
            if decision is not None:
                break
        text = (
            decision
            if decision is not None
            else f"No decision after {len(history)} round(s): {_shown(tally)}"
        )
        details: dict[str, Any] = {
            "decision": decision,
            "rounds": len(history),
            "tally": tally,
            "ballots": [[_ballot_dict(b) for b in round_] for round_ in history],
        }
        return Outcome(answer=said(self.name, text), details=details)

    def _prompt(self, history: list[list[Ballot]]) -> str:
        lines = ["Vote on the task above."]
        if self.choices:
            lines.append("Choices: " + ", ".join(self.choices) + ".")
        lines.append('Answer with a JSON object: {"vote": "<your choice>", "reason": "<why>"}.')
        if history:
            lines.append(f"No decision was reached in round {len(history)}. Its ballots:")
            lines += [
                f"- {b.voter}: {b.vote or '(no valid vote)'} ({b.reason})" for b in history[-1]
            ]
        return "\n".join(lines)

    def _ballot(self, turn: TurnResult) -> Ballot:
        parsed = json_object(turn.text)
        reason = ""
        raw: Any = None
        if parsed is not None:
            raw, reason = parsed.get("vote"), str(parsed.get("reason", ""))
        if raw is None:
            line = _VOTE_LINE.search(turn.text)
            raw = line.group(1) if line else turn.text
        vote = str(raw).strip().strip("\"'.`*").strip()
        if self.choices:
            vote = next((c for c in self.choices if c.lower() == vote.lower()), "")
        return Ballot(voter=turn.member, vote=vote or None, reason=reason)

    def _count(self, ballots: list[Ballot]) -> tuple[dict[str, float], str | None]:
        tally: dict[str, float] = {}
        spelling: dict[str, str] = {}
        for ballot in ballots:
            if ballot.vote is None:
                continue
            key = spelling.setdefault(ballot.vote.lower(), ballot.vote)
            weight = self.weights.get(ballot.voter, 1.0) if self.method == "weighted" else 1.0
            tally[key] = tally.get(key, 0.0) + weight
        if not tally:
            return tally, None
        top = max(tally, key=lambda k: tally[k])
        if self.method == "unanimous":
            return tally, top if tally[top] == len(ballots) else None
        total = (
            sum(self.weights.get(b.voter, 1.0) for b in ballots)
            if self.method == "weighted"
            else float(len(ballots))
        )
        return tally, top if tally[top] > total / 2 else None


def _shown(tally: dict[str, float]) -> str:
    return ", ".join(f"{k}: {v:g}" for k, v in tally.items()) or "no valid votes"


def _ballot_dict(ballot: Ballot) -> dict[str, Any]:
    return {"voter": ballot.voter, "vote": ballot.vote, "reason": ballot.reason}
