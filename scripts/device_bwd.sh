#!/usr/bin/env bash
# One device call for attn_bwd: build, GPU check matrix (fwd + bwd), sanitizers
# on small ragged bwd sets, CLI bench over tiles, and the FA2 peer table.
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all build/tests/test_sim >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
mode=${1:-all}
if [ "$mode" = all ] || [ "$mode" = check ]; then
    bash tests/gpu_matrix.sh >"$OUT/gpu_matrix.log" 2>&1; echo "matrix rc=$?"
    grep -E "^FAIL|gpu-test:" "$OUT/gpu_matrix.log" | head -30
    for args in "--sq 77 --sk 130 --hq 4 --hkv 2 --causal --hdim 64" "--sq 130 --sk 77 --hq 2 --hkv 1 --hdim 128 --pad 8 --tile deterministic=1 --causal"; do
        for tool in memcheck racecheck; do
            compute-sanitizer --tool $tool ./ptxgen check --kernel attn_bwd $args >"$OUT/san.log" 2>&1
            echo "compute-sanitizer $tool [$args]: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|check:' "$OUT/san.log" | tr '\n' ' ')"
        done
    done
fi
if [ "$mode" = all ] || [ "$mode" = bench ]; then
    shift || true
    for t in "$@"; do
        for d in 64 128; do
            ./ptxgen bench --kernel attn_bwd --b 4 --sq 4096 --sk 4096 --hq $((2048 / d)) --hkv $((2048 / d)) --hdim $d --tile $t 2>&1 | grep -E "bench:|ptxgen:" | sed "s/^/[d=$d tile=$t] /"
        done
    done
    for d in 128 64; do
        python3 bench/peer_bench.py --kernel attn_bwd --quick --d $d 2>/dev/null | grep -E "^\|"
    done
    [ "$mode" = all ] && python3 bench/peer_bench.py --kernel attn_bwd --out "$OUT/bench_bwd.json" 2>&1 | tee "$OUT/bench_bwd.md"
fi
