"""Skills in the Agent Skills format: a folder with SKILL.md (front matter + body) and resources."""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from raf.core.bounded_parse import DocumentLimitError, load_yaml
from raf.core.errors import ConfigurationError, MissingExtraError

log = logging.getLogger("raf.context.skills")

SKILL_FILE = "SKILL.md"
NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
KNOWN_KEYS = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
)
SCRIPT_SUFFIXES = (".py", ".sh")
SKIPPED_NAMES = frozenset({"__pycache__", "node_modules"})


@dataclass(kw_only=True, slots=True)
class Skill:
    """One skill: what the model is told it exists (name, description) and what it loads.

    Skills read from a folder have `path` set and their resources are files in it;
    skills built in code carry their resources as texts in `resources`.
    """

    name: str
    description: str
    instructions: str = ""
    """The Markdown body of SKILL.md: what `load_skill` returns."""
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    allowed_tools: list[str] = field(default_factory=list)
    path: Path | None = None
    """The skill's folder, for skills loaded from disk."""
    resources: dict[str, str] = field(default_factory=dict)
    """In-code resources: relative path → text (for skills built in code)."""
    files: list[str] = field(default_factory=list)
    """Relative POSIX paths of the folder's resource files (everything but SKILL.md)."""
    scripts: list[str] = field(default_factory=list)
    """The resource files that can be run: under scripts/, or executable .py/.sh."""

    def __post_init__(self) -> None:
        problems = check_name(self.name) + check_description(self.description)
        if problems:
            raise ConfigurationError(f"skill {self.name!r}: " + "; ".join(problems))

    @property
    def resource_names(self) -> list[str]:
        return sorted({*self.files, *self.resources})

    @property
    def has_resources(self) -> bool:
        return bool(self.files or self.resources)

    @property
    def has_scripts(self) -> bool:
        return bool(self.scripts)


def check_name(name: Any) -> list[str]:
    """Problems with a skill name (lowercase letters, digits, single hyphens, ≤ 64)."""
    if not isinstance(name, str) or not name:
        return ["'name' is missing or not a string"]
    problems = []
    if len(name) > MAX_NAME:
        problems.append(f"'name' is {len(name)} characters long; the limit is {MAX_NAME}")
    if not NAME_PATTERN.match(name):
        problems.append(
            f"'name' {name!r} must use lowercase letters, digits and single hyphens, "
            "not starting or ending with a hyphen"
        )
    return problems


def check_description(description: Any) -> list[str]:
    if not isinstance(description, str) or not description.strip():
        return ["'description' is missing or empty"]
    if len(description) > MAX_DESCRIPTION:
        return [
            f"'description' is {len(description)} characters long; the limit is {MAX_DESCRIPTION}"
        ]
    return []


def split_front_matter(text: str) -> tuple[str, str] | None:
    """(YAML text, body) of a document opening with a `---` fenced block, else None.
    A byte-order mark before the fence (files saved by some Windows editors) is allowed."""
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    return None


def parse_yaml_mapping(source: str, where: str) -> dict[str, Any]:
    """Parse a YAML mapping with pyyaml (the `yaml` extra); errors name `where`."""
    try:
        import yaml
    except ImportError as exc:
        raise MissingExtraError("reading YAML front matter", "yaml", "yaml") from exc
    try:
        data = load_yaml(source, file=where)
    except DocumentLimitError as exc:
        raise ValueError(f"{exc} (in the front matter)") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{where}: the front matter is not valid YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(f"{where}: the front matter must be a mapping, not {type(data).__name__}")
    return {str(k): v for k, v in data.items()}


