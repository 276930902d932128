"""The Evals page's API: the eval runs kept in the runs folder, one run, two compared."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from raf.core.errors import ConfigurationError
from raf.evals.compare import compare
from raf.evals.store import EvalRunStore
from raf.serve.errors import not_found


def evals_router(runs: EvalRunStore | None = None) -> APIRouter:
    """`/ui/api/evals/…` over `runs` (default: the folder `raf eval` saves runs in,
    `$RAF_EVALS_DIR` else `evals` in raf's data folder). The runs are local files shared
    by everyone who may use the UI."""
    router = APIRouter()

    def store() -> EvalRunStore:
        return runs if runs is not None else EvalRunStore()

    def load(run_id: str) -> Any:
        try:
            return store().load(run_id)
        except ConfigurationError:
            raise not_found("eval_run", run_id) from None

    @router.get("/ui/api/evals/runs")
    async def listed() -> dict[str, Any]:
        found = store()
        return {"folder": str(found.folder), "runs": [r.to_dict() for r in found.list()]}

    @router.get("/ui/api/evals/runs/{run_id}")
    async def one(run_id: str) -> dict[str, Any]:
        report = load(run_id)
        data: dict[str, Any] = report.to_dict()
        data["id"] = run_id
        return data

    @router.get("/ui/api/evals/compare/{before}/{after}")
    async def compared(before: str, after: str) -> dict[str, Any]:
        data: dict[str, Any] = compare(load(before), load(after)).to_dict()
        data.update(before_id=before, after_id=after)
        return data

    return router
