"""A run with an output type: each answer is checked, one that fails goes back to the
model with what was wrong (up to the retries), and the stream carries partial values."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from raf.agent.output_type import OutputMismatch, OutputType
from raf.core.errors import OutputValidationError
from raf.core.messages import ChatMessage
from raf.core.responses import AgentResponseUpdate, ChatResponse, FinishReason, UpdateKind
from raf.core.usage import UsageDetails

DEFAULT_OUTPUT_RETRIES = 1


def needs_check(response: ChatResponse) -> bool:
    """Whether the answer is a final one to check (not paused, cancelled or cut by a limit)."""
    return not response.pending_approvals and response.finish_reason not in (
        FinishReason.CANCELLED,
        FinishReason.AWAITING_APPROVAL,
    )


def feedback(output: OutputType, errors: str) -> ChatMessage:
    """What the model reads after an answer that failed validation."""
    return ChatMessage.user(
        f"Your answer is not a valid {output.type_name}: {errors}. "
        f"Answer again with only the JSON of {output.schema.name}, fixed."
    )


@dataclass(kw_only=True, slots=True)
class Attempts:
    """The answers of one run so far: their messages joined, usage summed."""

    output: OutputType
    retries: int
    conversation: list[ChatMessage]
    messages: list[ChatMessage] = field(default_factory=list)
    usage: UsageDetails | None = None
    count: int = 0

    def add(self, response: ChatResponse) -> None:
        self.count += 1
        self.messages.extend(response.messages)
        if response.usage is not None:
            self.usage = response.usage if self.usage is None else self.usage + response.usage

    def check(self, response: ChatResponse) -> tuple[bool, Any]:
        """Add an answer: (True, value) when it is done, (False, None) when the model
        must try again (the feedback is in the conversation); raises past the retries."""
        self.add(response)
        if not needs_check(response):
            return True, None
        text = response.text
        try:
            return True, self.output.parse(text)
        except OutputMismatch as exc:
            if self.count > self.retries:
                error = OutputValidationError(
                    raw_text=text,
                    errors=exc.errors,
                    attempts=self.count,
                    type_name=self.output.type_name,
                )
                error.response = self.joined(response)
                raise error from None
            note = feedback(self.output, exc.errors)
            self.conversation = [*self.conversation, *response.messages, note]
            self.messages.append(note)
            return False, None

    def joined(self, last: ChatResponse) -> ChatResponse:
        """One response for the whole run: every attempt's messages and usage."""
        return replace(last, messages=list(self.messages), usage=self.usage)


class PartialValues:
    """Adds `partial_value` to the text deltas of a streamed answer, per message."""

    def __init__(self, output: OutputType) -> None:
        self.output = output
        self._message = ""
        self._text = ""

    def see(self, update: AgentResponseUpdate) -> AgentResponseUpdate:
        if update.kind is not UpdateKind.TEXT_DELTA:
            return update
        if update.message_id != self._message:
            self._message, self._text = update.message_id, ""
        self._text += update.text
        partial = self.output.partial(self._text)
        return update if partial is None else replace(update, partial_value=partial)


async def checked(
    attempts: Attempts,
    ask: Callable[[list[ChatMessage]], AsyncIterator[AgentResponseUpdate]],
    answered: Callable[[], ChatResponse],
) -> AsyncIterator[AgentResponseUpdate]:
    """Check each answer; ask again with the errors until one is valid or the retries run
    out (`OutputValidationError`). Text deltas carry partial values; each attempt's
    `FINISHED` is held back, and only the last one goes out, carrying the value."""
    while True:
        partials = PartialValues(attempts.output)
        finished: AgentResponseUpdate | None = None
        async for update in ask(attempts.conversation):
            if update.kind is UpdateKind.FINISHED:
                finished = update
                continue
            yield partials.see(update)
        done, value = attempts.check(answered())
        if done:
            final = finished or AgentResponseUpdate(kind=UpdateKind.FINISHED)
            yield replace(final, value=value)
            return
