"""The direction of dependencies: each raf package imports only the packages below it
in LAYERS, core imports no other raf package, and optional dependencies are imported
only inside the modules that need them."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.import_graph import ModuleGraph, module_graph, parsed

SRC = Path(__file__).resolve().parents[1] / "src" / "raf"
OPTIONAL = {
    "openai",
    "anthropic",
    "mcp",
    "httpx",
    "yaml",
    "xllamacpp",
    "jsonschema",
    "pypdf",
    "opentelemetry",
    "dbos",
    "sqlalchemy",
}


# Bottom to top. A package imports only packages before it in this list; an import
# anywhere in a module counts (module level, inside functions, under TYPE_CHECKING).
LAYERS = [
    "core",  # types and protocols: the standard library and pydantic only
    "testing",  # scripted clients for users' tests: built on core alone
    "stores",  # session and checkpoint stores, the PostgreSQL pool
    "clients",  # chat clients and the model-string registry
    "agent",  # Agent, AgentBuilder, the run
    "observability",  # spans and metrics as middleware around agents
    "tools",  # built-in tools
    "context",  # context providers
    "workflow",  # the graph engine: builder, runner, executors, edges, checkpoints
    "orchestrations",  # agents on one task by a fixed pattern, built on the agent API
    "decl",  # declarative agents and workflows, compiled to the layers below
    "durable",  # runs and workflows as DBOS workflows
    "evals",  # datasets, evaluators and reports over agents and workflows
    "serve",  # HTTP, A2A, ACP, AG-UI, MCP server, web UI
    "cli",  # the `raf` program
]


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "raf"


def test_every_package_has_a_place_in_the_layers() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(LAYERS)


def upward_imports(graph: ModuleGraph) -> list[str]:
    """Every import of a package above the importer's own in LAYERS."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = []
    for module, found in graph.imports.items():
        here = _layer(module)
        if here == "raf":
            continue  # the public face gathers names from every layer
        for imp in found:
            there = _layer(imp.target)
            if there == "_version":
                continue  # raf._version: one constant in a module of its own, below all
            if there == "raf":
                upward.append(f"{module}:{imp.line} takes {imp.names} from raf")
            elif rank[there] > rank[here]:
                upward.append(f"{module}:{imp.line} imports {imp.target} ({there} is above {here})")
    return upward


def test_no_package_imports_one_above_it() -> None:
    assert upward_imports(module_graph()) == []


def test_an_upward_import_is_found_in_a_function_under_type_checking_and_through_raf(
    tmp_path: Path,
) -> None:
    files = {
        "__init__.py": (
            "from typing import TYPE_CHECKING\nfrom raf._version import __version__\n"
            "if TYPE_CHECKING:\n    from raf.workflow.flow import Flow\n"
        ),
        "_version.py": "__version__ = '1'\n",
        "core/__init__.py": "",
        "core/low.py": (
            "def f():\n    from ..agent import run\nfrom raf._version import __version__\n"
        ),
        "agent/__init__.py": "",
        "agent/run.py": "from raf.core import low\nfrom raf import Agent\n",
        "stores/__init__.py": "",
        "stores/keep.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import raf.workflow.flow\n"
        ),
        "workflow/__init__.py": "",
        "workflow/flow.py": "from raf import Flow\nclass Flow: ...\n",
        "tools/__init__.py": "",
        "tools/t.py": "from raf import Flow\n",
    }
    for name, text in files.items():
        path = tmp_path / "raf" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert upward_imports(module_graph(tmp_path)) == [
        "raf.agent.run:2 takes ('Agent',) from raf",
        "raf.core.low:2 imports raf.agent.run (agent is above core)",
        "raf.stores.keep:3 imports raf.workflow.flow (workflow is above stores)",
        "raf.tools.t:1 imports raf.workflow.flow (workflow is above tools)",
    ]


def _imports(path: Path, *, top_level_only: bool = False) -> set[str]:
    tree = parsed(path)
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_no_module_imports_the_package_face() -> None:
    """`raf/__init__.py` gathers names from every layer, so importing it from inside raf
    climbs over all of them; the version, the one thing modules took from it, is read
    from `raf._version`."""
    face = SRC / "__init__.py"
    offenders = sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if path != face and "raf" in _imports(path)
    )
    assert offenders == []


def test_core_imports_no_other_raf_package() -> None:
    offenders = {
        str(path.relative_to(SRC)): sorted(
            m for m in _imports(path) if m.startswith("raf.") and not m.startswith("raf.core")
        )
        for path in (SRC / "core").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_core_agent_and_testing_import_no_optional_dependency_at_module_level() -> None:
    for layer in ("core", "agent", "testing"):
        for path in (SRC / layer).rglob("*.py"):
            top = {m.split(".")[0] for m in _imports(path, top_level_only=True)}
            assert not top & OPTIONAL, f"{path.relative_to(SRC)} imports {top & OPTIONAL}"


def test_only_observability_imports_opentelemetry_and_nothing_below_it_imports_it() -> None:
    for path in SRC.rglob("*.py"):
        found = _imports(path)
        where = path.relative_to(SRC)
        if where.parts[0] != "observability":
            assert not any(m.split(".")[0] == "opentelemetry" for m in found), where
        if where.parts[0] in ("core", "clients", "agent", "tools", "context"):
            top = _imports(path, top_level_only=True)
            assert not any(m.startswith("raf.observability") for m in top), where


def test_serving_is_above_tools_and_agent() -> None:
    """Nothing in tools/ or agent/ imports serve/ (serving an agent is a layer above it),
    and the MCP server lives in serve/, not among the tools."""
    for layer in ("tools", "agent", "core", "clients", "context"):
        for path in (SRC / layer).rglob("*.py"):
            up = sorted(m for m in _imports(path) if m == "raf.serve" or m.startswith("raf.serve."))
            assert not up, f"{path.relative_to(SRC)} imports {up}"
    assert (SRC / "serve" / "mcp" / "server.py").exists()
    assert not (SRC / "tools" / "mcp" / "server.py").exists()


def test_only_the_durable_layer_imports_dbos() -> None:
    offenders = sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if path.parent.name != "durable"
        and {m.split(".")[0] for m in _imports(path)} & {"dbos", "sqlalchemy"}
    )
    assert offenders == []
