#!/usr/bin/env bash
# One device call for the sim cross-check: build, then make gpu-test (GPU check
# matrix, xcheck sim-vs-GPU runs, the sim's correct test kernel on the GPU).
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all build/tests/test_sim >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
start=$SECONDS
bash tests/gpu_matrix.sh >"$OUT/gpu_matrix.log" 2>&1; echo "gpu-test rc=$? in $((SECONDS - start)) s"
grep -E "^FAIL|gpu-test:" "$OUT/gpu_matrix.log" | head -40
grep -E "^PASS xcheck|test_sim" "$OUT/gpu_matrix.log"
git rev-parse --short HEAD 2>/dev/null | tee "$OUT/commit.txt"
