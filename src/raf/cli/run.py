"""`raf run FILE "prompt"`: one run of an agent, streamed to stdout (or as JSON lines).

Exit codes: 0 the run finished (a workflow that ends without a message too); 1 an error
(a document with problems, a model or tool failure); 2 a usage error (bad command line);
3 the run waits for approvals nobody answered (resume with `--session ID --approve
all|none`); 4 a model's answer was not whole (empty, cut off at the token limit, or
stopped by a content filter); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Sequence
from typing import Any

from raf.cli.terminal_text import json_text_safe, terminal_safe
from raf.core.call_approval import awaiting_answers
from raf.core.cancellation import CancellationToken
from raf.core.contents import ApprovalRequestContent
from raf.core.messages import ChatMessage, Role
from raf.core.options import ToolApprovalResponse
from raf.core.responses import AnswerCheck
from raf.core.sessions import AgentSession

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_AWAITING_APPROVAL = 3
EXIT_NO_ANSWER = 4
EXIT_INTERRUPTED = 130

EPILOG = """exit codes:
  0    the run finished (a workflow that ends without a message too)
  1    an error: the document has problems, or the model or a tool failed
  2    usage error (bad command line)
  3    the run waits for approvals nobody answered; resume it with
       raf run FILE --session ID --approve all|none
  4    no whole answer: the model gave none, or it was cut off at the token
       limit or stopped by a content filter (stderr says which, and what to try)
  130  interrupted (Ctrl-C)
