"""Stopping an embedded model that writes the same passage again and again.

Small models decoding greedily fall into loops: one sentence repeated until the token
limit, a digit run in a tool argument that never ends. `RepeatStop` watches the text as
it is generated, holds back the end that repeats what came just before it, and on a loop
says where the text ends: after the passage's first occurrence. `RepeatGuard` puts it in
front of a chunk assembler, so the answer keeps one copy and generation stops at once.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import Any

from raf.clients.wire import StreamAssembler
from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind

log = logging.getLogger("raf.clients.local")

MIN_PASSAGE = 16
"""A passage at least this many characters long, written twice in a row, is a loop."""
MAX_PASSAGE = 1024
"""The longest passage watched for: two or three paragraphs (a small model that writes a
report from several inputs may copy them in turn, again and again)."""
SHORT_LOOP = 160
"""A shorter passage repeated over this many characters is a loop too (`1234512345…`)."""


class RepeatStop:
    """Watches a text as it grows (`feed`) for a passage repeated right after itself.

    The text is compared with every run of white space as one space (a model that loops
    often changes only the breaks between its copies). For every distance p up to
    `max_passage` it keeps how many of the latest characters equal the characters p
    before them; a run of at least p (two copies in a row) of a passage of at least
    `min_passage` characters, or a run of `short_loop` characters at any distance, is a
    loop. Until a run breaks, its characters are held back, so text passed on never holds
    the copy that a loop would cut; white space at the end waits for what follows it too
    (an answer cut at a loop ends without it).
    """

    def __init__(
        self,
        *,
        min_passage: int = MIN_PASSAGE,
        max_passage: int = MAX_PASSAGE,
        short_loop: int = SHORT_LOOP,
        escaped: bool = False,
    ) -> None:
        if not 1 <= min_passage <= max_passage or short_loop < 1:
            raise ValueError(
                "RepeatStop needs 1 <= min_passage <= max_passage and short_loop >= 1; got "
                f"{min_passage}, {max_passage}, {short_loop}"
            )
        self.min_passage = min_passage
        self.max_passage = max_passage
        self.short_loop = short_loop
        self.copies = 2
        """Copies in a row of a passage of `min_passage` or more that make a loop."""
        self.escaped = escaped
        """Whether the text is the inside of a JSON string (`\\n` is white space too, and
        an escape is never split)."""
        self.cut: int | None = None
        """Where the text ends once a loop was seen (None: no loop so far)."""
        self.passage = ""
        """The passage that repeated, its white space as single spaces (empty: no loop)."""
        self._raw: list[str] = []
        self._chars: list[str] = []
        """The text compared: white space runs as one space."""
        self._at: list[int] = []
        """Where in the raw text each compared character starts."""
        self._escape = False
        self._runs = [0] * (max_passage + 1)
        self._released = 0

    @property
    def looped(self) -> bool:
        """Whether a loop was seen (the text ends at `cut`; nothing more is passed on)."""
        return self.cut is not None

    @property
    def text(self) -> str:
        """The text as it stands: everything fed, or up to the cut after a loop."""
        return "".join(self._raw[: self.cut])

    def feed(self, piece: str) -> str:
        """The part of the text that can be passed on now (after a loop: the rest up to
        the cut, then nothing)."""
        if self.cut is not None:
            return ""
        raw = self._raw
        for char in piece:
            raw.append(char)
            at = len(raw) - 1
            if self.escaped and self._escape:  # the second character of an escape
                self._escape = False
                if char in "nrt":
                    looped = self._compare(" ", at - 1)
                else:
                    looped = self._compare("\\", at - 1) or self._compare(char, at)
            elif self.escaped and char == "\\":
                self._escape = True
                continue
            elif self.escaped and char == '"' and self._ends_in_loop():
                break  # a string that ends with its last copy
            else:
                looped = self._compare(" " if char.isspace() else char, at)
            if looped:
                break
        if self.cut is not None:
            return self._release(self.cut, whole=False)
        held = len(self._chars) - max(self._runs)
        return self._release(self._at[held] if held < len(self._chars) else len(raw), whole=False)

    def _compare(self, char: str, at: int) -> bool:
        """Add one compared character (from `at` in the raw text); whether it ends a loop."""
        chars, runs = self._chars, self._runs
        if char == " " and chars and chars[-1] == " ":
            return False  # more of the same white space
        chars.append(char)
        self._at.append(at)
        n = len(chars)
        for p in range(1, min(self.max_passage, n - 1) + 1):
            if chars[n - 1 - p] != char:
                runs[p] = 0
                continue
            k = runs[p] = runs[p] + 1
            if k >= self.short_loop or (p >= self.min_passage and k >= (self.copies - 1) * p):
                self._cut_at(n - k, p)
                return True
        return False

    def _ends_in_loop(self) -> bool:
        """Whether the text, if it ends here, ends in a loop: its last copy lacks only the
        white space that would have followed it ("A. A." at the end of an answer)."""
        chars, runs = self._chars, self._runs
        n = len(chars)
        if not chars or chars[-1] == " ":
            return False  # the white space came: it was compared as it came
        for p in range(self.min_passage, min(self.max_passage, n) + 1):
            if chars[n - p] == " " and runs[p] + 1 >= (self.copies - 1) * p:
                self._cut_at(n - runs[p], p)
                return True
        return False

    def _cut_at(self, start: int, p: int) -> None:
        """The loop's repeat starts at `start` (compared text), its passage `p` long."""
        chars = self._chars
        self.passage = "".join(chars[start - p : start])
        end = start + _rest_of_sentence("".join(chars[:start]), self.passage)
        self.cut = self._at[end] if end < len(chars) else len(self._raw)

    def flush(self) -> str:
        """Everything not yet passed on: the text ended (it may end in a loop)."""
        if self.cut is None and not self._ends_in_loop():
            return self._release(len(self._raw), whole=True)
        assert self.cut is not None
        return self._release(self.cut, whole=False)  # no white space before the cut

    def _release(self, end: int, *, whole: bool) -> str:
        if not whole:  # what may still be the end of the text waits
            tail = _JSON_TAIL if self.escaped else _TAIL
            held = "".join(self._raw[self._released : end])
            if self.escaped:
                held = _OPEN_ESCAPE.sub("", held)
            end = self._released + len(tail.sub("", held))
        if end <= self._released:
            return ""
        out = "".join(self._raw[self._released : end])
        self._released = end
        return out


