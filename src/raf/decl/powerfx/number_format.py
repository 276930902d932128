"""Power Fx's number format codes for `Text(number, format)`: `0` a digit always shown,
`#` a digit shown when it counts, `,` thousands separators, `.` the decimal point, `%`
the number as a percentage, and literal text around the digits (`"$ "#,##0`, `0.0 "kg"`,
`[$-en-US]` locale tags read past). Halves round away from zero on the decimal digits
as written, as Power Fx rounds."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, localcontext

_LOCALE = re.compile(r"\[\$-[^\]]*\]")
_DIGITS = set("0#")
MAX_DECIMALS = 15


def _literal(text: str) -> str:
    """Literal text of a format: quotes removed, a backslash keeps the next character."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            end = text.find('"', i + 1)
            end = len(text) if end < 0 else end
            out.append(text[i + 1 : end])
            i = end + 1
            continue
        if ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _digit_span(pattern: str) -> tuple[int, int] | None:
    """Where the digit codes are (outside quotes): from the first 0/# to the last."""
    first = last = -1
    quoted = False
    for i, ch in enumerate(pattern):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in _DIGITS:
            first = i if first < 0 else first
            last = i
    return (first, last + 1) if first >= 0 else None


def format_number(value: float | int, pattern: str) -> str:
    """`value` written by the format code `pattern`."""
    pattern = _LOCALE.sub("", pattern)
    span = _digit_span(pattern)
    if span is None:
        return _literal(pattern)
    prefix, core, suffix = pattern[: span[0]], pattern[span[0] : span[1]], pattern[span[1] :]
    percent = "%" in prefix or "%" in suffix
    whole, _, fraction = core.partition(".")
    min_whole = whole.count("0")
    grouped = "," in whole
    min_fraction = fraction.count("0")
    max_fraction = min(sum(1 for c in fraction if c in _DIGITS), MAX_DECIMALS)
    with localcontext() as ctx:
        ctx.prec = 400
        number = Decimal(repr(float(value))) * (100 if percent else 1)
        exact = number.quantize(Decimal(1).scaleb(-max_fraction), rounding=ROUND_HALF_UP)
    negative = exact < 0
    shown = f"{abs(exact):.{max_fraction}f}"
    int_digits, _, frac_digits = shown.partition(".")
    while len(frac_digits) > min_fraction and frac_digits.endswith("0"):
        frac_digits = frac_digits[:-1]
    int_digits = int_digits.lstrip("0").rjust(min_whole, "0")
    if grouped and int_digits:
        int_digits = f"{int(int_digits):,}".rjust(min_whole, "0")
    body = int_digits + ("." + frac_digits if frac_digits else "")
    if negative and body.strip("0.") == "":
        negative = False  # a value that rounds to zero shows no sign
    return ("-" if negative else "") + _literal(prefix) + body + _literal(suffix)
