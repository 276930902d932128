"""Document loaders for the knowledge index: Markdown, plain text, HTML and PDF."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from raf.core.errors import ConfigurationError, MissingExtraError
from raf.tools.scope.confined import ConfinedFolder

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx"})
TEXT_SUFFIXES = frozenset({".txt", ".text", ".rst", ".log", ".csv"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
PDF_SUFFIXES = frozenset({".pdf"})
SUPPORTED_SUFFIXES = MARKDOWN_SUFFIXES | TEXT_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES


@dataclass(kw_only=True, slots=True)
class Document:
    """The text of one source file and how it should be chunked."""

    source: str
    text: str
    kind: str = "text"
    """markdown | text | html | pdf; Markdown and HTML get the heading-aware chunker."""
    title: str | None = None


class _HtmlText(HTMLParser):
    """HTML → light Markdown: headings kept as `#`, scripts and styles dropped."""

    _BLOCKS = frozenset(
        {"p", "div", "br", "li", "tr", "section", "article", "table", "ul", "ol", "pre", "hr"}
    )
    _SKIP = frozenset({"script", "style", "noscript", "template", "head"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: str | None = None
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skip += 1
        if tag == "title":
            self._in_title = True
        if len(tag) == 2 and tag[0] == "h" and tag[1].isdigit():
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in self._BLOCKS:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skip:
            self._skip -= 1
        if tag == "title":
            self._in_title = False
        if (len(tag) == 2 and tag[0] == "h" and tag[1].isdigit()) or tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title = (self.title or "") + data.strip()
            return
        if not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str | None]:
    """Readable text (with Markdown headings) and the page title."""
    parser = _HtmlText()
    parser.feed(html)
    parser.close()
    lines = [" ".join(line.split()) for line in "".join(parser.parts).splitlines()]
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.strip(), parser.title


def _pdf_text(path: Path | io.BytesIO, source: str) -> str:
    try:
        from pypdf import PdfReader
    except ImportError as exc:
        raise MissingExtraError("PDF documents in the knowledge index", "rag", "pypdf") from exc
    try:
        reader = PdfReader(path if isinstance(path, io.BytesIO) else str(path))
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
    except OSError:
        raise
    except Exception as exc:  # pypdf raises many kinds on a malformed file
        raise ConfigurationError(
            f"knowledge source {source!r} is not a readable PDF: {type(exc).__name__}: {exc}"
        ) from exc
    return "\n\n".join(pages).strip()


def load_file(path: str | Path, *, data: bytes | None = None) -> Document:
    """Read one file by its suffix (blocking: call it from a worker thread); `data`, when
    given, is its content already read (with `read_source`)."""
    p = Path(path)
    try:
        return _load_file(p, data)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot read knowledge source {str(p)!r}: {exc.strerror or exc}"
        ) from exc


MAX_SOURCE_BYTES = 100_000_000
"""Largest source file read into the index."""


def read_source(path: Path) -> bytes:
    """The bytes of the regular file at `path`, opened without following a link and
    without blocking; refused when a link lies on the way (a folder swapped for a link
    after `iter_files` listed it, which yields real paths), a FIFO or a device."""
    expected = os.path.abspath(path)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(expected, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        with contextlib.suppress(FileNotFoundError):
            if os.readlink(f"/proc/self/fd/{fd}") != expected:
                raise OSError(
                    errno.EXDEV,
                    "a symbolic link lies on the way (resolve the path first)",
                    str(path),
                )
        if st.st_size > MAX_SOURCE_BYTES:
            raise OSError(errno.EFBIG, f"larger than {MAX_SOURCE_BYTES} bytes", str(path))
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(MAX_SOURCE_BYTES + 1)
    finally:
        os.close(fd)


def _load_file(p: Path, data: bytes | None = None) -> Document:
    suffix = p.suffix.lower()
    source = str(p)
    if data is None:
        data = read_source(p)
    if suffix in PDF_SUFFIXES:
        text = _pdf_text(io.BytesIO(data), source)
        return Document(source=source, text=text, kind="pdf", title=p.stem)
    raw = data.decode("utf-8", errors="replace")
    if suffix in HTML_SUFFIXES:
        text, title = html_to_text(raw)
        return Document(source=source, text=text, kind="html", title=title or p.stem)
    if suffix in MARKDOWN_SUFFIXES:
        title = next(
            (line.lstrip("#").strip() for line in raw.splitlines() if line.startswith("# ")),
            p.stem,
        )
        return Document(source=source, text=raw, kind="markdown", title=title)
    return Document(source=source, text=raw, kind="text", title=p.stem)


def is_url(source: str | Path) -> bool:
    return isinstance(source, str) and source.startswith(("http://", "https://"))


def load_url(url: str, *, timeout: float = 30.0, max_bytes: int = 20_000_000) -> Document:
    """Fetch one document over HTTP(S) (blocking: call it from a worker thread).

    The URL is the user's own (its origin is trusted even on loopback); every redirect hop
    passes raf's outbound guard, so a source cannot lead raf to a private address it was
    not given, and the body is read no further than `max_bytes`."""
    try:
        import httpx
    except ImportError as exc:
        raise MissingExtraError("knowledge sources by URL", "rag", "httpx") from exc
    from raf.core.outbound import guarded_client, policy, refusal_in

    rule = policy(who="knowledge source", trusted=[url])
    try:
        with (
            guarded_client(rule, timeout=timeout, follow_redirects=True) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code >= 400:
                raise ConfigurationError(
                    f"cannot fetch knowledge source {url}: HTTP {response.status_code}"
                )
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise ConfigurationError(f"knowledge source {url} is larger than {max_bytes} bytes")
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    raise ConfigurationError(
                        f"knowledge source {url} is larger than {max_bytes} bytes"
                    )
            content = bytes(body)
            encoding = response.encoding or "utf-8"
    except httpx.HTTPError as exc:
        refused = refusal_in(exc)
        why = refused if refused is not None else exc
        raise ConfigurationError(f"cannot fetch knowledge source {url}: {why}") from exc
    text_of = content.decode(encoding, errors="replace")
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    path = url.split("?", 1)[0].lower()
    if kind == "application/pdf" or path.endswith(".pdf"):
        text = _pdf_text(io.BytesIO(content), url)
        return Document(source=url, text=text, kind="pdf")
    if "html" in kind:
        text, title = html_to_text(text_of)
        return Document(source=url, text=text, kind="html", title=title)
    if "markdown" in kind or path.endswith(tuple(MARKDOWN_SUFFIXES)):
        return Document(source=url, text=text_of, kind="markdown")
    return Document(source=url, text=text_of, kind="text")


def as_sources(sources: str | Path | Iterable[str | Path]) -> list[str | Path]:
    """The sources as a list: one path or URL alone counts as one source (not as the
    characters of a string); anything but a str or Path is a ConfigurationError."""
    items = [sources] if isinstance(sources, str | Path) else list(sources)
    for item in items:
        if not isinstance(item, str | Path):
            raise ConfigurationError(
                f"a knowledge source is a path or URL, got {type(item).__name__} {item!r}"
            )
    return items


def _single(path: Path) -> bool:
    """True when a file found in a folder has no other name (a hard link could be any
    file of the same filesystem, so it is not indexed)."""
    try:
        return os.stat(path, follow_symlinks=False).st_nlink == 1
    except OSError:
        return False


def iter_files(sources: Iterable[str | Path]) -> Iterator[Path]:
    """Supported files named directly or found (recursively) under directories; URLs
    are skipped (see `load_url`)."""
    seen: set[Path] = set()
    for source in as_sources(sources):
        if is_url(source):
            continue
        p = Path(source)
        if p.is_dir():
            # walked below the folder's fd: a symlink planted in it (to ~/.aws/credentials,
            # say) is never followed, and a hard-linked file is left out
            real = p.resolve()
            folder = ConfinedFolder(real, label="knowledge folder")
            candidates: Sequence[Path] = [
                real / name
                for name in folder.files(suffixes=SUPPORTED_SUFFIXES, hidden=True)
                if _single(real / name)
            ]
        elif p.is_file():
            candidates = [p]
        else:
            raise ConfigurationError(f"knowledge source {str(p)!r} does not exist")
        for f in candidates:
            resolved = f.resolve()
            if resolved not in seen:
                seen.add(resolved)
                yield resolved
