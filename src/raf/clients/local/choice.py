"""Choosing a tool call on a small embedded model, in stages, from the live context.

A 135 M model asked for `{"tool": ..., "arguments": ...}` invents what it does not copy:
paths that do not exist, numbers that were never said, the same call again after its
result; asked to choose between a call and an answer, it answers. So the choice is made
in stages (`LocalChatClient(tool_mode="staged")`, the default without a tool format):

1. Which tools the user's message is about (`relevant_tools`): its content words against
   each tool's own words, a word few tools share counting more; the one the message names
   first goes first (`first_named`). None: the answer is written without tools.
2. The call, decoded under a JSON Schema narrowed to what the conversation holds
   (`LiveContext.parameters`):
   - an argument a tool offers candidates for (`raf.core.tools.argument_candidates`: the
     workspace's file tools list the paths that exist in their scope) is one of them;
   - a required number is one of the numbers of the user's message not used yet in the
     turn, or of this turn's results;
   - a required free-text string (no enum, format or pattern) is a span of the user's
     message of up to `MAX_SPAN_WORDS` words: a city, an address, a subject;
   - optional arguments without candidates are left out (the tool's default holds);
   - a one-argument tool loses the values already used.
3. After a result the answer comes next, unless the message names another tool by a word
   of its name (`named_steps`); a call equal to an earlier one counts as the choice to
   answer. The answer is written without a grammar, as plain text, from this turn's
   results as facts (`answer_messages`), raf's notes to the model left out.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence, Set
from typing import Any

from raf.clients.local.tools import hoist_definitions
from raf.clients.local.values import (
    as_fraction,
    asks_for_time,
    asks_for_unit,
    clock_times,
    days_in_weeks,
    described_values,
    in_kind,
    iso_dates,
    percents,
    places_with_region,
    said,
    times_a_year,
    units_written,
    wants_iso_date,
)
from raf.core.contents import FunctionCallContent, FunctionResultContent, TextContent
from raf.core.messages import ChatMessage, Role
from raf.core.tools import Tool, argument_candidates

MAX_SPAN_WORDS = 4
"""The longest span of the user's message a free-text argument may be."""
MAX_SPANS = 400
"""A message of more words than this over `MAX_SPAN_WORDS` has too many spans to offer:
its free-text arguments stay free."""
_WORD = re.compile(r"\S+")
_EDGE = "\"'`.,;:!?()[]{}<>"
_POSSESSIVE = re.compile(r"['\u2019]s$")
_QUANTITY = re.compile(r"-?\d[\d,.]*(?!st$|nd$|rd$|th$)(?:[a-zA-Z]{1,3}|°[CFK]?|%)")
"""A number with its unit written on ("1kg", "6cm", "0°C", "8%"; not "10th"): a measure,
never the first or last word of a name."""
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d_])")
"""A number as people write it: "12", "-3.5", "12,000" (commas between groups of three),
also with its unit written on ("6cm", "10kg")."""


def turn_start(messages: Sequence[ChatMessage]) -> int:
    """Where the current turn starts: the index of the last user message with text."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role is Role.USER and any(
            isinstance(c, TextContent) and c.text.strip() for c in message.contents
        ):
            return index
    return len(messages)


def user_text(messages: Sequence[ChatMessage]) -> str:
    """The text of the user's latest message."""
    start = turn_start(messages)
    if start >= len(messages):
        return ""
    return " ".join(
        c.text for c in messages[start].contents if isinstance(c, TextContent) and c.text
    )


def turn_calls(messages: Sequence[ChatMessage]) -> list[FunctionCallContent]:
    """The calls the model made in the current turn, in order."""
    return [
        content
        for message in messages[turn_start(messages) :]
        for content in message.contents
        if isinstance(content, FunctionCallContent)
    ]


def turn_results(messages: Sequence[ChatMessage]) -> list[FunctionResultContent]:
    return [
        content
        for message in messages[turn_start(messages) :]
        for content in message.contents
        if isinstance(content, FunctionResultContent)
    ]


