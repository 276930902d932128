"""Knowledge's default embedder where it cannot or must not run: without ONNX Runtime the
search is BM25 alone and says so once, naming the extra; `embedder=None` (and
`embedder: none` in YAML) loads and downloads nothing; `raf validate` says the same.

The model itself is never loaded here: the runtime is made missing in a subprocess (an
import that fails), and the opt-out runs with an empty model cache and no index to fetch
from, so a download would be seen. The default with the real model is tested in
test_knowledge_embeddings.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from raf.core.errors import install_hint
from raf.decl.check_file import check_file

ROOT = Path(__file__).resolve().parents[3]
SUBPROCESS_TIMEOUT_S = 120


def docs_folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text(
        "# Vacation\nStaff get 28 vacation days a year.\n", encoding="utf-8"
    )
    (docs / "api.md").write_text("# API\nThe rate limit is 600 requests per minute.\n")
    return docs


def run_python(code: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter with this checkout's raf, an empty model cache, and
    pip pointed at a closed loopback port (a download attempt fails at once)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "RAF_CACHE_DIR": str(tmp_path / "cache"),
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_NO_CACHE_DIR": "1",
        "PIP_RETRIES": "0",
        "PIP_CONFIG_FILE": os.devnull,
    }
    env.pop("PIP_FIND_LINKS", None)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=SUBPROCESS_TIMEOUT_S,
        check=False,
    )


WITHOUT_RUNTIME = """
    import asyncio, json, logging, sys
    from pathlib import Path
    sys.modules["onnxruntime"] = None  # the rag-embeddings extra is not installed
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    from raf.context.knowledge import KnowledgeProvider
    from raf.core.errors import MissingExtraError

    docs = sys.argv[1]
    first = KnowledgeProvider(docs, index_path=Path(docs).parent / "k.sqlite")
    second = KnowledgeProvider(docs, mode="tool")
    hits = asyncio.run(first.search("vacation days"))
    asyncio.run(second.search("rate limit"))
    try:
        asyncio.run(KnowledgeProvider(docs, embedder="local").search("vacation"))
        required = "no error"
    except MissingExtraError as exc:
        required = str(exc)
    print(json.dumps({
        "embedders": [repr(first.index.embedder), repr(second.index.embedder)],
        "hits": [Path(h.source).name for h in hits],
        "required": required,
    }))
"""


def test_without_the_runtime_knowledge_searches_bm25_and_says_so_once(tmp_path: Path) -> None:
    done = run_python(WITHOUT_RUNTIME, tmp_path, str(docs_folder(tmp_path)))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["embedders"] == ["None", "None"]
    assert result["hits"][0] == "leave.md"
    hint = install_hint("rag-embeddings")
    assert done.stderr.count(hint) == 1, done.stderr  # two knowledge bases, one warning
    assert "BM25" in done.stderr and "embedder=None" in done.stderr
    # Asked for by name, the embedder is required: a clear error naming the extra.
    assert "rag-embeddings" in result["required"] and "onnxruntime" in result["required"]
    assert not (tmp_path / "cache").exists()


OPTED_OUT = """
    import asyncio, json, logging, sys
    from pathlib import Path
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    from raf.context.knowledge import KnowledgeProvider
    from raf.decl import DeclAgentBuilder
    from raf.testing import ScriptedChatClient

    docs, document = sys.argv[1], sys.argv[2]
    python = KnowledgeProvider(docs, embedder=None, index_path=Path(docs).parent / "k.sqlite")
    hits = asyncio.run(python.search("vacation days"))
    agent = DeclAgentBuilder().from_file(document).with_chat_client(
        ScriptedChatClient(["ok"])).build()
    (declared,) = [p for p in agent.context_providers if p.kind == "knowledge"]
    asyncio.run(declared.search("rate limit"))
    print(json.dumps({
        "embedders": [repr(python.index.embedder), repr(declared.index.embedder)],
        "hits": [Path(h.source).name for h in hits],
        "onnxruntime_imported": "onnxruntime" in sys.modules,
    }))
"""


def test_an_explicit_opt_out_loads_and_downloads_nothing(tmp_path: Path) -> None:
    docs = docs_folder(tmp_path)
    document = tmp_path / "agent.yaml"
    document.write_text(
        "name: faq\ncontexts:\n  - kind: knowledge\n    config:\n"
        "      sources: [docs]\n      embedder: none\n",
        encoding="utf-8",
    )
    done = run_python(OPTED_OUT, tmp_path, str(docs), str(document))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result == {
        "embedders": ["None", "None"],
        "hits": ["leave.md"],
        "onnxruntime_imported": False,
    }
    assert "embedd" not in done.stderr.lower() and "fetching" not in done.stderr, done.stderr
    assert not (tmp_path / "cache").exists()  # nothing was downloaded


def knowledge_document(tmp_path: Path, embedder: str | None) -> Path:
    docs_folder(tmp_path)
    line = f"      embedder: {embedder}\n" if embedder is not None else ""
    document = tmp_path / "agent.yaml"
    document.write_text(
        "name: faq\nmodel: {id: local, provider: local}\ncontexts:\n  - kind: knowledge\n"
        f"    config:\n      sources: [docs]\n{line}",
        encoding="utf-8",
    )
    return document


@pytest.mark.parametrize("embedder", [None, "auto", "local", "none"])
def test_validate_says_what_knowledge_searches_by_without_the_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: str | None
) -> None:
    document = knowledge_document(tmp_path, embedder)
    installed = check_file(document)
    assert not [p for p in installed.problems + installed.warnings if "embedder" in str(p)]
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # looked up: not installed
    checked = check_file(document)
    problems = [str(p) for p in checked.problems if "embedder" in str(p)]
    warnings = [str(p) for p in checked.warnings if "BM25" in str(p)]
    if embedder == "none":
        assert problems == warnings == []
    elif embedder == "local":
        assert warnings == [] and len(problems) == 1
        assert "rag-embeddings" in problems[0] and "contexts[0].config.embedder" in problems[0]
    else:
        assert problems == [] and len(warnings) == 1
        assert install_hint("rag-embeddings") in warnings[0]
        assert "embedder: none" in warnings[0]
