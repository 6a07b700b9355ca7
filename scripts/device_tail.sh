#!/usr/bin/env bash
# One device call: random GPU checks (scripts/random_checks.py) and what the last round of CTAs costs: the wgmma
# attn_fwd and attn_bwd at b 4, h 32, s 4096 (4096 tiles / CTAs: 31.03 rounds of 132) against h 33 (4224: 32 whole
# rounds), `ptxgen bench` median of 20, alternating. Logs under $OUT.
# usage: scripts/device_tail.sh [CHECK_SECONDS (240)] [ROUNDS (2)]
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 ptxgen >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
secs=${1:-240} rounds=${2:-2}
if [ "$secs" != 0 ]; then
    python3 scripts/random_checks.py --device cuda --size large --archs sm_90a,sm_90a,sm_90 --seconds "$secs" \
        --seed "${SEED:-$RANDOM}" --timeout 120 >"$OUT/random_checks.log" 2>&1
    grep -A12 "^FAIL" "$OUT/random_checks.log" | head -60; tail -1 "$OUT/random_checks.log"
fi
for r in $(seq 1 "$rounds"); do
    for kern in attn_fwd attn_bwd; do
        for h in 32 33; do
            res=$(timeout 120 ./ptxgen bench --kernel $kern --arch sm_90a --hdim 128 --b 4 --sq 4096 --sk 4096 --hq $h \
                  --hkv $h --iters 20 --warmup 3 2>&1 | grep -E '^bench:|^ptxgen:' | head -n 1)
            echo "[round $r] $kern h $h: $res"
        done
    done
done | tee "$OUT/tail.txt"
