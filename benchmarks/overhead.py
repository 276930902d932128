"""raf's overhead against a plain hand-written loop, beside its peers, in one table.

The scenario and the floor are in `overhead_scenario.py`: three tools, three model turns
with one parallel pair of calls, a scripted model that costs nothing, and a floor written
over plain dicts and functions with no framework type. raf is measured in this process;
each peer (Microsoft Agent Framework, pydantic-ai, OpenAI Agents SDK, LangGraph) runs the
same scenario with its own zero-cost scripted model in its own virtualenv, against the
same floor measured in that process, so every ratio compares like with like.

    python benchmarks/overhead.py --setup      # once: a virtualenv per peer (needs PyPI)
    python benchmarks/overhead.py              # the table: raf, then every installed peer

Also measured for raf, each in a fresh process or a fresh session: cold start (import +
build + first run), bytes retained per session message, and the cost of a run as the
history grows. `--only raf` skips the peers; `--batch-ms` and `--batches` size the
timing; `--cpu` times in CPU time per process instead of wall time (a loaded machine's
other work moves it less).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks import overhead_scenario as scenario  # noqa: E402

VENVS = HERE / ".venvs"
PEERS: dict[str, tuple[str, list[str]]] = {
    # distribution (and virtualenv) name: (runner module in peers/, what pip installs)
    "agent-framework-core": ("agent_framework_peer", ["agent-framework-core"]),
    "pydantic-ai-slim": ("pydantic_ai_peer", ["pydantic-ai-slim"]),
    "openai-agents": ("openai_agents_peer", ["openai-agents"]),
    "langgraph": ("langgraph_peer", ["langgraph", "langchain-core"]),
}
CASES = ("sync tools", "async tools", "stream")
TARGETS = {"sync tools": 40.0, "async tools": 20.0, "stream": 20.0}
"""The most raf may cost, as a multiple of the floor, in each column."""

COLD_START = """
import time
started, cpu_started = time.perf_counter(), time.process_time()
import asyncio
from raf import AgentBuilder, ChatMessage, ChatResponse, FinishReason, FunctionCallContent, Role

def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

def upper(text: str) -> str:
    \"\"\"Upper-case a text.\"\"\"
    return text.upper()

def lookup(key: str) -> str:
    \"\"\"Look a key up.\"\"\"
    return {"k": "value"}.get(key, "missing")

class Model:
    def __init__(self):
        self.turn = 0
    async def get_response(self, messages, options):
        self.turn += 1
        if self.turn == 1:
            calls = [FunctionCallContent(call_id="c1", name="add", arguments={"a": 2, "b": 3})]
        elif self.turn == 2:
            calls = [FunctionCallContent(call_id="c2", name="upper", arguments={"text": "x"}),
                     FunctionCallContent(call_id="c3", name="lookup", arguments={"key": "k"})]
        else:
            return ChatResponse(messages=[ChatMessage(role=Role.ASSISTANT, contents="done")],
                                finish_reason=FinishReason.STOP)
        return ChatResponse(messages=[ChatMessage(role=Role.ASSISTANT, contents=calls)],
                            finish_reason=FinishReason.TOOL_CALLS)
    async def get_streaming_response(self, messages, options):
        raise NotImplementedError
        yield

agent = (AgentBuilder().with_instructions("You are a calculator.")
         .with_chat_client(Model()).with_tools([add, upper, lookup]).build())
