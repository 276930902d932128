"""Writes docs/decisions/index.md from the decision records, or checks that it is current.

Every record is `NNNN-short-title.md`, starts with `# NNNN — Title` and has a line
`Status: accepted`, `Status: superseded by NNNN` or `Status: superseded in part by NNNN[, NNNN]`
(optionally followed by a short reason after a semicolon).

The index is grouped by area. docs/decisions/areas.toml lists the areas in page order,
each with its `title`, the record `numbers` it holds ("NNNN-NNNN" ranges, both ends
included, or single "NNNN") and `holds`, a paragraph saying what holds in that area now;
the four-digit numbers in it must be records, and the page links them. Every record must
fall in exactly one area, and every area must hold a record.

`--check` exits 1 and names what is wrong when a record or an area breaks these rules or
the index is out of date.
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "docs" / "decisions"
"""Where the records, areas.toml and index.md are (tests point it elsewhere)."""
NAME = re.compile(r"^(\d{4})-[a-z0-9-]+\.md$")
TITLE = re.compile(r"^# (\d{4}) — (.+)$")
STATUS = re.compile(
    r"^Status: (accepted|superseded by \d{4}|superseded in part by \d{4}(?:, \d{4})*)"
    r"(?:; .+)?$"
)
REFERENCE = re.compile(r"\d{4}")
CITED = re.compile(r"\b\d{4}\b")
RANGE = re.compile(r"^(\d{4})(?:\s*[-–]\s*(\d{4}))?$")


@dataclass(frozen=True)
class Record:
    number: str
    title: str
    status: str
    file: str


@dataclass(frozen=True)
class Area:
    title: str
    numbers: tuple[tuple[int, int], ...]
    """Inclusive ranges of record numbers."""
    holds: str
    """What holds in the area now: one paragraph, whitespace as written."""

    def holds_number(self, number: str) -> bool:
        return any(low <= int(number) <= high for low, high in self.numbers)


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


def read_areas() -> tuple[list[Area], list[str]]:
    """The areas of areas.toml in page order, and one problem line per rule one breaks."""
    path = FOLDER / "areas.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return [], [f"{path.name}: cannot be read: {exc}"]
    entries = data.get("area")
    if not isinstance(entries, list) or not entries:
        return [], [f"{path.name}: needs [[area]] tables, each with title, numbers and holds"]
    areas: list[Area] = []
    problems: list[str] = []
    for index, entry in enumerate(entries, 1):
        where = f"{path.name}: area {index}"
        title, numbers, holds = entry.get("title"), entry.get("numbers"), entry.get("holds")
        unknown = sorted(set(entry) - {"title", "numbers", "holds"})
        if unknown:
            problems.append(f"{where}: unknown keys {unknown}")
        if not isinstance(title, str) or not title.strip():
            problems.append(f"{where}: needs a title")
            continue
        where = f"{path.name}: area '{title}'"
        if not isinstance(holds, str) or not holds.strip():
            problems.append(f"{where}: needs 'holds', what holds in it now")
            continue
        if not isinstance(numbers, list) or not numbers:
            problems.append(f"{where}: needs 'numbers', a list of 'NNNN-NNNN' or 'NNNN'")
            continue
        ranges: list[tuple[int, int]] = []
        for spec in numbers:
            found = RANGE.match(spec.strip()) if isinstance(spec, str) else None
            if found is None or int(found.group(2) or found.group(1)) < int(found.group(1)):
                problems.append(f"{where}: {spec!r} is not 'NNNN-NNNN' (low to high) or 'NNNN'")
                continue
            ranges.append((int(found.group(1)), int(found.group(2) or found.group(1))))
        if any(other.title == title for other in areas):
            problems.append(f"{where}: the title is used twice")
        areas.append(Area(title, tuple(ranges), holds.strip()))
    for i, area in enumerate(areas):
        for other in areas[i + 1 :]:
            for low, high in area.numbers:
                for other_low, other_high in other.numbers:
                    if low <= other_high and other_low <= high:
                        problems.append(
                            f"{path.name}: '{area.title}' ({_span(low, high)}) and "
                            f"'{other.title}' ({_span(other_low, other_high)}) overlap"
                        )
    return areas, problems


def _span(low: int, high: int) -> str:
    return f"{low:04d}" if low == high else f"{low:04d}–{high:04d}"


def group(records: list[Record], areas: list[Area]) -> tuple[list[list[Record]], list[str]]:
    """The records of each area (in the areas' order), and a problem line for each record
    that falls in no area, each area that holds none and each number an area's `holds`
    cites that is no record."""
    grouped: list[list[Record]] = [[] for _ in areas]
    problems: list[str] = []
    for record in records:
        homes = [i for i, area in enumerate(areas) if area.holds_number(record.number)]
        if not homes:
            problems.append(
                f"{record.file}: {record.number} falls in no area: add it to the numbers "
                "of an area in docs/decisions/areas.toml and say what it changes there"
            )
        for i in homes[:1]:
            grouped[i].append(record)
    known = {r.number for r in records}
    for area, held in zip(areas, grouped, strict=True):
        if not held:
            problems.append(f"areas.toml: area '{area.title}' holds no record")
        for cited in sorted(set(CITED.findall(area.holds)) - known):
            problems.append(f"areas.toml: area '{area.title}' cites {cited}, which is no record")
    return grouped, problems


def render(records: list[Record], areas: list[Area]) -> str:
    """The index page: per area, what holds now and a table row per record, in number
    order."""
    grouped, _ = group(records, areas)
    files = {r.number: r.file for r in records}
    rows = [
        "# Decision records",
        "",
        "Each record states one design choice: its context, the decision and what follows.",
        "A record replaced in whole or in part by a later one says so in its status. The",
        "records are grouped by area, and each area starts with what holds in it now, naming",
        "the records that carry each rule. This page is written by",
        "`python scripts/decisions_index.py` from the records and `areas.toml` beside them,",
        "and checked by the test suite.",
    ]
    for area, held in zip(areas, grouped, strict=True):
        holds = " ".join(area.holds.split())
        rows += [
            "",
            f"## {area.title}",
            "",
            "**What holds now.** " + CITED.sub(lambda m: _link(m.group(0), files), holds),
            "",
            "| No. | Decision | Status |",
            "| --- | --- | --- |",
        ]
        for r in held:
            status = REFERENCE.sub(lambda m: _link(m.group(0), files), r.status)
            rows.append(f"| {r.number} | [{r.title}]({r.file}) | {status} |")
    return "\n".join(rows) + "\n"


def _link(number: str, files: dict[str, str]) -> str:
    return f"[{number}]({files[number]})" if number in files else number


def main(argv: list[str]) -> int:
    records, problems = read_records()
    areas, area_problems = read_areas()
    problems += area_problems
    if not area_problems:
        problems += group(records, areas)[1]
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        return 1
    text = render(records, areas)
    index = FOLDER / "index.md"
    if "--check" in argv:
        if not index.exists() or index.read_text(encoding="utf-8") != text:
            print(
                "docs/decisions/index.md is out of date: run python scripts/decisions_index.py",
                file=sys.stderr,
            )
            return 1
        return 0
    index.write_text(text, encoding="utf-8")
    print(
        f"wrote {index.relative_to(FOLDER.parents[1])} ({len(records)} records, {len(areas)} areas)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
