"""`raf ask "question"`: one answer from the default assistant, streamed; no key needed.

The model is `--model`, else `$RAF_MODEL`, else the embedded local model, which is
downloaded on first use.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from raf.core.options import ChatOptions
from raf.core.responses import UpdateKind

INSTRUCTIONS = "You are a helpful assistant. Answer clearly and briefly."


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "ask", help="ask the default assistant one question and stream the answer"
    )
    parser.add_argument("prompt", metavar="PROMPT", help="the question ('-' reads stdin)")
    parser.add_argument(
        "--model",
        metavar="SPEC",
        help="model string, e.g. openai:gpt-4o-mini, ollama:qwen3:8b, local (default: "
        "$RAF_MODEL, else local)",
    )
    parser.add_argument(
        "--max-tokens", type=int, default=256, help="most tokens in the answer (default 256)"
    )
    parser.set_defaults(handler=ask_command)


def ask_command(args: argparse.Namespace) -> int:
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    return asyncio.run(_ask(prompt, args.model, args.max_tokens))


async def _ask(prompt: str, spec: str | None, max_tokens: int) -> int:
    from raf.agent.builder import AgentBuilder
    from raf.clients.local import LocalChatClient
    from raf.clients.model_store import is_pulled, pull_model
    from raf.clients.models import resolve_model

    client = resolve_model(spec)
    if isinstance(client, LocalChatClient) and client.path is None and not is_pulled():
        print("raf: first run: fetching the local model (once)", file=sys.stderr)
        await pull_model(progress=lambda m: print(f"raf: {m}", file=sys.stderr, flush=True))
    agent = (
        AgentBuilder("assistant")
        .with_instructions(INSTRUCTIONS)
        .with_chat_client(client)
        .with_options(ChatOptions(max_tokens=max_tokens))
        .build()
    )
    wrote = False
    try:
        async for update in agent.run_stream(prompt):
            if update.kind is UpdateKind.TEXT_DELTA:
                sys.stdout.write(update.text)
                sys.stdout.flush()
                wrote = True
    finally:
        closer = getattr(client, "aclose", None)
        if closer is not None:
            await closer()
    if wrote:
        sys.stdout.write("\n")
    return 0
