"""The JSON Schema keywords that match patterns (`pattern`, `patternProperties`, and
`additionalProperties`, which asks which names no pattern matched), on the bounded
`regex` engine: jsonschema's own run Python's `re`, which cannot be stopped, so a
pattern that backtracks (`^(a|aa)+$` against 27 characters takes seconds, four times
longer for each two more) would hold whoever validates. Here the matches of one
validation share `MATCH_SECONDS`; one that runs out is an error of the value.

`unevaluatedProperties` also reads `patternProperties`, with `re`, deep inside
jsonschema: a schema that has both is refused (`refuse_unbounded_patterns`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from raf.core.bounded_regex import MatchTimedOut, schema_pattern, search_within
from raf.core.errors import ConfigurationError


def _matches(pattern: str, text: str) -> bool | str:
    """Whether `pattern` matches in `text`; the reason, when it could not be told."""
    try:
        return search_within(schema_pattern(pattern), text)
    except MatchTimedOut as exc:
        return str(exc)
    except ValueError as exc:  # a pattern past its limits, in a schema nobody checked
        return str(exc)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "string"):
        return
    found = _matches(pattern, instance)
    if isinstance(found, str):
        yield ValidationError(f"{_short(instance)} could not be checked: {found}")
    elif not found:
        yield ValidationError(f"{_short(instance)} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            found = _matches(pattern, name)
            if isinstance(found, str):
                yield ValidationError(f"the name {_short(name)} could not be checked: {found}")
            elif found:
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras: list[str] = []
    for name in instance:
        if name in declared:
            continue
        matched: bool | str = False
        for pattern in patterns:
            matched = _matches(pattern, name)
            if matched:
                break
        if isinstance(matched, str):
            yield ValidationError(f"the name {_short(name)} could not be checked: {matched}")
        elif not matched:
            extras.append(name)
    if validator.is_type(extra, "object"):
        for name in extras:
            yield from validator.descend(instance[name], extra, path=name)
    elif not extra and extras:
        shown = ", ".join(repr(name) for name in sorted(extras))
        if patterns:
            yield ValidationError(
                f"{shown} {'does' if len(extras) == 1 else 'do'} not match any of the "
                f"regexes: {', '.join(repr(p) for p in sorted(patterns))}"
            )
        else:
            yield ValidationError(
                f"Additional properties are not allowed ({shown} "
                f"{'was' if len(extras) == 1 else 'were'} unexpected)"
            )


def _short(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:80]) + "…"


@cache
def bounded_validator_class() -> Any:
    """Draft 2020-12 with the pattern keywords above (made once, when first needed)."""
    from jsonschema import Draft202012Validator, validators

    return validators.extend(  # type: ignore[no-untyped-call]
        Draft202012Validator,
        {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
        },
    )


def refuse_unbounded_patterns(schemas: Iterator[Mapping[str, Any]], *, where: str) -> None:
    """Refuse a schema that has both `unevaluatedProperties` and `patternProperties`
    (in any of its `schemas`): jsonschema would match those patterns with `re`."""
    unevaluated = patterned = False
    for node in schemas:
        unevaluated = unevaluated or "unevaluatedProperties" in node
        patterned = patterned or "patternProperties" in node
        if unevaluated and patterned:
            raise ConfigurationError(
                "the schema has both unevaluatedProperties and patternProperties, which "
                "raf cannot check under a time limit; use additionalProperties beside "
                "patternProperties instead",
                key_path=where,
            )
