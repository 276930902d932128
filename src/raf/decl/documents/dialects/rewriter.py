"""Edits a parsed document in place, keeping every key's position and saying what it did:
moved keys keep their line and column, dropped keys leave a warning that names them."""

from __future__ import annotations

from typing import Any

from raf.decl.documents.source import Document, KeyPath, format_path


class Rewriter:
    """Renames, moves and drops keys of `doc.data`; positions follow the values."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc

    def at(self, path: KeyPath) -> Any:
        """The value at `path`, or None when there is none."""
        current: Any = self.doc.data
        for part in path:
            in_dict = isinstance(current, dict) and isinstance(part, str) and part in current
            in_list = isinstance(current, list) and isinstance(part, int) and part < len(current)
            if not (in_dict or in_list):
                return None
            current = current[part]
        return current

    def mapping(self, path: KeyPath) -> dict[str, Any] | None:
        value = self.at(path)
        return value if isinstance(value, dict) else None

    def warn(self, path: KeyPath, message: str, *, key: bool = True) -> None:
        self.doc.warnings.append(self.doc.problem(path, message, key=key))

    def rename(self, parent: KeyPath, old: str, new: str, *, why: str | None = None) -> bool:
        """Read key `old` of the mapping at `parent` as `new`; when both are set, `new`
        wins and a warning says so. `why` adds a warning even when the rename is clean."""
        owner = self.mapping(parent)
        if owner is None or old not in owner or old == new:
            return False
        if new in owner:
            self.warn(
                (*parent, old),
                f"both {new!r} and {old!r} are set (two spellings of one setting): "
                f"{new!r} wins, {old!r} is ignored",
            )
            del owner[old]
            return False
        self.move((*parent, old), (*parent, new))
        if why:
            self.warn((*parent, old), why)
        return True

    def move(self, source: KeyPath, target: KeyPath, value: Any = ...) -> bool:
        """Move the value at `source` (or put `value`) to `target`, creating mappings on
        the way; positions under `source` are copied to `target`. Nothing moves when
        something that is not a mapping stands in the way (its own problem is reported)."""
        current: Any = self.doc.data
        made: list[int] = []
        for index, part in enumerate(target[:-1]):
            following = current.get(part) if isinstance(current, dict) else current[part]
            if following is None:
                made.append(index)
            elif not isinstance(following, dict | list):
                return False
            current = following if following is not None else {}
        owner = self.mapping(source[:-1])
        if value is ...:
            value = owner.pop(str(source[-1])) if owner is not None else None
        elif owner is not None:
            owner.pop(str(source[-1]), None)
        current = self.doc.data
        for index, part in enumerate(target[:-1]):
            if index in made:
                current[part] = {}
                self.relocate(source, target[: index + 1], exact=True)
            current = current[part]
        current[target[-1]] = value
        self.relocate(source, target)
        return True

    def relocate(self, source: KeyPath, target: KeyPath, *, exact: bool = False) -> None:
        """Copy the positions of `source` (and of everything under it) to `target`."""
        doc = self.doc
        for table in (doc.values, doc.keys):
            for path, where in list(table.items()):
                if path == source or (not exact and path[: len(source)] == source):
                    table.setdefault((*target, *path[len(source) :]), where)
        for path in list(doc.from_env):
            if path[: len(source)] == source:
                doc.from_env.add((*target, *path[len(source) :]))

    def drop(self, path: KeyPath, why: str) -> None:
        """Remove the key at `path` with a warning that names it and says why."""
        owner = self.mapping(path[:-1])
        if owner is None or path[-1] not in owner:
            return
        self.warn(path, f"{format_path(path[-1:])!r} {why}")
        del owner[str(path[-1])]

    def replace_list(self, path: KeyPath, items: list[tuple[KeyPath | None, Any]]) -> None:
        """Replace the list at `path` by `items` (each with the path it came from, whose
        positions it takes)."""
        doc = self.doc
        saved = {
            table_name: {
                p: w for p, w in getattr(doc, table_name).items() if p[: len(path)] == path
            }
            for table_name in ("values", "keys")
        }
        env = {p for p in doc.from_env if p[: len(path)] == path}
        owner = self.mapping(path[:-1])
        if owner is None:
            return
        owner[str(path[-1])] = [value for _, value in items]
        for table_name, entries in saved.items():
            table = getattr(doc, table_name)
            for p in entries:
                if len(p) > len(path):
                    table.pop(p, None)
            for index, (origin, _) in enumerate(items):
                if origin is None:
                    continue
                for p, where in entries.items():
                    if p[: len(origin)] == origin:
                        table[(*path, index, *p[len(origin) :])] = where
        doc.from_env -= {p for p in env if len(p) > len(path)}
        for index, (origin, _) in enumerate(items):
            if origin is not None:
                for p in env:
                    if p[: len(origin)] == origin:
                        doc.from_env.add((*path, index, *p[len(origin) :]))
