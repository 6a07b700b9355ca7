#!/usr/bin/env bash
# One device call for the wgmma attn_bwd's CTA order (gen/attn_bwd_math.c key_block_order): GPU checks where the
# order is not the grid's (GQA's last chunk, MHA chunks, varlen and block-sparse whose CTAs leave by the keys the
# order gave them), the sanitizers, then the peers. Every line goes to stdout and to $OUT/order.txt as it comes, so a
# call cut short still returns what ran.
# usage: scripts/device_bwd_order.sh [check|bench|all]
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
log() { echo "$*" | tee -a "$OUT/order.txt"; }
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
make -j16 all build/tests/test_problem >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
mode=${1:-all}; pass=0; fail=0; seed=1200
run() {   # run <check|xcheck> <args...>
    local m=$1; shift; seed=$((seed + 1))
    if out=$(timeout 150 ./ptxgen $m --kernel attn_bwd --mma wgmma --seed $seed "$@" 2>&1); then
        pass=$((pass + 1)); log "PASS $m $* :: $(echo "$out" | grep -E '^  (dq|dk|dv|deterministic|sim vs)' | tr -s ' ' | tr '\n' ' ')"
    else
        fail=$((fail + 1)); log "FAIL $m $*"; log "$(echo "$out" | tail -6)"
    fi
}
if [ "$mode" != bench ]; then
    run check --hdim 128 --causal --b 4 --sq 4096 --sk 4096 --hq 64 --hkv 8 --ref gpu            # GQA last chunk
    run check --hdim 128 --causal --b 8 --sq 2048 --sk 2048 --hq 32 --hkv 4 --ref gpu
    run check --hdim 64 --tile deterministic=1 --b 4 --sq 2048 --sk 2048 --hq 16 --hkv 4 --ref gpu  # ordered, GQA
    run check --hdim 128 --causal --b 5 --sq 1000 --sk 1100 --hq 3 --hkv 3 --pad 8                # MHA chunks
    run check --hdim 128 --causal --varlen 700,0,1300,64,2000 --varlen-k 900,5,1300,0,2100 --hq 8 --hkv 2
    run check --hdim 64 --tile deterministic=1 --varlen 100,0,257,640,1500 --varlen-k 300,30,0,1200,1500 --hq 2 --hkv 2
    run check --hdim 128 --varlen 1000,333,0,1800 --hq 4 --hkv 4 --dtype fp16
    run check --hdim 128 --block-m 128 --block-n 128 --block-mask random:0.3 --varlen 1000,0,700,1300 --hq 4 --hkv 2 --causal
    run xcheck --hdim 64 --causal --sq 300 --sk 517 --hq 4 --hkv 2 --pad 8
    log "checks: $pass passed, $fail failed"
    # check's norm floor for cancelling gradients (94c68d9) on the GPU: the degenerate shapes, the GPU references
    for a in "--kernel mla_bwd --sq 2 --skv 1 --hq 16 --topk 16" "--kernel mla_bwd --sq 1 --skv 1 --hq 64 --topk 64 --tile deterministic=1" \
             "--kernel attn_bwd --sq 77 --sk 1 --hq 2 --hkv 1"; do
        log "[floor] $a :: $(timeout 120 ./ptxgen check $a 2>&1 | grep -E '^  (dq|dk|dkv)|^check:' | tr -s ' ' | tr '\n' ' ')"
    done
    log "[selfcheck] $(timeout 300 ./ptxgen selfcheck 2>&1 | tail -1)"
    log "[test_problem cuda] $(timeout 300 ./build/tests/test_problem --device cuda 2>&1 | tail -1)"
    for t in racecheck memcheck; do
        timeout 300 compute-sanitizer --tool $t --error-exitcode 9 ./ptxgen check --kernel attn_bwd --mma wgmma --causal \
            --hdim 64 --varlen 150,0,300,90 --hq 4 --hkv 2 --iters 1 >"$OUT/san_$t.log" 2>&1
        log "$t rc=$? :: $(grep -E 'SUMMARY|^check:' "$OUT/san_$t.log" | tr '\n' ' ')"
    done
fi
if [ "$mode" != check ]; then
    PYTHONPATH=python timeout 300 python3 bench/bwd_peers.py --family wgmma --shape 4,4096,32,32,128,0 \
        --shape 4,4096,32,32,128,1 --shape 4,4096,64,8,128,1 --shape 8,2048,32,4,128,1 --shape 4,4096,32,32,128,0,1 \
        --shape 4,4096,64,64,64,1 2>&1 | tee -a "$OUT/order.txt"
fi