assert asyncio.run(agent.run("go")).text == "done"
# A real model client reads every tool's schema: the first run is not done without them.
assert all(tool.parameters["properties"] for tool in agent.tools)
print((time.perf_counter() - started) * 1000, (time.process_time() - cpu_started) * 1000)
"""


# -- raf in this process ---------------------------------------------------------------


def build_raf() -> tuple[Any, Any, Any, Any, list[scenario.Script]]:
    """Agents with sync tools (run in a worker thread, the default), async tools, sync
    tools declared non-blocking and run inline (`@tool(blocking=False)`), and async tools
    behind one pass-through agent middleware, each on a zero-cost model."""
    from raf import (
        AgentBuilder,
        AgentResponseUpdate,
        ChatMessage,
        ChatOptions,
        ChatResponse,
        FinishReason,
        FunctionCallContent,
        Role,
        TextContent,
        UpdateKind,
        tool,
    )
    from raf.core.middleware import AgentRunContext, CallNext

    def to_message(reply: dict[str, Any]) -> ChatMessage:
        contents: list[Any] = [
            FunctionCallContent(call_id=c["id"], name=c["name"], arguments=c["arguments"])
            for c in reply["tool_calls"]
        ]
        if reply["content"]:
            contents.append(TextContent(text=reply["content"]))
        return ChatMessage(role=Role.ASSISTANT, contents=contents)

    class Model:
        """raf's ChatClient over the scripted dict replies: it only converts them."""

        def __init__(self) -> None:
            self.script = scenario.Script()

        async def get_response(
            self, messages: Sequence[ChatMessage], options: ChatOptions
        ) -> ChatResponse:
            reply = self.script.next()
            finish = FinishReason.TOOL_CALLS if reply["tool_calls"] else FinishReason.STOP
            return ChatResponse(messages=[to_message(reply)], finish_reason=finish)

        async def get_streaming_response(
            self, messages: Sequence[ChatMessage], options: ChatOptions
        ) -> AsyncIterator[AgentResponseUpdate]:
            reply = self.script.next()
            for chunk in scenario.stream_chunks(reply):
                if chunk["type"] == "tool_call":
                    call = chunk["call"]
                    yield AgentResponseUpdate(
                        kind=UpdateKind.TOOL_CALL_ENDED,
                        message_id="m",
                        call_id=call["id"],
                        tool_name=call["name"],
                        content=FunctionCallContent(
                            call_id=call["id"], name=call["name"], arguments=call["arguments"]
                        ),
                    )
                elif chunk["type"] == "text":
                    yield AgentResponseUpdate(
                        kind=UpdateKind.TEXT_DELTA, message_id="m", text=chunk["delta"]
                    )
                else:
                    finish = FinishReason.TOOL_CALLS if reply["tool_calls"] else FinishReason.STOP
                    yield AgentResponseUpdate(kind=UpdateKind.FINISHED, finish_reason=finish)

    sync_model, async_model, inline_model, through_model = Model(), Model(), Model(), Model()
    sync_agent = (
        AgentBuilder()
        .with_instructions(scenario.INSTRUCTIONS)
        .with_chat_client(sync_model)
        .with_tools([scenario.add, scenario.upper, scenario.lookup])
        .build()
    )
    async_agent = (
        AgentBuilder()
        .with_instructions(scenario.INSTRUCTIONS)
        .with_chat_client(async_model)
        .with_tools([tool(name=name)(fn) for name, fn in scenario.ASYNC_TOOLS.items()])
        .build()
    )
    inline_agent = (
        AgentBuilder()
        .with_instructions(scenario.INSTRUCTIONS)
        .with_chat_client(inline_model)
        .with_tools([tool(blocking=False)(fn) for fn in scenario.SYNC_TOOLS.values()])
        .build()
    )

    async def pass_through(context: AgentRunContext, call_next: CallNext) -> None:
        await call_next()

    through_agent = (
        AgentBuilder()
        .with_instructions(scenario.INSTRUCTIONS)
        .with_chat_client(through_model)
        .with_tools([tool(name=name)(fn) for name, fn in scenario.ASYNC_TOOLS.items()])
        .use_middleware(pass_through)
        .build()
    )
    scripts = [sync_model.script, async_model.script, inline_model.script, through_model.script]
    return sync_agent, async_agent, inline_agent, through_agent, scripts


async def raf_cases(batch_seconds: float, batches: int) -> dict[str, dict[str, float]]:
    sync_agent, async_agent, inline_agent, through_agent, scripts = build_raf()

    async def run_inline_tools() -> str:
        text: str = (await inline_agent.run(scenario.QUESTION)).text
        return text

    async def run_sync_tools() -> str:
        text: str = (await sync_agent.run(scenario.QUESTION)).text
        return text

    async def run_async_tools() -> str:
        text: str = (await async_agent.run(scenario.QUESTION)).text
        return text

    async def run_stream() -> str:
        text = []
        async for update in async_agent.run_stream(scenario.QUESTION):
            text.append(update.text if update.kind == "text_delta" else "")
        return "".join(text)

    results: dict[str, dict[str, float]] = await scenario.measure(
        {"sync tools": run_sync_tools, "async tools": run_async_tools, "stream": run_stream},
        batch_seconds=batch_seconds,
        batches=batches,
        scripts=[*scripts, scenario.FLOOR_SCRIPT],
    )
    inline = await scenario.measure(
        {"sync tools": run_inline_tools},
        batch_seconds=batch_seconds,
        batches=batches,
        scripts=[*scripts, scenario.FLOOR_SCRIPT],
    )
    results["sync tools, inline"] = inline["sync tools"]
    threaded = await scenario.measure(
        {"sync tools, threaded floor": run_sync_tools, "sync tools, one-hop floor": run_sync_tools},
        batch_seconds=batch_seconds,
        batches=batches,
        scripts=[*scripts, scenario.FLOOR_SCRIPT],
    )
    results.update(threaded)

    async def run_stream_through_middleware() -> str:
        text = []
        async for update in through_agent.run_stream(scenario.QUESTION):
            text.append(update.text if update.kind == "text_delta" else "")
        return "".join(text)

    # the plain stream again, interleaved with the stream through middleware: the two
    # are compared with each other, batch pair by batch pair
    through = await scenario.measure(
        {"stream": run_stream_through_middleware},
        batch_seconds=batch_seconds,
        batches=batches,
        scripts=[*scripts, scenario.FLOOR_SCRIPT],
    )
    results["stream, agent middleware"] = through["stream"]
    return results


