"""Orchestrations: several agents on one task by a fixed pattern, each usable as an agent."""

from raf.workflow.orchestrations.agent import OrchestrationAgent, OrchestrationChatClient
from raf.workflow.orchestrations.base import Orchestration, Outcome
from raf.workflow.orchestrations.concurrent import ConcurrentOrchestration
from raf.workflow.orchestrations.group_chat import GroupChatOrchestration
from raf.workflow.orchestrations.handoff import HandoffOrchestration, HandoffTool
from raf.workflow.orchestrations.magentic import MagenticOrchestration
from raf.workflow.orchestrations.pipeline import LoopBack, Phase, PipelineOrchestration
from raf.workflow.orchestrations.runtime import (
    EventKind,
    Member,
    OrchestrationError,
    OrchestrationEvent,
    OrchestrationResult,
    Runtime,
    TurnResult,
)
from raf.workflow.orchestrations.sequential import SequentialOrchestration
from raf.workflow.orchestrations.vote import Ballot, VoteOrchestration

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
