#!/usr/bin/env bash
# One device call for an A/B: for each config, `ptxgen bench` of side A then side B, alternating, ROUNDS times, so that
# both sides see the same clocks. A side is either a directory of PTX from scripts/ab_ptx.sh (NAME.ptx, swapped into
# the working tree's set by --ptx: the manifests must match) or a source tree (a directory with a Makefile, from
# scripts/ab_src.sh, or . for the working tree), whose own ptxgen times its own set (for changes to the manifest too).
# Configs on stdin, one per line:  NAME|ptxgen bench arguments
#   e.g.  d128_causal|--kernel attn_bwd --arch sm_90a --hdim 128 --causal --b 4 --sq 4096 --sk 4096 --hq 32 --hkv 32
# IDLE=s waits that long before each run (the GPU's clocks recover from the last one).
# usage: scripts/device_ab.sh A B [ROUNDS (2)] < configs; logs under $OUT
set -u
a=$1 b=$2 rounds=${3:-2}
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 ptxgen >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
for side in A B; do
    dir=$a; [ $side = B ] && dir=$b
    if [ -f "$dir/Makefile" ] && [ "$dir" != . ]; then
        make -C "$dir" -j16 ptxgen >"$OUT/build_$side.log" 2>&1 || { echo "$dir: build failed"; exit 1; }
    fi
done
mapfile -t configs
for r in $(seq 1 "$rounds"); do
    for line in "${configs[@]}"; do
        name=${line%%|*} args=${line#*|}
        [ -z "$name" ] && continue
        case $name in \#*) continue ;; esac
        for side in "$a" "$b"; do
            if [ -f "$side/Makefile" ]; then run=("$side/ptxgen" bench); else run=(./ptxgen bench --ptx "$side/$name.ptx"); fi
            sleep "${IDLE:-0}"
            # shellcheck disable=SC2086
            res=$(timeout 120 "${run[@]}" $args --iters 20 --warmup 3 2>&1 |
                  grep -E '^bench:|^ptxgen:' | head -n 1 | sed 's/.*median/median/')
            echo "[round $r] $name $(basename "$(cd "$side" && pwd)"): $res"
        done
    done
done | tee "$OUT/ab.txt"