def cold_start_ms(repeats: int) -> tuple[float, float, float, float]:
    """Median in-process ms of import + build + first run in a fresh interpreter (wall
    and CPU: CPU time moves less with the machine's load), the median wall time of that
    whole process, and of a bare `python -c pass`."""
    inner, cpu, wall, bare = [], [], [], []
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    for _ in range(repeats):
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", COLD_START], check=True, capture_output=True, env=env
        )
        wall.append((time.perf_counter() - started) * 1000)
        inner_ms, cpu_ms = out.stdout.split()
        inner.append(float(inner_ms))
        cpu.append(float(cpu_ms))
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)
        bare.append((time.perf_counter() - started) * 1000)
    return (
        statistics.median(inner),
        statistics.median(cpu),
        statistics.median(wall),
        statistics.median(bare),
    )


async def bytes_per_message(turns: int) -> tuple[float, int]:
    """Bytes retained per message of one session after `turns` runs (tracemalloc)."""
    _, async_agent, _, _, _ = build_raf()
    session = async_agent.create_session()
    await async_agent.run(scenario.QUESTION, session)  # warm every lazy cache first
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    count_before = len(session.messages)
    for _ in range(turns):
        await async_agent.run(scenario.QUESTION, session)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    added = len(session.messages) - count_before
    return (after - before) / added, added


