#!/usr/bin/env bash
# One device call timing several PTX variants of a set side by side: `ptxgen bench` of each line, ROUNDS rounds, each
# round visiting the lines in an order rotated by one, so that no variant always meets the GPU first or last.
# Lines on stdin:  LABEL|PTX|ptxgen bench arguments   (PTX empty: the working tree's own set; else swapped in by
# --ptx, so its manifest must match the set the arguments name)
#   e.g.  h64 R|ab/R/mla_bwd.ptx|--kernel mla_bwd --arch sm_90a --sq 4096 --skv 8192 --hq 64 --topk 2048
# Default: the median of ITERS (20) runs after 3 warm-ups, IDLE (0) s before each.
# --sustained: before and under the H200's power cap (BENCHMARKS.md, 2026-11-27, "the backward under the power
# cap"): IDLE (8) s of rest, ITERS (100) runs back to back with no warm-up (`bench --stats`), the median of runs 2-6
# and of the last half.
# usage: scripts/device_variants.sh [--sustained] [ROUNDS (2)] < lines
set -u
sustained=0
[ "${1:-}" = --sustained ] && { sustained=1; shift; }
rounds=${1:-2}
if [ $sustained = 1 ]; then idle=${IDLE:-8} iters=${ITERS:-100} warm=0; else idle=${IDLE:-0} iters=${ITERS:-20} warm=3; fi
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 ptxgen >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
# the --stats list of runs in launch order -> before-cap and under-cap medians
halves() {
    python3 -c '
import statistics as s, sys
t = sys.argv[1]
if not t.startswith("runs"):
    print(t); sys.exit()
v = [float(x) for x in t.split(":", 1)[1].split()]
h = v[len(v) // 2:]
print(f"runs 2-6 median {s.median(v[1:6]):.4f} ms, last {len(h)} median {s.median(h):.4f} ms (min {min(h):.4f}, max {max(h):.4f})")' "$1"
}
mapfile -t lines < <(grep -v '^\s*\(#\|$\)')
n=${#lines[@]}
for r in $(seq 1 "$rounds"); do
    for i in $(seq 0 $((n - 1))); do
        line=${lines[$(((i + r - 1) % n))]}
        label=${line%%|*} rest=${line#*|}
        ptx=${rest%%|*} args=${rest#*|}
        run=(./ptxgen bench)
        [ -n "$ptx" ] && run+=(--ptx "$ptx")
        sleep "$idle"
        if [ $sustained = 1 ]; then
            # shellcheck disable=SC2086
            res=$(halves "$(timeout 200 "${run[@]}" $args --iters "$iters" --warmup 0 --stats 2>&1 | grep -E '^runs|^ptxgen:')")
        else
            # shellcheck disable=SC2086
            res=$(timeout 120 "${run[@]}" $args --iters "$iters" --warmup "$warm" 2>&1 |
                  grep -E '^bench:|^ptxgen:' | head -n 1 | sed 's/.*median/median/')
        fi
        echo "[round $r] $label: $res"
    done
done | tee "$OUT/variants.txt"
