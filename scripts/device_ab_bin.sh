#!/usr/bin/env bash
# One device call for an A/B of two source trees where the manifests differ too (so scripts/device_ab.sh's PTX swap
# cannot run one side): ptxgen built from the source in DIR_A (scripts/ab_src.sh) and from the working tree, each
# timing its own set by `ptxgen bench`, A then B, alternating, ROUNDS times, after IDLE seconds without load.
# Configs on stdin, one per line:  NAME|ptxgen bench arguments
# usage: scripts/device_ab_bin.sh DIR_A [ROUNDS (2)] [IDLE (0)] < configs; logs under $OUT
set -u
a=$1 rounds=${2:-2} idle=${3:-0}
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 ptxgen >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
make -C "$a" -j16 ptxgen >"$OUT/build_a.log" 2>&1 || { tail -30 "$OUT/build_a.log"; exit 1; }
mapfile -t configs
for r in $(seq 1 "$rounds"); do
    for line in "${configs[@]}"; do
        name=${line%%|*} args=${line#*|}
        [ -z "$name" ] && continue
        case $name in \#*) continue ;; esac
        for side in A B; do
            bin=./ptxgen; [ $side = A ] && bin=$a/ptxgen
            sleep "$idle"
            # shellcheck disable=SC2086
            res=$(timeout 120 $bin bench $args --iters 20 --warmup 3 2>&1 |
                  grep -E '^bench:|^ptxgen:' | head -n 1 | sed 's/.*median/median/')
            echo "[round $r] $name $side: $res"
        done
    done
done | tee "$OUT/ab.txt"
