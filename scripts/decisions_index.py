"""Writes docs/decisions/index.md from the decision records, or checks that it is current.

Every record is `NNNN-short-title.md`, starts with `# NNNN — Title` and has a line
`Status: accepted`, `Status: superseded by NNNN` or `Status: superseded in part by NNNN[, NNNN]`
(optionally followed by a short reason after a semicolon). `--check` exits 1 and names
what is wrong when a record breaks these rules or the index is out of date.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "docs" / "decisions"
INDEX = FOLDER / "index.md"
NAME = re.compile(r"^(\d{4})-[a-z0-9-]+\.md$")
TITLE = re.compile(r"^# (\d{4}) — (.+)$")
STATUS = re.compile(
    r"^Status: (accepted|superseded by \d{4}|superseded in part by \d{4}(?:, \d{4})*)"
    r"(?:; .+)?$"
)
REFERENCE = re.compile(r"\d{4}")


@dataclass(frozen=True)
class Record:
    number: str
    title: str
    status: str
    file: str


def read_records() -> tuple[list[Record], list[str]]:
    """Every record in the folder, and one problem line per rule a record breaks."""
    records: list[Record] = []
    problems: list[str] = []
    numbers = set()
    for path in sorted(FOLDER.glob("*.md")):
        if path.name == "index.md":
            continue
        named = NAME.match(path.name)
        if named is None:
            problems.append(f"{path.name}: the name is not NNNN-short-title.md")
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        title = TITLE.match(lines[0]) if lines else None
        if title is None or title.group(1) != named.group(1):
            problems.append(f"{path.name}:1: the first line is not '# {named.group(1)} — Title'")
            continue
        statuses = [line for line in lines if line.startswith("Status:")]
        if len(statuses) != 1 or not STATUS.match(statuses[0]):
            problems.append(
                f"{path.name}: needs exactly one line 'Status: accepted' or "
                "'Status: superseded [in part] by NNNN'"
            )
            continue
        if named.group(1) in numbers:
            problems.append(f"{path.name}: the number {named.group(1)} is used twice")
        numbers.add(named.group(1))
        status = statuses[0].removeprefix("Status: ")
        records.append(Record(named.group(1), title.group(2), status, path.name))
    for record in records:
        if record.status.startswith("superseded"):
            head = record.status.split(";", 1)[0]
            for ref in REFERENCE.findall(head):
                if ref not in numbers:
                    problems.append(f"{record.file}: superseded by {ref}, which does not exist")
    return records, problems


def render(records: list[Record]) -> str:
    """The index page: one table row per record, in number order."""
    rows = [
        "# Decision records",
        "",
        "Each record states one design choice: its context, the decision and what follows.",
        "A record replaced in whole or in part by a later one says so in its status; read",
        "the later record for what holds now. This page is written by",
        "`python scripts/decisions_index.py` and checked by the test suite.",
        "",
        "| No. | Decision | Status |",
        "| --- | --- | --- |",
    ]
    for r in records:
        status = re.sub(r"(\d{4})", lambda m: _link(m.group(1), records), r.status)
        rows.append(f"| {r.number} | [{r.title}]({r.file}) | {status} |")
    return "\n".join(rows) + "\n"


def _link(number: str, records: list[Record]) -> str:
    for r in records:
        if r.number == number:
            return f"[{number}]({r.file})"
    return number


def main(argv: list[str]) -> int:
    records, problems = read_records()
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        return 1
    text = render(records)
    if "--check" in argv:
        if not INDEX.exists() or INDEX.read_text(encoding="utf-8") != text:
            print(
                "docs/decisions/index.md is out of date: run python scripts/decisions_index.py",
                file=sys.stderr,
            )
            return 1
        return 0
    INDEX.write_text(text, encoding="utf-8")
    print(f"wrote {INDEX.relative_to(FOLDER.parents[1])} ({len(records)} records)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
