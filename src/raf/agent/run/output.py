"""What a run with an output type needs beside its `check_output` step: which answers are
checked, what the model reads after one that failed, and the partial values a stream's
text deltas carry."""

from __future__ import annotations

from dataclasses import replace

from raf.agent.output_type import OutputType
from raf.core.messages import ChatMessage
from raf.core.responses import (
    FINISH_AWAITING_APPROVAL,
    FINISH_CANCELLED,
    FINISH_TOOL_CALLS,
    KIND_TEXT_DELTA,
    AgentResponseUpdate,
    ChatResponse,
)

DEFAULT_OUTPUT_RETRIES = 1


def needs_check(response: ChatResponse) -> bool:
    """Whether the answer is a final one to check (not paused, cancelled, cut by a limit
    or handing calls back to the caller)."""
    return not response.pending_approvals and response.finish_reason not in (
        FINISH_CANCELLED,
        FINISH_AWAITING_APPROVAL,
        FINISH_TOOL_CALLS,
    )


def feedback(output: OutputType, errors: str) -> ChatMessage:
    """What the model reads after an answer that failed validation."""
    return ChatMessage.user(
        f"Your answer is not a valid {output.type_name}: {errors}. "
        f"Answer again with only the JSON of {output.schema.name}, fixed."
    )


def retry_feedback(message: str) -> ChatMessage:
    """What the model reads after an output validator sent it back (`ModelRetry`)."""
    return ChatMessage.user(f"{message}\n\nFix this and answer again.")


class PartialValues:
    """Adds `partial_value` to the text deltas of a streamed answer, per message."""

    def __init__(self, output: OutputType) -> None:
        self.output = output
        self._message = ""
        self._text = ""

    def see(self, update: AgentResponseUpdate) -> AgentResponseUpdate:
        if update.kind is not KIND_TEXT_DELTA:
            return update
        if update.message_id != self._message:
            self._message, self._text = update.message_id, ""
        self._text += update.text
        partial = self.output.partial(self._text)
        return update if partial is None else replace(update, partial_value=partial)
