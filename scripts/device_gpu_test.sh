#!/usr/bin/env bash
# One device call: `make gpu-test` as N shards side by side (GPU_MATRIX_SHARD, default 3), each under a time limit
# (GPU_TEST_LIMIT seconds, default 520) so that the call ends inside the device's 10 minutes; logs to $OUT.
# Usage: scripts/device_gpu_test.sh [N]
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
n=${1:-3}; limit=${GPU_TEST_LIMIT:-520}; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all build/tests/test_sim build/tests/test_problem build/tests/test_api build/tests/test_sim_wgmma >"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
echo "built in $((SECONDS - start)) s"
for ((i = 0; i < n; i++)); do
    GPU_MATRIX_SHARD=$i/$n timeout "$limit" bash tests/gpu_matrix.sh >"$OUT/gpu_matrix.$i.log" 2>&1 &
done
wait
echo "matrix in $((SECONDS - start)) s"
rc=0
for ((i = 0; i < n; i++)); do
    grep -q "^gpu-test: " "$OUT/gpu_matrix.$i.log" ||
        { rc=1; echo "shard $i/$n did not finish in $limit s (last: $(tail -n 1 "$OUT/gpu_matrix.$i.log" | cut -c1-160))"; }
    grep -E "^FAIL|^gpu-test" "$OUT/gpu_matrix.$i.log" | head -20
done
cat "$OUT"/gpu_matrix.*.log | awk '/^PASS/{p++} /^FAIL/{f++} END{printf "all shards: %d passed, %d failed\n", p, f; exit f > 0}' || rc=1
exit $rc
