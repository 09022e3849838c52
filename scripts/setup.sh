#!/usr/bin/env bash
# Idempotent set-up: .venv with python3.11, torch pinned first, then the project.
# Skips the installs when pyproject.toml is unchanged since the last success.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3.11}"
VENV=.venv
STAMP="$VENV/.setup-stamp"

if [ ! -x "$VENV/bin/python" ]; then
    command -v "$PYTHON" >/dev/null || { echo "setup: $PYTHON not found" >&2; exit 1; }
    "$PYTHON" -m venv "$VENV"
fi

want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
    exit 0
fi

"$VENV/bin/python" -m pip install --quiet --upgrade pip
# torch first and pinned: the CPU build of 2.13.0 is on local disk; letting the
# resolver choose would download several GB of CUDA wheels.
"$VENV/bin/python" -m pip install --quiet "torch==2.13.0"
"$VENV/bin/python" -m pip install --quiet -e '.[test,eval,lab]'
echo "$want" > "$STAMP"
