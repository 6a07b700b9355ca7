#!/usr/bin/env bash
# Variable lengths in the backward (issue 18) on a GPU: build, check attn_bwd over packed sequences against the
# float64 reference (deterministic and with atomics, empty sequences, causal s_q != s_k, GQA, fp16, padded strides),
# compute-sanitizer memcheck and racecheck on one, then 8 sequences summing to 16k against the padded batch of the
# same tokens. usage: scripts/device_varlen_bwd.sh [ARCH]: sm_90 (default) the mma.sync kernels, sm_90a wgmma.
set -u
A=${1:-sm_90}
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
pass=0; fail=0
for cfg in "--varlen 100,0,37,1030 --hq 4 --hkv 2" "--varlen 777,1,2000 --varlen-k 1300,0,640 --causal --hq 8 --hkv 1" \
           "--varlen 640,650,1280 --hdim 64 --dtype fp16 --hq 3 --hkv 3 --pad 8 --tile deterministic=0" \
           "--varlen 0,500,3 --varlen-k 700,500,0 --hq 2 --hkv 1 --tile deterministic=0" \
           "--varlen 2048,1,1500 --causal --hdim 64 --hq 16 --hkv 2"; do
    if ./ptxgen check --kernel attn_bwd --arch $A $cfg --seed $RANDOM >"$OUT/c.log" 2>&1; then pass=$((pass + 1)); r=PASS
    else fail=$((fail + 1)); r=FAIL; fi
    echo "$r [$cfg] $(grep -E 'dq:|dk:|dv:|determin' "$OUT/c.log" | tr -s ' ' | tr '\n' ' ' | cut -c1-260)"
done
echo "varlen bwd GPU checks: $pass passed, $fail failed"
for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool ./ptxgen check --kernel attn_bwd --arch $A --varlen 100,0,37,130 --causal --hq 4 \
        --hkv 2 --tile deterministic=0 >"$OUT/san.log" 2>&1
    echo "$tool varlen bwd rc=$? :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|check:' "$OUT/san.log" | tr '\n' ' ')"
done
L=512,1024,1536,2048,2560,3072,2560,3072
for rep in 1 2; do for c in "" --causal; do
    v=$(./ptxgen bench --kernel attn_bwd --arch $A --varlen $L --hq 16 --hkv 16 --hdim 128 $c --iters 10 --warmup 2 2>&1 | grep -E 'bench:|ptxgen:' | head -1 | grep -oE "median [0-9.]+ ms|[0-9.]+ TFLOP/s|ptxgen:.*" | tr '\n' ' ')
    p=$(./ptxgen bench --kernel attn_bwd --arch $A --b 8 --sq 2048 --sk 2048 --hq 16 --hkv 16 --hdim 128 $c --iters 10 --warmup 2 2>&1 | grep -E 'bench:|ptxgen:' | head -1 | grep -oE "median [0-9.]+ ms|[0-9.]+ TFLOP/s|ptxgen:.*" | tr '\n' ' ')
    echo "[rep $rep ${c:-noncausal}] varlen: $v | padded: $p"
done; done
