"""`raf serve` against a bare FastAPI app under the same load (`hey`): requests/s, p50 and
p99 of raf as a % of the bare app, for `/v1/chat/completions` and the native
`POST /agents/{name}/runs`, each as JSON and as a server-sent-event stream, and raf's
memory (RSS) before and after many requests.

raf is the real program: raf's command line (`raf serve DOC --sessions memory
--rate-limit 0`, one process) run by `benchmarks/peers/raf_serve.py`, which only puts
every agent on a model that answers "pong" at once and keeps nothing (the scripted test
model keeps every request it gets, which would show as raf's memory). The reference is
`benchmarks/peers/bare_serve.py`: plain FastAPI on uvicorn (one process, httptools, log
level warning, raf's keep-alive and backlog) answering a fixed chat completion, or a
fixed four-event chat-completion stream, with no raf code. The bare app runs twice: on
uvicorn's default loop (uvloop when installed: what a plain FastAPI user gets, and the
reference the percentages use) and on asyncio's own loop (the one `raf serve` runs on).

Fairness on a small machine: every server is pinned to CPU 0 and `hey` to CPU 1
(`taskset`), so the load generator never takes the server's core; `--no-pin` turns that
off. Rounds are interleaved (bare, bare, raf, then raf, bare, bare, …), each case warmed
up first, and the table gives each figure's median over the rounds. Besides what `hey`
measures, each server's CPU time per request (user + system, from /proc) is shown, and
raf's share of the bare app's throughput that it gives ("by CPU": the bare app's CPU
time per request over raf's, what requests/s would show on a quiet machine, as each
server is one process on one core): it moves much less than requests/s when other
processes share the machine.

The memory check sends `--memory-requests` requests to `/v1` (each a fresh session that
is not stored: RSS should stay flat) and then to the native endpoint (each stores a new
session in memory, as `--sessions memory` must: that growth is the sessions').

`--profile CASE` instead runs raf alone under load with a stack sampler on its CPU time
(see `raf_serve.py`) and prints where that time goes, by component.

Needs `hey` (Debian: `apt-get install -y hey`).

    python benchmarks/serve_load.py [--requests 3000] [--concurrency 50] [--rounds 3]
        [--memory-requests 10000] [--cases v1,native,v1-sse,native-sse] [--no-pin]
    python benchmarks/serve_load.py --profile v1 [--requests 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCUMENT = "name: bench\ndescription: Answers pong.\ninstructions: Answer pong.\n"
WARMUP = 500
"""Requests each server gets on each case before the rounds (imports, caches, pools)."""

V1: dict[str, object] = {"model": "bench", "messages": [{"role": "user", "content": "ping"}]}
NATIVE: dict[str, object] = {"messages": "ping"}


@dataclass(frozen=True, slots=True)
class Case:
    """One kind of request: raf's path and body, and the bare app's counterpart."""

    key: str
    label: str
    raf_path: str
    body: dict[str, object]
    bare_path: str


CASES = {
    case.key: case
    for case in (
        Case("v1", "/v1 chat, JSON", "/v1/chat/completions", V1, "/json"),
        Case("native", "native run, JSON", "/agents/bench/runs", NATIVE, "/json"),
        Case("v1-sse", "/v1 chat, SSE", "/v1/chat/completions", {**V1, "stream": True}, "/sse"),
        Case(
            "native-sse",
            "native run, SSE",
            "/agents/bench/runs",
            {**NATIVE, "stream": True},
            "/sse",
        ),
    )
}

COMPONENTS: list[tuple[str, list[str]]] = [
    (
        "response building (to_dict, JSON)",
        [
            r"^(render|init_headers) \(starlette/responses",
            r"^JSONResponse|^run_body|^_chunks|^json_line",
            r"^completion \(raf/serve/openai/chat|^sse \(raf/serve/native/routes",
            r"^to_dict \(raf/core/responses",
        ],
    ),
    (
        "session store (to_json/from_json)",
        [r"raf/stores/", r"^(to_json|from_json|mark_stored|to_dict|from_dict) \(raf/core/sessions"],
    ),
    ("AgentHost (hosting.py, tenancy.py)", [r"raf/serve/(hosting|tenancy)"]),
    ("the benchmark's model", [r"peers/raf_serve"]),
    ("agent run (raf/agent)", [r"raf/agent/", r"raf/middleware", r"raf/context"]),
    ("body parsing (parse_body, pydantic)", [r"raf/serve/requests", r"pydantic"]),
    ("route handlers (native/, openai/)", [r"raf/serve/(native|openai)/"]),
    ("SecurityMiddleware (security.py, limits.py)", [r"raf/serve/(security|limits)"]),
    ("RunRoutes (app.py)", [r"raf/serve/app"]),
    ("connection guard (connections.py)", [r"raf/serve/connections"]),
    ("starlette/FastAPI", [r"starlette/", r"fastapi/"]),
    ("uvicorn + httptools", [r"uvicorn/", r"httptools"]),
    ("event loop and sockets (asyncio)", [r"asyncio/", r"selectors", r"socket"]),
]
"""Component of a sample: the first rule that matches a frame, from the innermost frame
outwards (so `json.dumps` called by a response's render counts as response building)."""


@dataclass(frozen=True, slots=True)
class Server:
    """A running server: its name in the table, base URL and process."""

    name: str
    url: str
    process: subprocess.Popen[str]

    def path(self, case: Case) -> str:
        return case.bare_path if self.name.startswith("bare") else case.raf_path


@dataclass(frozen=True, slots=True)
class Result:
    """One `hey` run: requests/s, latency percentiles in ms, server CPU µs a request."""

    rate: float
    p50: float
    p99: float
    cpu_us: float


def pinned(cpu: int | None, command: list[str]) -> list[str]:
    """`command` pinned to `cpu` with taskset (unchanged when not pinning)."""
    return command if cpu is None else ["taskset", "-c", str(cpu), *command]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    """Resident memory of process `pid` in MiB (Linux)."""
    status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(found.group(1)) / 1024 if found else float("nan")


def wait_ready(url: str, process: subprocess.Popen[str], timeout: float = 60.0) -> None:
    """Poll `/health` until the server answers (or fail with what it said)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server {url} exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server {url} did not start within {timeout:g} s")


def start_bare(loop: str, cpu: int | None) -> Server:
    port = free_port()
    command = [sys.executable, str(HERE / "peers" / "bare_serve.py"), str(port), loop]
    process = subprocess.Popen(pinned(cpu, command), text=True)
    server = Server(f"bare ({loop})", f"http://127.0.0.1:{port}", process)
    wait_ready(server.url, process)
    return server


def start_raf(folder: Path, cpu: int | None, profile: Path | None = None) -> Server:
    (folder / "bench.yaml").write_text(DOCUMENT, encoding="utf-8")
    env = dict(os.environ, RAF_DATA_DIR=str(folder / "data"))
    env.pop("RAF_SERVE_TOKEN", None)
    if profile is not None:
        env["RAF_BENCH_PROFILE"] = str(profile)
    port = free_port()
    command = [sys.executable, str(HERE / "peers" / "raf_serve.py"), "serve"]
    command += [str(folder / "bench.yaml"), "--model", "pong", "--port", str(port)]
    command += ["--sessions", "memory", "--rate-limit", "0"]
    process = subprocess.Popen(pinned(cpu, command), env=env, text=True)
    server = Server("raf", f"http://127.0.0.1:{port}", process)
    wait_ready(server.url, process)
    return server


def check_answer(server: Server, case: Case) -> None:
    """One request by hand: the answer is a 200 that says pong (else the load is moot)."""
    request = urllib.request.Request(
        server.url + server.path(case),
        data=json.dumps(case.body).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        text = answer.read().decode()
    if answer.status != 200 or "pong" not in text:
        raise RuntimeError(f"{server.name} {case.label}: unexpected answer {text[:300]}")


def hey(server: Server, case: Case, requests: int, clients: int, cpu: int | None) -> Result:
    """Load `server` with `hey`; every answer must be a 200."""
    command = ["hey", "-n", str(requests), "-c", str(clients), "-m", "POST"]
    command += ["-T", "application/json", "-d", json.dumps(case.body)]
    command += [server.url + server.path(case)]
    used = cpu_seconds(server.process.pid)
    done = subprocess.run(pinned(cpu, command), capture_output=True, text=True, check=True)
    used = cpu_seconds(server.process.pid) - used
    out = done.stdout
    statuses = dict(re.findall(r"\[(\d+)\]\s+(\d+) responses", out))
    if set(statuses) != {"200"} or int(statuses["200"]) != requests:
        raise RuntimeError(f"{server.name} {case.label}: not all answers were 200:\n{out}")
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p50 = re.search(r"50%+ in ([\d.]+) secs", out)
    p99 = re.search(r"99%+ in ([\d.]+) secs", out)
    if not (rate and p50 and p99):
        raise RuntimeError(f"cannot read hey's output:\n{out}")
    return Result(
        float(rate.group(1)),
        float(p50.group(1)) * 1000,
        float(p99.group(1)) * 1000,
        used / requests * 1e6,
    )


def median_result(results: list[Result]) -> Result:
    return Result(
        statistics.median(r.rate for r in results),
        statistics.median(r.p50 for r in results),
        statistics.median(r.p99 for r in results),
        statistics.median(r.cpu_us for r in results),
    )


def compare(args: argparse.Namespace, cases: list[Case], pin: bool) -> None:
    server_cpu, load_cpu = (0, 1) if pin else (None, None)
    servers: list[Server] = []
    results: dict[tuple[str, str], list[Result]] = {}
    memory: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            servers.append(start_bare("uvloop", server_cpu))
            servers.append(start_bare("asyncio", server_cpu))
            raf = start_raf(Path(tmp), server_cpu)
            servers.append(raf)
            for case in cases:
                for server in servers:
                    check_answer(server, case)
                    hey(server, case, WARMUP, args.concurrency, load_cpu)
            for round_number in range(args.rounds):
                order = servers if round_number % 2 == 0 else servers[::-1]
                for case in cases:
                    for server in order:
                        result = hey(server, case, args.requests, args.concurrency, load_cpu)
                        results.setdefault((case.key, server.name), []).append(result)
                print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr, flush=True)
            for key in ("v1", "native") if args.memory_requests else ():
                before = rss_mib(raf.process.pid)
                hey(raf, CASES[key], args.memory_requests, args.concurrency, load_cpu)
                memory.append((CASES[key].label, before, rss_mib(raf.process.pid)))
        finally:
            for server in servers:
                server.process.terminate()
            for server in servers:
                server.process.wait(timeout=20)
    where = "servers on CPU 0, hey on CPU 1" if pin else "not pinned"
    print(
        f"hey -n {args.requests} -c {args.concurrency}, {args.rounds} interleaved rounds "
        f"(medians), {where}; latency in ms, server CPU in µs a request"
    )
    print(
        f"{'case':<17} {'server':<14} {'req/s':>6} {'p50':>6} {'p99':>6} {'CPU':>5}   "
        f"{'% of bare: req/s':>16} {'by CPU':>6} {'p99 × bare':>10}"
    )
    names = [server.name for server in servers]
    reference = names[0]
    for case in cases:
        base = median_result(results[(case.key, reference)])
        for index, name in enumerate(names):
            row = median_result(results[(case.key, name)])
            label = case.label if index == 0 else ""
            line = (
                f"{label:<17} {name:<14} {row.rate:>6.0f} {row.p50:>6.1f} {row.p99:>6.1f} "
                f"{row.cpu_us:>5.0f}"
            )
            if name != reference:
                line += (
                    f"   {row.rate / base.rate:>16.0%} {base.cpu_us / row.cpu_us:>6.0%} "
                    f"{row.p99 / base.p99:>10.2f}"
                )
            print(line)
    for label, before, after in memory:
        grown = (after - before) * 1024 * 1024 / args.memory_requests
        print(
            f"raf RSS over {args.memory_requests} {label} requests: {before:.1f} MiB → "
            f"{after:.1f} MiB ({grown:+.0f} bytes a request)"
        )


def profile(args: argparse.Namespace, case: Case, pin: bool) -> None:
    """Where raf's CPU time goes for one kind of request, by component."""
    server_cpu, load_cpu = (0, 1) if pin else (None, None)
    with tempfile.TemporaryDirectory() as tmp:
        samples_file = Path(tmp) / "samples.txt"
        raf = start_raf(Path(tmp), server_cpu, profile=samples_file)
        try:
            check_answer(raf, case)
            hey(raf, case, WARMUP * 4, args.concurrency, load_cpu)
            raf.process.send_signal(signal.SIGUSR1)
            result = hey(raf, case, args.requests, args.concurrency, load_cpu)
            raf.process.send_signal(signal.SIGUSR2)
            deadline = time.monotonic() + 30
            while not samples_file.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)  # let the writer finish
            lines = samples_file.read_text(encoding="utf-8").splitlines()
        finally:
            raf.process.terminate()
            raf.process.wait(timeout=20)
    rules = [(name, re.compile("|".join(patterns))) for name, patterns in COMPONENTS]
    totals: Counter[str] = Counter()
    places: dict[str, Counter[str]] = {}
    for line in lines:
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        component, place = "other", frames[-1]
        for frame in reversed(frames):
            found = next((name for name, rule in rules if rule.search(frame)), None)
            if found is not None:
                component, place = found, frame
                break
        totals[component] += int(count)
        places.setdefault(component, Counter())[re.sub(r":\d+\)", ")", place)] += int(count)
    total = sum(totals.values())
    print(
        f"{case.label}: {args.requests} requests at {result.rate:.0f}/s, raf CPU "
        f"{result.cpu_us:.0f} µs a request (sampler included), {total} samples"
    )
    print(f"{'share':>6} {'µs':>5}  component (then its top places)")
    for component, hits in totals.most_common():
        share = hits / total
        print(f"{share:>6.1%} {share * result.cpu_us:>5.0f}  {component}")
        for place, seen in places[component].most_common(3):
            print(f"{'':>14}{seen / total:>6.1%}  {place[:100]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests per hey run")
    parser.add_argument("--concurrency", type=int, default=50, help="hey's concurrent clients")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument(
        "--memory-requests", type=int, default=10000, help="requests of the memory check (0: skip)"
    )
    parser.add_argument(
        "--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES)
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin servers and hey to CPUs")
    parser.add_argument("--profile", choices=list(CASES), help="profile raf on this case instead")
    args = parser.parse_args()
    if shutil.which("hey") is None:
        sys.exit("this benchmark needs hey: apt-get install -y hey")
    pin = not args.no_pin and shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2
    if args.profile:
        profile(args, CASES[args.profile], pin)
    else:
        compare(args, [CASES[key] for key in args.cases.split(",")], pin)


if __name__ == "__main__":
    main()
