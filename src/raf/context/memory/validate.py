"""Checks of a memory folder: the layout is there, front matter parses, links resolve, and
the index lists every page."""

from __future__ import annotations

import re
from pathlib import Path

from raf.context.memory.layout import REFERENCES, TEMPLATES
from raf.context.skills.model import parse_yaml_mapping, split_front_matter

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
EXTERNAL = ("http://", "https://", "mailto:", "#")


def page_links(text: str) -> list[str]:
    """Relative link targets of a Markdown page (external links and anchors left out)."""
    out = []
    for target in LINK.findall(text):
        if target.startswith(EXTERNAL):
            continue
        out.append(target.split("#", 1)[0])
    return [t for t in out if t]


def validate_memory(directory: str | Path) -> list[str]:
    """Every problem of a memory folder, one line each; an empty list means valid."""
    root = Path(directory).expanduser()
    if not root.is_dir():
        return [f"{root}: not a directory"]
    problems: list[str] = []
    for required in TEMPLATES:
        if not (root / required).is_file():
            problems.append(f"{required}: missing")
    if not (root / "assets").is_dir():
        problems.append("assets/: missing")
    resolved_root = root.resolve()
    pages = sorted(
        p
        for p in root.rglob("*.md")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    for stray in sorted(root.rglob("*.tmp")):
        problems.append(f"{stray.relative_to(root).as_posix()}: unfinished write left behind")
    for page in pages:
        name = page.relative_to(root).as_posix()
        try:
            text = page.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{name}: cannot be read ({exc})")
            continue
        parts = split_front_matter(text)
        if parts is None:
            if name not in REFERENCES:  # the original framework writes these five without
                problems.append(f"{name}: no YAML front matter")
        else:
            try:
                parse_yaml_mapping(parts[0], name)
            except ValueError as exc:
                problems.append(str(exc))
        for target in page_links(text):
            resolved = (page.parent / target).resolve()
            if not resolved.is_relative_to(resolved_root):
                problems.append(f"{name}: link {target!r} leads outside the memory folder")
            elif not resolved.exists():
                problems.append(f"{name}: link {target!r} does not resolve")
    index = root / "index.md"
    if index.is_file():
        listed = {(root / t).resolve() for t in page_links(index.read_text(encoding="utf-8"))}
        for page in pages:
            if page == index:
                continue
            if page.resolve() not in listed:
                problems.append(f"index.md: does not list {page.relative_to(root).as_posix()}")
    return problems
