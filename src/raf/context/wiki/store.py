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
import os
import re
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raf.core.bounded_parse import DocumentLimitError, load_yaml
from raf.core.errors import ConfigurationError, MissingExtraError

LINK = re.compile(r"\[\[([^\[\]|]+)(?:\|[^\[\]]*)?\]\]")
_SLUG_UNSAFE = re.compile(r"[^a-z0-9]+")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
DEFAULT_SPACE = "main"
DEFAULT_TYPE = "page"
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
        self.root.mkdir(parents=True, exist_ok=True)
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
        folder = self.root / "_schemas"
        if not folder.is_dir():
            return out
        yaml = _yaml()
        for path in sorted(folder.iterdir()):
            if path.suffix in (".json", ".yaml", ".yml"):
                try:
                    loaded = load_yaml(path.read_text(encoding="utf-8"), file=str(path))
                except (OSError, UnicodeDecodeError, yaml.YAMLError, DocumentLimitError) as exc:
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
        try:
            import jsonschema
        except ImportError as exc:  # pragma: no cover
            raise MissingExtraError("wiki page validation", "wiki", "jsonschema") from exc
        validator = jsonschema.Draft202012Validator(schema)
        for error in sorted(validator.iter_errors(page.front_matter()), key=str):
            where = "/".join(str(p) for p in error.absolute_path) or "front matter"
            problems.append(f"{where}: {error.message}")
        return problems

    # -- reading ---------------------------------------------------------------------------

    def spaces(self) -> list[str]:
        return sorted(
            p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
        )

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
            folder = self.root / name
            if not folder.is_dir():
                continue
            for path in sorted(folder.glob("*.md")):
                ref = f"{name}/{path.stem}"
                try:
                    out.append(self._load(name, path.stem))
                except WikiError as exc:
                    if self.broken.get(ref) != str(exc):
                        log.warning("wiki %s: page left out: %s", self.root, exc)
                    self.broken[ref] = str(exc)
                    continue
                self.broken.pop(ref, None)
        return out

    def _load(self, space: str, slug: str) -> Page:
        path = self._path(space, slug)
        try:
            text = path.read_text(encoding="utf-8")
            updated = path.stat().st_mtime
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
            return self._load(space, slug) if self._path(space, slug).is_file() else None
        slug = slugify(target)
        spaces = [from_space] if from_space else []
        spaces += [s for s in [self.default_space, *self.spaces()] if s not in spaces]
        for space in spaces:
            if self._path(space, slug).is_file():
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
            for path in (self.root / space).glob("*.md"):
                st = path.stat()
                items.append((f"{space}/{path.stem}", st.st_mtime_ns, st.st_size))
        return tuple(sorted(items))

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
        path = self._path(page.space, page.slug)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".md")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(page.render())
        os.replace(tmp, path)
        page.updated = path.stat().st_mtime

    def _archive(self, space: str, slug: str, note: str) -> None:
        path = self._path(space, slug)
        if not path.is_file():
            return
        folder = self.root / ".history" / space / slug
        folder.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        n = len(list(folder.glob("*.md"))) + 1
        note_line = f"<!-- change: {note} -->\n" if note else ""
        (folder / f"{n:05d}-{stamp}.md").write_text(
            note_line + path.read_text(encoding="utf-8"), encoding="utf-8"
        )

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
            if self._path(page.space, page.slug).exists():
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
        folder = self.root / ".history" / page.space / page.slug
        if not folder.is_dir():
            return []
        return [p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.md"))]

    def __repr__(self) -> str:
        return f"<Wiki {str(self.root)!r}>"
