"""The facts a file tool's result states, as sentences a small model answers with.

Asked to write an answer from a result, a 135 M model writes a tutorial around it as
often as not. When the turn's results are about paths (a call with a `path` argument,
a result shaped like the workspace file tools' own: a file's `content`, a folder's
`entries`, search `matches`, a path's `size` and `lines`, or a one-line message), the
answer is one of the sentences the result states, chosen by the model under a grammar
(`answer_schema`): "notes/todo.md, first line: 1. Call the dentist", "notes has:
groceries.txt, todo.md", "notes/x.txt has 4 lines". Each starts with its path, so the
model chooses at the words that differ ("has", "first", "last"), not at the first word.
One sentence: it is the answer. A question about something the result never mentions is answered so
(`not_said`). Whatever the tool, a failed call is answered with its failure and an empty
result with "<tool> returned nothing for <arguments>, so it does not answer this" —
never an answer made up around nothing. Any other result is answered in free text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from raf.clients.local.choice import terms, turn_calls, turn_results, user_text
from raf.core.contents import FunctionCallContent, FunctionResultContent
from raf.core.messages import ChatMessage

MAX_LINE_FACTS = 12
"""Lines of a read file each stated on their own (the last one always is)."""
MAX_FACT_CHARS = 300
"""A fact longer than this is cut (a small model copies it whole)."""
MAX_FACTS = 40

_LABELS = {
    "says": "say says said read content contents text show open list note written",
    "count": "many line lines count number long",
    "first": "first line top begin beginning start",
    "last": "last line final end bottom",
    "line": "line",
    "size": "big size bytes large small heavy",
    "folder": "file files folder folders in inside contain contains list there",
    "found": "file files there exist find found match",
    "kind": "type kind file folder",
    "modified": "modified changed when old date time",
    "encoding": "encoding encoded",
}
"""The words a question uses to ask for each kind of fact ("how many lines": the count;
"how big": the size): the fact the question's words point to is the answer."""
_LABEL_TERMS = {kind: frozenset(words.split()) | terms(words) for kind, words in _LABELS.items()}

_ASKING = terms(
    """first second third fourth fifth last final top bottom begin beginning end line lines
    say says said write written wrote contain contains containing mention mentions
    list lists item items entry entries thing things file files note notes folder folders
    directory big small size large long many much number count word words content contents
    text read open show inside there exist exists find look see know want need kind type
    anything something everything whole full start starting called named name new make
    create bytes byte modified changed when old"""
)
"""Words of a question about a file that ask how, not what: they name no subject the
result must mention."""


@dataclass(frozen=True, slots=True)
class Fact:
    """One sentence a result states, and the kind of fact it is (a key of `_LABELS`)."""

    text: str
    kind: str


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_FACT_CHARS else text[: MAX_FACT_CHARS - 3] + "..."


def _content_facts(path: str, result: dict[str, Any]) -> list[Fact]:
    content = str(result["content"])
    lines = [line for line in content.splitlines() if line.strip()]
    if not lines:
        return [Fact(f"{path} is empty", "says")]
    first = result.get("start_line")
    start = first if isinstance(first, int) else 1
    whole = start == 1 and "note" not in result  # the whole file was read
    out = [Fact(f"{path} says: " + _cut("; ".join(lines)), "says")]
    if whole:
        out.append(Fact(f"{path} has {len(lines)} lines", "count"))
    if start == 1:
        out.append(Fact(f"{path}, first line: {_cut(lines[0])}", "first"))
    if "note" not in result:
        out.append(Fact(f"{path}, last line: {_cut(lines[-1])}", "last"))
    out += [
        Fact(f"{path}, line {start + i}: {_cut(line)}", "line")
        for i, line in enumerate(lines[:MAX_LINE_FACTS])
    ]
    if whole:
        out.append(Fact(f"{path} is {len(content.encode('utf-8'))} bytes", "size"))
    return out


