"""`raf eval DATASET [AGENT…]`: run a dataset on agents, print the table, write reports,
and fail CI when a case regressed or the pass rate is too low.

Exit codes: 0 the gates held; 1 an error (a bad dataset, agent or report); 2 a usage
error; 3 a gate failed (a case regressed against --baseline, or the pass rate is under
--min-pass).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from raf.cli.arguments import positive

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_GATE = 3

EPILOG = """exit codes:
  0    every gate held (failing cases alone do not fail the command)
  1    an error: the dataset, an agent or the baseline has problems
  2    usage error (bad command line)
  3    a gate failed: a case regressed against --baseline, or the pass rate
       is under --min-pass
"""


def _share(text: str) -> float:
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share between 0 and 1 (or 0%-100%)")
    return value


_positive = positive()


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "eval",
        help="run an eval dataset on agents and report (non-zero exit on a regression)",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dataset", nargs="?", metavar="DATASET", help="dataset (YAML or JSON)")
    parser.add_argument(
        "agents",
        nargs="*",
        metavar="AGENT",
        help="agent or workflow documents to evaluate (default: the default assistant)",
    )
    parser.add_argument("--model", metavar="SPEC", help="model for the agents (overrides theirs)")
    parser.add_argument("--repeat", type=_positive, default=1, metavar="K", help="runs per case")
    parser.add_argument(
        "--concurrency", type=_positive, default=4, metavar="N", help="cases at once (default 4)"
    )
    parser.add_argument("--tag", action="append", default=[], help="only cases with this tag")
    parser.add_argument("--report", metavar="FILE.html", help="write an HTML report")
    parser.add_argument("--json", metavar="FILE.json", help="write the JSON report")
    parser.add_argument(
        "--baseline", metavar="FILE.json", help="an earlier JSON report: fail on a regression"
    )
    parser.add_argument(
        "--min-pass",
        type=_share,
        metavar="X",
        help="fail when the pass rate is under X (0.9, 90%%)",
    )
    parser.add_argument(
        "--cassette",
        metavar="FILE.json",
        help="replay model responses from FILE, recording those it lacks (see --replay-only)",
    )
    parser.add_argument(
        "--replay-only",
        action="store_true",
        help="with --cassette: never call the model (a missing response is an error)",
    )
    parser.add_argument(
        "--no-save",
        action="store_true",
        help="do not keep the run in the eval runs folder ($RAF_EVALS_DIR) the web UI lists",
    )
    parser.add_argument(
        "--schema", action="store_true", help="print the JSON Schema of dataset files and exit"
    )
    from raf.cli.tool_option import add_tools_option

    add_tools_option(parser)
    parser.add_argument(
        "--bfcl",
        metavar="CATEGORIES",
        help="instead of a dataset: BFCL's categories, comma-separated (simple_python, "
        "multiple, irrelevance; live_* to check), scored by BFCL's AST match; needs bfcl-eval",
    )
    parser.add_argument(
        "--limit",
        type=_positive,
        metavar="N",
        help="with --bfcl: N items per category, evenly spaced (default: all)",
    )
    parser.add_argument(
        "--offset",
        type=int,
        default=0,
        metavar="K",
        help="with --bfcl --limit: move each pick K items on, for a held-out sample",
    )
    parser.set_defaults(handler=eval_command, eval_parser=parser)


def eval_command(args: argparse.Namespace) -> int:
    if args.schema:
        from raf.evals.dataset import dataset_schema

        print(json.dumps(dataset_schema(), indent=2))
        return EXIT_OK
    if args.bfcl:
        return _bfcl(args)
    if args.limit is not None or args.offset:
        args.eval_parser.error("--limit and --offset go with --bfcl")
    if not args.dataset:
        args.eval_parser.error("DATASET is required (or --schema)")
    if args.replay_only and not args.cassette:
        args.eval_parser.error("--replay-only needs --cassette")
    for file in (args.dataset, *args.agents):
        if Path(file).suffix.lower() == ".py":
            print(python_file_refused(file, dataset=file == args.dataset), file=sys.stderr)
            return EXIT_USAGE
    from raf.cli.tool_option import loaded_tools

    if loaded_tools(args.tools) is None:
        return EXIT_USAGE
    return asyncio.run(_eval(args))


def _bfcl(args: argparse.Namespace) -> int:
    """BFCL's categories on the --model (the default model without one): a table each."""
    from raf.cli._agents import resolve_client
    from raf.evals.bfcl.__main__ import categories, measure, sample_problem

    if args.dataset or args.agents:
        args.eval_parser.error("--bfcl takes no DATASET or AGENT: the model is --model")
    try:
        names = categories(args.bfcl)
    except argparse.ArgumentTypeError as exc:
        args.eval_parser.error(str(exc))
    problem = sample_problem(names, args.limit, args.offset)
    if problem:
        args.eval_parser.error(problem)
    client = resolve_client(args.model)
    name = args.model or str(getattr(client, "model", "") or "local")
    asyncio.run(measure(client, names, args.limit, args.json, name, args.offset))
    return EXIT_OK


