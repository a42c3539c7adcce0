#!/usr/bin/env bash
# Set up what is missing, then start the apimcp demo (extra arguments go to `apimcp demo`).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/apimcp demo "$@"
