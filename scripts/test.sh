#!/usr/bin/env bash
# Set up what is missing, then run every check: lint, types, and the test suite
# (including the official MCP conformance suite). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --test
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
.venv/bin/mypy
# Three processes, each test module whole in one of them (module fixtures stay shared): most tests wait on
# servers they started rather than compute, so three share two cores well. `-n 0` runs in this process alone.
exec .venv/bin/pytest -n "${APIMCP_TEST_PROCESSES:-3}" --dist loadfile "$@"
