"""Shows a streamed agent run in a terminal: text as it comes, tool calls with their
arguments, results collapsed to one line, approval requests. Everything that came from
outside raf passes `terminal_safe` first, so it cannot draw over or hide raf's prompts."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator
from typing import Any, TextIO

from raf.cli._agents import short
from raf.cli.terminal_text import terminal_safe
from raf.core.contents import ApprovalRequestContent, FunctionCallContent, FunctionResultContent
from raf.core.responses import AgentResponseUpdate, AnswerCheck, FinishReason, UpdateKind

QUIET_END = "the workflow completed, no message"
"""What `raf run` and `raf chat` say of a workflow that ran to its end without sending a
message: its outcome, never a model's empty answer."""


class StreamPrinter:
    """Prints updates: text to `out`, tool activity to `info` (the same stream in chat).

    With `notes`, an answer that is empty, cut off or filtered gets a note on `info` when
    the run finishes, so it is not taken as whole (`raf run` says it itself, and exits 4).
    """

    def __init__(self, out: TextIO, info: TextIO, *, notes: bool = True) -> None:
        self.out = out
        self.info = info
        self.notes = notes
        self._in_text = False
        self._message_id = ""
        self._check = AnswerCheck()

    def end_line(self) -> None:
        """End the line of answer text on screen, if one is open, so what comes next on
        either stream (a notice, an error) starts a line of its own."""
        self._break()

    def _break(self) -> None:
        if self._in_text:
            self.out.write("\n")
            self.out.flush()
            self._in_text = False

    @contextlib.contextmanager
    def warnings(self) -> Iterator[None]:
        """While it lasts, raf's warnings (a local model stopped for repeating itself)
        print to `info` on lines of their own, never in the middle of an answer's text."""
        handler = _WarningLines(self)
        logger = logging.getLogger("raf")
        logger.addHandler(handler)
        try:
            yield
        finally:
            logger.removeHandler(handler)

    def show(self, update: AgentResponseUpdate) -> None:
        kind = update.kind
        content = update.content
        self._check.see(update)
        if kind is UpdateKind.TEXT_DELTA:
            if update.message_id != self._message_id:  # another message (another speaker)
                self._break()
                self._message_id = update.message_id
            text = terminal_safe(update.text)
            self.out.write(text)
            self.out.flush()
            self._in_text = self._in_text or bool(text)
            if text.endswith("\n"):
                self._in_text = False
        elif kind is UpdateKind.TOOL_CALL_ENDED and isinstance(content, FunctionCallContent):
            self._break()
            arguments = json.dumps(content.arguments, ensure_ascii=False, default=str)
            self.info.write(terminal_safe(f"⚙ {content.name}({short(arguments, 200)})") + "\n")
            self.info.flush()
        elif kind is UpdateKind.TOOL_CALLED and isinstance(content, FunctionResultContent):
            self._break()
            if content.error is not None:
                line = f"  ↳ {content.name or 'tool'} failed: {short(content.error)}"
            else:
                line = f"  ↳ {content.name or 'tool'}: {short(content.result)}"
            self.info.write(terminal_safe(line) + "\n")
            self.info.flush()
        elif kind is UpdateKind.APPROVAL_REQUEST and isinstance(content, ApprovalRequestContent):
            self._break()
            self.info.write(f"⚠ approval needed: {describe_request(content)}\n")
            self.info.flush()
        elif kind is UpdateKind.FINISHED:
            self._break()
            check, self._check = self._check, AnswerCheck()
            if not self.notes:
                return
            problem = check.problem
            if problem is not None:
                self.info.write(f"({problem.message})\n")
            elif update.finish_reason is FinishReason.COMPLETED and not check.answered:
                self.info.write(f"({QUIET_END})\n")
            self.info.flush()


class _WarningLines(logging.Handler):
    """Writes a warning after ending the printer's line of text (see `warnings`)."""

    def __init__(self, printer: StreamPrinter) -> None:
        super().__init__(logging.WARNING)
        self.printer = printer

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.printer._break()
            self.printer.info.write(terminal_safe(record.getMessage()) + "\n")
            self.printer.info.flush()
        except Exception:
            self.handleError(record)


def describe_call(request: ApprovalRequestContent) -> str:
    """The call and its arguments, short: what the approval question names (the block
    above it already says where and why)."""
    arguments = json.dumps(request.arguments, ensure_ascii=False, default=str)
    return terminal_safe(f"{request.name}({short(arguments, 200)})")


def describe_request(request: ApprovalRequestContent) -> str:
    """One line naming the call and its arguments, and why approval is asked."""
    text = describe_call(request)
    if request.reason:
        text += terminal_safe(f" — {request.reason}")
    return text


_PLACES = ("cwd", "path", "paths", "directory", "folder", "file", "source", "destination")
"""Argument names that say where a call acts."""


def approval_prompt(request: ApprovalRequestContent, agent: Any = None) -> str:
    """The lines raf draws above an approval question: the tool, its arguments, where it
    acts (and the workspace of `agent`, whose root relative paths start from) and why it
    asks. It starts on a line of its own, so text printed before cannot run into it;
    every value from outside passes `terminal_safe`."""
    arguments = json.dumps(request.arguments, ensure_ascii=False, default=str)
    lines = [
        "",
        "── raf asks for approval ──",
        f"  tool:      {request.name}",
        f"  arguments: {short(arguments, 300)}",
        f"  where:     {where(request.arguments)}",
    ]
    roots = workspace_roots(agent)
    if roots:
        lines.append(f"  workspace: {', '.join(roots)} (relative paths start there)")
    if request.reason:
        lines.append(f"  why:       {short(request.reason, 300)}")
    return terminal_safe("\n".join(lines))


def workspace_roots(agent: Any) -> list[str]:
    """The roots of the workspaces an agent's context providers give its tools."""
    roots: list[str] = []
    for provider in getattr(agent, "context_providers", ()) or ():
        root = getattr(getattr(provider, "scope", None), "real_root", None)
        if root is not None:
            roots.append(str(root))
    return roots


def where(arguments: dict[str, Any]) -> str:
    """Where a call acts: the places its arguments name, whether it leaves the workspace
    sandbox, and the folder raf runs in (relative paths are taken from there)."""
    parts = [
        f"{key} {short(arguments[key], 120)}"
        for key in _PLACES
        if isinstance(arguments.get(key), str | list)
    ]
    if arguments.get("outside_workspace") is True:
        parts.append("OUTSIDE the workspace sandbox, with your rights")
    if arguments.get("network") is True:
        parts.append("with network access")
    parts.append(f"raf runs in {os.getcwd()}")
    return "; ".join(parts)
