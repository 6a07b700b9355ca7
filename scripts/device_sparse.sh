#!/usr/bin/env bash
# Block-sparse attention on a GPU (issue 18, seed 003): build; check attn_fwd and attn_bwd of both Hopper-capable
# families (sm_90: mma.sync, sm_90a: wgmma) against the float64 reference with the mask (random densities with
# none and all, a band, a dense head among sparse ones, causal s_q != s_k, GQA, varlen with empty sequences,
# deterministic bitwise); compute-sanitizer memcheck on one of each; then issue 18's target at s 8k, d 128: the
# set's time (list kernels included) at 100 %, 50 % and 10 % active blocks against the dense set of the same
# family, alternating, in one call. usage: scripts/device_sparse.sh. Logs under $OUT.
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
pass=0; fail=0
[ "${SKIP_CHECKS:-0}" = 1 ] || for a in sm_90 sm_90a; do for k in attn_fwd attn_bwd; do
    for cfg in "--block-mask random:0.5 --sq 1000 --sk 1500 --hq 8 --hkv 2 --causal" "--block-mask random:0.1 --sq 2048 --sk 2048 --hq 4 --hkv 4" \
               "--block-mask random:0 --sq 700 --sk 900 --hq 4 --hkv 1" "--block-mask random:1 --sq 1500 --sk 1000 --hq 4 --hkv 2 --causal" \
               "--block-mask local:2 --sq 2000 --sk 2000 --hq 4 --hkv 2 --hdim 64 --dtype fp16 --causal" \
               "--block-mask random:0.4 --varlen 500,0,1300,64 --varlen-k 620,30,0,1200 --hq 4 --hkv 2 --causal"; do
        if ./ptxgen check --kernel $k --arch $a $cfg --ref cpu --seed $RANDOM >"$OUT/c.log" 2>&1; then pass=$((pass + 1)); r=PASS
        else fail=$((fail + 1)); r=FAIL; fi
        echo "$r $k $a [$cfg] $(grep -E '^  (o|lse|dq|dk|dv|deterministic):' "$OUT/c.log" | tr -s ' ' | tr '\n' ' ' | cut -c1-260)"
        [ $r = FAIL ] && tail -5 "$OUT/c.log"
    done
done; done
echo "block-sparse GPU checks: $pass passed, $fail failed"
[ "${SKIP_CHECKS:-0}" = 1 ] || for a in sm_90 sm_90a; do for k in attn_fwd attn_bwd; do
    compute-sanitizer --tool memcheck ./ptxgen check --kernel $k --arch $a --block-mask random:0.5 --sq 300 --sk 457 \
        --hq 4 --hkv 2 --causal --ref cpu >"$OUT/san.log" 2>&1
    echo "memcheck $k $a rc=$? :: $(grep -E 'ERROR SUMMARY|check:' "$OUT/san.log" | tr '\n' ' ')"
done; done
# s 8k, d 128, b 1, 16 heads: the whole set (list kernels included) against the dense set of the same family
S="--b 1 --sq 8192 --sk 8192 --hq 16 --hkv 16 --hdim 128 --iters 10 --warmup 2"
# ARCHS, KINDS, REPS narrow the sweep (defaults: both families, both kinds, 2 repetitions of the wgmma family)
for a in ${ARCHS:-sm_90a sm_90}; do for k in ${KINDS:-attn_fwd attn_bwd}; do for rep in $(seq 1 ${REPS:-2}); do
    for m in dense random:1 random:0.5 random:0.1; do
        if [ $m = dense ]; then x=""; else x="--block-mask $m"; fi
        [ $a = sm_90 ] && [ $rep = 2 ] && continue
        ./ptxgen bench --kernel $k --arch $a $S $x >"$OUT/b.log" 2>&1
        rc=$?
        r=$(grep -E '^bench:|^ptxgen' "$OUT/b.log" | head -1)
        echo "[$a $k rep $rep $m] rc=$rc $r"
        grep -E '^  attn_' "$OUT/b.log" | sed 's/^/    /'
        if [ $rc != 0 ] && [ ! -e "$OUT/bt.done" ]; then
            tail -5 "$OUT/b.log"; touch "$OUT/bt.done"
            command -v gdb >/dev/null && gdb -q -batch -ex run -ex bt --args ./ptxgen bench --kernel $k --arch $a $S $x 2>&1 | tail -25
        fi
    done
done; done; done
