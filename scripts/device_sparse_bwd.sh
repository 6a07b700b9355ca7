#!/usr/bin/env bash
# What a block-sparse wgmma attn_bwd CTA costs besides its query blocks (issue 18's 10 % backward row), one device
# call: `ptxgen bench` (median of 20) of the set at s 8192, d 128, bf16, mask blocks 128 x 128, each kernel's median
# as bench lists it; b 16 x h 1 (no dense head: every CTA walks its list) under local:W (2W - 1 mask blocks, 4W - 2
# query steps of 64 rows a CTA) and random masks, then issue 18's row (b 1, h 16, head 0 dense) and the dense sets.
# A CTA's fixed cost is the intercept of the main kernel's time against query steps. Then ncu of the main kernel at
# random:0.1 in both shapes (scripts/device_ncu.sh sparse_bwd): SM active cycles mean / min / max (the grid's idle
# end), tensor pipe, stalls.  usage: scripts/device_sparse_bwd.sh; logs under $OUT
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 ptxgen >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
S="--kernel attn_bwd --arch sm_90a --sq 8192 --sk 8192 --hdim 128"
for r in 1 2; do
    for m in local:1 local:2 local:4 local:8 random:0.05 random:0.1 random:0.2 random:0.4 random:1 dense \
             "h16 random:0.1" "h16 random:1" "h16 dense"; do
        shape="--b 16 --hq 1 --hkv 1"
        case $m in h16*) shape="--b 1 --hq 16 --hkv 16"; m=${m#h16 } ;; esac
        mask="--block-mask $m"
        [ "$m" = dense ] && mask=""
        # shellcheck disable=SC2086
        timeout 120 ./ptxgen bench $S $shape $mask --iters 20 --warmup 3 >"$OUT/b.log" 2>&1
        echo "[round $r] $shape $m: $(grep -E '^bench:|^ptxgen:' "$OUT/b.log" | head -n 1 | sed 's/.*\(([0-9.]*% of blocks\)/\1/')"
        grep -E '^  attn_' "$OUT/b.log" | sed 's/^/    /'
    done
done
scripts/device_ncu.sh sparse_bwd | grep -v '^NVIDIA'   # ncu of the main kernel at random:0.1, both shapes
