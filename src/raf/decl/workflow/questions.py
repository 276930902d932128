"""Question (and RequestExternalInput): ask the user, read the answer as the question's
prebuilt entity, ask again on an answer that is not one, up to `repeatCount` times, then
take the default.

    - kind: Question
      id: ask_age
      variable: Local.age
      prompt: How old are you?
      entity: AgePrebuiltEntity
      repeatCount: 2
      invalidPrompt: Please say your age in years.
      defaultValue: 30
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from raf.decl.powerfx.dates import as_datetime
from raf.decl.powerfx.values import text, truthy
from raf.decl.workflow.program import Step, local_path, repeat_count_problem
from raf.decl.workflow.runtime import Runtime

REPEAT_COUNT = 2
"""How many times a question is asked again after an answer its entity cannot read,
unless `repeatCount` says otherwise (Copilot Studio's default)."""

YES = ("yes", "y", "true", "1", "confirm", "ok")
NO = ("no", "n", "false", "0")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+")
# possessive spaces (`\s*+`): a run of spaces is never split between two `\s*`, whose
# ways of splitting it would make a long answer cost its length squared
_AGE = re.compile(r"^\s*+(\d{1,3}(?:\.\d+)?)\s*+(?:years?|yrs?|y)?(?:\s*+old)?\s*+$", re.IGNORECASE)
_MONEY = re.compile(
    r"^\s*+(?:[$€£¥]|[A-Z]{3})?\s*+([-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*+"
    r"(?:[$€£¥]|[A-Z]{3}|dollars?|euros?|pounds?)?\s*+$",
    re.IGNORECASE,
)


class NotRead(ValueError):
    """An answer the question's entity cannot read."""


def _number(said: str) -> float | int:
    if not _NUMBER.fullmatch(said):
        raise NotRead(said)
    number = float(said.replace(",", ""))
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _boolean(said: str) -> bool:
    lowered = said.lower()
    if lowered not in (*YES, *NO):
        raise NotRead(said)
    return lowered in YES


def _date_time(said: str) -> str:
    try:
        return as_datetime(said).isoformat()
    except ValueError:
        raise NotRead(said) from None


def _date(said: str) -> str:
    try:
        found = as_datetime(said)
    except ValueError:
        raise NotRead(said) from None
    return found.date().isoformat()


def _email(said: str) -> str:
    if not _EMAIL.match(said):
        raise NotRead(said)
    return said


def _url(said: str) -> str:
    parts = urlsplit(said)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise NotRead(said)
    return said


def _age(said: str) -> float | int:
    found = _AGE.match(said)
    if found is None:
        raise NotRead(said)
    return _number(found.group(1))


def _money(said: str) -> float | int:
    found = _MONEY.match(said)
    if found is None:
        raise NotRead(said)
    return _number(found.group(1))


ENTITIES: dict[str, Callable[[str], Any]] = {
    "number": _number,
    "boolean": _boolean,
    "datetime": _date_time,
    "date": _date,
    "email": _email,
    "url": _url,
    "age": _age,
    "money": _money,
    "string": lambda said: said,
}
"""Each prebuilt entity a question reads (`NumberPrebuiltEntity`, or `Number`), as the
reading of a text answer: raises `NotRead` for an answer that is not one."""


def entity_name(entity: Any) -> str | None:
    """The entity's key in `ENTITIES`: `NumberPrebuiltEntity`, `Number` or `{kind:
    NumberPrebuiltEntity}`, in any case; None for none."""
    if isinstance(entity, dict):
        entity = entity.get("kind")
    if not isinstance(entity, str) or not entity:
        return None
    return entity.lower().removesuffix("prebuiltentity").removesuffix("entity") or None


def read_answer(entity: Any, value: Any) -> Any:
    """A text answer read as the entity (a value that is not text is kept); raises
    `NotRead` when it is not one. Any other entity keeps the answer as said."""
    name = entity_name(entity)
    reader = ENTITIES.get(name) if name else None
    if reader is None or not isinstance(value, str):
        return value
    return reader(value.strip())


async def question(rt: Runtime, step: Step) -> Any:
    """Ask the user. With `alwaysPrompt: false` (or `skipQuestionMode:
    AlwaysSkipIfVariableHasValue`) a variable that already has a value is not asked
    again; without either, the question is always asked. `property` names the field of
    a record answer to keep. `autoSend: true` also sends the question to the user as a
    message of the run; `autoSend: false` leaves it out of the conversation (the request
    for input still carries it)."""
    fields = step.fields
    skip = ("alwaysPrompt" in fields and not truthy(await rt.value(fields["alwaysPrompt"]))) or str(
        fields.get("skipQuestionMode", "")
    ).lower().startswith("alwaysskip")
    variable = local_path(str(fields["variable"]))
    if step.kind == "Question" and skip and rt.vars.get(variable) not in (None, ""):
        return None
    asked = await rt.render(fields.get("question", fields.get("prompt", "")))
    repeat = await rt.value(fields.get("repeatCount", REPEAT_COUNT))
    problem = repeat_count_problem(repeat)
    if problem is not None:
        raise rt.fail(problem)
    then = {"default": await rt.value(fields.get("default")), "left": repeat}
    return await _ask(rt, step, asked, then)


async def _ask(rt: Runtime, step: Step, asked: str, then: dict[str, Any]) -> Any:
    send = step.fields.get("autoSend")
    if send is not None and truthy(await rt.value(send)):
        await rt.say(asked)
    elif send is None:
        (await rt.conversation()).append({"role": "assistant", "text": asked})
    # with `property`, the answer may be a record (of which that field is kept)
    answer_type: type[Any] = object if "property" in step.fields else str
    return await rt.ask(asked, answer_type, then)


async def resume_question(rt: Runtime, step: Step, then: dict[str, Any], answer: Any) -> Any:
    """Keep the answer, read as the entity; on an answer the entity cannot read, ask again
    (with `invalidPrompt`) while `repeatCount` allows, then take the default (and say
    `defaultValueResponse`), or leave the variable blank when there is none."""
    fields = step.fields
    given = answer not in (None, "")
    value = answer if given else then.get("default")
    prop = fields.get("property")
    if prop is not None and isinstance(value, dict):
        value = value.get(str(prop))
    if given:
        (await rt.conversation()).append({"role": "user", "text": text(answer)})
        rt.vars.set_system("LastMessage", {"Text": text(answer), "Role": "user"})
    try:
        value = read_answer(fields.get("entity"), value)
    except NotRead:
        left = int(then.get("left", 0))
        if left > 0:
            again = fields.get("invalidPrompt", fields.get("unrecognizedPrompt"))
            asked = await rt.render(
                again if again is not None else fields.get("question", fields.get("prompt", ""))
            )
            return await _ask(rt, step, asked, {**then, "left": left - 1})
        value = then.get("default")
        if value is not None and fields.get("defaultValueResponse") is not None:
            await rt.say(await rt.render(fields["defaultValueResponse"]))
    rt.set(fields["variable"], value)
    return None