def load_skill_folder(folder: Path) -> tuple[Skill | None, list[str]]:
    """Read one skill folder; a malformed skill gives None and warnings saying why."""
    warnings: list[str] = []
    where = str(folder / SKILL_FILE)
    try:
        text = (folder / SKILL_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, [f"{where}: cannot be read ({exc}); skill skipped"]
    parts = split_front_matter(text)
    if parts is None:
        return None, [f"{where}: no YAML front matter between '---' lines; skill skipped"]
    try:
        data = parse_yaml_mapping(parts[0], where)
    except ValueError as exc:
        return None, [f"{exc}; skill skipped"]
    problems = check_name(data.get("name")) + check_description(data.get("description"))
    if problems:
        return None, [f"{where}: " + "; ".join(problems) + "; skill skipped"]
    name = str(data["name"])
    if name != folder.name:
        warnings.append(
            f"{where}: 'name' {name!r} differs from its folder name {folder.name!r}; "
            f"loaded as {name!r}"
        )
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        warnings.append(f"{where}: unknown front-matter keys ignored: {', '.join(unknown)}")
    license_value = data.get("license")
    compatibility = data.get("compatibility")
    if compatibility is not None and (
        not isinstance(compatibility, str) or len(compatibility) > MAX_COMPATIBILITY
    ):
        warnings.append(
            f"{where}: 'compatibility' must be a string of at most {MAX_COMPATIBILITY} "
            "characters; ignored"
        )
        compatibility = None
    metadata: dict[str, str] = {}
    raw_metadata = data.get("metadata")
    if isinstance(raw_metadata, dict):
        metadata = {str(k): str(v) for k, v in raw_metadata.items()}
    elif raw_metadata is not None:
        warnings.append(f"{where}: 'metadata' must be a mapping; ignored")
    allowed = data.get("allowed-tools")
    allowed_tools: list[str] = []
    if isinstance(allowed, str):
        allowed_tools = allowed.split()
    elif isinstance(allowed, list):
        allowed_tools = [str(t) for t in allowed]
    elif allowed is not None:
        warnings.append(f"{where}: 'allowed-tools' must be a string or a list; ignored")
    files, scripts, file_warnings = scan_resources(folder)
    warnings.extend(file_warnings)
    skill = Skill(
        name=name,
        description=str(data["description"]).strip(),
        instructions=parts[1].strip(),
        license=None if license_value is None else str(license_value),
        compatibility=compatibility,
        metadata=metadata,
        allowed_tools=allowed_tools,
        path=folder,
        files=files,
        scripts=scripts,
    )
    return skill, warnings


def scan_resources(folder: Path) -> tuple[list[str], list[str], list[str]]:
    """Every file of a skill folder but SKILL.md, whatever its subfolder is called.

    Hidden entries and caches are left out; links are followed only when they stay in
    the folder.
    """
    root = folder.resolve()
    files: list[str] = []
    scripts: list[str] = []
    warnings: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        here = Path(dirpath)
        kept = []
        for d in sorted(dirnames):
            if d.startswith(".") or d in SKIPPED_NAMES:
                continue
            if (here / d).is_symlink():
                warnings.append(f"{here / d}: linked folder not followed")
                continue
            kept.append(d)
        dirnames[:] = kept
        for filename in sorted(filenames):
            if filename.startswith("."):
                continue
            full = here / filename
            relative = full.relative_to(folder).as_posix()
            if relative == SKILL_FILE:
                continue
            if full.is_symlink() and not full.resolve().is_relative_to(root):
                warnings.append(f"{full}: link leads outside the skill folder; not a resource")
                continue
            files.append(relative)
            if relative.startswith("scripts/") or (
                full.suffix in SCRIPT_SUFFIXES and os.access(full, os.X_OK)
            ):
                scripts.append(relative)
    return sorted(files), sorted(scripts), warnings


def load_skills(directory: str | Path) -> tuple[list[Skill], list[str]]:
    """Skills of a directory: the directory itself if it holds SKILL.md, else each
    subfolder holding one. Malformed skills are skipped with a warning (also logged)."""
    base = Path(directory).expanduser()
    skills: list[Skill] = []
    warnings: list[str] = []
    if not base.is_dir():
        warnings.append(f"{base}: skills directory does not exist")
    elif (base / SKILL_FILE).is_file():
        skill, found = load_skill_folder(base)
        warnings.extend(found)
        if skill is not None:
            skills.append(skill)
    else:
        for child in sorted(base.iterdir()):
            if not child.is_dir() or child.name.startswith("."):
                continue
            if not (child / SKILL_FILE).is_file():
                warnings.append(f"{child}: no {SKILL_FILE}; not a skill")
                continue
            skill, found = load_skill_folder(child)
            warnings.extend(found)
            if skill is not None:
                skills.append(skill)
    for warning in warnings:
        log.warning("%s", warning)
    return skills, warnings


def clean_relative(path: str) -> str | None:
    """A resource path as a clean relative POSIX path, or None if it is absolute or
    climbs out with `..`."""
    if not path or path.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", path):
        return None
    parts = [p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)
