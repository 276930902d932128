"""Datasets kept as files in one folder, each named by a plain name: listed, read, and
given new cases one at a time without losing what the file already holds (the web UI
saves recorded runs into them)."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from raf.core.errors import ConfigurationError, MissingExtraError
from raf.core.private_files import atomic_write_text, open_private, private_dir
from raf.evals.case import Case, Evaluator
from raf.evals.dataset import Dataset, case_to_dict
from raf.evals.store import default_runs_dir

SUFFIXES = (".yaml", ".yml", ".json")
"""The files of the folder that are datasets; a new dataset is written as YAML."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$")
_CASE_NAME_LIMIT = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def default_datasets_dir() -> Path:
    """$RAF_EVAL_DATASETS_DIR, else `datasets` in the eval runs folder."""
    explicit = os.environ.get("RAF_EVAL_DATASETS_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return default_runs_dir() / "datasets"


class BadNameError(ConfigurationError):
    """A dataset or case name that cannot be used; `what` says which."""

    def __init__(self, what: str, message: str) -> None:
        self.what = what
        super().__init__(message)


class UnknownDatasetError(ConfigurationError):
    """No dataset of that name is in the folder."""


class CaseExistsError(ConfigurationError):
    """The dataset has a case of that name already (a name is never overwritten)."""

    def __init__(self, dataset: str, case: str, file: Path) -> None:
        self.dataset = dataset
        self.case = case
        super().__init__(
            f"dataset {dataset!r} already has a case named {case!r} ({file}); choose another name"
        )


@dataclass(kw_only=True, slots=True)
class DatasetInfo:
    """A dataset of the folder, as a list shows it."""

    name: str
    file: Path
    cases: int = 0
    description: str = ""
    error: str | None = None
    """Why the file cannot be read as a dataset, when it cannot."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "file": str(self.file),
            "cases": self.cases,
            "description": self.description,
            "error": self.error,
        }


@dataclass(kw_only=True, slots=True)
class AddedCase:
    """A case as `DatasetFolder.add_case` wrote it, and its dataset after."""

    case: Case
    dataset: DatasetInfo


def check_case_name(name: str) -> str:
    """`name` without surrounding space; a `BadNameError` when nothing is left, it is
    longer than 200 characters, or it holds a control character (a line break, say)."""
    cleaned = name.strip()
    if not cleaned or len(cleaned) > _CASE_NAME_LIMIT or _CONTROL.search(cleaned):
        raise BadNameError(
            "case",
            f"case name {name!r} is not valid: give 1-{_CASE_NAME_LIMIT} characters on one line",
        )
    return cleaned


class DatasetFolder:
    """The datasets in a folder: `<name>.yaml`, `<name>.yml` or `<name>.json` each."""

    def __init__(self, folder: str | Path | None = None) -> None:
        self.folder = Path(folder) if folder is not None else default_datasets_dir()

    def path(self, name: str) -> Path:
        """The file of dataset `name` (the one there, else a new `<name>.yaml`); a
        `BadNameError` for a name that is not a plain file name of the folder."""
        if not _NAME.match(name):
            raise BadNameError(
                "dataset",
                f"dataset name {name!r} is not valid: use 1-80 letters, digits, '_' or '-', "
                f"starting with a letter or digit (a dataset is a file in {self.folder})",
            )
        for suffix in SUFFIXES:
            found = self.folder / f"{name}{suffix}"
            if found.is_file():
                return found
        return self.folder / f"{name}.yaml"

    def list(self) -> list[DatasetInfo]:
        """Every dataset of the folder by name; one that does not read says why."""
        found: dict[str, DatasetInfo] = {}
        if not self.folder.is_dir():
            return []
        for file in sorted(self.folder.iterdir()):
            if file.suffix not in SUFFIXES or not _NAME.match(file.stem) or file.stem in found:
                continue
            if self.path(file.stem) != file or not file.is_file():
                continue
            info = DatasetInfo(name=file.stem, file=file)
            try:
                dataset = Dataset.from_file(file)
            except ConfigurationError as exc:
                info.error = str(exc)
            else:
                info.cases = len(dataset.cases)
                info.description = dataset.description
            found[file.stem] = info
        return list(found.values())

    def load(self, name: str) -> Dataset:
        """Dataset `name`; an `UnknownDatasetError` when the folder has none."""
        path = self.path(name)
        if not path.is_file():
            raise UnknownDatasetError(f"no dataset named {name!r} in {self.folder}")
        return Dataset.from_file(path)

    def add_case(
        self, name: str, case: Case, *, answer_check: Evaluator | None = None
    ) -> AddedCase:
        """Add `case` to dataset `name` (made when missing) and write the file whole in
        one step: a case name already there is a `CaseExistsError`, and a file that does
        not read as a dataset is left untouched (its error raised). `answer_check` is
        given to a case that has an expected output when neither the dataset nor the case
        has an evaluator of that name yet. Other processes adding at once take turns."""
        case = replace(case, name=check_case_name(case.name), evaluators=list(case.evaluators))
        self.path(name)  # a bad name is refused before the folder is made
        with _locked(self.folder):
            path = self.path(name)
            existing = Dataset.from_file(path) if path.is_file() else None
            if existing is not None and any(c.name == case.name for c in existing.cases):
                raise CaseExistsError(name, case.name, path)
            if answer_check is not None and case.expected_output is not None:
                named = {e.name for e in (existing.evaluators if existing else [])}
                named |= {e.name for e in case.evaluators}
                if answer_check.name not in named:
                    case.evaluators.append(answer_check)
            entry = case_to_dict(case)
            if existing is None:
                text = _dump({"name": name, "cases": [entry]}, path)
            else:
                text = _appended(path.read_text(encoding="utf-8"), entry, path)
            written = Dataset.from_text(text, fmt=_format(path), file=str(path))
            # keeps its permissions; a new one is private (cases saved from a conversation
            # hold its text; a dataset a project shares is made readable by who shares it)
            atomic_write_text(path, text, keep_mode=True)
        info = DatasetInfo(
            name=name, file=path, cases=len(written.cases), description=written.description
        )
        return AddedCase(case=case, dataset=info)


def _format(path: Path) -> str:
    return "json" if path.suffix == ".json" else "yaml"


def _yaml() -> Any:
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - yaml is in the evals extra
        raise MissingExtraError("YAML datasets", "evals", "pyyaml") from exc
    return yaml


def _dump(data: Any, path: Path) -> str:
    if _format(path) == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    text: str = _yaml().safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return text


def _appended(text: str, entry: dict[str, Any], path: Path) -> str:
    """The file's text with `entry` added to its cases. A YAML file whose case list
    ends the file gets the entry appended as text, so its comments and layout stay; any
    other file is written again from its data (every key and case kept)."""
    if _format(path) == "json":
        data = json.loads(text)
        data["cases"].append(entry)
        return _dump(data, path)
    yaml = _yaml()
    data = yaml.safe_load(text)
    wanted = copy.deepcopy(data)
    wanted["cases"].append(entry)
    item = _dump([entry], path)
    base = text if text.endswith("\n") else text + "\n"
    for indent in (0, 2, 4):
        pad = " " * indent
        candidate = base + "".join(pad + line for line in item.splitlines(keepends=True))
        try:
            if yaml.safe_load(candidate) == wanted:
                return candidate
        except yaml.YAMLError:
            continue
    return _dump(wanted, path)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on the folder across processes (none where fcntl is missing)."""
    private_dir(folder)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open_private(folder / ".lock") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
