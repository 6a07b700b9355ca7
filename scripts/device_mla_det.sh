#!/usr/bin/env bash
# One device call for the deterministic mla_bwd (tile deterministic=1, dkv in fixed point): ptxgen check against
# float64 (bitwise stable across runs; topk_length, fp16, h 128's two head blocks, the mma.sync family), sim against
# GPU, compute-sanitizer racecheck and memcheck, then `ptxgen bench` of the deterministic set against the atomics one
# at h 64 and 128, two rounds (and, given an older ptxgen binary, its deterministic set in the same rounds).
# usage: scripts/device_mla_det.sh [OLD_PTXGEN]; logs under $OUT
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
old=${1:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all build/tests/test_sim >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "fixed-point instructions on the GPU: $(./build/tests/test_sim --device cuda tests/sim/fixed_point.ptx 2>&1 | tail -1)"
for cfg in "--sq 32 --skv 8192 --hq 128 --topk 2048 --ref cpu" "--sq 12 --skv 800 --hq 20 --topk 300 --topk-length --dtype fp16" \
           "--sq 40 --skv 8192 --hq 64 --topk 2048 --topk-length" "--sq 6 --skv 20 --hq 64 --topk 600" \
           "--sq 256 --skv 8192 --hq 128 --topk 2048 --ref gpu" "--arch sm_90 --sq 24 --skv 3000 --hq 48 --topk 1024 --topk-length" \
           "--sq 2 --skv 1 --hq 16 --topk 16" "--sq 64 --skv 4096 --hq 64 --topk 512 --pad 8"; do
    [[ $cfg == *--arch* ]] || cfg="--arch sm_90a $cfg"
    timeout 200 ./ptxgen check --kernel mla_bwd --tile deterministic=1 $cfg --seed $RANDOM >"$OUT/c.log" 2>&1
    echo "rc=$? [$cfg] $(grep -E '^  (dq|dkv):|determin|^check' "$OUT/c.log" | tr -s ' ' | cut -c1-110 | tr '\n' ' ')"
done
timeout 200 ./ptxgen xcheck --kernel mla_bwd --arch sm_90a --tile deterministic=1 --sq 3 --skv 500 --hq 64 --topk 256 >"$OUT/x.log" 2>&1
echo "xcheck rc=$? $(grep -E 'sim vs' "$OUT/x.log" | tr -s ' ' | tr '\n' ' ')"
for x in "racecheck:--sq 5 --skv 1300 --hq 40 --topk 1200 --topk-length" "memcheck:--sq 5 --skv 20 --hq 40 --topk 600"; do
    timeout 200 compute-sanitizer --tool "${x%%:*}" --error-exitcode 9 ./ptxgen check --kernel mla_bwd --arch sm_90a \
        --tile deterministic=1 ${x#*:} --iters 1 >"$OUT/s.log" 2>&1
    echo "${x%%:*} rc=$? $(grep SUMMARY "$OUT/s.log")"
done
B="bench --kernel mla_bwd --arch sm_90a --sq 4096 --skv 8192 --topk 2048"
for round in 1 2; do for h in 64 128; do
    [ -n "$old" ] && echo "h$h deterministic, $old: $($old $B --hq $h --tile deterministic=1 --iters 3 --warmup 1 2>&1 | grep -E '^bench:' | sed 's/.*median/median/')"
    echo "h$h deterministic: $(./ptxgen $B --hq $h --tile deterministic=1 --iters 5 --warmup 2 2>&1 | grep -E '^bench:' | sed 's/.*median/median/')"
    echo "h$h atomics: $(./ptxgen $B --hq $h --iters 5 --warmup 2 2>&1 | grep -E '^bench:' | sed 's/.*median/median/')"
done; done