async def history_growth(sizes: Sequence[int], runs: int) -> list[tuple[int, float]]:
    """Microseconds per run on a session already holding about `size` messages: one
    session per size, their batches interleaved so that the machine's load hits every
    size alike; the median of 10 batches each."""
    _, async_agent, _, _, _ = build_raf()
    sessions = []
    for size in sizes:
        session = async_agent.create_session()
        while len(session.messages) < size:
            await async_agent.run(scenario.QUESTION, session)
        del session.messages[size:]
        sessions.append(session)
    samples: list[list[float]] = [[] for _ in sizes]
    per_batch = max(1, runs // 10)
    for _ in range(10):
        for index, (size, session) in enumerate(zip(sizes, sessions, strict=True)):
            started = time.perf_counter()
            for _ in range(per_batch):
                await async_agent.run(scenario.QUESTION, session)
                del session.messages[size:]  # every run sees the same history
            samples[index].append((time.perf_counter() - started) / per_batch * 1e6)
    return [
        (len(session.messages), statistics.median(values))
        for session, values in zip(sessions, samples, strict=True)
    ]


# -- the peers, each in its own virtualenv ------------------------------------------


def setup_peers(names: Sequence[str]) -> None:
    """Create benchmarks/.venvs/<peer> and install the peer there (from PyPI)."""
    VENVS.mkdir(exist_ok=True)
    for name in names:
        _, packages = PEERS[name]
        venv = VENVS / name
        python = venv / "bin" / "python"
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        print(f"installing {' '.join(packages)} into {venv} …", flush=True)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--upgrade", *packages],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            print(f"  FAILED (the table will say so): {done.stderr.strip()[-400:]}")
        else:
            print("  installed")


def run_peer(name: str, batch_seconds: float, batches: int) -> dict[str, Any]:
    """One peer's results, or the reason there are none."""
    module, packages = PEERS[name]
    python = VENVS / name / "bin" / "python"
    if not python.exists():
        return {"error": f"not installed (run --setup; pip install {' '.join(packages)})"}
    done = subprocess.run(
        [str(python), str(HERE / "peers" / f"{module}.py"), str(batch_seconds), str(batches)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(HERE.parent)},
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"failed: {last[:200]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def table(rows: list[dict[str, Any]]) -> str:
    head = f"{'framework':<28}" + "".join(f"{case:>30}" for case in CASES)
    lines = [head, "-" * len(head)]
    for row in rows:
        label = f"{row['framework']} {row.get('version', '')}".strip()
        if "error" in row:
            lines.append(f"{label:<28}  {row['error']}")
            continue
        cells = []
        for case in CASES:
            data = row["cases"].get(case)
            if data is None:
                cells.append(f"{'n/a':>30}")
                continue
            cell = (
                f"{data['ratio']:5.1f}x ({data['ratio_low']:.0f}-{data['ratio_high']:.0f}) "
                f"{data['us']:6.0f}us"
            )
            cells.append(f"{cell:>30}")
        lines.append(f"{label:<28}" + "".join(cells))
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--setup", action="store_true", help="install the peers, then run")
    parser.add_argument("--batch-ms", type=float, default=100, help="one timed batch (100)")
    parser.add_argument("--batches", type=int, default=10, help="batch pairs per case (10)")
    parser.add_argument(
        "--only", choices=["raf", *PEERS, "all"], default="all", help="one framework only"
    )
    parser.add_argument("--no-extras", action="store_true", help="skip cold start and memory")
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time batches in CPU time of each process (all its threads), not wall time: "
        "for a loaded machine",
    )
    args = parser.parse_args()
    if args.cpu:
        os.environ["RAF_BENCH_CLOCK"] = "cpu"  # read by overhead_scenario, in the peers too
        scenario.CLOCK = time.process_time
    peers = [] if args.only == "raf" else list(PEERS) if args.only == "all" else [args.only]
    if args.setup:
        setup_peers(peers)

    import raf

    rows: list[dict[str, Any]] = []
    if args.only in ("raf", "all"):
        cases = await raf_cases(args.batch_ms / 1000, args.batches)
        rows.append({"framework": "raf", "version": raf.__version__, "cases": cases})
    for name in peers:
        row = run_peer(name, args.batch_ms / 1000, args.batches)
        rows.append({"framework": name, **row})

    floors = rows[0]["cases"] if rows and "cases" in rows[0] else {}
    print("Per-run overhead, multiple of the plain-dict floor measured in the same process")
    print(
        f"(median of {args.batches} interleaved batch pairs, lowest-highest pair; "
        f"median {'CPU ' if args.cpu else ''}us per run)."
    )
    if floors:
        print(
            f"Floor in {rows[0]['framework']}'s process: "
            + ", ".join(f"{c} {floors[c]['floor_us']:.1f}us" for c in CASES if c in floors)
        )
    print(table(rows))
    inline = rows[0]["cases"].get("sync tools, inline") if floors else None
    if inline:
        print(
            f"raf, sync tools run inline (@tool(blocking=False)): {inline['ratio']:.1f}x "
            f"({inline['ratio_low']:.0f}-{inline['ratio_high']:.0f}) {inline['us']:.0f}us"
        )
    threaded = rows[0]["cases"].get("sync tools, threaded floor") if floors else None
    if threaded:
        print(
            f"raf, sync tools, against a floor that also runs each sync call on a thread "
            f"(asyncio.to_thread): {threaded['ratio']:.1f}x "
            f"({threaded['ratio_low']:.0f}-{threaded['ratio_high']:.0f}); "
            f"that floor {threaded['floor_us']:.0f}us, raf {threaded['us']:.0f}us"
        )
    one_hop = rows[0]["cases"].get("sync tools, one-hop floor") if floors else None
    if one_hop:
        print(
            "raf, sync tools, against a floor that runs each reply's calls together in one "
            f"thread hop (asyncio.to_thread per batch): {one_hop['ratio']:.1f}x "
            f"({one_hop['ratio_low']:.1f}-{one_hop['ratio_high']:.1f}); "
            f"that floor {one_hop['floor_us']:.0f}us, raf {one_hop['us']:.0f}us"
        )
    through = rows[0]["cases"].get("stream, agent middleware") if floors else None
    if through:
        plain = rows[0]["cases"]["stream"]
        print(
            f"raf, stream through one pass-through agent middleware: {through['us']:.0f}us "
            f"({through['ratio']:.1f}x its floor) against {plain['us']:.0f}us "
            f"({plain['ratio']:.1f}x) without: {through['ratio'] / plain['ratio'] - 1:+.1%} "
            "(target: within 5 %)"
        )
    print("targets for raf: " + ", ".join(f"{c} <= {t:.0f}x" for c, t in TARGETS.items()))
    if args.no_extras or args.only not in ("raf", "all"):
        return
    inner, cpu, wall, bare = cold_start_ms(7)
    print(
        f"\ncold start, import + build + first run: {inner:.0f} ms in-process, {cpu:.0f} ms "
        f"CPU (whole process {wall:.0f} ms; bare interpreter {bare:.0f} ms); target <= 150 ms"
    )
    per_message, count = await bytes_per_message(300)
    print(f"bytes retained per session message: {per_message:.0f} B over {count} messages")
    growth = await history_growth([0, 600, 3000], 500)
    print(
        "run with history already in the session: "
        + ", ".join(f"{size} msgs {us:.0f}us" for size, us in growth)
    )


if __name__ == "__main__":
    asyncio.run(main())