def spans(
    text: str, max_words: int = MAX_SPAN_WORDS, *, avoid: Set[str] = frozenset()
) -> list[str]:
    """Runs of up to `max_words` words of `text`, punctuation at their ends stripped,
    each once, in order of first appearance. A run neither starts nor ends with a
    little word ("the", "in"), a number alone or a word of `avoid` (stemmed: the
    tool's own words, which a value rarely repeats)."""
    words = [_POSSESSIVE.sub("", w.strip(_EDGE)) for w in _WORD.findall(text)]
    out: dict[str, None] = {}

    def edge(word: str, *, name: bool = False) -> bool:
        low = word.lower()
        if low in _STOPWORDS:
            return True
        if not name and _stem(low) in avoid:
            return True
        return _NUMBER.fullmatch(word) is not None or _QUANTITY.fullmatch(word) is not None

    for start in range(len(words)):
        for end in range(start + 1, min(len(words), start + max_words) + 1):
            run = words[start:end]
            if not run[0] or not run[-1]:
                continue
            # a proper name ("The Weeknd", "Yellowstone National Park") is a value whole,
            # little word first or the tool's own word last
            name = len(run) > 1 and all(w[:1].isupper() for w in run)
            first = edge(run[0]) and not (name and run[0].lower() == "the")
            if not first and not edge(run[-1], name=name):
                out[" ".join(run)] = None
    return list(out)


_WORD_NUMBERS = {
    word: value
    for value, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
    if value >= 2  # "one" is as often a pronoun ("which one") as a count
} | {"twice": 2, "thrice": 3, "dozen": 12}
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_WORD_NUMBERS) + r")\b", re.I)


def numbers(texts: Sequence[str], *, words: bool = False) -> list[int | float]:
    """The numbers written in `texts` (as ints where whole), each once, in order; with
    `words`, also those written as a word ("a six-sided die" 6, "twice" 2)."""
    out: dict[int | float, None] = {}
    for text in texts:
        found = [(m.start(), m.group()) for m in _NUMBER.finditer(text)]
        if words:
            found += [(m.start(), m.group()) for m in _NUMBER_WORD.finditer(text)]
        for _, written in sorted(found):
            word = _WORD_NUMBERS.get(written.lower())
            value = float(word if word is not None else written.replace(",", ""))
            out[int(value) if value.is_integer() else value] = None
    return list(out)


def _free_text(schema: dict[str, Any]) -> bool:
    """A string the user says in words: no enum, const, format or pattern."""
    return schema.get("type") == "string" and not (
        {"enum", "const", "format", "pattern"} & schema.keys()
    )