"""


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run an agent document once on a prompt and print the answer",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", metavar="FILE", help="agent document (YAML, JSON or TOML)")
    parser.add_argument(
        "prompt",
        nargs="?",
        default=None,
        help="the request ('-' reads it from stdin; leave out to answer pending approvals)",
    )
    parser.add_argument("--json", action="store_true", help="print the stream as JSON lines")
    parser.add_argument(
        "--approve",
        choices=("all", "none", "ask"),
        default="ask",
        help="approve every request, deny every request, or ask on the terminal (default; "
        "without a terminal the requests stay unanswered and raf exits with 3)",
    )
    parser.add_argument("--session", metavar="ID", help="continue (or start) this session")
    parser.add_argument("--model", metavar="SPEC", help="use this model instead of the document's")
    parser.add_argument(
        "--attach",
        metavar="FILE",
        action="append",
        default=[],
        help="send this image, PDF or audio file with the prompt (repeat for several)",
    )
    from raf.cli._agents import add_conflict_retries
    from raf.cli.tool_option import add_tools_option

    add_conflict_retries(parser)
    add_tools_option(parser)
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from raf.cli.tool_option import loaded_tools

    if loaded_tools(args.tools) is None:  # a usage error, found before anything starts
        return EXIT_USAGE
    prompt = args.prompt
    if prompt == "-":
        prompt = sys.stdin.read()
    if args.attach:  # read and checked before anything starts
        from raf.clients.media import MediaError, attachment

        if not prompt:
            print("raf: --attach needs a prompt to go with the files", file=sys.stderr)
            return EXIT_USAGE
        try:
            files = [attachment(path) for path in args.attach]
        except MediaError as exc:
            print(f"raf: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        return asyncio.run(_run(args, ChatMessage(role=Role.USER, contents=[prompt, *files])))
    return asyncio.run(_run(args, prompt))


async def _run(args: argparse.Namespace, prompt: str | ChatMessage | None) -> int:
    from raf.cli._agents import (
        CONFLICT_HINT,
        build_agent,
        close_agent,
        conflict_retries,
        session_store,
    )
    from raf.cli._render import QUIET_END, StreamPrinter
    from raf.core.errors import SessionConflictError, SessionNotFoundError
    from raf.core.options import AgentRunOptions
    from raf.core.responses import FinishReason, UpdateKind

    retries = conflict_retries(args.conflict_retries)
    store = session_store()
    from raf.cli.validate import report_problems
    from raf.core.errors import ValidationProblems

    try:
        agent = build_agent(args.file, args.model, store, args.tools)
    except ValidationProblems as exc:  # what `raf validate` reports, bounded the same way
        report_problems(args.file, exc.problems, getattr(exc, "warnings", []))
        return EXIT_ERROR
    if args.session:
        try:
            session = await store.load(args.session)
        except SessionNotFoundError:
            print(
                f"raf: no stored session {args.session!r}; starting a new one with that id",
                file=sys.stderr,
            )
            session = agent.create_session(args.session)
    else:
        session = agent.create_session()
    printer = StreamPrinter(sys.stdout, sys.stderr, notes=False)
    token = CancellationToken()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, token.cancel)
    try:
        responses: list[ToolApprovalResponse] = []
        if session.pending_approvals and prompt and _only_question(session):
            pass  # the prompt answers the workflow's question
        elif session.pending_approvals and (awaiting_answers(session) or not prompt):
            if prompt:
                print(
                    f"raf: session {session.id} waits for approvals; answer them first "
                    "(leave out the prompt)",
                    file=sys.stderr,
                )
                return EXIT_USAGE
            decided = await _decide(session.pending_approvals, args.approve, token, agent)
            if token.cancelled:
                print(f"raf: interrupted (session {session.id})", file=sys.stderr)
                return EXIT_INTERRUPTED
            if decided is None:
                return _unanswered(session)
            responses = decided
        elif not prompt:
            print("raf: give a prompt (or '-' to read it from stdin)", file=sys.stderr)
            return EXIT_USAGE
        messages: str | ChatMessage | None = prompt
        while True:
            options = AgentRunOptions(
                cancellation=token, tool_approval_responses=responses, conflict_retries=retries
            )
            finish = None
            check = AnswerCheck()
            with printer.warnings():
                try:
                    async for update in agent.run_stream(
                        None if responses else messages, session=session, options=options
                    ):
                        if args.json:
                            line = json.dumps(update.to_dict(), ensure_ascii=False)
                            print(json_text_safe(line), flush=True)
                        else:
                            printer.show(update)
                        check.see(update)
                        if update.kind is UpdateKind.FINISHED:
                            finish = update.finish_reason
                finally:  # an error's message starts a line of its own
                    printer.end_line()
            if token.cancelled or finish is FinishReason.CANCELLED:
                print(f"raf: interrupted (session {session.id})", file=sys.stderr)
                return EXIT_INTERRUPTED
            if finish is FinishReason.COMPLETED and not check.answered:
                print(f"raf: {QUIET_END}", file=sys.stderr)  # what it ended with
            if finish is not FinishReason.AWAITING_APPROVAL:
                return no_answer(check)
            decided = await _decide(session.pending_approvals, args.approve, token, agent)
            if token.cancelled:
                print(
                    f"raf: interrupted (session {session.id} waits for approval)", file=sys.stderr
                )
                return EXIT_INTERRUPTED
            if decided is None:
                return _unanswered(session)
            responses = decided
    except SessionConflictError as exc:
        print(terminal_safe(f"raf: error: {exc}; {CONFLICT_HINT}"), file=sys.stderr)
        return EXIT_ERROR
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        await close_agent(agent)


def no_answer(check: AnswerCheck, *, max_tokens_flag: bool = False) -> int:
    """EXIT_OK for a whole answer; else the problem on stderr and EXIT_NO_ANSWER (with
    `max_tokens_flag`, a cut-off answer names `--max-tokens`, the command's own limit)."""
    problem = check.problem
    if problem is None:
        return EXIT_OK
    message = problem.message
    if max_tokens_flag and problem.code == "cut_off":
        message = "the answer was cut off at the output limit; raise --max-tokens or ask for less"
    sys.stdout.flush()
    print(f"raf: no whole answer ({problem.code}): {message}", file=sys.stderr)
    return EXIT_NO_ANSWER


def _only_question(session: AgentSession) -> bool:
    """Whether the session waits for one answer in text (a workflow's question), which
    the next prompt gives."""
    from raf.cli._agents import text_requests

    pending = session.pending_approvals
    return len(pending) == 1 and pending[0].call_id in text_requests(session)


def _unanswered(session: AgentSession) -> int:
    from raf.cli._render import describe_request

    session_id, pending = session.id, session.pending_approvals
    if _only_question(session):
        print(terminal_safe(f"raf: {pending[0].reason}"), file=sys.stderr)
        print(
            f"raf: session {session_id} waits for an answer; give it with "
            f'--session {session_id} "ANSWER"',
            file=sys.stderr,
        )
        return EXIT_AWAITING_APPROVAL
    for request in pending:
        print(f"raf: waiting for approval: {describe_request(request)}", file=sys.stderr)
    print(
        f"raf: session {session_id} waits for approval; resume with "
        f"--session {session_id} --approve all|none",
        file=sys.stderr,
    )
    return EXIT_AWAITING_APPROVAL


async def _decide(
    pending: Sequence[ApprovalRequestContent],
    mode: str,
    token: CancellationToken,
    agent: Any = None,
) -> list[ToolApprovalResponse] | None:
    """The decisions `mode` gives; asked on the terminal for `ask` (None: nobody answered,
    no terminal, end of input, or Ctrl-C, which also cancels `token`)."""
    if mode == "all":
        return [ToolApprovalResponse(call_id=p.call_id, approved=True) for p in pending]
    if mode == "none":
        return [
            ToolApprovalResponse(
                call_id=p.call_id, approved=False, reason="denied by --approve none"
            )
            for p in pending
        ]
    if not sys.stdin.isatty():
        return None
    from raf.cli._render import approval_prompt, describe_call

    out: list[ToolApprovalResponse] = []
    for request in pending:
        block = approval_prompt(request, agent)
        sys.stderr.write(f"{block}\napprove {describe_call(request)}? [y/N] ")
        sys.stderr.flush()
        answer = await _read_line(token)
        if answer is None:
            sys.stderr.write("\n")
            return None
        if answer.strip().lower() in ("y", "yes"):
            out.append(ToolApprovalResponse(call_id=request.call_id, approved=True))
            continue
        sys.stderr.write("reason (optional): ")
        sys.stderr.flush()
        reason = await _read_line(token)
        if reason is None:
            sys.stderr.write("\n")
            return None
        out.append(
            ToolApprovalResponse(
                call_id=request.call_id, approved=False, reason=reason.strip() or None
            )
        )
    return out


async def _read_line(token: CancellationToken) -> str | None:
    """A line typed on the terminal, read when it is there (no thread left blocked), so
    Ctrl-C ends the wait at once; None at end of input or when `token` is cancelled."""
    loop = asyncio.get_running_loop()
    try:
        fd = sys.stdin.fileno()
        line: asyncio.Future[str] = loop.create_future()

        def readable() -> None:
            if not line.done():
                line.set_result(sys.stdin.readline())

        loop.add_reader(fd, readable)
    except (NotImplementedError, OSError, ValueError):  # no selectable stdin: a thread
        text = await asyncio.to_thread(sys.stdin.readline)
        return text or None
    cancelled = asyncio.ensure_future(token.wait())
    try:
        waiters: list[asyncio.Future[Any]] = [line, cancelled]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        loop.remove_reader(fd)
        cancelled.cancel()
    if not line.done() or token.cancelled:
        return None
    return line.result() or None