_SENTENCE_END = re.compile(r"[.!?:](?=\s|$)")


def _rest_of_sentence(kept: str, passage: str) -> int:
    """How much of the repeat to keep so that `kept` ends a sentence: a loop can start
    mid-sentence ("The code is X. The file is X. The file is X." repeats from " is X.")."""
    if not kept.strip() or _SENTENCE_END.search(kept.rstrip()[-1:] + " "):
        return 0
    end = _SENTENCE_END.search(passage)
    return end.end() if end is not None else 0


_TAIL = re.compile(r"\s+$")
"""White space at the end of a text."""
_KEY = re.compile(r'\s*\{\s*"(\w+)"')
"""The first key of a constrained answer: `tool` for a call, `answer` for an answer."""
_STOPPED = (
    "the local model repeated itself (%r again and again) and was stopped; its answer ends "
    "after the first time"
)
_DROPPED = (
    "the local model repeated itself in a tool call (%r again and again) and was stopped; "
    "the call is dropped"
)
_ANSWER_STRING = re.compile(r'^\s*\{\s*"answer"\s*:\s*"')
"""The start of a constrained answer in text (not a call, not an answer in JSON)."""
_JSON_TAIL = re.compile(r"(?:\s|\\[nrt])+$")
"""White space at the end of a JSON string's text, as itself or escaped."""
_OPEN_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\(?:u[0-9a-fA-F]{0,3})?$")
"""An escape cut short at the end of a JSON string's text (a lone backslash, `\\u12`)."""


