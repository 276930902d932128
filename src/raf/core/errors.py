"""The small hierarchy of errors raf raises; every one says what went wrong and where."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


class RafError(Exception):
    """Base class of every error raf raises on purpose."""


class ConfigurationError(RafError):
    """A configuration document or builder call is wrong; carries where, when known."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        key_path: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.key_path = key_path
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
        parts = [p for p in (where, self.key_path) if p]
        prefix = " ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message


@dataclass(kw_only=True, slots=True)
class Problem:
    """One problem found in a document: where it is and what was expected."""

    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    key_path: str | None = None

    def __str__(self) -> str:
        return str(
            ConfigurationError(
                self.message,
                file=self.file,
                line=self.line,
                column=self.column,
                key_path=self.key_path,
            )
        )


class ValidationProblems(ConfigurationError):
    """Several problems in one document, all reported at once."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        lines = [f"{len(self.problems)} problem(s) found:"]
        lines += [f"  {p}" for p in self.problems]
        first = self.problems[0] if self.problems else Problem(message="")
        super().__init__(
            "\n".join(lines),
            file=None,
            line=first.line,
            column=first.column,
            key_path=None,
        )


def install_hint(extra: str) -> str:
    """The command that installs an extra: from the checkout raf runs from, when it is
    installed from one (raf is not on PyPI yet), else from PyPI."""
    checkout = _checkout()
    if checkout is not None:
        return f'pip install -e ".[{extra}]" (in {checkout})'
    return f'pip install "raf-agents[{extra}]"'


def _checkout() -> str | None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]  # <checkout>/src/raf/core/errors.py
    try:
        project = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return str(root) if 'name = "raf-agents"' in project else None


class MissingExtraError(RafError, ModuleNotFoundError):
    """An optional integration is used but its extra is not installed.

    It is a `ModuleNotFoundError` (an `ImportError`) too, its `name` the missing module,
    so whatever treats a module that cannot be found as absent (`pytest.importorskip`,
    `pkgutil.walk_packages`, Sphinx) does the same for a raf module whose extra is
    missing."""

    def __init__(self, feature: str, extra: str, module: str | None = None) -> None:
        self.feature = feature
        self.extra = extra
        self.module = module
        missing = f" (module '{module}' is missing)" if module else ""
        ModuleNotFoundError.__init__(
            self,
            f"{feature} needs the '{extra}' extra{missing}: {install_hint(extra)}",
            name=module,
        )


class ModelError(RafError):
    """A model call failed; `retryable` says whether trying again can help."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None):
        self.retryable = retryable
        self.status = status
        super().__init__(message)


class ToolDefinitionError(RafError):
    """A tool cannot be built: bad name, duplicate name, or a signature with no schema."""


class ToolExecutionError(RafError):
    """Raised by a tool to return a specific error message to the model."""


class ToolApprovalPending(RafError):
    """Raised by a tool whose work waits for a human decision (an agent used as a tool
    whose own run paused): the tool loop pauses the run with an approval request for
    this call, `reason` saying what is asked; approving it invokes the tool again."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class ApprovalError(RafError):
    """An approval response does not match what is pending in the session."""


class ApprovalAlreadyClaimed(ApprovalError):
    """The approval for `call_id` was already spent: by an earlier run of this session, or
    claimed by another process resuming the same session; nothing was run."""

    def __init__(
        self, call_id: str, session_id: str | None = None, *, elsewhere: bool = False
    ) -> None:
        self.call_id = call_id
        self.session_id = session_id
        if elsewhere:
            what = (
                "was claimed by another run resuming this session (another process, most "
                "likely); that run executes the call and records its result"
            )
        else:
            what = "was already used in this session; a replayed approval is refused"
        where = f" (session {session_id!r})" if session_id else ""
        super().__init__(f"the approval for call id {call_id!r} {what}; nothing was run{where}")


class ProviderError(RafError):
    """A context provider broke its contract (for example returned the wrong type)."""


class SessionError(RafError):
    """A session could not be stored or restored."""


class SessionFormatError(SessionError):
    """A stored session is damaged, truncated or written by a newer raf."""


class SessionNotFoundError(SessionError):
    """No session with that id is stored."""


class SessionStoreError(SessionError):
    """The session store itself failed: unreachable, too slow to answer, locked or
    unreadable. Neither the session's fault nor its caller's: the same call may succeed
    once the store is back."""


class SessionConflictError(SessionError):
    """A save was refused: the stored session changed (or was deleted) since this copy
    was loaded; `stored_revision` is None when it was deleted."""

    def __init__(
        self, session_id: str, *, expected: str | None, stored: str | None, where: str
    ) -> None:
        self.session_id = session_id
        self.expected_revision = expected
        self.stored_revision = stored
        if stored is None:
            what = "was deleted after this copy was loaded; saving it would bring it back"
        elif expected is None:
            what = "was created elsewhere meanwhile; load it rather than start it anew"
        else:
            what = (
                f"was saved elsewhere (revision {stored}) after this copy was loaded "
                f"(revision {expected or 'unnumbered'}); load it again and re-apply the change"
            )
        super().__init__(f"session {session_id!r} in {where} {what}")


class WorkflowError(RafError):
    """Base class of errors raised while a workflow runs or resumes."""


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


class RunCancelledError(RafError):
    """Raised by `CancellationToken.raise_if_cancelled` inside a run."""


class UsageLimitExceeded(RafError):
    """A run went past one of its usage limits; says which limit, its value and the figure.

    `response` holds what the run produced up to the limit (every tool call answered);
    the agent stores that turn in the session before raising.
    """

    def __init__(self, *, limit: str, scope: str, maximum: int, figure: int) -> None:
        self.limit = limit
        """requests, tool_calls, input_tokens, output_tokens or total_tokens."""
        self.scope = scope
        """"run" or "session"."""
        self.maximum = maximum
        self.figure = figure
        """The count the run reached (or would have reached) when it was stopped."""
        self.response: Any = None
        whose = "this run's" if scope == "run" else "the session's"
        super().__init__(
            f"usage limit exceeded: {whose} {limit} limit is {maximum}, "
            f"and the run reached {figure}"
        )


class ModelRetry(RafError):
    """Raised by an output validator (or a tool) to send the model back with `message`:
    the model reads it and answers again, as often as the agent's `output_retries`
    allow (a tool's call gets the message as its result)."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class OutputValidationError(RafError):
    """The model's answer never matched the output type, after every retry.

    `raw_text` is the last answer as the model wrote it, `errors` what was wrong with it,
    `attempts` how many answers were checked and `response` the whole run's response.
    """

    def __init__(self, *, raw_text: str, errors: str, attempts: int, type_name: str) -> None:
        self.raw_text = raw_text
        self.errors = errors
        self.attempts = attempts
        self.type_name = type_name
        self.response: Any = None
        shown = raw_text if len(raw_text) <= 2000 else raw_text[:2000] + "…"
        super().__init__(
            f"the model's answer is not a valid {type_name} after {attempts} attempt(s): "
            f"{errors}\nthe last answer was: {shown!r}"
        )
