"""Workflows served like agents by the real `raf serve` program: raf and MAF workflow
documents and Python workflows beside agents, many runs of one workflow at once, and a
question answered through three worker processes at the same moment going on exactly
once, with checkpoints in the store the workers share (SQLite and PostgreSQL).

`RAF_SERVED_WORKFLOW_TRIALS` sets how many question trials each store gets (5 by default;
30 for the full check).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.cli.helpers import raf, raf_env
from tests.serve.test_fleet import at_once, fresh_database
from tests.servers import Server

pytestmark = pytest.mark.slow

TRIALS = int(os.environ.get("RAF_SERVED_WORKFLOW_TRIALS", "5"))
DATA = Path(__file__).resolve().parents[1] / "data" / "workflows"
REFUSALS = {"session_busy", "approval_not_pending", "approval_refused"}
"""How a losing answer is told: another worker holds the session, or the question was
answered by then."""

SIGNUP = """\
kind: workflow
name: signup
trigger:
  kind: OnConversationStart
  id: signup_flow
  actions:
    - kind: Question
      id: ask_name
      question:
        text: What is your name?
      variable: Local.name
    - kind: InvokeFunctionTool
      id: note
      functionName: note
      arguments:
        name: =Local.name
      output:
        result: Local.noted
    - kind: SendActivity
      id: greet
      activity: =Concat("Welcome, ", Local.name, "!")
"""

PAIR = """\
kind: workflow
name: pair
trigger:
  kind: OnConversationStart
  id: pair_flow
  actions:
    - kind: InvokeFunctionTool
      id: wait
      functionName: gate
      arguments:
        tag: =System.LastMessage.Text
      output:
        result: Local.met
    - kind: SendActivity
      id: told
      activity: =Local.met
"""

MARKS = '''\
"""Function tools the served documents name; each mark is on disk before it returns."""

import asyncio
import os
from pathlib import Path

FOLDER = Path(os.environ["MARKS_FOLDER"])


def mark(name: str, line: str) -> None:
    with (FOLDER / name).open("a", encoding="utf-8") as handle:
        handle.write(line + "\\n")
        handle.flush()
        os.fsync(handle.fileno())


def note(name: str) -> str:
    """Note a name (each time this runs is counted)."""
    mark("noted.txt", f"{os.getpid()} {name}")
    return "noted"


async def gate(tag: str) -> str:
    """Wait (up to 20 s) until two runs tagged `tag` are inside the workflow at once."""
    mark("gate.txt", tag)
    for _ in range(400):
        if (FOLDER / "gate.txt").read_text(encoding="utf-8").split().count(tag) >= 2:
            return "met"
        await asyncio.sleep(0.05)
    return "alone"
'''

PYTHON_FLOW = """\
from raf.workflow import Executor, WorkflowBuilder, WorkflowContext, handler


