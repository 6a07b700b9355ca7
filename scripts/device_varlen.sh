#!/usr/bin/env bash
# Variable lengths on a GPU (issue 18): build, check attn_fwd over packed sequences against the float64 reference
# (empty sequences, causal s_q != s_k, GQA, fp16, padded strides), compute-sanitizer memcheck on one, then issue
# 18's target: 8 sequences of mixed lengths summing to 16k against the padded equal-length batch of the same tokens,
# alternating, in one call. usage: scripts/device_varlen.sh [ARCH]: sm_90 (default) runs the mma.sync kernel,
# sm_90a the wgmma one (the same family both sides of the comparison). Logs under $OUT.
set -u
A=${1:-sm_90}
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
pass=0; fail=0
for cfg in "--varlen 100,0,37,1030 --hq 4 --hkv 2" "--varlen 777,1,2000 --varlen-k 1300,0,640 --causal --hq 8 --hkv 1" \
           "--varlen 640,650,1280 --hdim 64 --dtype fp16 --hq 3 --hkv 3 --pad 8" "--varlen 3000,5 --varlen-k 400,2900 --causal --hdim 256" \
           "--varlen 0,0,9,2048 --hq 16 --hkv 2 --causal" "--varlen 129,1,128,4096 --dtype fp16"; do
    if ./ptxgen check --kernel attn_fwd --arch $A $cfg --seed $RANDOM >"$OUT/c.log" 2>&1; then pass=$((pass + 1)); r=PASS
    else fail=$((fail + 1)); r=FAIL; fi
    echo "$r [$cfg] $(grep -E 'o:|lse:' "$OUT/c.log" | tr -s ' ' | tr '\n' ' ' | cut -c1-200)"
done
echo "varlen GPU checks: $pass passed, $fail failed"
compute-sanitizer --tool memcheck ./ptxgen check --kernel attn_fwd --arch $A --varlen 100,0,37,130 --causal --hq 4 \
    --hkv 2 >"$OUT/san.log" 2>&1
echo "memcheck varlen rc=$? :: $(grep -E 'ERROR SUMMARY|check:' "$OUT/san.log" | tr '\n' ' ')"
# 8 sequences, 16384 tokens, against b=8 x 2048 (the same tokens padded equal): one family both sides ($A)
L=512,1024,1536,2048,2560,3072,2560,3072
for rep in 1 2; do for c in "" --causal; do
    v=$(./ptxgen bench --kernel attn_fwd --arch $A --varlen $L --hq 16 --hkv 16 --hdim 128 $c --iters 20 --warmup 3 2>&1 | grep -E 'bench:|ptxgen:' | head -1)
    p=$(./ptxgen bench --kernel attn_fwd --arch $A --b 8 --sq 2048 --sk 2048 --hq 16 --hkv 16 --hdim 128 $c --iters 20 --warmup 3 2>&1 | grep -E 'bench:|ptxgen:' | head -1)
    echo "[rep $rep ${c:-noncausal}] varlen $L :: $v"
    echo "[rep $rep ${c:-noncausal}] padded b8 s2048 :: $p"
done; done
