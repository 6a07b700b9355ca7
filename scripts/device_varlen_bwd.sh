#!/usr/bin/env bash
# Variable lengths in the backward (issue 18) on a GPU: build, check the mma.sync attn_bwd over packed sequences
# against the float64 reference (deterministic and with atomics, empty sequences, causal s_q != s_k, GQA, fp16,
# padded strides), compute-sanitizer memcheck and racecheck on one. Logs under $OUT.
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
pass=0; fail=0
for cfg in "--varlen 100,0,37,1030 --hq 4 --hkv 2" "--varlen 777,1,2000 --varlen-k 1300,0,640 --causal --hq 8 --hkv 1" \
           "--varlen 640,650,1280 --hdim 64 --dtype fp16 --hq 3 --hkv 3 --pad 8 --tile deterministic=0" \
           "--varlen 0,500,3 --varlen-k 700,500,0 --hq 2 --hkv 1 --tile deterministic=0" \
           "--varlen 2048,1,1500 --causal --hdim 64 --hq 16 --hkv 2"; do
    if ./ptxgen check --kernel attn_bwd --arch sm_90 $cfg --seed $RANDOM >"$OUT/c.log" 2>&1; then pass=$((pass + 1)); r=PASS
    else fail=$((fail + 1)); r=FAIL; fi
    echo "$r [$cfg] $(grep -E 'dq:|dk:|dv:|determin' "$OUT/c.log" | tr -s ' ' | tr '\n' ' ' | cut -c1-260)"
done
echo "varlen bwd GPU checks: $pass passed, $fail failed"
for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool ./ptxgen check --kernel attn_bwd --arch sm_90 --varlen 100,0,37,130 --causal --hq 4 \
        --hkv 2 --tile deterministic=0 >"$OUT/san.log" 2>&1
    echo "$tool varlen bwd rc=$? :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|check:' "$OUT/san.log" | tr '\n' ' ')"
done