def python_file_refused(file: str, *, dataset: bool) -> str:
    """What `raf eval` says when given a Python file: what it takes, and where an agent
    written in Python is evaluated instead."""
    what = "the dataset" if dataset else "an agent"
    return (
        f"raf: {file} is Python, given as {what}; raf eval takes a dataset file (YAML or "
        "JSON) and agent or workflow documents (YAML, JSON or TOML): "
        "raf eval DATASET.yaml [AGENT.yaml ...]. For an agent built in Python, run "
        "`await Dataset.from_file('DATASET.yaml').evaluate(agent)` in your code, or "
        "evaluate it in pytest (raf_eval_target = module:agent in the pytest ini)"
    )


def _client(args: argparse.Namespace) -> Any:
    """The chat client to give the agents: the --model, behind a cassette when asked;
    None to leave each document its own model."""
    from raf.cli._agents import resolve_client

    if not args.cassette:
        return resolve_client(args.model) if args.model else None
    from raf.evals.cassette import CassetteChatClient

    if args.replay_only:
        return CassetteChatClient(args.cassette, mode="replay")
    return CassetteChatClient(args.cassette, resolve_client(args.model), mode="once")


def _agents(args: argparse.Namespace) -> list[Any]:
    from raf.cli._agents import DEFAULT_INSTRUCTIONS, build_agent

    client = _client(args)
    if not args.agents:
        if client is None:
            return [build_agent(None, args.model, None)]
        from raf.agent.builder import AgentBuilder

        return [
            AgentBuilder("assistant")
            .with_instructions(DEFAULT_INSTRUCTIONS)
            .with_chat_client(client)
            .build()
        ]
    built = []
    for file in args.agents:
        from raf.decl.workflow import is_workflow_file

        if client is None or is_workflow_file(file):
            built.append(build_agent(file, args.model, None, args.tools))
            continue
        from raf.decl.agent.builder import DeclAgentBuilder
        from raf.decl.agent.tool_bindings import load_specs
        from raf.decl.bind_document import bind_agent_tools, document_bindings

        builder = DeclAgentBuilder().from_file(file).with_chat_client(client)
        bind_agent_tools(builder, document_bindings(file, load_specs(args.tools)))
        built.append(builder.build())
    return built


async def _eval(args: argparse.Namespace) -> int:
    from raf.cli._agents import close_agent
    from raf.cli.terminal_text import terminal_safe
    from raf.core.private_files import atomic_write_text
    from raf.evals.compare import compare
    from raf.evals.dataset import Dataset
    from raf.evals.html import report_html
    from raf.evals.report import EvalReport
    from raf.evals.store import EvalRunStore

    dataset = Dataset.from_file(args.dataset)
    if args.tag:
        dataset = dataset.select(tags=args.tag)
        if not dataset.cases:
            raise SystemExit(f"raf: error: no case of {args.dataset} has tag {args.tag}")
    baseline = EvalReport.read_json(args.baseline) if args.baseline else None
    agents = _agents(args)
    gate_failed = False
    several = len(agents) > 1
    for index, agent in enumerate(agents):
        try:
            report = await dataset.evaluate(
                agent, concurrency=args.concurrency, repeat=args.repeat, progress=None
            )
        finally:
            await close_agent(agent)
        if args.model:
            report.name = f"{report.target} on {args.model}"
        # a judge's reasons and a run's errors are a model's text: print them as text only
        print(terminal_safe(f"== {report.name}" if several else f"{dataset.name} on {report.name}"))
        print(terminal_safe(report.table()))
        comparison = compare(baseline, report) if baseline is not None else None
        if comparison is not None:
            print(f"-- against {args.baseline}")
            print(terminal_safe(comparison.table()))
            if comparison.has_regressions:
                gate_failed = True
        if args.min_pass is not None and report.pass_rate < args.min_pass:
            print(
                f"raf: pass rate {report.pass_rate:.1%} is under --min-pass {args.min_pass:.1%}",
                file=sys.stderr,
            )
            gate_failed = True
        suffix = f"-{index + 1}" if several else ""
        if args.json:
            report.write_json(_numbered(args.json, suffix))
        if args.report:
            path = _numbered(args.report, suffix)
            atomic_write_text(path, report_html(report, comparison=comparison))  # private
            print(f"report: {path}")
        if not args.no_save:
            store = EvalRunStore()
            print(f"run saved as {store.save(report)} in {store.folder}")
    return EXIT_GATE if gate_failed else EXIT_OK


def _numbered(path: str, suffix: str) -> Path:
    target = Path(path)
    return target.with_name(f"{target.stem}{suffix}{target.suffix}") if suffix else target
