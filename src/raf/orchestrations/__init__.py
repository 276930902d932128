"""Orchestrations: several agents on one task by a fixed pattern, each usable as an agent."""

from raf.orchestrations.agent import OrchestrationAgent, OrchestrationChatClient
from raf.orchestrations.base import Orchestration, Outcome
from raf.orchestrations.concurrent import ConcurrentOrchestration
from raf.orchestrations.group_chat import GroupChatOrchestration
from raf.orchestrations.handoff import HandoffOrchestration, HandoffTool
from raf.orchestrations.magentic import MagenticOrchestration
from raf.orchestrations.pipeline import LoopBack, Phase, PipelineOrchestration
from raf.orchestrations.runtime import (
    EventKind,
    Member,
    OrchestrationError,
    OrchestrationEvent,
    OrchestrationResult,
    Runtime,
    TurnResult,
)
from raf.orchestrations.sequential import SequentialOrchestration
from raf.orchestrations.vote import Ballot, VoteOrchestration

__all__ = [
    "Ballot",
    "ConcurrentOrchestration",
    "EventKind",
    "GroupChatOrchestration",
    "HandoffOrchestration",
    "HandoffTool",
    "LoopBack",
    "MagenticOrchestration",
    "Member",
    "Orchestration",
    "OrchestrationAgent",
    "OrchestrationChatClient",
    "OrchestrationError",
    "OrchestrationEvent",
    "OrchestrationResult",
    "Outcome",
    "Phase",
    "PipelineOrchestration",
    "Runtime",
    "SequentialOrchestration",
    "TurnResult",
    "VoteOrchestration",
]
