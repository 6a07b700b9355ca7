#!/usr/bin/env bash
# The persistent wgmma attn_fwd (tile key persist) on a GPU: checks against the float64 reference (dense, causal,
# GQA, ragged, fp16, padded strides, block-sparse, tiles of one key block, one CTA walking every tile),
# compute-sanitizer, then two tiles alternating (TILE_A, TILE_B: persist=0 and persist=$PERSIST, or e.g.
# persist=132,qbufs=1 and persist=132,qbufs=2) on issue 16's dense shapes and issue 18's block-sparse ones (s 8k,
# d 128, h 16), and the peer table with TILE_B. usage: scripts/device_persist.sh [check|bench|all]; logs under $OUT.
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
mode=${1:-all} P=${PERSIST:-132}
A=${TILE_A:-persist=0} B=${TILE_B:-persist=$P}
pass=0; fail=0
if [ "$mode" != bench ]; then
    for cfg in "--sq 1000 --sk 1000 --hq 4 --hkv 4" "--causal --sq 77 --sk 1537 --hq 16 --hkv 2 --b 2 --pad 8" \
               "--causal --sq 1537 --sk 77 --hq 4 --hkv 1 --dtype fp16" "--hdim 64 --causal --sq 3000 --sk 3000 --hq 8 --hkv 2 --b 3" \
               "--sq 4096 --sk 4096 --hq 16 --hkv 16 --b 2 --ref gpu" "--causal --sq 4096 --sk 4096 --hq 16 --hkv 4 --b 2 --ref gpu" \
               "--sq 3000 --sk 60 --hq 8 --hkv 2" "--block-mask random:0.1 --sq 2048 --sk 2048 --hq 4 --hkv 4" \
               "--block-mask random:0.5 --sq 1000 --sk 1500 --hq 8 --hkv 2 --causal" "--block-mask random:0 --sq 700 --sk 900 --hq 4 --hkv 1" \
               "--tile persist=1 --sq 1000 --sk 700 --hq 4 --hkv 2 --causal" "--tile persist=3,bm=64 --hdim 64 --sq 2000 --sk 999 --hq 6 --hkv 3"; do
        t="--tile persist=$P"; [[ $cfg == *--tile* ]] && t=""
        if timeout 200 ./ptxgen check --kernel attn_fwd --arch sm_90a $t $cfg --seed $RANDOM >"$OUT/c.log" 2>&1; then
            pass=$((pass + 1)); r=PASS
        else fail=$((fail + 1)); r=FAIL; fi
        echo "$r [$t $cfg] $(grep -E '^(kernel: attn_fwd|  (o|lse|deterministic):)' "$OUT/c.log" | tr -s ' ' | tr '\n' ' ' | cut -c1-300)"
        [ $r = FAIL ] && tail -6 "$OUT/c.log"
    done
    echo "persistent GPU checks: $pass passed, $fail failed"
    for tool in memcheck racecheck; do
        for x in "--sq 300 --sk 457" "--sq 300 --sk 457 --block-mask random:0.5" "--sq 600 --sk 60"; do
            timeout 250 compute-sanitizer --tool $tool --error-exitcode 9 ./ptxgen check --kernel attn_fwd --arch sm_90a \
                --tile persist=2 --causal --hq 4 --hkv 2 $x --iters 1 >"$OUT/san.log" 2>&1
            echo "sanitizer $tool [$x] rc=$? :: $(grep -E 'SUMMARY|^kernel:|check:' "$OUT/san.log" | tr '\n' ' ')"
        done
    done
fi
[ "$mode" = check ] && exit 0
b() {   # b LABEL ARGS...: one ptxgen bench line
    ./ptxgen bench --kernel attn_fwd --arch sm_90a "$@" >"$OUT/b.log" 2>&1
    echo "[$*] $(grep -E '^bench:|^ptxgen' "$OUT/b.log" | head -1)"
}
for rep in 1 2; do
    for s in "--b 4 --sq 4096 --sk 4096 --hq 32 --hkv 32" "--b 4 --sq 4096 --sk 4096 --hq 32 --hkv 32 --causal" \
             "--b 4 --sq 4096 --sk 4096 --hq 64 --hkv 64 --hdim 64" "--b 4 --sq 4096 --sk 4096 --hq 64 --hkv 8 --causal" \
             "--b 1 --sq 16384 --sk 16384 --hq 16 --hkv 16"; do
        for t in $A $B; do b $s --tile $t --iters 20 --warmup 3; done
    done
    for m in dense random:1 random:0.5 random:0.1; do
        x=""; [ $m != dense ] && x="--block-mask $m"
        for t in $A $B; do b --b 1 --sq 8192 --sk 8192 --hq 16 --hkv 16 $x --tile $t --iters 10 --warmup 2; done
    done
done
PYTHONPATH=python timeout 300 python3 bench/fwd_peers.py --family wgmma --tile $B \
    --shape 4,4096,32,32,128,0 --shape 4,4096,32,32,128,1 --shape 4,4096,64,64,64,0 --shape 4,4096,64,8,128,1 \
    --shape 4,4096,16,16,256,0 --shape 1,16384,16,16,128,0 2>&1 | tee "$OUT/fwd_peers.txt"