def _entry_name(entry: Any) -> str:
    return str(entry.get("name", "")) if isinstance(entry, dict) else str(entry)


def _folder_facts(path: str, result: dict[str, Any]) -> list[Fact]:
    entries = [e for e in result["entries"] if _entry_name(e)]
    where = "The workspace" if path in ("", ".") else path
    if not entries:
        return [Fact(f"{where} is empty", "folder")]
    out = [Fact(f"{where} has: " + _cut(", ".join(_entry_name(e) for e in entries)), "folder")]
    for entry in entries:
        if isinstance(entry, dict) and "size" in entry:
            out.append(Fact(f"{where}/{_entry_name(entry)} is {entry['size']} bytes", "size"))
    return out


def _match_text(match: Any) -> str:
    if isinstance(match, dict):
        where = match.get("path", "")
        line = match.get("line")
        text = match.get("text", "")
        return f"{where} line {line}: {text}" if line is not None else str(where)
    return str(match)


def _match_facts(path: str, call: FunctionCallContent, result: dict[str, Any]) -> list[Fact]:
    matches = [_match_text(m) for m in result["matches"]]
    pattern = call.arguments.get("pattern")
    asked = f" {pattern}" if isinstance(pattern, str) else ""
    where = "the workspace" if path in ("", ".") else path
    if not matches:
        return [Fact(f"Nothing in {where} matches{asked}", "found")]
    found = Fact(f"Found in {where}: " + _cut(", ".join(matches)), "found")
    return [found, *(Fact(_cut(m), "line") for m in matches)]


def _path_facts(path: str, result: dict[str, Any]) -> list[Fact]:
    kind = result.get("type")
    out = []
    if "lines" in result:
        out.append(Fact(f"{path} has {result['lines']} lines", "count"))
    if "size" in result:
        out.append(Fact(f"{path} is {result['size']} bytes", "size"))
    if kind == "folder" and "entries" in result:
        out.append(Fact(f"{path} is a folder of {result['entries']} entries", "kind"))
    elif kind:
        out.append(Fact(f"{path} is a {kind}", "kind"))
    if "modified" in result:
        out.append(Fact(f"{path} was last modified {result['modified']}", "modified"))
    if "encoding" in result:
        out.append(Fact(f"{path} is encoded in {result['encoding']}", "encoding"))
    return out


def _nothing(value: Any) -> bool:
    """A result that holds nothing to answer from: None, blank text, an empty list or map."""
    if isinstance(value, str):
        return not value.strip() or value.strip() in ("null", "[]", "{}")
    return value is None or (isinstance(value, list | dict | tuple) and not value)


def _asked_with(call: FunctionCallContent) -> str:
    """The call's arguments as a reader sees them: `city="Paris", days=3`."""
    return ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in call.arguments.items())


def result_facts(call: FunctionCallContent, result: FunctionResultContent) -> list[Fact] | None:
    """The facts `result` of `call` states, or None: a result of another shape (its answer
    is written freely). Any tool's failure states its failure, and any tool's empty result
    says that it does not answer; a result about a path states what it says of it."""
    if result.error is not None:
        if result.error.startswith("not run: "):
            return []
        return [Fact(_cut(f"{call.name} failed: {result.error}"), "says")]
    if _nothing(result.result):
        asked = _asked_with(call)
        given = f" for {asked}" if asked else ""
        return [
            Fact(_cut(f"{call.name} returned nothing{given}, so it does not answer this"), "says")
        ]
    if not isinstance(call.arguments.get("path"), str):
        return None
    value = result.result
    if isinstance(value, str):
        one = value.strip()
        return [Fact(_cut(one), "says")] if one and "\n" not in one else None
    if not isinstance(value, dict) or not isinstance(value.get("path"), str):
        return None
    path = value["path"]
    if isinstance(value.get("content"), str):
        return _content_facts(path, value)
    if isinstance(value.get("entries"), list):
        return _folder_facts(path, value)
    if isinstance(value.get("matches"), list):
        return _match_facts(path, call, value)
    if "size" in value or "type" in value:
        return _path_facts(path, value)
    return None


