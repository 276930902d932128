"""Errors of the workflow engine: a bad graph at build time, a failed or refused run."""

from __future__ import annotations

from raf.core.errors import (
    AnswerClaimedError,
    CheckpointError,
    CheckpointNotFoundError,
    ConfigurationError,
    WorkflowError,
)

__all__ = [
    "AnswerClaimedError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "GraphChangedError",
    "UnreachableNodeWarning",
    "WorkflowError",
    "WorkflowRunError",
    "WorkflowTimeoutError",
    "WorkflowValidationError",
]


class WorkflowValidationError(ConfigurationError):
    """A graph cannot be built: the message names the node or edge at fault."""


class WorkflowRunError(WorkflowError):
    """A run failed; `checkpoint_id` names the last good checkpoint to resume from."""

    def __init__(
        self,
        message: str,
        *,
        node: str | None = None,
        checkpoint_id: str | None = None,
        superstep: int | None = None,
    ) -> None:
        self.node = node
        self.checkpoint_id = checkpoint_id
        self.superstep = superstep
        super().__init__(message)


class WorkflowTimeoutError(WorkflowRunError):
    """The whole run took longer than its timeout."""


class GraphChangedError(CheckpointError):
    """The checkpoint was written by a different graph than the one asked to resume it."""


class UnreachableNodeWarning(UserWarning):
    """A node no edge leads to from the start node: it can never run."""
