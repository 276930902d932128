"""The wiki store: spaces (folders) of typed Markdown pages with validated front matter.

Layout under the wiki directory:

    <space>/<slug>.md          a page: YAML front matter (title, type, fields) + body
    _schemas/<type>.json|yaml  JSON Schema for the front matter of pages of that type
    .history/<space>/<slug>/   earlier versions, one file per change (never pruned)

Links between pages are written `[[Title]]`, `[[slug]]`, `[[space/slug]]` or
`[[target|label]]`. All methods block; the tools call them from a worker thread.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raf.core.bounded_parse import DocumentLimitError, load_yaml
from raf.core.errors import ConfigurationError, MissingExtraError
from raf.core.private_files import private_dir
from raf.core.schema_refs import schema_validator
from raf.tools.scope.confined import ConfinedFolder, ConfinedPathError

LINK = re.compile(r"\[\[([^\[\]|]+)(?:\|[^\[\]]*)?\]\]")
_SLUG_UNSAFE = re.compile(r"[^a-z0-9]+")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
DEFAULT_SPACE = "main"
DEFAULT_TYPE = "page"
MAX_PAGE_BYTES = 2_000_000
"""Largest page (or schema) file read."""
log = logging.getLogger(__name__)


class WikiError(ConfigurationError):
    """A wiki request cannot be done: unknown page, invalid front matter, bad name."""


def slugify(title: str) -> str:
    slug = _SLUG_UNSAFE.sub("-", title.lower()).strip("-")
    return slug[:64] or "page"


def _yaml() -> Any:
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover
        raise MissingExtraError("the wiki", "wiki", "yaml") from exc
    return yaml


@dataclass(kw_only=True, slots=True)
class Page:
    """One wiki page."""

    space: str
    slug: str
    title: str
    type: str = DEFAULT_TYPE
    fields: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    updated: float = 0.0

    @property
    def ref(self) -> str:
        return f"{self.space}/{self.slug}"

    @property
    def links(self) -> list[str]:
        """Link targets as written, in order, without duplicates."""
        return list(dict.fromkeys(m.group(1).strip() for m in LINK.finditer(self.body)))

    def front_matter(self) -> dict[str, Any]:
        return {"title": self.title, "type": self.type, **self.fields}

    def render(self) -> str:
        meta = _yaml().safe_dump(self.front_matter(), sort_keys=False, allow_unicode=True)
        return f"---\n{meta}---\n\n{self.body.strip()}\n"


def parse_page(text: str, *, space: str, slug: str) -> Page:
    """A page from its file text; a file without front matter is an untyped page."""
    meta: dict[str, Any] = {}
    body = text
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end != -1:
            yaml = _yaml()
            try:
                loaded = load_yaml(text[3:end], file=f"{space}/{slug}") or {}
            except DocumentLimitError as exc:
                raise WikiError(f"front matter of {exc}") from exc
            except yaml.YAMLError as exc:
                raise WikiError(f"front matter of {space}/{slug} is not valid YAML: {exc}") from exc
            if not isinstance(loaded, dict):
                raise WikiError(f"front matter of {space}/{slug} is not a mapping")
            meta = loaded
            body = text[end + 4 :].lstrip("\n")
    title = str(meta.pop("title", slug.replace("-", " ").capitalize()))
    kind = str(meta.pop("type", DEFAULT_TYPE))
    return Page(space=space, slug=slug, title=title, type=kind, fields=meta, body=body)


class Wiki:
    """Read, search, link and change pages; every write is validated and versioned."""

    def __init__(
        self,
        directory: str | Path,
        *,
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        default_space: str = DEFAULT_SPACE,
    ) -> None:
        self.root = Path(directory)
        private_dir(self.root)
        self.folder = ConfinedFolder(self.root, label="wiki folder")
        """Every page name is resolved through it: a symlink never leads out of the wiki."""
        self.default_space = default_space
        self._schemas: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (schemas or {}).items()}
        self._lock = threading.RLock()
        self._schemas.update(
            {k: v for k, v in self._schema_files().items() if k not in self._schemas}
        )
        self._check_schemas()
        self.broken: dict[str, str] = {}
        """Pages `pages()` left out because their file cannot be read, ref → why."""

    # -- schemas -------------------------------------------------------------------------

    def _schema_files(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        yaml = _yaml()
        for name in self.folder.files("_schemas", suffixes=frozenset({".json", ".yaml", ".yml"})):
            path = self.root / name
            if name.count("/") == 1:
                try:
                    text = self.folder.read_text(name, max_bytes=MAX_PAGE_BYTES)
                    loaded = load_yaml(text, file=str(path))
                except (
                    OSError,
                    UnicodeDecodeError,
                    ConfinedPathError,
                    yaml.YAMLError,
                    DocumentLimitError,
                ) as exc:
                    raise WikiError(f"schema {path} cannot be read: {exc}") from exc
                if not isinstance(loaded, dict):
                    raise WikiError(f"schema {path} is not a JSON Schema object")
                out[path.stem] = loaded
        return out

    def _check_schemas(self) -> None:
        """Refuse a schema that is not valid JSON Schema now, not at the first write."""
        try:
            import jsonschema
        except ImportError as exc:  # pragma: no cover
            raise MissingExtraError("wiki page validation", "wiki", "jsonschema") from exc
        for kind, schema in self._schemas.items():
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as exc:
                where = "/".join(str(p) for p in exc.absolute_path) or "top level"
                raise WikiError(
                    f"the schema of page type {kind!r} ({self.root / '_schemas'} or schemas=) "
                    f"is not valid JSON Schema at {where}: {exc.message}"
                ) from exc
            self._validator(kind, schema)

    @property
    def schemas(self) -> dict[str, dict[str, Any]]:
        return dict(self._schemas)

    def validate(self, page: Page) -> list[str]:
        """Problems with a page's front matter against its type's schema (none if valid)."""
        problems: list[str] = []
        if not page.title.strip():
            problems.append("title must not be empty")
        schema = self._schemas.get(page.type)
        if schema is None:
            if self._schemas and page.type != DEFAULT_TYPE:
                known = ", ".join(sorted(self._schemas))
                problems.append(f"unknown page type {page.type!r}; known types: {known}")
            return problems
        validator = self._validator(page.type, schema)
        for error in sorted(validator.iter_errors(page.front_matter()), key=str):
            where = "/".join(str(p) for p in error.absolute_path) or "front matter"
            problems.append(f"{where}: {error.message}")
        return problems

    def _validator(self, kind: str, schema: dict[str, Any]) -> Any:
        """A validator that resolves the schema's refs only inside it (a schema file may
        have been written by a sandboxed command: its refs must not make raf fetch)."""
        try:
            return schema_validator(
                schema, where=f"page type {kind!r}", feature="wiki page validation", extra="wiki"
            )
        except ConfigurationError as exc:
            raise WikiError(f"the schema of {exc.key_path}: {exc.message}") from None

    # -- reading ---------------------------------------------------------------------------

    def spaces(self) -> list[str]:
        """Space folders (real folders only: a linked folder is not a space)."""
        return [n for n in self.folder.folders() if not n.startswith((".", "_"))]

    def _page_names(self, space: str) -> list[str]:
        """Slugs of the page files directly in a space (regular files, never links)."""
        found = self.folder.files(space, suffixes=frozenset({".md"}))
        return [n.split("/", 1)[1][:-3] for n in found if n.count("/") == 1]

    def _path(self, space: str, slug: str) -> Path:
        return self.root / space / f"{slug}.md"

    def split_ref(self, ref: str) -> tuple[str, str]:
        """`space/slug`, `slug` (default space) or a title → (space, slug)."""
        ref = ref.strip().removesuffix(".md")
        if "/" in ref:
            space, _, rest = ref.partition("/")
            return space.strip(), slugify(rest)
        return self.default_space, slugify(ref)

    def pages(self, space: str | None = None) -> list[Page]:
        """Every readable page; one that cannot be read is logged, listed in `broken`
        and left out, so one bad file does not take the whole wiki down."""
        out: list[Page] = []
        for name in [space] if space else self.spaces():
            if not _NAME.match(name) or not self.folder.is_dir(name):
                continue
            for slug in self._page_names(name):
                ref = f"{name}/{slug}"
                try:
                    out.append(self._load(name, slug))
                except WikiError as exc:
                    if self.broken.get(ref) != str(exc):
                        log.warning("wiki %s: page left out: %s", self.root, exc)
                    self.broken[ref] = str(exc)
                    continue
                self.broken.pop(ref, None)
        return out

    def _load(self, space: str, slug: str) -> Page:
        path = self._path(space, slug)
        name = f"{space}/{slug}.md"
        try:
            data = self.folder.read_bytes(name, max_bytes=MAX_PAGE_BYTES)
            if len(data) > MAX_PAGE_BYTES:
                raise WikiError(f"page {space}/{slug} is larger than {MAX_PAGE_BYTES} bytes")
            text = data.decode("utf-8")
            st = self.folder.stat(name)
            updated = st.st_mtime if st is not None else 0.0
        except ConfinedPathError as exc:
            raise WikiError(f"page {space}/{slug} is refused: {exc}") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise WikiError(f"page {space}/{slug} ({path}) cannot be read: {exc}") from exc
        page = parse_page(text, space=space, slug=slug)
        page.updated = updated
        return page

    def resolve(self, target: str, *, from_space: str | None = None) -> Page | None:
        """The page a link target or reference names, or None (also for a space name
        that is not one: `../x` never leaves the wiki)."""
        if "/" in target:
            space, slug = self.split_ref(target)
            if not _NAME.match(space) or not _NAME.match(slug):
                return None
            return self._load(space, slug) if self._exists(space, slug) else None
        slug = slugify(target)
        spaces = [from_space] if from_space else []
        spaces += [s for s in [self.default_space, *self.spaces()] if s not in spaces]
        for space in spaces:
            if _NAME.match(space) and self._exists(space, slug):
                return self._load(space, slug)
        wanted = target.strip().lower()
        for page in self.pages():
            if page.title.lower() == wanted:
                return page
        return None

    def read(self, ref: str) -> Page:
        page = self.resolve(ref)
        if page is None:
            raise WikiError(f"no wiki page {ref!r}")
        return page

    def signature(self) -> tuple[tuple[str, int, int], ...]:
        """Changes whenever a page is added, removed or modified (for caches)."""
        items: list[tuple[str, int, int]] = []
        for space in self.spaces():
            for slug in self._page_names(space):
                st = self.folder.stat(f"{space}/{slug}.md")
                if st is not None:
                    items.append((f"{space}/{slug}", st.st_mtime_ns, st.st_size))
        return tuple(sorted(items))

    def _exists(self, space: str, slug: str) -> bool:
        """True when the page file is there; a name that leads outside is refused."""
        try:
            st = self.folder.stat(f"{space}/{slug}.md")
        except ConfinedPathError as exc:
            raise WikiError(f"page {space}/{slug} is refused: {exc}") from exc
        except OSError:
            return False
        return st is not None

    # -- writing ---------------------------------------------------------------------------

    def _check_names(self, space: str, slug: str) -> None:
        if not _NAME.match(space):
            raise WikiError(f"space name {space!r}: use lower-case letters, digits and '-'")
        if not _NAME.match(slug):
            raise WikiError(f"page slug {slug!r}: use lower-case letters, digits and '-'")

    def _write(self, page: Page) -> None:
        problems = self.validate(page)
        if problems:
            raise WikiError(f"page {page.ref} ({page.type}) is not valid: " + "; ".join(problems))
        name = f"{page.space}/{page.slug}.md"
        try:
            self.folder.write_text(name, page.render())
            st = self.folder.stat(name)
        except ConfinedPathError as exc:
            raise WikiError(f"page {page.ref} is refused: {exc}") from exc
        except OSError as exc:
            raise WikiError(f"page {page.ref} cannot be written: {exc}") from exc
        page.updated = st.st_mtime if st is not None else 0.0

    def _archive(self, space: str, slug: str, note: str) -> None:
        name = f"{space}/{slug}.md"
        if not self.folder.is_file(name):
            return
        folder = f".history/{space}/{slug}"
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        n = len(self._history_names(folder)) + 1
        note_line = f"<!-- change: {note} -->\n" if note else ""
        try:
            old = self.folder.read_text(name, max_bytes=MAX_PAGE_BYTES)
            self.folder.write_text(f"{folder}/{n:05d}-{stamp}.md", note_line + old)
        except ConfinedPathError as exc:
            raise WikiError(f"page {space}/{slug} is refused: {exc}") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise WikiError(f"history of {space}/{slug} cannot be written: {exc}") from exc

    def _history_names(self, folder: str) -> list[str]:
        """The version files of one page's history folder (hidden folder: listed by name)."""
        try:
            found = self.folder.files(folder, suffixes=frozenset({".md"}), hidden=True)
        except ConfinedPathError as exc:
            raise WikiError(f"{folder} is refused: {exc}") from exc
        except OSError:
            return []
        return [n for n in found if n.count("/") == 3 and not n.rsplit("/", 1)[1].startswith(".")]

    def create(
        self,
        title: str,
        body: str = "",
        *,
        space: str | None = None,
        type: str = DEFAULT_TYPE,
        fields: Mapping[str, Any] | None = None,
        slug: str | None = None,
    ) -> Page:
        """A new page; refused when the slug exists or the front matter is invalid."""
        page = Page(
            space=space or self.default_space,
            slug=slug or slugify(title),
            title=title,
            type=type,
            fields=dict(fields or {}),
            body=body,
        )
        self._check_names(page.space, page.slug)
        with self._lock:
            if self._exists(page.space, page.slug):
                raise WikiError(f"page {page.ref} already exists: update it instead")
            self._write(page)
        return page

    def update(
        self,
        ref: str,
        *,
        body: str | None = None,
        title: str | None = None,
        fields: Mapping[str, Any] | None = None,
        type: str | None = None,
        note: str = "",
    ) -> Page:
        """Change a page (fields are merged; a None value removes a field), keeping history."""
        with self._lock:
            page = self.read(ref)
            if body is not None:
                page.body = body
            if title is not None:
                page.title = title
            if type is not None:
                page.type = type
            for key, value in (fields or {}).items():
                if key in ("title", "type"):
                    raise WikiError(f"set {key!r} with its own argument, not in fields")
                if value is None:
                    page.fields.pop(key, None)
                else:
                    page.fields[key] = value
            problems = self.validate(page)
            if problems:
                raise WikiError(
                    f"page {page.ref} ({page.type}) is not valid: " + "; ".join(problems)
                )
            self._archive(page.space, page.slug, note)
            self._write(page)
        return page

    def history(self, ref: str) -> list[str]:
        """Earlier versions of a page, oldest first (the file texts)."""
        page = self.read(ref)
        folder = f".history/{page.space}/{page.slug}"
        out: list[str] = []
        for name in self._history_names(folder):
            try:
                out.append(self.folder.read_text(name, max_bytes=MAX_PAGE_BYTES))
            except ConfinedPathError as exc:
                raise WikiError(f"history of {page.ref} is refused: {exc}") from exc
        return out

    def __repr__(self) -> str:
        return f"<Wiki {str(self.root)!r}>"
