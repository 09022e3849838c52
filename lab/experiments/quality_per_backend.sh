#!/usr/bin/env bash
# Quality per embedding backend in one run (issue 21): Cranfield nDCG@10 at phase 3
# and the golden pass rates, for torch, onnx and onnx-int8, each on its own
# embedded PostgreSQL. Usage: lab/experiments/quality_per_backend.sh [OUT_DIR] [DATASET]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-lab/results/quality}
dataset=${2:-../shared/datasets/cranfield}
work=$(mktemp -d -t quality-XXXX)
mkdir -p "$out"
export EMBEDDING_CACHE_DIR=${EMBEDDING_CACHE_DIR:-$PWD/.data/models}
for backend in onnx-int8 onnx torch; do  # int8 first: the open question
  sed "s/^  backend: .*/  backend: $backend/" flags.yaml > "$work/flags-$backend.yaml"
  export FLAGS_FILE="$work/flags-$backend.yaml"
  echo "== $backend  $(uptime)"
  DATA_DIR="$work/$backend/pg" .venv/bin/python -m lab eval --dataset "$dataset" --phase 3 \
    --no-baselines --no-variants --json "$out/cranfield-$backend.json" > "$out/cranfield-$backend.log" 2>&1 || echo "eval failed: $backend"
  DATA_DIR="$work/$backend/seed-pg" .venv/bin/python -m service replay tests/golden/navigation.yaml \
    > "$out/golden-navigation-$backend.log" 2>&1 || echo "navigation goldens: failures ($backend)"
  SEEDS_DIR=tests/corpora/logseq-docs DATA_DIR="$work/$backend/logseq-pg" .venv/bin/python -m service replay \
    tests/golden/logseq.yaml > "$out/golden-logseq-$backend.log" 2>&1 || echo "logseq goldens: failures ($backend)"
  tail -n 3 "$out"/golden-*-"$backend".log
done
echo "== done  $(uptime)"
