"""An agent document's `schedule:` entries: runs started on a cron schedule (served with
`raf serve --durable`, where each tick runs once across all workers)."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from raf.decl.documents.base import DeclModel

_NAMES = {
    3: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
    4: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
}
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_SECONDS = (0, 59)
_PART = re.compile(r"^(\*|(\w+)(?:-(\w+))?)(?:/(\d+))?$")
SCHEDULE_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


def cron_problem(cron: str) -> str | None:
    """Why `cron` is not a crontab of five fields (minute hour day month weekday) or six
    (seconds first), or None when it is one."""
    fields = cron.split()
    if len(fields) not in (5, 6):
        return f"it has {len(fields)} fields; a cron expression has five or six"
    bounds = _BOUNDS if len(fields) == 5 else (_SECONDS, *_BOUNDS)
    offset = 0 if len(fields) == 5 else 1
    for index, (field, (low, high)) in enumerate(zip(fields, bounds, strict=True)):
        names = _NAMES.get(index - offset, [])
        for part in field.split(","):
            match = _PART.match(part.lower())
            if match is None:
                return f"field {index + 1} ({field!r}) is not a cron field"
            step = match.group(4)
            if step is not None and int(step) == 0:
                return f"field {index + 1} ({field!r}) steps by 0"
            values = [v for v in match.group(2, 3) if v is not None]
            for value in values:
                if value in names:  # months count from 1, weekdays from 0 (Sunday)
                    number = names.index(value) + low
                elif value.isdigit():
                    number = int(value)
                else:
                    return f"field {index + 1} ({field!r}): {value!r} is not a number"
                if not low <= number <= high:
                    return f"field {index + 1} ({field!r}): {value} is outside {low}-{high}"
    return None


class ScheduleDecl(DeclModel):
    """A run started on a cron schedule: `{cron: "*/5 * * * *", input: "…", session: …}`."""

    cron: str = Field(
        description="when: five fields (minute hour day month weekday) or six with seconds "
        "first, in UTC"
    )
    input: str = Field(min_length=1, description="the user message each run is given")
    session: str | None = Field(
        default=None,
        description="the session every run continues (made at the first run); a new "
        "session each run when absent",
    )
    name: str | None = Field(
        default=None,
        pattern=SCHEDULE_NAME,
        description="the schedule's name (by default its place in the list)",
    )

    @field_validator("cron")
    @classmethod
    def _parses(cls, cron: str) -> str:
        problem = cron_problem(cron)
        if problem is not None:
            raise ValueError(f"{cron!r} is not a cron expression: {problem}")
        return cron
