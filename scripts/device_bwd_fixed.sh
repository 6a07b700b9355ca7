#!/usr/bin/env bash
# What a CTA of the wgmma attn_bwd costs besides its query steps, dense (issue 16's d 128 row): the same work (b s^2
# h fixed) cut into ever more, ever shorter CTAs: b 64 s 1024, b 16 s 2048, b 4 s 4096, b 1 s 8192 at h 32, d 128,
# bf16 (16384, 8192, 4096, 2048 CTAs of 12.8, 25.6, 51.2, 102.4 steps of 80 queries). `ptxgen bench`, median of 20
# after 3 warm-ups, each kernel's median as bench lists it, ROUNDS rounds in an order rotated by one. The main
# kernel's time against its CTA rounds gives a CTA's fixed cost. usage: scripts/device_bwd_fixed.sh [ROUNDS (2)]
set -u
rounds=${1:-2}
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 ptxgen >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
shapes=("--b 64 --sq 1024 --sk 1024" "--b 16 --sq 2048 --sk 2048" "--b 4 --sq 4096 --sk 4096" "--b 1 --sq 8192 --sk 8192")
n=${#shapes[@]}
for r in $(seq 1 "$rounds"); do
    for i in $(seq 0 $((n - 1))); do
        s=${shapes[$(((i + r - 1) % n))]}
        # shellcheck disable=SC2086
        timeout 120 ./ptxgen bench --kernel attn_bwd --arch sm_90a --hq 32 --hkv 32 --hdim 128 $s ${EXTRA:-} \
            --iters 20 --warmup 3 >"$OUT/b.log" 2>&1
        echo "[round $r] $s: $(grep -E '^bench:|^ptxgen:' "$OUT/b.log" | head -n 1 | sed 's/.*median/median/')"
        grep -E '^  attn_' "$OUT/b.log" | sed 's/^/    /'
    done
done
