"""`raf chat [FILE]`: an interactive terminal chat with an agent.

Text streams as it arrives, tool calls show their arguments and a one-line result,
approval requests are asked (approve, deny with a reason, or always allow that tool in
this session). Ctrl-C cancels the current run, not the program. Sessions live in SQLite
under the data folder; `--resume [ID]` continues one (the latest when no ID is given).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from typing import Any

HELP = """commands:
  /help            this help
  /clear           start a new session (the old one stays stored)
  /model [SPEC]    show the model, or switch to SPEC (e.g. openai:gpt-4o-mini)
  /session         show this session's id and the stored sessions
  /quit            leave (Ctrl-D too)
Ctrl-C cancels the answer being written, not the program."""

ALWAYS_KEY = "chat.always_allow"
WAITING_HINT = (
    "waiting for approval: your next message asks again, /clear starts a new session, "
    "--resume continues it later"
)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "chat",
        help="chat with an agent in the terminal (the default assistant without FILE)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", nargs="?", metavar="FILE", help="agent document (optional)")
    parser.add_argument(
        "--resume",
        nargs="?",
        const="",
        default=None,
        metavar="ID",
        help="continue a stored session (the latest when ID is left out)",
    )
    parser.add_argument(
        "--model",
        metavar="SPEC",
        help="model to use (default: $RAF_MODEL, else the document's, else raf's default; "
        "'scripted:FILE.json' replays a JSON list of replies, a testing aid)",
    )
    from raf.cli._agents import add_conflict_retries
    from raf.cli.tool_option import add_tools_option

    add_conflict_retries(parser)
    add_tools_option(parser)
    parser.set_defaults(handler=run_chat)


def run_chat(args: argparse.Namespace) -> int:
    from raf.cli.tool_option import EXIT_BAD_SPEC, loaded_tools

    if loaded_tools(args.tools) is None:  # a usage error, as in raf run
        return EXIT_BAD_SPEC
    chat = _Chat(args)
    return chat.main()


class _Chat:
    def __init__(self, args: argparse.Namespace) -> None:
        from raf.cli._agents import build_agent, conflict_retries, session_store

        self.args = args
        self.conflict_retries = conflict_retries(args.conflict_retries)
        self.model_spec: str | None = args.model
        self.store = session_store()
        self.agent = build_agent(args.file, args.model, self.store, args.tools)  # may fail
        self.loop = asyncio.new_event_loop()
        self.session = self.agent.create_session()

    def say(self, text: str) -> None:
        """Print a line; what it quotes from outside cannot act on the terminal."""
        from raf.cli.terminal_text import terminal_safe

        sys.stdout.write(terminal_safe(text) + "\n")
        sys.stdout.flush()

    def main(self) -> int:
        try:
            if self.args.resume is not None:
                self._resume(self.args.resume)
            self.say(f"raf chat — {self.agent.name} (session {self.session.id}); /help for help")
            while True:
                try:
                    line = input("you> ")
                except EOFError:
                    self.say("")
                    return 0
                except KeyboardInterrupt:
                    self.say("\n(Ctrl-C cancels a running answer; /quit leaves)")
                    continue
                line = line.strip()
                if not line:
                    continue
                if line.startswith("/"):
                    if not self._command(line):
                        return 0
                    continue
                self._turn(line)
        finally:
            from raf.cli._agents import close_agent

            self.loop.run_until_complete(close_agent(self.agent))
            self.loop.close()

    # -- commands ---------------------------------------------------------------------

    def _command(self, line: str) -> bool:
        name, _, rest = line.partition(" ")
        rest = rest.strip()
        if name in ("/quit", "/exit", "/q"):
            return False
        if name == "/help":
            self.say(HELP)
        elif name == "/clear":
            self.session = self.agent.create_session()
            self.say(f"new session {self.session.id}")
        elif name == "/session":
            ids = self.loop.run_until_complete(self.store.list())
            self.say(f"session {self.session.id} ({len(self.session.messages)} messages)")
            others = [i for i in ids if i != self.session.id][:10]
            if others:
                self.say("stored: " + ", ".join(others))
        elif name == "/model":
            self._model(rest)
        else:
            self.say(f"unknown command {name}; /help lists them")
        return True

    def _model(self, spec: str) -> None:
        from raf.cli._agents import ProgramAgent, build_agent, resolve_client
        from raf.core.errors import RafError

        if not spec:
            client = getattr(self.agent, "leaf_client", None)  # none: members have their own
            shown = f"{client!r}" if client is not None else "each member's own"
            self.say(f"model: {self.model_spec or 'default'} ({shown})")
            return
        try:
            if self.args.file:
                agent: ProgramAgent = build_agent(self.args.file, spec, self.store, self.args.tools)
            else:
                resolve_client(spec)
                agent = build_agent(None, spec, self.store)
        except RafError as exc:
            self.say(f"cannot switch model: {exc}")
            return
        from raf.cli._agents import close_agent

        self.loop.run_until_complete(close_agent(self.agent))
        self.agent = agent
        self.model_spec = spec
        self.say(f"model: {spec}")

    def _resume(self, session_id: str) -> None:
        from raf.core.errors import SessionNotFoundError

        if not session_id:
            ids = self.loop.run_until_complete(self.store.list())
            if not ids:
                self.say("no stored session to resume; starting a new one")
                return
            session_id = ids[0]
        try:
            self.session = self.loop.run_until_complete(self.store.load(session_id))
        except SessionNotFoundError:
            self.say(f"no stored session {session_id!r}; starting a new one")
            return
        self.say(f"resumed session {self.session.id} ({len(self.session.messages)} messages)")
        for message in self.session.messages[-4:]:
            if message.text and message.role.value in ("user", "assistant"):
                self.say(f"  {message.role.value}: {message.text[:200]}")
        from raf.core.call_approval import awaiting_answers

        if awaiting_answers(self.session):
            self._answer_pending()

    # -- turns ------------------------------------------------------------------------

    def _turn(self, text: str | None, responses: list[Any] | None = None) -> None:
        """One request, then as many approval rounds as it takes. A session still waiting
        for approvals (left unanswered with Ctrl-C) asks them again before the new request."""
        from raf.core.call_approval import awaiting_answers

        answers: list[Any] = list(responses or [])
        if text is not None and not answers and awaiting_answers(self.session):
            self.say("(this session still waits for approval; answer it first)")
            decided = self._ask(self.session.pending_approvals)
            if decided is None:
                self.say(f"({WAITING_HINT}; your message was not sent)")
                return
            self._turn(None, decided)
            if self.session.pending_approvals:
                return
        while True:
            finished = self._stream(None if answers else text, answers)
            if finished != "awaiting_approval":
                return
            decided = self._ask(self.session.pending_approvals)
            if decided is None:
                self.say(f"(left {WAITING_HINT})")
                return
            answers = decided

    def _answer_pending(self) -> None:
        decided = self._ask(self.session.pending_approvals)
        if decided:
            self._turn(None, decided)

    def _stream(self, text: str | None, responses: list[Any]) -> str | None:
        from raf.cli._render import StreamPrinter
        from raf.core.cancellation import CancellationToken
        from raf.core.errors import RafError, SessionConflictError
        from raf.core.options import AgentRunOptions
        from raf.core.responses import UpdateKind

        token = CancellationToken()
        printer = StreamPrinter(sys.stdout, sys.stdout)
        finish: list[str | None] = [None]

        async def go() -> None:
            options = AgentRunOptions(
                cancellation=token,
                tool_approval_responses=responses,
                conflict_retries=self.conflict_retries,
            )
            with printer.warnings():
                async for update in self.agent.run_stream(
                    text, session=self.session, options=options
                ):
                    printer.show(update)
                    if update.kind is UpdateKind.FINISHED and update.finish_reason is not None:
                        finish[0] = update.finish_reason.value

        with contextlib.suppress(NotImplementedError, RuntimeError):
            self.loop.add_signal_handler(signal.SIGINT, token.cancel)
        try:
            self.loop.run_until_complete(go())
        except SessionConflictError as exc:
            self._after_conflict(exc)
            return None
        except RafError as exc:
            self.say(f"error: {exc}")
            return None
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                self.loop.remove_signal_handler(signal.SIGINT)
        if finish[0] == "cancelled" or token.cancelled:
            self.say("(cancelled)")
        return finish[0]

    def _after_conflict(self, error: Exception) -> None:
        """Another process saved this session meanwhile: say so, and carry on from what
        is stored, so the next message does not conflict again."""
        from raf.cli._agents import CONFLICT_HINT
        from raf.core.errors import SessionNotFoundError

        self.say(f"error: {error}")
        try:
            self.session = self.loop.run_until_complete(self.store.load(self.session.id))
        except SessionNotFoundError:
            self.session = self.agent.create_session()
            self.say(f"(the session was deleted; new session {self.session.id})")
            return
        self.say(
            f"(reloaded the stored session: {len(self.session.messages)} messages; your "
            f"last message was not kept, send it again — {CONFLICT_HINT})"
        )

    def _ask(self, pending: Any) -> list[Any] | None:
        from raf.cli._agents import text_requests
        from raf.cli._render import approval_prompt, describe_call
        from raf.core.options import ToolApprovalResponse

        questions = text_requests(self.session)
        always = set(self.session.metadata.get(ALWAYS_KEY, []))
        out: list[ToolApprovalResponse] = []
        for request in pending:
            if request.call_id in questions:
                self.say("")
                self.say(request.reason or "the workflow asks for input")
                try:
                    said = input("answer> ")
                except (EOFError, KeyboardInterrupt):
                    self.say("")
                    return None
                out.append(
                    ToolApprovalResponse(call_id=request.call_id, approved=True, reason=said)
                )
                continue
            if request.name in always:
                self.say(f"✓ {request.name} is always allowed in this session")
                out.append(ToolApprovalResponse(call_id=request.call_id, approved=True))
                continue
            self.say(approval_prompt(request, self.agent))
            self.say(f"approve {describe_call(request)}?")
            while True:
                try:
                    answer = input("[y]es / [n]o / [a]lways allow this tool> ").strip().lower()
                except (EOFError, KeyboardInterrupt):
                    self.say("")
                    return None
                if answer in ("y", "yes", "n", "no", "a", "always"):
                    break
                self.say("answer y, n or a")
            if answer in ("a", "always"):
                always.add(request.name)
                self.session.metadata[ALWAYS_KEY] = sorted(always)
                out.append(ToolApprovalResponse(call_id=request.call_id, approved=True))
            elif answer in ("y", "yes"):
                out.append(ToolApprovalResponse(call_id=request.call_id, approved=True))
            else:
                try:
                    reason = input("reason (optional)> ").strip() or None
                except (EOFError, KeyboardInterrupt):
                    reason = None
                out.append(
                    ToolApprovalResponse(call_id=request.call_id, approved=False, reason=reason)
                )
        return out
