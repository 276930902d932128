"""`raf serve` as `benchmarks/serve_load.py` runs it: raf's own command line (`raf.cli`'s
main, on the arguments given) with every agent on a model that answers "pong" at once
and keeps nothing.

    python benchmarks/peers/raf_serve.py serve DOC --model pong [raf serve's options]

With `RAF_BENCH_PROFILE=FILE` set, SIGUSR1 starts sampling the Python stack at every
millisecond of the process's CPU time and SIGUSR2 stops and writes the samples to FILE,
one `outer;…;inner count` line per stack (what `serve_load.py --profile` reads).

The scripted test model (`--model scripted:FILE`) would answer as fast, but it holds
every reply of its script as objects and records every request it gets: over tens of
thousands of requests that is memory growth, and garbage-collector passes over a heap
that keeps growing, which are the test aid's and would be charged to raf.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from types import FrameType

from raf.cli import _agents
from raf.cli.main import main
from raf.core.chat_client import ChatClient
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import AgentResponseUpdate, ChatResponse, FinishReason
from raf.testing.scripted import stream_response


class PongClient:
    """A model whose every answer is "pong", built fresh as a real client's would be."""

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> ChatResponse:
        return ChatResponse(
            messages=[ChatMessage.assistant("pong")], finish_reason=FinishReason.STOP
        )

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[AgentResponseUpdate]:
        for update in stream_response(await self.get_response(messages, options), 64):
            yield update


def pong_client(spec: str | None) -> ChatClient:
    """What `--model` resolves to here, whatever it names."""
    return PongClient()


PLACE = re.compile(r"^.*(?:/site-packages/|/src/|/lib/python3\.\d+/|/benchmarks/)")
"""What is cut from a file's path: up to the package, the module, or the benchmark."""


def frame_name(frame: FrameType) -> str:
    """`function (path:line)`, the path from the package (or standard module) on."""
    path = PLACE.sub("", frame.f_code.co_filename)
    return f"{frame.f_code.co_qualname} ({path}:{frame.f_lineno})"


def install_sampler(path: str) -> None:
    """SIGUSR1 starts a stack sampler on CPU time (SIGPROF), SIGUSR2 stops it and writes
    what it saw to `path`. A signal handler runs between bytecodes, so time in a C call
    counts for the Python frame that made it."""
    samples: Counter[str] = Counter()

    def sample(signum: int, frame: FrameType | None) -> None:
        names = []
        while frame is not None:
            names.append(frame_name(frame))
            frame = frame.f_back
        samples[";".join(reversed(names))] += 1

    def start(signum: int, frame: FrameType | None) -> None:
        samples.clear()
        signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)

    def stop(signum: int, frame: FrameType | None) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        lines = [f"{stack} {count}\n" for stack, count in samples.items()]
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(lines)

    signal.signal(signal.SIGPROF, sample)
    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)


if __name__ == "__main__":
    if os.environ.get("RAF_BENCH_PROFILE"):
        install_sampler(os.environ["RAF_BENCH_PROFILE"])
    # `raf serve` resolves `--model` through this function when it starts
    _agents.resolve_client = pong_client
    sys.exit(main(sys.argv[1:]))
