"""Where eval runs are kept: one JSON report per run in a folder, listed newest first."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raf.core.errors import ConfigurationError
from raf.evals.report import EvalReport

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")


def default_runs_dir() -> Path:
    """$RAF_EVALS_DIR, else `evals` in raf's data folder ($RAF_DATA_DIR, else
    $XDG_DATA_HOME/raf, else ~/.local/share/raf)."""
    explicit = os.environ.get("RAF_EVALS_DIR")
    if explicit:
        return Path(explicit).expanduser()
    data = os.environ.get("RAF_DATA_DIR")
    if data:
        return Path(data).expanduser() / "evals"
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "raf" / "evals"


@dataclass(kw_only=True, slots=True)
class RunInfo:
    """A stored run, as a list shows it."""

    id: str
    dataset: str
    target: str
    name: str
    started_at: float
    summary: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "dataset": self.dataset,
            "target": self.target,
            "name": self.name,
            "started_at": self.started_at,
            "summary": self.summary,
        }


class EvalRunStore:
    """Eval reports in a folder, one `<id>.json` each."""

    def __init__(self, folder: str | Path | None = None) -> None:
        self.folder = Path(folder) if folder is not None else default_runs_dir()

    def _path(self, run_id: str) -> Path:
        if not _RUN_ID.match(run_id) or run_id.endswith(".json"):
            raise ConfigurationError(f"not a run id: {run_id!r}")
        return self.folder / f"{run_id}.json"

    def save(self, report: EvalReport) -> str:
        """Store `report`; returns its id (time and dataset, readable and sortable)."""
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(report.started_at or time.time()))
        # no dots: a name such as "scripted:replies.json" must not give an id ending ".json"
        slug = re.sub(r"[^A-Za-z0-9_-]+", "-", f"{report.dataset}-{report.name}")[:80]
        run_id = f"{stamp}-{slug}".strip("-")
        n = 1
        while self._path(run_id).exists():
            n += 1
            run_id = f"{stamp}-{slug}-{n}"
        report.write_json(self._path(run_id))
        return run_id

    def load(self, run_id: str) -> EvalReport:
        path = self._path(run_id)
        if not path.exists():
            raise ConfigurationError(f"no eval run {run_id!r} in {self.folder}")
        return EvalReport.read_json(path)

    def list(self) -> list[RunInfo]:
        """Every readable run, newest first (a file that is not a report is skipped)."""
        found: list[RunInfo] = []
        if not self.folder.is_dir():
            return found
        for path in self.folder.glob("*.json"):
            try:
                report = EvalReport.read_json(path)
            except ConfigurationError:
                continue
            found.append(
                RunInfo(
                    id=path.stem,
                    dataset=report.dataset,
                    target=report.target,
                    name=report.name,
                    started_at=report.started_at,
                    summary=report.summary(),
                )
            )
        found.sort(key=lambda r: (r.started_at, r.id), reverse=True)
        return found
