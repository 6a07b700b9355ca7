#!/usr/bin/env bash
# One device call for an A/B of two PTX sets from scripts/ab_ptx.sh (carried in the working tree): for each config,
# `ptxgen bench ... --ptx` of A then B, alternating, ROUNDS times, so that both sides see the same clocks.
# Configs on stdin, one per line:  NAME|ptxgen bench arguments  (NAME.ptx in both directories)
#   e.g.  d128_causal|--kernel attn_bwd --arch sm_90a --hdim 128 --causal --b 4 --sq 4096 --sk 4096 --hq 32 --hkv 32
# usage: scripts/device_ab.sh DIR_A DIR_B [ROUNDS (2)] < configs; logs under $OUT
set -u
a=$1 b=$2 rounds=${3:-2}
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 ptxgen >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
mapfile -t configs
for r in $(seq 1 "$rounds"); do
    for line in "${configs[@]}"; do
        name=${line%%|*} args=${line#*|}
        [ -z "$name" ] && continue
        case $name in \#*) continue ;; esac
        for side in "$a" "$b"; do
            # shellcheck disable=SC2086
            res=$(timeout 120 ./ptxgen bench $args --ptx "$side/$name.ptx" --iters 20 --warmup 3 2>&1 |
                  grep -E '^bench:|^ptxgen:' | head -n 1 | sed 's/.*median/median/')
            echo "[round $r] $name $(basename "$side"): $res"
        done
    done
done | tee "$OUT/ab.txt"
