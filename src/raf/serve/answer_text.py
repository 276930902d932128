"""One text per answer on every surface (native, OpenAI, A2A, AG-UI, ACP): the text of
every model call of a run, joined with a blank line, the same whole or streamed (a
streamed answer writes the blank line as the next model call's text begins)."""

from __future__ import annotations

from dataclasses import dataclass

from raf.core.messages import ROLE_ASSISTANT
from raf.core.responses import AgentResponseUpdate, ChatResponse, UpdateKind

SEPARATOR = "\n\n"
"""Between the texts of two model calls of one run ("Let me check." and the answer)."""

TOOL_KINDS = frozenset(
    {
        UpdateKind.TOOL_CALL_STARTED,
        UpdateKind.TOOL_CALL_ENDED,
        UpdateKind.TOOL_CALLING,
        UpdateKind.TOOL_CALLED,
    }
)
"""Updates that show a model call is over: what it said before them is done."""


def answer_text(response: ChatResponse) -> str:
    """A finished run's text: each assistant message's text, joined with a blank line."""
    return SEPARATOR.join(m.text for m in response.messages if m.role is ROLE_ASSISTANT and m.text)


@dataclass(kw_only=True, slots=True)
class StreamedText:
    """The text of a streamed run as it comes, joined as `answer_text` joins it."""

    said: bool = False
    """Whether any text was sent."""
    message_id: str = ""
    """The message the last text was part of."""
    broken: bool = False
    """Whether a tool call came since the last text (the next text is a new message)."""

    def piece(self, update: AgentResponseUpdate) -> str:
        """What to send for `update`: its text, after a blank line when it starts the text
        of another model call; "" for an update without text."""
        kind = update.kind
        if kind in TOOL_KINDS:
            self.broken = self.said
            return ""
        if kind is not UpdateKind.TEXT_DELTA or not update.text:
            return ""
        new_message = bool(update.message_id) and update.message_id != self.message_id
        text = update.text
        if self.said and (self.broken or (new_message and self.message_id)):
            text = SEPARATOR + text
        self.said, self.broken = True, False
        if update.message_id:
            self.message_id = update.message_id
        return text
