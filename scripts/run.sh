#!/usr/bin/env bash
# Set up (if needed), then serve: embedded PostgreSQL, migrate, seed, HTTP on :8000.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" TRANSFORMERS_OFFLINE="${TRANSFORMERS_OFFLINE:-1}"
exec .venv/bin/python -m service serve "$@"