def _items(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of an array's items ({} for anything else)."""
    items = schema.get("items")
    return items if schema.get("type") == "array" and isinstance(items, dict) else {}


def _numeric(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    return kind if kind in ("number", "integer") and "enum" not in schema else None


class LiveContext:
    """What the conversation offers a tool call's arguments: the spans of the user's
    message, the numbers said in the turn, and the calls already made."""

    def __init__(self, messages: Sequence[ChatMessage], *, known: Sequence[Any] = ()) -> None:
        self.question = user_text(messages)
        self.known = list(dict.fromkeys(str(k).rstrip("/") for k in known))
        """The paths that exist (every tool's candidates): a file name the message says
        is the existing path it names, or a new one."""
        self.long = len(self.question.split()) * MAX_SPAN_WORDS > MAX_SPANS
        """A message too long to enumerate its spans: free-text arguments stay free."""
        self.calls = turn_calls(messages)
        results = [r.as_text() for r in turn_results(messages)]
        used = {v for c in self.calls for v in c.arguments.values() if isinstance(v, int | float)}
        said = [n for n in numbers([self.question], words=True) if n not in used]
        self.numbers = list(dict.fromkeys([*said, *numbers(results)]))
        """Numbers a call may take: those of the message no call used yet, and those of
        this turn's results (a second step works on the first one's result)."""
        self.percents = percents(self.question)
        """The numbers of the message written as percentages ("3%")."""

    def spans(self, tool: Tool) -> list[str]:
        """The spans of the user's message a free-text argument of `tool` may take."""
        if self.long:
            return []
        properties = (tool.parameters or {}).get("properties") or {}
        found = spans(self.question, avoid=terms(" ".join([tool.name, *properties])))
        return found

    def parameters(self, tool: Tool) -> dict[str, Any] | None:
        """The tool's argument schema narrowed to this context (None: no call of it is
        left to make, every value was used)."""
        schema = dict(tool.parameters or {"type": "object", "properties": {}})
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return schema
        required = [r for r in schema.get("required") or [] if r in properties]
        offered = argument_candidates(tool)
        texts = self.spans(tool)
        claims = claimed_spans(properties, required, texts)
        claimed = {text for spans_of in claims.values() for text in spans_of}
        narrowed: dict[str, Any] = {}
        for name, prop in properties.items():
            prop = dict(prop) if isinstance(prop, dict) else {}
            if name in offered:
                narrowed[name] = {"enum": self.named(offered[name])}
            elif name in required and _names_a_path(name, prop) and self.file_names():
                narrowed[name] = {"enum": self.file_names()}
            elif (count := times_a_year(self.question, name, prop)) is not None:
                narrowed[name] = {"enum": [count]}  # "compounded monthly": 12 a year
            elif (days := days_in_weeks(self.question, name, prop)) is not None:
                narrowed[name] = {"enum": [days]}  # "the next week": 7 days
            elif wants_iso_date(prop) and (dates := iso_dates(self.question)):
                narrowed[name] = {"enum": dates}  # "March 8th, 2023": 2023-03-08
            elif asks_for_time(name, prop) and (times := clock_times(self.question)):
                narrowed[name] = {"enum": times}  # "at 12pm": `time` 12pm
            elif (
                asks_for_unit(name, prop)
                and self.chosen(prop) is None
                and (units := units_written(self.question))
            ):
                narrowed[name] = {"enum": units}  # "4 inches": `unit` inches
            elif name in required and (places := places_with_region(self.question, prop)):
                narrowed[name] = {"enum": places}  # "Paris, France" as the form asks
            elif name not in required:
                spoken = self.optional(name, prop)
                if spoken is not None:
                    narrowed[name] = spoken
                continue  # unless the message speaks of it, the tool's default holds
            elif (chosen := self.chosen(prop)) is not None:
                narrowed[name] = chosen
            elif _free_text(prop) and texts:
                # "Premier League" is the `league`, and so no other argument's value
                mine = claims.get(name) or [t for t in texts if t not in claimed] or texts
                narrowed[name] = {"enum": mine}
            elif (kind := _numeric(prop)) and self.numbers:
                values = self.numbers_for(prop, kind)
                narrowed[name] = {"enum": values} if values else prop
            elif (kind := _numeric(_items(prop))) and self.numbers:
                narrowed[name] = self.number_list(_items(prop), kind) or prop
            else:
                narrowed[name] = prop
        keep = [r for r in required if r in narrowed]
        if len(narrowed) == 1:  # one argument: the values already used are not offered
            (name, prop), used = next(iter(narrowed.items())), self.used(tool.name)
            if "enum" in prop and used:
                left = [v for v in prop["enum"] if {name: v} not in used]
                if not left:
                    return None
                narrowed[name] = {"enum": left}
        out: dict[str, Any] = {
            "type": "object",
            "properties": narrowed,
            "required": [*keep, *(n for n in narrowed if n not in keep)],
            "additionalProperties": False,
        }
        for key in ("$defs", "definitions"):
            if key in schema:
                out[key] = schema[key]
        return out

    def named(self, candidates: list[Any]) -> list[Any]:
        """Of the candidate values (the paths that exist), those the message names, when
        it names any: "todo.md" is `notes/todo.md`, never another file."""
        return self.hits(candidates) or candidates

    def hits(self, candidates: list[Any]) -> list[Any]:
        """The candidate values the message names: a candidate whole, its last part, or
        its last part without the extension ("groceries" names `notes/groceries.txt`)."""
        said = {w.lower().strip(_EDGE) for w in _WORD.findall(self.question)}
        said.discard("")
        out = []
        for value in candidates:
            text = str(value).lower().rstrip("/")
            last = text.rsplit("/", 1)[-1]
            if text in said or last in said or ("." in last and last.rsplit(".", 1)[0] in said):
                out.append(value)
        return out

    def file_names(self) -> list[str]:
        """The file names the message says ("hello.txt", "notes/todo.md"), each as the
        existing path it names when there is one: a path to write is the one the user
        named, never another."""
        out: dict[str, None] = {}
        for word in _WORD.findall(self.question):
            word = word.strip(_EDGE)
            if _FILE_NAME.fullmatch(word):
                hits = self.hits_of(word, self.known)
                out[hits[0] if len(hits) == 1 else word] = None
        return list(out)

    @staticmethod
    def hits_of(word: str, candidates: Sequence[str]) -> list[str]:
        low = word.lower()
        return [c for c in candidates if c.lower() == low or c.lower().endswith("/" + low)]

    def acts_on_named(self, tool: Tool) -> bool:
        """Whether the message names what the tool acts on: a value it offers (a path
        that exists in its workspace), or, for a tool that takes a path to create, a
        file name that names no existing path."""
        offered = argument_candidates(tool)
        if any(self.hits(values) for values in offered.values()):
            return True
        properties = (tool.parameters or {}).get("properties") or {}
        required = (tool.parameters or {}).get("required") or []
        takes_new = any(
            n in required and n not in offered and _names_a_path(n, p)
            for n, p in properties.items()
            if isinstance(p, dict)
        )
        return takes_new and any(
            not self.hits_of(n, self.known) for n in self.file_names() if "/" not in n
        )

    def numbers_for(self, prop: dict[str, Any], kind: str) -> list[int | float]:
        """The numbers said that an argument of `kind` may take, a percentage as the
        argument wants it (`values.as_fraction`)."""
        return in_kind(self.numbers, kind, as_fraction(prop), self.percents)

    def number_list(self, item: dict[str, Any], kind: str) -> dict[str, Any] | None:
        """A list of numbers: one of the lists the message writes ("[3, 4, 5, 4]", "cash
        flows of -500, 100 and 150"; repeats and order kept, never the first number again
        and again; a number alone only when no longer list is written), or, when it
        writes none that fits, any of the numbers said, each once (None: none fits)."""
        fraction = as_fraction(item)
        lists = []
        for written in written_lists(self.question):
            each = [in_kind([n], kind, fraction, self.percents) for n in written]
            if all(each):
                lists.append([v[0] for v in each])
        longer = [each for each in lists if len(each) > 1]
        if longer or lists:  # a number alone is a list only when none longer is written
            return {"type": "array", "enum": longer or lists}
        values = self.numbers_for(item, kind)
        if not values:
            return None
        items = {"enum": values}
        return {"type": "array", "items": items, "minItems": 1, "maxItems": len(values)}

    def chosen(self, prop: dict[str, Any]) -> dict[str, Any] | None:
        """A text argument (or list of texts) with fixed or described values, narrowed to
        those the message says (None: it says none of them, or the argument has none):
        an enum's values, else the values its description names ("'gas' refers to a
        gasoline vehicle, 'diesel' ..."; "e.g. vegan, gluten-free"), which the tool
        knows in that spelling."""
        array = prop.get("type") == "array"
        item = _items(prop) if array else prop
        values = item.get("enum")
        if not isinstance(values, list):
            if not _free_text(item):
                return None
            values = described_values(prop if array else item) or described_values(item)
        found = said(self.question, values)
        if not found:
            return None
        if array:
            return {
                "type": "array",
                "items": {"enum": found},
                "minItems": 1,
                "maxItems": len(found),
            }
        return {"enum": found}

    def optional(self, name: str, prop: dict[str, Any]) -> dict[str, Any] | None:
        """An optional argument the message speaks of, narrowed (None: it does not, and the
        tool's default holds): a choice among fixed or described values one of which the
        message says (the values said are offered), a yes/no whose name's head word (its
        last, or the last before "of") the message uses ("assuming equal variance":
        `equal_variance`), or a number written next to that word ("weight 0.5", "a
        weight of 0.5", "500 calories": `max_calories`; "fuel efficiency of 25" is no
        `efficiency_reduction`)."""
        chosen = self.chosen(prop)
        if chosen is not None or "enum" in prop or "enum" in _items(prop):
            return chosen
        head = _name_words(name)[-1:]
        word = spoken_head(head[0], prop, terms(self.question)) if head else None
        if prop.get("type") == "boolean" and word is not None:
            return {"type": "boolean"}
        kind = _numeric(prop)
        if kind and word is not None:
            near = self.numbers_near(word)
            values = in_kind(near, kind, as_fraction(prop), self.percents)
            return {"enum": values} if values else None
        return None

    def numbers_near(self, word: str, after: int = 3) -> list[int | float]:
        """The numbers the message writes within `after` words after `word` (stemmed) or
        right before it ("weight 0.5", "a weight of 0.5", "500 calories"): the value
        said for the argument that word names."""
        words = [w.strip(_EDGE) for w in _WORD.findall(self.question)]
        found: list[str] = []
        for index, each in enumerate(words):
            if _stem(each.lower()) == word:
                found += [w for w in words[index + 1 : index + 1 + after] if _measure(w)]
                if index and _measure(words[index - 1]):
                    found.append(words[index - 1])
        return numbers(found)

    def confused(self, call: FunctionCallContent, tool: Tool) -> bool:
        """Whether `call` gives two of the tool's free-text arguments the same words
        ("design": "rock", "size": "rock"): the message holds a value for one of them at
        most, so the call is not what the user asked for."""
        properties = (tool.parameters or {}).get("properties") or {}
        given = [
            value.strip().lower()
            for name, value in call.arguments.items()
            if isinstance(value, str) and _free_text(properties.get(name) or {})
        ]
        return len(given) != len(set(given))

    def callable(self, parameters: dict[str, Any]) -> bool:
        """Whether the conversation holds what a call needs: a required number when
        numbers were said, a required free-text argument when the message has words."""
        properties = parameters.get("properties") or {}
        for name in parameters.get("required") or []:
            prop = properties.get(name) or {}
            free = _free_text(prop) and "enum" not in prop and not self.long
            if (_numeric(prop) and not self.numbers) or free:
                return False
        return True

    def used(self, name: str) -> list[dict[str, Any]]:
        return [dict(c.arguments) for c in self.calls if c.name == name]

    def repeats(self, call: FunctionCallContent) -> bool:
        """Whether `call` was already made in this turn with the same arguments."""
        mine = _key(call)
        return any(_key(c) == mine for c in self.calls)


_FILE_NAME = re.compile(r"[\w\-/]*\w\.[A-Za-z][A-Za-z0-9]{0,7}")
"""A word that names a file: a name with an extension ("hello.txt", "notes/todo.md")."""


def _names_a_path(name: str, prop: dict[str, Any]) -> bool:
    """Whether an argument is the path of a file to act on: named so, and not described
    as a folder (a file name is never made a folder)."""
    described = str(prop.get("description") or "").lower()
    return (
        _free_text(prop)
        and name.lower() in ("path", "file", "filename", "file_path")
        and not described.startswith(("folder", "directory"))
    )


_BETWEEN = re.compile(
    r"[\s,;$\u20ac\u00a3%]*(?:(?:and|or|to)\s+)?[\s$\u20ac\u00a3]*(?:[a-z]\s*=\s*)?", re.I
)
"""What may stand between two numbers of one list: commas, spaces, currency signs, an
"and" ("-$100, $40 and $60"), the "to" of a range ("from 2015 to 2021"), a variable
named again ("from x=1 to x=3")."""


def written_lists(text: str) -> list[list[int | float]]:
    """The lists of numbers `text` writes: the numbers of each bracketed group
    ("[3, 4, 5, 4]"), and outside brackets each run of numbers written one after the
    other; repeats and order kept, each list once."""
    out: dict[str, list[int | float]] = {}
    run: list[int | float] = []
    end = 0
    for match in _NUMBER.finditer(text):
        between = text[end : match.start()]
        if run and (not _BETWEEN.fullmatch(between) or "[" in between or "]" in between):
            out.setdefault(json.dumps(run), run)
            run = []
        value = float(match.group().replace(",", ""))
        run.append(int(value) if value.is_integer() else value)
        end = match.end()
    if run:
        out.setdefault(json.dumps(run), run)
    return list(out.values())


def _measure(word: str) -> bool:
    """A number, or a number with its unit written on ("2mm"): the value is the number."""
    return _NUMBER.fullmatch(word) is not None or _QUANTITY.fullmatch(word) is not None


def spoken_head(head: str, prop: dict[str, Any], said: Set[str]) -> str | None:
    """The word of the message that names an optional argument: the head word of its
    name (stemmed) when said, else a word said that the head abbreviates and the
    argument's description spells out (`include_stats`, "match statistics": "Include
    its statistics" names it); None when the message does not name it."""
    if head in said:
        return head
    if len(head) < 4:
        return None
    described = terms(str(prop.get("description") or ""))
    for word in sorted(said):
        if word != head and word.startswith(head[:4]) and word in described:
            return word
    return None


_GENERIC_HEADS = frozenset({"name", "id", "title", "type", "value", "text"})
"""Last words of argument names that say nothing of the value (`team_name`)."""


def claimed_spans(
    properties: dict[str, Any], required: Sequence[str], texts: Sequence[str]
) -> dict[str, list[str]]:
    """For each required free-text argument, the proper names the message writes that end
    in the head word of its name (the last word, or the one before a generic last word:
    `hotel_name` is a hotel): "Premier League" is the `league`, "Plaza Hotel" the
    `hotel_name`; "the company Google" claims nothing for `company_name`."""
    out: dict[str, list[str]] = {}
    for name in required:
        prop = properties.get(name)
        if not isinstance(prop, dict) or not _free_text(prop) or described_values(prop):
            continue
        words = _name_words(name)
        if len(words) > 1 and words[-1] in _GENERIC_HEADS:
            words = words[:-1]
        if not words or words[-1] in _GENERIC_HEADS:
            continue
        head = words[-1]
        mine = [t for t in texts if _proper_name_ending_in(t, head)]
        if mine:
            out[name] = mine
    return out


def _proper_name_ending_in(text: str, head: str) -> bool:
    """Whether `text` is a name of two words or more, each capitalized, whose last word is
    `head` (stemmed): "Premier League" for `league`."""
    words = text.split()
    return (
        len(words) > 1
        and all(w[:1].isupper() for w in words)
        and _stem(words[-1].lower().strip(_EDGE)) == head
    )


def _name_words(name: str) -> list[str]:
    """The content words of an argument's name, stemmed, in order (`maxCalories`,
    `max_calories`: max, calory)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower().replace("_", " ")
    words = _TERM.findall(spaced.replace("-", " "))
    if "of" in words:  # "speed of light" is a speed: the head comes before "of"
        words = words[: words.index("of")]
    return [_stem(w) for w in words if w not in _STOPWORDS]


def _key(call: FunctionCallContent) -> tuple[str, str]:
    """A call as it compares with another: its name and its arguments in one spelling."""
    return call.name, json.dumps(dict(call.arguments), sort_keys=True, default=str)


def choice_schema(
    tools: Sequence[tuple[Tool, dict[str, Any]]], *, may_answer: bool
) -> dict[str, Any]:
    """The JSON Schema of the choice: a call of one of `tools` (each with its narrowed
    arguments), or, when `may_answer`, `{"answer": ""}`: the answer is written after."""
    definitions: dict[str, Any] = {}
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": tool.name},
                "arguments": hoist_definitions(i, parameters, definitions),
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for i, (tool, parameters) in enumerate(tools)
    ]
    if may_answer:
        branches.append(
            {
                "type": "object",
                "properties": {"answer": {"const": ""}},
                "required": ["answer"],
                "additionalProperties": False,
            }
        )
    schema: dict[str, Any] = {"anyOf": branches}
    if definitions:
        schema["$defs"] = definitions
    return schema


_NOTE = re.compile(r"\s*\[stopped repeating: [^\]]*\]\s*$")
"""The note the run adds to a result when the model repeats a call (for the model that
chose the call, not for the one writing the answer)."""


def _clean(result: FunctionResultContent) -> str | None:
    """A result as the answer reads it, raf's notes left out (None: a call not run)."""
    if result.error is not None:
        if result.error.startswith("not run: "):
            return None
        return "failed: " + _NOTE.sub("", result.error)
    return _NOTE.sub("", plain(result.result))


def plain(value: Any) -> str:
    """A result as words rather than JSON (a small model copies words, not braces):
    a mapping as `key: value` parts, a list as its items, a record in a list by its
    first value with the rest in brackets."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "{[":
            try:
                return plain(json.loads(text))
            except ValueError:
                return text
        return text
    if isinstance(value, dict):
        return "; ".join(f"{k}: {plain(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        items = []
        for item in value:
            if isinstance(item, dict) and item:
                first, *rest = item.values()
                extra = ", ".join(plain(v) for v in rest)
                items.append(f"{plain(first)} ({extra})" if extra else plain(first))
            else:
                items.append(plain(item))
        return ", ".join(items)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, ensure_ascii=False) if value is not None else ""


def answer_messages(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The conversation the answer is written from, in plain text: the current turn
    becomes one user message, what this turn's calls returned before the question, so
    a small model reads the facts first (told to quote them, it answered from them less
    often on the shipped eval: 0 of 8 against 4 of 8).
    raf's own notes to the model (a call not run, a repeated call stopped) are left out:
    a model that copies what it reads never copies them into the answer."""
    start = turn_start(messages)
    if start >= len(messages):
        return list(messages)
    facts = []
    for result in turn_results(messages):
        text = _clean(result)
        if text is None:
            continue
        facts.append(f"Fact: {text}")
    question = user_text(messages)
    if not facts:
        return list(messages[: start + 1])
    text = "\n".join(facts) + "\n\n" + question
    return [*messages[:start], ChatMessage.user(text)]


_TERM = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    """a an the and or but if then than so of to in on at by for from with into onto about
    as is are was were be been being do does did done have has had having i me my we us our
    you your he she it its they them their this that these those there here what which who
    whom whose when where why how much many some any all each every no not can could would
    should shall will may might must please tell give show let get got use using tool tools
    now today right just also very one two""".split()  # noqa: SIM905
)


def _stem(word: str) -> str:
    """A crude English stem: enough that "emails", "multiplied" and "listing" meet
    "email", "multiply" and "list"."""
    for suffix, replacement in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", "")):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)] + replacement
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def terms(text: str) -> set[str]:
    """The content words of `text`, stemmed (names split at `_` and `-`)."""
    words = _TERM.findall(text.lower().replace("_", " ").replace("-", " "))
    return {_stem(w) for w in words if w not in _STOPWORDS}


def tool_terms(tool: Tool) -> set[str]:
    """The words a tool is known by: its name, description and argument names and
    descriptions."""
    parts = [tool.name, tool.description]
    properties = (tool.parameters or {}).get("properties")
    if isinstance(properties, dict):
        for name, prop in properties.items():
            parts.append(str(name))
            if isinstance(prop, dict) and isinstance(prop.get("description"), str):
                parts.append(prop["description"])
    return terms(" ".join(parts))


def relevant_tools(tools: Sequence[Tool], question: str) -> list[Tool]:
    """The tools whose words the question uses, best first: each shared word counts by
    how few of the tools know it (a word every tool has tells them apart from nothing);
    tools scoring at least half the best are kept. Empty: no tool fits the question."""
    asked = terms(question)
    known = [tool_terms(t) for t in tools]
    if not asked or not tools:
        return []
    count = len(tools)
    scores: list[float] = []
    for words in known:
        shared = asked & words
        scores.append(sum(math.log(1 + count / sum(w in k for k in known)) for w in shared))
    best = max(scores)
    if best <= 0:
        return []
    ranked = sorted(range(count), key=lambda i: -scores[i])
    return [tools[i] for i in ranked if scores[i] >= best / 2]


Embed = Callable[[Sequence[str]], list[list[float]]]
"""Texts to vectors of unit length, in order (an embedder: `raf.clients.local.embedder`)."""

MIN_SIMILARITY = 0.38
"""How close in meaning (cosine of the two vectors, the local embedder's) a tool must be to
the question to be called at all: set by measurement on BFCL's `irrelevance` set, the
least that leaves 85 % of its 240 questions without a call (85.8 %), while 90 % of the
`simple_python` and 89 % of the `multiple` questions still reach their tool (see the
models guide)."""
NEAR_BEST = 0.06
"""Tools within this much of the closest one are offered too: the model chooses between
tools the embedder cannot tell apart."""


def tool_text(tool: Tool) -> str:
    """What a tool means, as one text: its name in words, its description, and its
    arguments' names and descriptions."""
    parts = [tool.name.replace("_", " ").replace(".", " ") + ":", tool.description]
    properties = (tool.parameters or {}).get("properties")
    if isinstance(properties, dict):
        for name, prop in properties.items():
            described = prop.get("description") if isinstance(prop, dict) else None
            parts.append(f"{name.replace('_', ' ')}" + (f" ({described})" if described else ""))
    return " ".join(p for p in parts if p)


def rank_by_meaning(
    tools: Sequence[Tool],
    question: str,
    scores: Sequence[float],
    *,
    threshold: float = MIN_SIMILARITY,
    near: float = NEAR_BEST,
    named: Set[str] = frozenset(),
) -> list[Tool]:
    """The tools whose meaning is close to the question's, closest first: at least
    `threshold` similar, and within `near` of the closest. The tools in `named` act on
    something the question names (a file that exists): they are the ones considered,
    whatever their similarity. Of those considered, a tool whose name has a word the
    question says and no other considered tool's name has ("read" for `read_file`) is
    the one asked for. Empty: no tool fits, and the answer is written without one."""
    if not tools or not question.strip():
        return []
    pool = [i for i, t in enumerate(tools) if t.name in named]
    if not pool:
        pool = [i for i in range(len(tools)) if scores[i] >= threshold]
    if not pool:
        return []
    ranked = sorted(pool, key=lambda i: -scores[i])
    asked = terms(question)
    names = {i: terms(tools[i].name) for i in pool}
    by_name = [
        i for i in ranked if names[i] - set().union(*(names[j] for j in pool if j != i)) & asked
    ]
    if by_name:  # "Read the file ...": the tool whose own name the question says
        return [tools[i] for i in by_name]
    best = scores[ranked[0]]
    return [tools[i] for i in ranked if scores[i] >= best - near]


def first_named(tools: Sequence[Tool], question: str) -> list[Tool]:
    """Of `tools`, those the question names first ("add 2 and 3, then multiply ...":
    `add`): a request for several calls usually says them in the order to make them."""
    words = [_stem(w) for w in _TERM.findall(question.lower())]

    def first(tool: Tool) -> int:
        known = tool_terms(tool)
        return next((i for i, w in enumerate(words) if w in known), len(words))

    if not tools:
        return []
    at = {t.name: first(t) for t in tools}
    earliest = min(at.values())
    return [t for t in tools if at[t.name] == earliest]


def named_steps(relevant: Sequence[Tool], question: str, tools: Sequence[Tool]) -> list[Tool]:
    """Of the `relevant` tools, those the question names by a word of the tool's name
    that no other tool's name has ("then multiply", "and email it"): once a result is
    there the answer is preferred, and only a step the user asked for by name follows."""
    asked = terms(question)
    names = {t.name: terms(t.name) for t in tools}
    out = []
    for tool in relevant:
        others = set().union(*(n for k, n in names.items() if k != tool.name))
        if names[tool.name] & asked - others:
            out.append(tool)
    return out
