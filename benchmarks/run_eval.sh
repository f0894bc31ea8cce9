#!/usr/bin/env bash
# Every retrieval table in benchmarks/RESULTS.md, reproduced: bash benchmarks/run_eval.sh [OUT]
# Each run writes OUT/<dataset>_<level>_<pipeline>.json (+ .md); the fusion runs carry the
# paired comparison against BM25. Embeddings are cached under MEMSIEVE_HOME after the first run.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-benchmarks/results}
BIN=${BIN:-.venv/bin}
SEEDS=7,11,23,31,47
mkdir -p "$OUT"
run() {  # dataset level pipeline [compare]
  local name="$OUT/$1_$2_$3${4:+_vs_$4}"
  "$BIN/memsieve" eval "$1" --level "$2" --pipeline "$3" ${4:+--compare "$4"} --seeds "$SEEDS" \
    --json "$name.json" --report "$name.md" --no-progress
}
for ds in locomo longmemeval rhelm; do
  run "$ds" turn bm25
  run "$ds" turn dense
  run "$ds" turn rrf
  run "$ds" turn fusion bm25
  run "$ds" turn fusion dense
  run "$ds" session bm25
  run "$ds" session late
  run "$ds" session fusion bm25
done