def turn_facts(messages: Sequence[ChatMessage]) -> list[Fact] | None:
    """The facts of this turn's results, each once, in order; None when a result is not
    about a path (or there is none): the answer is then written freely."""
    calls = {c.call_id: c for c in turn_calls(messages)}
    results = turn_results(messages)
    if not results:
        return None
    out: dict[Fact, None] = {}
    for result in results:
        call = calls.get(result.call_id)
        facts = result_facts(call, result) if call is not None else None
        if facts is None:
            return None
        out.update(dict.fromkeys(facts))
    return list(out)[:MAX_FACTS] or None


def pointed(facts: Sequence[Fact], question: str) -> list[str]:
    """The facts the question's words point to (`_LABELS`: "how many lines" the count,
    "last" the last line), most words first; all of them when it points to none."""
    asked = set(_TERM.findall(question.lower())) | terms(question)
    scores = [len(asked & _LABEL_TERMS.get(f.kind, frozenset())) for f in facts]
    best = max(scores, default=0)
    if best == 0:
        return [f.text for f in facts]
    return [f.text for f, score in zip(facts, scores, strict=True) if score == best]


def not_said(messages: Sequence[ChatMessage]) -> str | None:
    """The answer when the question asks about a subject this turn's files never mention
    ("What does todo.md say about the car?": "notes/todo.md does not mention car."), or
    None. The subject is what follows "about", "mention" or "regarding", less the paths
    called and the words that ask how (`_ASKING`); a question without one is answered
    from the facts (a word of its own, "ingredient", may name what the file says in
    other words)."""
    calls = {c.call_id: c for c in turn_calls(messages)}
    read: list[str] = []
    for result in turn_results(messages):
        call = calls.get(result.call_id)
        value = result.result
        if call is None or result.error is not None or not isinstance(value, dict):
            return None
        if not isinstance(value.get("content"), str):
            return None  # only a file's own words can fail to mention a subject
        read.append(str(value.get("path", call.arguments.get("path"))))
        read.append(value["content"])
    if not read:
        return None
    said = terms(" ".join(read))
    named = terms(" ".join(str(v) for c in calls.values() for v in c.arguments.values()))
    asked = _SUBJECT.search(user_text(messages))
    if asked is None:
        return None
    subject = [w for w in _ordered_terms(asked.group(1)) if w not in named and w not in _ASKING]
    if not subject or any(w in said for w in subject):
        return None
    paths = [str(c.arguments["path"]) for c in calls.values() if "path" in c.arguments]
    return f"{' and '.join(dict.fromkeys(paths))} does not mention {' or '.join(subject)}."


_TERM = re.compile(r"[a-z0-9]+")
_SUBJECT = re.compile(r"\b(?:about|mentions?|regarding)\s+([^?.!,;]+)", re.IGNORECASE)
"""Where a question names its subject: "say about the car", "mention Ana"."""


def _ordered_terms(text: str) -> list[str]:
    """The content words of `text` (as `terms` gives them), in order, each once."""
    out: dict[str, None] = {}
    for word in text.split():
        out.update(dict.fromkeys(sorted(terms(word))))
    return list(out)


def answer_schema(facts: Sequence[str]) -> dict[str, Any]:
    """The JSON Schema of an answer that is one of `facts`."""
    return {
        "type": "object",
        "properties": {"answer": {"enum": list(facts)}},
        "required": ["answer"],
        "additionalProperties": False,
    }


def facts_prompt(facts: Sequence[str], question: str) -> str:
    """The user message the answer is chosen from: the facts, then the question."""
    listed = "\n".join(f"- {fact}" for fact in facts)
    return f"Facts:\n{listed}\n\nQuestion: {question}\nAnswer with the fact that answers it."
