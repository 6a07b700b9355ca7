#!/usr/bin/env bash
# One device call: build, GPU check matrix, peer benchmark. Logs go to $OUT.
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 ptxgen >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
mode=${1:-all}
if [ "$mode" = all ] || [ "$mode" = check ]; then
    bash tests/gpu_matrix.sh >"$OUT/gpu_matrix.log" 2>&1; echo "matrix rc=$?"
    grep -E "^FAIL|gpu-test:" "$OUT/gpu_matrix.log" | head -40
fi
if [ "$mode" = all ] || [ "$mode" = bench ]; then
    shift || true
    for tile in "$@"; do
        python3 bench/peer_bench.py --quick --tile "$tile" 2>&1 | tail -2
    done
    python3 bench/peer_bench.py --out "$OUT/bench.json" 2>&1 | tee "$OUT/bench.md"
fi
