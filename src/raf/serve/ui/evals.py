"""The Evals page's API: the eval runs kept in the runs folder, one run, two compared;
the datasets of the datasets folder, and a turn of a caller's session saved into one as
a case.

A dataset made from a conversation holds that conversation, so it belongs to the token
that saved it, like the session: a caller with a token saves into, and reads from, a
folder of its own (`by-token/<owner tag>/` in the datasets folder) and sees the
project's datasets (the files directly in the folder) beside its own, read-only; a
server without tokens (loopback only) has one caller, who uses the folder itself."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from raf.core.errors import ConfigurationError
from raf.core.sessions import AgentSession
from raf.evals.compare import compare
from raf.evals.dataset import case_to_dict
from raf.evals.evaluators import Contains
from raf.evals.folder import BadNameError, CaseExistsError, DatasetFolder, UnknownDatasetError
from raf.evals.record import case_from_session, turn_starts
from raf.evals.store import EvalRunStore
from raf.serve.errors import ServeError, not_found
from raf.serve.hosting import ANONYMOUS, AgentHost, public_id
from raf.serve.requests import parse_body
from raf.serve.security import owner_of_request
from raf.serve.ui.shown_paths import shown_path


class CaseFromTurn(BaseModel):
    """Body of saving a session's turn as an eval case."""

    model_config = ConfigDict(extra="forbid")
    dataset: str
    """The dataset to add it to: a name in the datasets folder (made when missing)."""
    name: str
    """The case's name, unique in the dataset."""
    turn: int | None = Field(default=None, ge=0)
    """Which turn of the session (0 the first); the last when not given."""


OWNED_DATASETS = "by-token"
"""The folder, inside the datasets folder, of the datasets callers with tokens saved."""


def owned_folder(base: Path, owner: str) -> Path:
    """Where the caller `owner` keeps the datasets it saves (`base` itself without tokens)."""
    if owner == ANONYMOUS:
        return base
    return base / OWNED_DATASETS / owner[:16]


def _unreadable(exc: ConfigurationError) -> ServeError:
    return ServeError(
        422, "dataset_unreadable", f"the dataset file does not read, so it was left as it is: {exc}"
    )


def _turns(session: AgentSession) -> list[dict[str, Any]]:
    """Each turn of a session as the save form offers it: its question, its answer and
    the tools it called (read by the same converter that makes the case)."""
    found = []
    starts = turn_starts(session.messages)
    for index, start in enumerate(starts):
        case = case_from_session(session, name=f"turn {index}", turn=index)
        found.append(
            {
                "turn": index,
                "input": session.messages[start].text,
                "answer": case.expected_output,
                "tool_calls": [c.name for c in case.expected_tool_calls],
            }
        )
    return found


@dataclass(frozen=True)
class EvalsPlace:
    """Where the Evals page's endpoints read and write: the eval runs (`runs`, default:
    the folder `raf eval` saves runs in, `$RAF_EVALS_DIR` else `evals` in raf's data
    folder), the datasets folder (`datasets`, default `$RAF_EVAL_DATASETS_DIR`, else
    `datasets` in the runs folder) and, when sessions' turns may be saved as cases, the
    `host` that keeps them. A router's dependency puts it in each request's state."""

    host: AgentHost | None = None
    runs: EvalRunStore | None = None
    datasets: str | Path | None = None

    def attach(self, request: Request) -> None:
        """Make this the place of `request` (the router's dependency)."""
        request.state.raf_evals = self

    def store(self) -> EvalRunStore:
        """The eval runs."""
        return self.runs if self.runs is not None else EvalRunStore()

    def shared(self) -> DatasetFolder:
        """The project's datasets: the files directly in the datasets folder."""
        return DatasetFolder(self.datasets)

    def shown(self, path: Path) -> str:
        """A path relative to the data folder (the runs folder's parent), the datasets
        folder's parent or the server's working folder: the API never tells a caller the
        server's absolute layout."""
        return shown_path(path, self.store().folder.parent, self.shared().folder.parent, Path.cwd())

    def folder(self, owner: str) -> DatasetFolder:
        """The datasets the caller `owner` saves into (the project's without tokens)."""
        return DatasetFolder(owned_folder(self.shared().folder, owner))

    def readable(self, owner: str) -> list[DatasetFolder]:
        """Where the caller's datasets are read from, its own first."""
        own = self.folder(owner)
        project = self.shared()
        return [own] if own.folder == project.folder else [own, project]

    def load(self, run_id: str) -> Any:
        """One stored eval run, or a 404 naming it."""
        try:
            return self.store().load(run_id)
        except ConfigurationError:
            raise not_found("eval_run", run_id) from None


def place_of(request: Request) -> EvalsPlace:
    """The place the router put in this request's state."""
    return cast(EvalsPlace, request.state.raf_evals)


def caller_of(request: Request) -> str:
    """The caller, as the security middleware named it."""
    return owner_of_request(request.scope)


def host_of(request: Request) -> AgentHost:
    """The host of the sessions a turn is saved from (mounted only with one)."""
    host = place_of(request).host
    assert host is not None, "the session routes are mounted only with a host"
    return host


