#!/usr/bin/env bash
# Set up (if needed), then lint, type-check and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check service tests
.venv/bin/mypy service
.venv/bin/lint-imports  # imports point one way (pyproject.toml [tool.importlinter])
.venv/bin/python -m pytest "$@"
