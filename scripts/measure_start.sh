#!/usr/bin/env bash
# Time from process start to the first 200 on /ready: cold (fresh data dir:
# initdb, migrate, seed) and then warm (same data dir, nothing to seed).
# Usage: scripts/measure_start.sh [port]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
PORT="${1:-8765}"
DATA="$(mktemp -d)/pg"

measure() {
    local label="$1" start pid
    start=$(date +%s%N)
    .venv/bin/python -m service serve --port "$PORT" --data-dir "$DATA" >"$DATA.$label.log" 2>&1 &
    pid=$!
    until curl -fsS "http://127.0.0.1:$PORT/ready" >/dev/null 2>&1; do
        kill -0 "$pid" 2>/dev/null || { echo "$label: server died, see $DATA.$label.log" >&2; exit 1; }
        sleep 0.05
    done
    printf '%s start to /ready: %.2f s\n' "$label" "$(( $(date +%s%N) - start ))e-9"
    kill -TERM "$pid"
    wait "$pid"
}

measure cold
measure warm
rm -rf "$(dirname "$DATA")"
