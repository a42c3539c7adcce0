#!/usr/bin/env bash
# Set up what is missing, then run every check: lint, types, and the test suite
# (including the official MCP conformance suite). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --test
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
.venv/bin/mypy
exec .venv/bin/pytest "$@"
