"""Errors of the workflow engine: a bad graph at build time, a failed or refused run."""

from __future__ import annotations

from raf.core.errors import ConfigurationError, RafError


class WorkflowValidationError(ConfigurationError):
    """A graph cannot be built: the message names the node or edge at fault."""


class WorkflowError(RafError):
    """Base class of errors raised while a workflow runs or resumes."""


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


class CheckpointError(WorkflowError):
    """A checkpoint cannot be found, read or used to resume."""


class CheckpointNotFoundError(CheckpointError):
    """No checkpoint with that id is stored."""


class AnswerClaimedError(CheckpointError):
    """A pending request of the checkpoint was already answered: an answer is taken once,
    by whichever resume claims it first (in any process)."""

    def __init__(self, message: str, *, checkpoint_id: str, request_id: str) -> None:
        self.checkpoint_id = checkpoint_id
        self.request_id = request_id
        super().__init__(message)


class GraphChangedError(CheckpointError):
    """The checkpoint was written by a different graph than the one asked to resume it."""


class UnreachableNodeWarning(UserWarning):
    """A node no edge leads to from the start node: it can never run."""