class RepeatGuard:
    """A chunk assembler that passes each chunk's text on through a `RepeatStop`.

    On a loop the answer ends after the passage's first occurrence: `stop_reading` tells
    the client to close the stream (which stops generation), and the answer finishes as
    if the model had stopped there. With `constrained` the text is the JSON of a
    constrained answer: an answer in text is closed after its first copy; a call (or an
    answer in JSON) that loops cannot be made whole and is dropped, and the answer ends
    with finish reason `other` (the warning logged says why).
    """

    def __init__(self, inner: StreamAssembler, *, constrained: bool) -> None:
        self.inner = inner
        self.constrained = constrained
        self.watch = RepeatStop(escaped=constrained)
        self.stop_reading = False
        """Set at a loop: the answer is complete, the rest of the stream is not wanted."""
        self.dropped = False
        """Set when a loop was inside a call, which is dropped."""
        self._key: str | None = None
        self._said = ""
        """The warning to log when the answer is finished (empty: none)."""

    @property
    def events(self) -> int:
        return self.inner.events

    @property
    def response_id(self) -> str | None:
        return self.inner.response_id

    @property
    def model_id(self) -> str | None:
        return self.inner.model_id

    @property
    def finished(self) -> bool:
        return self.inner.finished

    def feed(self, chunk: dict[str, Any]) -> list[AgentResponseUpdate]:
        choices = chunk.get("choices") or []
        first = choices[0] if choices and isinstance(choices[0], dict) else None
        if first is None or self.stop_reading:
            return self.inner.feed(chunk) if not self.stop_reading else []
        delta = first.get("delta") or {}
        piece = delta.get("content")
        if not isinstance(piece, str):
            piece = ""
        if self.constrained and self._key is None:
            self._know_the_key(piece)
        shown = self.watch.feed(piece) if piece else ""
        reason = first.get("finish_reason")
        if self.watch.looped:
            shown, reason = self._ending(shown)
            self.stop_reading = True
        elif reason:
            shown += self.watch.flush()
            if self.watch.looped:  # the text ended with its second copy
                self._said = _STOPPED
        choice = {**first, "delta": {**delta, "content": shown or None}, "finish_reason": reason}
        return self.inner.feed({**chunk, "choices": [choice, *choices[1:]]})

    def _know_the_key(self, piece: str) -> None:
        """Once a constrained answer shows whether it is a call: a call's arguments may
        hold a passage twice on purpose (two equal lines of a file), so a call needs three
        copies in a row to count as a loop."""
        match = _KEY.match(self.watch.text + piece)
        if match is not None:
            self._key = match.group(1)
            if self._key == "tool":
                self.watch.copies = 3

    def _ending(self, shown: str) -> tuple[str, str]:
        """The last text passed on at a loop, and the finish reason it ends with."""
        text = self.watch.text
        if self.constrained and not _ANSWER_STRING.match(text):
            # a call (or an answer in JSON) cut in the middle: nothing of it can be kept
            self._said = _DROPPED
            self.dropped = True
            return shown, "length"
        self._said = _STOPPED
        if not self.constrained:
            return shown.rstrip(), "stop"
        # the answer's JSON string, closed after the first copy with no escape left open
        passed = len(text) - len(shown)  # never ends in white space or an open escape
        kept = _OPEN_ESCAPE.sub("", _JSON_TAIL.sub("", text))
        return kept[passed:] + '"}', "stop"

    def finish(self) -> list[AgentResponseUpdate]:
        if self._said:  # once the answer's text is out, so the warning follows it
            log.warning(self._said, self.watch.passage[:80])
        out = self.inner.finish()
        if not self.dropped:
            return out
        return [
            replace(u, finish_reason=FinishReason.OTHER) if u.kind is UpdateKind.FINISHED else u
            for u in out
        ]
