#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine, then runs the whole suite:
# ruff (lint + format), mypy --strict and pytest. CI (.ci/run) runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages some tests use as real peers (sandbox, search tools).
# Add a package to this list rather than installing it by hand.
APT_PACKAGES=(bubblewrap ripgrep fd-find)
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
python -m pip install -q -e ".[all,dev]"

# npm packages used as real peers (MCP servers, mock API servers): tests/peers/package.json.
if [ -f tests/peers/package.json ]; then
  (cd tests/peers && npm install --no-audit --no-fund --loglevel=error >/dev/null)
fi

ruff check .
ruff format --check .
mypy
pytest -q
