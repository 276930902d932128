"""Shows a streamed agent run in a terminal: text as it comes, tool calls with their
arguments, results collapsed to one line, approval requests."""

from __future__ import annotations

import json
from typing import TextIO

from raf.cli._agents import short
from raf.core.contents import ApprovalRequestContent, FunctionCallContent, FunctionResultContent
from raf.core.responses import AgentResponseUpdate, UpdateKind


class StreamPrinter:
    """Prints updates: text to `out`, tool activity to `info` (the same stream in chat)."""

    def __init__(self, out: TextIO, info: TextIO) -> None:
        self.out = out
        self.info = info
        self._in_text = False
        self._message_id = ""

    def _break(self) -> None:
        if self._in_text:
            self.out.write("\n")
            self.out.flush()
            self._in_text = False

    def show(self, update: AgentResponseUpdate) -> None:
        kind = update.kind
        content = update.content
        if kind is UpdateKind.TEXT_DELTA:
            if update.message_id != self._message_id:  # another message (another speaker)
                self._break()
                self._message_id = update.message_id
            self.out.write(update.text)
            self.out.flush()
            self._in_text = True
        elif kind is UpdateKind.TOOL_CALL_ENDED and isinstance(content, FunctionCallContent):
            self._break()
            arguments = json.dumps(content.arguments, ensure_ascii=False, default=str)
            self.info.write(f"⚙ {content.name}({short(arguments, 200)})\n")
            self.info.flush()
        elif kind is UpdateKind.TOOL_CALLED and isinstance(content, FunctionResultContent):
            self._break()
            if content.error is not None:
                self.info.write(f"  ↳ {content.name or 'tool'} failed: {short(content.error)}\n")
            else:
                self.info.write(f"  ↳ {content.name or 'tool'}: {short(content.result)}\n")
            self.info.flush()
        elif kind is UpdateKind.APPROVAL_REQUEST and isinstance(content, ApprovalRequestContent):
            self._break()
            self.info.write(f"⚠ approval needed: {describe_request(content)}\n")
            self.info.flush()
        elif kind is UpdateKind.FINISHED:
            self._break()


def describe_request(request: ApprovalRequestContent) -> str:
    arguments = json.dumps(request.arguments, ensure_ascii=False, default=str)
    text = f"{request.name}({short(arguments, 200)})"
    if request.reason:
        text += f" — {request.reason}"
    return text
