#!/usr/bin/env bash
# A/B of deterministic mla_bwd PTX variants (same ABI) on the GPU: `ptxgen bench --ptx` of each file in the given
# directory, alternating, ROUNDS rounds at h 64 (and two at h 128), beside the atomics set; s_q 4096, s_kv 8192,
# top-k 2048, bf16. usage: scripts/device_mla_det_ab.sh DIR [ROUNDS]; lines to stdout and $OUT/ab.txt
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
dir=$1 rounds=${2:-3}
log() { echo "$*" | tee -a "$OUT/ab.txt"; }
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
B="./ptxgen bench --kernel mla_bwd --arch sm_90a --sq 4096 --skv 8192 --topk 2048 --iters 5 --warmup 2"
ms() { grep -E '^bench:' | sed 's/.*median \([0-9.]*\) ms.*/\1/'; }
for h in 64 128; do
    n=$rounds; [ $h = 128 ] && n=2
    for r in $(seq "$n"); do
        line="h$h round $r:"
        for f in "$dir"/*.ptx; do line="$line $(basename "$f" .ptx) $($B --hq $h --tile deterministic=1 --ptx "$f" 2>&1 | ms)"; done
        log "$line atomics $($B --hq $h 2>&1 | ms)"
    done
done