async def eval_runs(request: Request) -> dict[str, Any]:
    """The eval runs stored."""
    place = place_of(request)
    found = place.store()
    return {"folder": place.shown(found.folder), "runs": [r.to_dict() for r in found.list()]}


async def eval_run(run_id: str, request: Request) -> dict[str, Any]:
    """One eval run's report."""
    report = place_of(request).load(run_id)
    data: dict[str, Any] = report.to_dict()
    data["id"] = run_id
    return data


async def compared_runs(before: str, after: str, request: Request) -> dict[str, Any]:
    """Two eval runs compared, regressions first."""
    place = place_of(request)
    data: dict[str, Any] = compare(place.load(before), place.load(after)).to_dict()
    data.update(before_id=before, after_id=after)
    return data


async def dataset_list(request: Request) -> dict[str, Any]:
    """The caller's eval datasets, then the project's (`shared`) it does not shadow."""
    place = place_of(request)
    folders = place.readable(caller_of(request))
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for where in folders:
        for info in await asyncio.to_thread(where.list):
            if info.name not in seen:
                seen.add(info.name)
                entry = {**info.to_dict(), "shared": where is not folders[0]}
                out.append({**entry, "file": place.shown(info.file)})
    return {"folder": place.shown(folders[0].folder), "datasets": out}


async def dataset(name: str, request: Request) -> dict[str, Any]:
    """One eval dataset, case by case (the caller's own before the project's)."""
    place = place_of(request)
    for where in place.readable(caller_of(request)):
        try:
            path = where.path(name)
            loaded = await asyncio.to_thread(where.load, name)
        except BadNameError:
            raise not_found("dataset", name) from None
        except UnknownDatasetError:
            continue
        except ConfigurationError as exc:
            raise _unreadable(exc) from None
        break
    else:
        raise not_found("dataset", name)
    return {
        "name": name,
        "file": place.shown(path),
        "description": loaded.description,
        "evaluators": [e.to_spec() for e in loaded.evaluators],
        "cases": [case_to_dict(c) for c in loaded.cases],
    }


async def session_turns(agent: str, session_id: str, request: Request) -> dict[str, Any]:
    """A session's turns, to pick one to save as an eval case."""
    session = await host_of(request).session(agent, session_id, caller_of(request))
    return {"session_id": public_id(session), "turns": _turns(session)}


async def save_case(agent: str, session_id: str, request: Request) -> dict[str, Any]:
    """Save a turn of a session as a case of an eval dataset file."""
    place = place_of(request)
    body = parse_body(await request.body(), CaseFromTurn)
    session = await host_of(request).session(agent, session_id, caller_of(request))
    count = len(turn_starts(session.messages))
    if body.turn is not None and body.turn >= count:
        raise ServeError(
            422,
            "invalid_turn",
            f"turn {body.turn}: session {session_id!r} has {count} turn(s), numbered from 0",
        )
    if count == 0:
        raise ServeError(
            422, "invalid_turn", f"session {session_id!r} has no turn yet: send a message"
        )
    case = case_from_session(session, name=body.name, turn=body.turn)
    try:
        saved = await asyncio.to_thread(
            place.folder(caller_of(request)).add_case, body.dataset, case, answer_check=Contains()
        )
    except BadNameError as exc:
        raise ServeError(400, f"invalid_{exc.what}_name", str(exc)) from None
    except CaseExistsError as exc:
        raise ServeError(409, "case_exists", str(exc), dataset=exc.dataset, case=exc.case) from None
    except ConfigurationError as exc:
        raise _unreadable(exc) from None
    return {
        "dataset": {**saved.dataset.to_dict(), "file": place.shown(saved.dataset.file)},
        "turn": body.turn if body.turn is not None else count - 1,
        "case": case_to_dict(saved.case),
    }


def evals_router(
    host: AgentHost | None = None,
    runs: EvalRunStore | None = None,
    datasets: str | Path | None = None,
) -> APIRouter:
    """`/ui/api/evals/…` over the runs and the datasets of `EvalsPlace(host, runs,
    datasets)`; with a `host`, its sessions' turns can be saved as cases. Runs and
    datasets are local files shared by everyone who may use the UI; a session only by the
    token that made it."""
    place = EvalsPlace(host, runs, datasets)
    router = APIRouter(dependencies=[Depends(place.attach)])
    router.add_api_route("/ui/api/evals/runs", eval_runs, methods=["GET"])
    router.add_api_route("/ui/api/evals/runs/{run_id}", eval_run, methods=["GET"])
    router.add_api_route("/ui/api/evals/compare/{before}/{after}", compared_runs, methods=["GET"])
    router.add_api_route("/ui/api/evals/datasets", dataset_list, methods=["GET"])
    router.add_api_route("/ui/api/evals/datasets/{name}", dataset, methods=["GET"])
    if host is not None:
        session = "/ui/api/agents/{agent}/sessions/{session_id}"
        router.add_api_route(f"{session}/turns", session_turns, methods=["GET"])
        router.add_api_route(f"{session}/eval-cases", save_case, methods=["POST"], status_code=201)
    return router
