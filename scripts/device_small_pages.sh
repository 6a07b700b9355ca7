#!/usr/bin/env bash
# Pages shorter than the key tile (16 and 32 keys) on a GPU: checks of attn_fwd over such pages against float64
# (mma.sync decode and prefill, wgmma prefill and decode, d 256, split-KV; shuffled pages, drawn lengths with 0, NaN
# in every row no sequence owns), compute-sanitizer memcheck of the wgmma one, then bench: issue 18's decode (b 64,
# s_k 4k, GQA 64/8) over pages of 16, 32, 64 (KV bytes per second against the copy bandwidth), and the wgmma prefill
# (b 4, s 4096, h 16) contiguous, over pages of 64 at its 64-key step and at 128 keys (two pages a step), 32 and 16.
# usage: scripts/device_small_pages.sh     (logs under $OUT)
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
make -j16 ptxgen >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
pass=0; fail=0
for cfg in "--arch sm_90 --page-size 16 --b 9 --sq 1 --sk 3000 --hq 64 --hkv 8" \
        "--arch sm_90 --page-size 16 --b 3 --sq 300 --sk 1000 --hq 4 --hkv 2 --causal" \
        "--arch sm_90 --page-size 16 --b 2 --sq 100 --sk 700 --hq 4 --hkv 4 --hdim 256" \
        "--arch sm_90 --split-kv --page-size 16 --b 2 --sq 1 --sk 9000 --hq 16 --hkv 2 --splits 9" \
        "--arch sm_90a --page-size 16 --b 3 --sq 700 --sk 3000 --hq 8 --hkv 2 --causal" \
        "--arch sm_90a --page-size 32 --b 4 --sq 300 --sk 1000 --hq 4 --hkv 4 --hdim 64 --dtype fp16" \
        "--arch sm_90a --page-size 32 --b 2 --sq 129 --sk 2000 --hq 2 --hkv 1 --hdim 256" \
        "--arch sm_90a --page-size 16 --b 5 --sq 1 --sk 3000 --hq 32 --hkv 4 --mma wgmma" \
        "--arch sm_90a --split-kv --page-size 32 --b 2 --sq 200 --sk 5000 --hq 4 --hkv 2 --causal --splits 5"; do
    if ./ptxgen check --kernel attn_fwd $cfg --ref cpu --seed $RANDOM >"$OUT/c.log" 2>&1; then pass=$((pass + 1)); r=PASS
    else fail=$((fail + 1)); r=FAIL; fi
    echo "$r [$cfg] $(grep -E '^kernel:|^shape:|^  (o|lse):' "$OUT/c.log" | tr -s ' ' | tr '\n' ' ' | cut -c1-330)"
    [ $r = FAIL ] && tail -5 "$OUT/c.log"
done
echo "small-page GPU checks: $pass passed, $fail failed"
compute-sanitizer --tool memcheck ./ptxgen check --kernel attn_fwd --arch sm_90a --page-size 16 --b 3 --sq 200 --sk 700 \
    --hq 4 --hkv 2 --causal --ref cpu >"$OUT/san.log" 2>&1
echo "memcheck wgmma pages of 16 rc=$? :: $(grep -E 'ERROR SUMMARY|check:' "$OUT/san.log" | tr '\n' ' ')"
bench() {   # name, flags
    local name=$1; shift
    ./ptxgen bench --kernel attn_fwd --iters 20 --warmup 3 "$@" >"$OUT/b.log" 2>&1
    echo "[$name] rc=$? $(grep -E '^kernel:' "$OUT/b.log" | head -1 | cut -c1-90) :: $(grep -E '^bench:' "$OUT/b.log" | sed 's/.*median/median/' | tr '\n' ' ')"
}
A="--arch sm_90 --b 64 --sq 1 --sk 4096 --hq 64 --hkv 8 --hdim 128 --full-kv"
C="--arch sm_90a --b 4 --sq 4096 --sk 4096 --hq 16 --hkv 16 --hdim 128"
for rep in 1 2; do
    for p in 64 32 16; do bench "decode page $p" $A --page-size $p; done
    bench "prefill contiguous" $C
    bench "prefill page 64 (bn 64)" $C --page-size 64
    bench "prefill page 64, bn 128" $C --page-size 64 --tile bn=128
    bench "prefill page 32 (bn 128)" $C --page-size 32
    bench "prefill page 16 (bn 128)" $C --page-size 16
done
