#!/usr/bin/env bash
# One device call for the deterministic mla_bwd (tile deterministic=1): ptxgen check against float64 (bitwise stable
# across runs; pieces of indices, topk_length, fp16, h 128's two head blocks), compute-sanitizer racecheck and memcheck
# of its reduce, then `ptxgen bench` of the deterministic set against the atomics one at h 64 and 128 (and, given a
# directory of scripts/ab_ptx.sh's output with det.ptx in it, that PTX alternating with the working tree's).
# usage: scripts/device_mla_det.sh [OLD_PTX_DIR]; logs under $OUT
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
old=${1:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
for cfg in "--sq 32 --skv 8192 --hq 128 --topk 2048 --ref cpu" "--sq 12 --skv 800 --hq 20 --topk 300 --topk-length --dtype fp16" \
           "--sq 40 --skv 8192 --hq 64 --topk 2048 --topk-length" "--sq 6 --skv 20 --hq 64 --topk 600"; do
    timeout 200 ./ptxgen check --kernel mla_bwd --arch sm_90a --tile deterministic=1 $cfg --seed $RANDOM >"$OUT/c.log" 2>&1
    echo "rc=$? [$cfg] $(grep -E '^  (dq|dkv):|determin' "$OUT/c.log" | tr -s ' ' | cut -c1-80 | tr '\n' ' ')"
done
for x in "racecheck:--sq 5 --skv 1300 --hq 40 --topk 1200 --topk-length" "memcheck:--sq 5 --skv 20 --hq 40 --topk 600"; do
    timeout 200 compute-sanitizer --tool "${x%%:*}" --error-exitcode 9 ./ptxgen check --kernel mla_bwd --arch sm_90a \
        --tile deterministic=1 ${x#*:} --iters 1 >"$OUT/s.log" 2>&1
    echo "${x%%:*} rc=$? $(grep SUMMARY "$OUT/s.log")"
done
B="./ptxgen bench --kernel mla_bwd --arch sm_90a --sq 4096 --skv 8192 --topk 2048"
for h in 64 128; do
    [ -n "$old" ] && echo "h$h deterministic, $old: $($B --hq $h --tile deterministic=1 --ptx "$old/det.ptx" --iters 3 --warmup 1 2>&1 | grep -E '^bench:' | sed 's/.*median/median/')"
    echo "h$h deterministic: $($B --hq $h --tile deterministic=1 --iters 3 --warmup 1 2>&1 | grep -E '^bench:' | sed 's/.*median/median/')"
    echo "h$h atomics: $($B --hq $h --iters 5 --warmup 2 2>&1 | grep -E '^bench:' | sed 's/.*median/median/')"
done
