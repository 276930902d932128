#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine, then runs the whole suite:
# ruff (lint + format), mypy --strict and pytest. CI (.ci/run) runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages some tests use as real peers (sandbox, search tools, the PostgreSQL and
# Redis servers the session-store tests start on loopback, chromium for the web UI's tests,
# the Docker engine that the container-sandbox tests start, and busybox-static and Debian's
# python3 that they build their image from: tests/container_engine.py).
# Add a package to this list rather than installing it by hand.
APT_PACKAGES=(bubblewrap ripgrep fd-find git postgresql redis-server chromium docker.io busybox-static python3)
if [ "${#APT_PACKAGES[@]}" -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

# Python: a virtual environment with raf, every extra and the dev tools.
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip >/dev/null
# Knowledge embeddings (rag-embeddings, part of `all`) need no PyTorch. One test compares
# them with the opt-in sentence-transformers path (rag-sentence-transformers), which does:
# the CPU build of torch 2.13.0 is installed first (on these machines from a file on local
# disk), so that nothing pulls a CUDA build of several GB. If it cannot be installed, that
# extra is left out and that test in tests/context/knowledge/test_knowledge_embeddings.py FAILS (it
# never skips).
EXTRAS="all,dev"
if python -m pip install -q torch==2.13.0; then
  EXTRAS="all,dev,rag-sentence-transformers"
else
  echo "ERROR: torch==2.13.0 could not be installed; the sentence-transformers test will fail" >&2
fi
python -m pip install -q -e ".[$EXTRAS]"
# BFCL's data for the `raf eval --bfcl` tests: the wheel alone, not its dependencies (raf
# reads its data files and never imports it; see the `bfcl` extra in pyproject.toml).
python -m pip install -q --no-deps bfcl-eval==2026.3.23

# npm packages used as real peers (MCP servers, mock API servers): tests/peers/package.json.
if [ -f tests/peers/package.json ]; then
  (cd tests/peers && npm install --no-audit --no-fund --loglevel=error >/dev/null)
fi

ruff check .
ruff format --check .
mypy
pytest -q