class Shout(Executor):
    @handler
    async def shout(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.yield_output(text.upper() + "!")


shouter = WorkflowBuilder("shouter", start=Shout("shout")).build()
"""


@dataclass
class Workers:
    """`raf serve` processes on one store, each on a port of its own."""

    folder: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)

    def start(self, *args: str) -> None:
        index = len(self.processes)
        log = self.folder / f"worker-{index}.log"
        env = {**raf_env(self.folder), "MARKS_FOLDER": str(self.folder)}
        with log.open("wb") as handle:
            process = subprocess.Popen(
                [sys.executable, "-m", "raf.cli", "serve", *args, "--port", "0"],
                cwd=self.folder,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=handle,
            )
        self.processes.append(process)
        deadline = time.monotonic() + 60
        while True:
            found = re.search(r" on (http://\S+) \(auth", log.read_text(encoding="utf-8"))
            if found:
                self.urls.append(found.group(1))
                return
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"worker {index} did not start:\n{log.read_text()}")
            time.sleep(0.05)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)

    def marks(self, name: str, text: str) -> list[str]:
        path = self.folder / name
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return [line for line in lines if line.split(" ", 1)[-1] == text]


def documents(folder: Path) -> Path:
    """A folder of the served documents, and the tools module beside it."""
    flows = folder / "flows"
    flows.mkdir()
    (flows / "signup.yaml").write_text(SIGNUP, encoding="utf-8")
    (flows / "pair.yaml").write_text(PAIR, encoding="utf-8")
    (flows / "greeter.yaml").write_text("name: greeter\ninstructions: Greet.\n")
    (folder / "marks.py").write_text(MARKS, encoding="utf-8")
    return flows


def start_workers(folder: Path, sessions: str, count: int) -> Workers:
    flows = documents(folder)
    workers = Workers(folder=folder)
    args = [str(flows), "--sessions", sessions, "--tools", "marks:note"]
    args += ["--tools", "marks:gate", "--model", "scripted:" + str(script(folder))]
    args += ["--loopback-rate-limit", "0"]  # the trials send many requests from one address
    try:
        for _ in range(count):
            workers.start(*args)
    except BaseException:
        workers.stop()
        raise
    return workers


def script(folder: Path) -> Path:
    path = folder / "script.json"
    path.write_text('["Hello"]', encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def sqlite_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    folder = tmp_path_factory.mktemp("served-sqlite")
    workers = start_workers(folder, str(folder / "shared.sqlite"), 3)
    yield workers
    workers.stop()


@pytest.fixture(scope="module")
def postgres_workers(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: Server
) -> Iterator[Workers]:
    folder = tmp_path_factory.mktemp("served-postgres")
    workers = start_workers(folder, fresh_database(postgres_server, "served_flows"), 3)
    yield workers
    workers.stop()


def asked(url: str) -> tuple[str, str]:
    """Start a signup run that pauses on its question; its session id and request id."""
    got = httpx.post(f"{url}/agents/signup/runs", json={"messages": "hi"}, timeout=60)
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["finish_reason"] == "awaiting_approval", body
    (pending,) = body["pending_approvals"]
    assert pending["arguments"]["data"] == "What is your name?"
    return body["session_id"], pending["call_id"]


def question_trials(workers: Workers, label: str) -> None:
    for trial in range(TRIALS):
        name = f"{label}-{trial}"
        session_id, request_id = asked(workers.urls[trial % 3])
        path = f"/agents/signup/sessions/{session_id}/approvals"
        body = {"responses": [{"call_id": request_id, "approved": True, "reason": name}]}
        answers = at_once([(url, path, body) for url in workers.urls])
        statuses = sorted(a.status_code for a in answers)
        assert statuses == [200, 409, 409], [a.text for a in answers]
        (won,) = [a for a in answers if a.status_code == 200]
        assert won.json()["text"] == f"Welcome, {name}!"
        for lost in (a for a in answers if a.status_code == 409):
            assert lost.json()["error"]["code"] in REFUSALS, lost.text
        assert len(workers.marks("noted.txt", name)) == 1, f"trial {trial}: the node ran again"
        for url in workers.urls:  # every worker reads the run, answered and done
            seen = httpx.get(f"{url}/agents/signup/sessions/{session_id}", timeout=60)
            assert seen.status_code == 200, seen.text
            record = seen.json()
            assert record["approvals"] == [] and record["running"] is False
            assert record["messages"][-1]["contents"][0]["text"] == f"Welcome, {name}!"


def two_runs_at_once(workers: Workers, tag: str) -> None:
    """Two runs of one workflow inside it at the same moment, on one worker and on two."""
    for label, urls in (("one", [workers.urls[0]] * 2), ("two", workers.urls[:2])):
        text = f"{tag}-{label}"
        answers = at_once([(url, "/agents/pair/runs", {"messages": text}) for url in urls])
        assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
        assert [a.json()["text"] for a in answers] == ["met", "met"]
        assert len({a.json()["session_id"] for a in answers}) == 2


def test_a_question_answered_through_three_sqlite_workers_goes_on_once(
    sqlite_workers: Workers,
) -> None:
    question_trials(sqlite_workers, "sqlite")


def test_a_question_answered_through_three_postgres_workers_goes_on_once(
    postgres_workers: Workers,
) -> None:
    question_trials(postgres_workers, "postgres")


def test_two_runs_of_one_workflow_at_once_both_succeed(sqlite_workers: Workers) -> None:
    two_runs_at_once(sqlite_workers, "sqlite")


def test_two_runs_of_one_workflow_at_once_both_succeed_on_postgres(
    postgres_workers: Workers,
) -> None:
    two_runs_at_once(postgres_workers, "postgres")


def test_workflows_are_listed_beside_agents_and_bad_answers_are_clear(
    sqlite_workers: Workers,
) -> None:
    url = sqlite_workers.urls[1]
    listed = httpx.get(f"{url}/agents", timeout=60).json()["agents"]
    assert [a["name"] for a in listed] == ["greeter", "pair", "signup"]
    session_id, request_id = asked(url)
    wrong = httpx.post(
        f"{url}/agents/signup/sessions/{session_id}/approvals",
        json={"responses": [{"call_id": "req_nope", "approved": True, "reason": "x"}]},
        timeout=60,
    )
    assert wrong.status_code == 409, wrong.text
    assert wrong.json()["error"]["code"] == "approval_not_pending"
    assert wrong.json()["error"]["pending"] == [request_id]
    talk = httpx.post(
        f"{url}/agents/signup/sessions/{session_id}/runs", json={"messages": "hi"}, timeout=60
    )
    assert talk.status_code == 409 and talk.json()["error"]["code"] == "awaiting_approval"
    # the OpenAI surface cannot ask a question: it says so in its own error shape
    chat = httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": "signup", "messages": [{"role": "user", "content": "hi"}]},
        timeout=60,
    )
    assert chat.status_code == 409, chat.text
    error = chat.json()["error"]  # OpenAI's shape: no code of raf's own, the reason said
    assert error["code"] is None and "needs a person's approval" in error["message"], error


def test_raf_serve_takes_a_maf_document_and_a_python_workflow(tmp_path: Path) -> None:
    (tmp_path / "count.yaml").write_text(
        (DATA / "maf_trigger.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "shout.py").write_text(PYTHON_FLOW, encoding="utf-8")
    workers = Workers(folder=tmp_path)
    try:
        workers.start("count.yaml", "shout.py", "--sessions", str(tmp_path / "s.sqlite"))
        (url,) = workers.urls
        counted = httpx.post(
            f"{url}/agents/count_to_three/runs", json={"messages": "go"}, timeout=60
        )
        assert counted.status_code == 200, counted.text
        said = [c["text"] for m in counted.json()["messages"] for c in m["contents"]]
        assert said == ["count 1", "count 2", "count 3", "done"]
        shouted = httpx.post(
            f"{url}/v1/chat/completions",
            json={"model": "shouter", "messages": [{"role": "user", "content": "hey"}]},
            timeout=60,
        )
        assert shouted.status_code == 200, shouted.text
        assert shouted.json()["choices"][0]["message"]["content"] == "HEY!"
        two = at_once(
            [(url, "/agents/shouter/runs", {"messages": word}) for word in ("a", "b")]
        )  # a workflow object of the user's code serves its runs in turn: both go through
        assert sorted(a.json()["text"] for a in two) == ["A!", "B!"]
    finally:
        workers.stop()


def test_raf_serve_refuses_bad_workflow_input_clearly(tmp_path: Path) -> None:
    (tmp_path / "signup.yaml").write_text(SIGNUP, encoding="utf-8")
    redis = raf(tmp_path, "serve", "signup.yaml", "--checkpoints", "redis://127.0.0.1:1")
    assert redis.returncode == 1
    assert "workflow checkpoints cannot be kept in Redis" in redis.stderr
    unknown = raf(tmp_path, "serve", "signup.yaml", "--checkpoints", "mongo://x")
    assert unknown.returncode == 1 and "unknown checkpoint store mongo://" in unknown.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text(SIGNUP.replace("kind: SendActivity", "kind: SendActivty"))
    bad = raf(tmp_path, "serve", "broken.yaml")
    assert bad.returncode == 1
    assert "broken.yaml:19:13" in bad.stderr and "did you mean 'SendActivity'?" in bad.stderr
    unbound = raf(tmp_path, "serve", "signup.yaml")  # its function tool bound by nothing
    assert unbound.returncode == 1
    assert "signup.yaml:14:21" in unbound.stderr and "no function tool 'note'" in unbound.stderr
    (tmp_path / "count.yaml").write_text((DATA / "maf_trigger.yaml").read_text("utf-8"))
    (tmp_path / "agent.yaml").write_text("name: count_to_three\ninstructions: Hi.\n")
    twice = raf(tmp_path, "serve", "agent.yaml", "count.yaml")
    assert twice.returncode == 1
    assert "named 'count_to_three'; names must differ" in twice.stderr
