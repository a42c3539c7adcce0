#!/usr/bin/env bash
# Prepare a development environment from nothing but Python >= 3.11 (and npm for --conformance).
#   scripts/setup.sh                 .venv/ with apimcp installed (editable)
#   scripts/setup.sh --test          ... plus the test and lint tools
#   scripts/setup.sh --conformance   ... plus tools/conformance/node_modules: the official MCP
#                                    conformance suite and a Node 22 runtime for it
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in
  ""|--test|--conformance) ;;
  *) echo "usage: $0 [--test|--conformance]" >&2; exit 2 ;;
esac

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "apimcp needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
if [ -z "$mode" ]; then
  .venv/bin/python -m pip install --quiet -e .
else
  .venv/bin/python -m pip install --quiet -e ".[test]"
fi
if [ "$mode" = "--conformance" ]; then
  # npm ci starts from scratch; skip it when the installed tree matches the lockfile already.
  stamp=tools/conformance/node_modules/.apimcp-lock
  if ! cmp -s tools/conformance/package-lock.json "$stamp" 2>/dev/null; then
    (cd tools/conformance && npm ci --no-audit --no-fund --loglevel=error)
    cp tools/conformance/package-lock.json "$stamp"
  fi
fi
