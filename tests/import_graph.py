"""The import graph of src/raf read from the source with `ast`: every import counts, at
module level, inside functions and under `TYPE_CHECKING`, relative ones resolved.

A package `__init__` that only gathers names from its modules (imports, `__all__`, a
lazy `__getattr__`) is a face, not a room: an import through it is counted as an import
of the module the name comes from. An `__init__` with code of its own is a module like
any other.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

_FACE_FUNCTIONS = {"__getattr__", "__dir__"}


@dataclass(kw_only=True, slots=True)
class Import:
    """One `import` statement's target, as written and as resolved to a module."""

    importer: str
    """The module that holds the statement."""
    target: str
    """The module (or face-resolved module) it reaches."""
    line: int
    """Where the statement is in the importer."""
    names: tuple[str, ...] = ()
    """For `from X import a, b`: the names taken (empty for a plain `import X`)."""


@dataclass(kw_only=True, slots=True)
class ModuleGraph:
    """Modules of src/raf by dotted name, and each one's imports of other raf modules."""

    files: dict[str, Path]
    faces: set[str]
    imports: dict[str, list[Import]] = field(default_factory=dict)

    def edges(self) -> dict[str, set[str]]:
        """Importer -> imported modules, faces left out (they are resolved through)."""
        return {
            m: {i.target for i in found if i.target != m and i.target not in self.faces}
            for m, found in self.imports.items()
        }


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The syntax tree of one source file, read once per test session."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _module_names(root: Path) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for path in sorted((root / "raf").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        files[".".join(parts)] = path
    return files


def _is_face(tree: ast.Module) -> bool:
    """Only imports, assignments, docstrings, `if`/`try` around imports, and a lazy
    `__getattr__`/`__dir__`: the package merely gathers names."""
    for node in tree.body:
        match node:
            case ast.Import() | ast.ImportFrom() | ast.Assign() | ast.AnnAssign():
                continue
            case ast.AugAssign() | ast.If() | ast.Try():
                continue
            case ast.Expr(value=ast.Constant()):
                continue
            case ast.FunctionDef(name=name) if name in _FACE_FUNCTIONS:
                continue
            case _:
                return False
    return True


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    parts = package[: len(package) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _owner(name: str, files: dict[str, Path]) -> str | None:
    """The longest known module that `name` starts with (`raf.x.y.Cls` -> `raf.x.y`)."""
    while name and name not in files:
        name = name.rpartition(".")[0]
    return name or None


@functools.cache
def module_graph(root: Path = SRC) -> ModuleGraph:
    """Read every module under `root`/raf and resolve its imports of raf modules (once per
    root and test session: callers must not change the graph)."""
    files = _module_names(root)
    trees = {m: parsed(p) for m, p in files.items()}
    faces = {m for m, p in files.items() if p.name == "__init__.py" and _is_face(trees[m])}
    # For each face: name -> module it is taken from (lazy maps mirror these under
    # TYPE_CHECKING, so the static imports say where every name lives).
    exported: dict[str, dict[str, str]] = {}
    for face in faces:
        names: dict[str, str] = {}
        for node in ast.walk(trees[face]):
            if isinstance(node, ast.ImportFrom):
                base = _base(face, True, node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    source = sub if sub in files else _owner(base, files)
                    if source is not None and source.startswith("raf"):
                        names[alias.asname or alias.name] = source
        exported[face] = names

    def through_faces(target: str, name: str | None, seen: frozenset[str] = frozenset()) -> str:
        while target in faces and name is not None and target not in seen:
            seen = seen | {target}
            source = exported[target].get(name)
            if source is None:
                return target
            target = source
        return target

    graph = ModuleGraph(files=files, faces=faces)
    for module, tree in trees.items():
        is_package = files[module].name == "__init__.py"
        found: list[Import] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    owner = _owner(alias.name, files)
                    if owner is not None and alias.name.split(".")[0] == "raf":
                        found.append(Import(importer=module, target=owner, line=node.lineno))
            elif isinstance(node, ast.ImportFrom):
                base = _base(module, is_package, node)
                if base.split(".")[0] != "raf":
                    continue
                owner = _owner(base, files)
                if owner is None:
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    target = sub if sub in files else through_faces(owner, alias.name)
                    found.append(
                        Import(
                            importer=module, target=target, line=node.lineno, names=(alias.name,)
                        )
                    )
        graph.imports[module] = found
    return graph


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative),
    each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(edges.get(start, ())))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(edges.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))
