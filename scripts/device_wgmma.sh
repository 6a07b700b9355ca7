#!/usr/bin/env bash
# One device call for the wgmma family: build, GPU checks (float64 CPU or GPU references, ragged,
# causal, GQA, fp16, padded strides), sim-vs-GPU cross-checks, sanitizer, then the peer benchmark.
# usage: scripts/device_wgmma.sh [check|bench|all] ; logs under $OUT
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all build/tests/test_api >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
mode=${1:-all}
pass=0; fail=0; seed=500
run() {   # run <mode> <args...>
    local m=$1; shift; seed=$((seed + 1))
    if out=$(timeout 120 ./ptxgen $m --kernel attn_fwd --seed $seed "$@" 2>&1); then
        pass=$((pass + 1)); echo "PASS $m $* :: $(echo "$out" | grep -E '^(kernel:|  (o|lse|sim vs gpu)[a-z ]*:)' | tr -s ' ' | tr '\n' ' ')"
    else
        fail=$((fail + 1)); echo "FAIL $m $*"; echo "$out" | tail -8 | sed 's/^/    /'
    fi
}
if [ "$mode" != bench ]; then
    for d in 64 128 256; do
        for c in "" "--causal"; do
            run check --hdim $d $c --sq 1000 --sk 1000 --hq 4 --hkv 4
            run check --hdim $d $c --sq 77 --sk 1537 --hq 16 --hkv 2 --b 2 --pad 8
            run check --hdim $d $c --sq 1537 --sk 77 --hq 4 --hkv 1 --dtype fp16
        done
        run check --hdim $d --sq 1 --sk 1 --hq 1 --hkv 1
        run xcheck --hdim $d --causal --sq 300 --sk 517 --hq 4 --hkv 2 --pad 8
    done
    for t in bm=64,bn=64,stages=2 bm=128,bn=96,stages=3 bm=192,bn=64,stages=2; do
        run check --hdim 128 --tile $t --causal --sq 777 --sk 1000 --hq 4 --hkv 2
    done
    run check --hdim 128 --b 2 --sq 4096 --sk 4096 --hq 16 --hkv 16 --ref gpu
    run check --hdim 128 --causal --b 2 --sq 4096 --sk 4096 --hq 16 --hkv 4 --ref gpu
    echo "wgmma checks: $pass passed, $fail failed"
    if command -v compute-sanitizer >/dev/null; then
        for tool in memcheck racecheck; do
            timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 ./ptxgen check --kernel attn_fwd --causal \
                --sq 150 --sk 300 --hq 2 --hkv 1 --iters 1 >"$OUT/san_$tool.log" 2>&1
            echo "sanitizer $tool rc=$? :: $(grep -E 'ERROR SUMMARY|check:' "$OUT/san_$tool.log" | tr '\n' ' ')"
        done
    else echo "SKIP sanitizer: compute-sanitizer is not on this machine"; fi
    out=$(build/tests/test_api --device cuda 2>&1); echo "test_api cuda: $(echo "$out" | tail -1)"
    echo "$out" | grep FAIL | head
fi
if [ "$mode" != check ]; then
    PYTHONPATH=python timeout 400 python3 bench/fwd_peers.py --out "$OUT/fwd_peers.json" 2>&1 | tee "$OUT/fwd_peers.txt"
fi
