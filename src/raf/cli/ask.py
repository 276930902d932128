"""`raf ask "question"`: one answer from the default assistant, streamed; no key needed.

The model is `--model`, else `$RAF_MODEL`, else the embedded local model, which is
downloaded on first use. An API key in the environment alone never switches the model
(no surprise bills, no text leaving the machine unasked); raf says how to use it.

Exit codes as `raf run`'s: 0 answered; 1 an error; 2 a usage error; 4 no whole answer
(the model gave none, or it was cut off at `--max-tokens` or filtered); 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from raf.cli.arguments import positive
from raf.core.options import ChatOptions

INSTRUCTIONS = "You are a helpful assistant. Answer clearly and briefly."
EPILOG = """exit codes:
  0    answered
  1    an error (the model failed, or it could not be fetched or loaded)
  2    usage error (bad command line)
  4    no whole answer: the model gave none, or it was cut off at --max-tokens
       or stopped by a content filter (stderr says which, and what to try)
  130  interrupted (Ctrl-C)
"""
KEY_HINTS = (
    ("OPENAI_API_KEY", "openai:gpt-4o-mini"),
    ("ANTHROPIC_API_KEY", "anthropic:claude-sonnet-4-5"),
)


def key_hint(spec: str | None) -> str | None:
    """A note when a provider key is set but no model was chosen (so `local` runs)."""
    if spec or os.environ.get("RAF_MODEL", "").strip():
        return None
    for env_var, example in KEY_HINTS:
        if os.environ.get(env_var):
            return (
                f"using the local model; {env_var} is set, to use it pass --model {example} "
                f"or set RAF_MODEL={example}"
            )
    return None


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "ask",
        help="ask the default assistant one question and stream the answer",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("prompt", metavar="PROMPT", help="the question ('-' reads stdin)")
    parser.add_argument(
        "--model",
        metavar="SPEC",
        help="model string, e.g. openai:gpt-4o-mini, ollama:qwen3:8b, local (default: "
        "$RAF_MODEL, else local)",
    )
    parser.add_argument(
        "--max-tokens",
        type=positive("tokens"),
        default=256,
        help="most tokens in the answer (default 256)",
    )
    parser.set_defaults(handler=ask_command)


def ask_command(args: argparse.Namespace) -> int:
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    return asyncio.run(_ask(prompt, args.model, args.max_tokens))


async def _ask(prompt: str, spec: str | None, max_tokens: int) -> int:
    from raf.agent.builder import AgentBuilder
    from raf.cli._agents import resolve_client
    from raf.clients.local.client import LocalChatClient
    from raf.clients.local.model_store import is_pulled, pull_model

    hint = key_hint(spec)
    if hint:
        print(f"raf: {hint}", file=sys.stderr)
    client = resolve_client(spec)
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
    from raf.cli._render import StreamPrinter
    from raf.cli.run import no_answer
    from raf.core.responses import AnswerCheck

    printer = StreamPrinter(sys.stdout, sys.stderr, notes=False)
    check = AnswerCheck()
    try:
        with printer.warnings():
            async for update in agent.run_stream(prompt):
                printer.show(update)
                check.see(update)
    finally:
        printer.end_line()
        closer = getattr(client, "aclose", None)
        if closer is not None:
            await closer()
    return no_answer(check, max_tokens_flag=True)
