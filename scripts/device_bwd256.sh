#!/usr/bin/env bash
# One device call for the wgmma attn_bwd at d 256 (two CTAs a key block, tile key dsplit): GPU checks against float64
# (ragged, causal, GQA, fp16, padded strides, deterministic bitwise, varlen with empty sequences, block-sparse, s 4096
# against NVRTC, tiles off the default), a sim-vs-GPU xcheck, compute-sanitizer memcheck and racecheck, the
# manifest-only launcher, then the peers (cuDNN, FA2) and a tile sweep.
# usage: scripts/device_bwd256.sh [check|bench|all]      logs under $OUT
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
mode=${1:-all}
pass=0; fail=0; seed=2560
run() {   # run <mode> <args...>
    local m=$1; shift; seed=$((seed + 1))
    if out=$(timeout 180 ./ptxgen $m --kernel attn_bwd --mma wgmma --seed $seed "$@" 2>&1); then
        pass=$((pass + 1)); echo "PASS $m $* :: $(echo "$out" | grep -E '^(  (dq|dk|dv|sim vs gpu)[a-z ]*|  deterministic)' | tr -s ' ' | tr '\n' ' ')"
    else
        fail=$((fail + 1)); echo "FAIL $m $*"; echo "$out" | tail -8 | sed 's/^/    /'
    fi
}
if [ "$mode" != bench ]; then
    h=(--hdim 256)
    run check "${h[@]}" --causal --b 2 --sq 1000 --sk 1300 --hq 8 --hkv 2
    run check "${h[@]}" --sq 777 --sk 1500 --hq 4 --hkv 1 --pad 8
    run check "${h[@]}" --dtype fp16 --sq 2049 --sk 2049 --hq 2 --hkv 2
    run check "${h[@]}" --causal --sq 1537 --sk 77 --hq 4 --hkv 1 --dtype fp16
    run check "${h[@]}" --tile deterministic=1 --causal --b 2 --sq 1000 --sk 1300 --hq 8 --hkv 2
    run check "${h[@]}" --tile deterministic=1 --sq 1537 --sk 1000 --hq 8 --hkv 2 --pad 8
    run check "${h[@]}" --varlen 1000,0,37,1300,511 --varlen-k 1200,30,0,1500,511 --causal --hq 8 --hkv 2
    run check "${h[@]}" --varlen 1000,0,37,1300,511 --tile deterministic=1 --hq 4 --hkv 1
    run check "${h[@]}" --block-mask random:0.4 --causal --sq 1000 --sk 1300 --hq 4 --hkv 2
    run check "${h[@]}" --block-mask random:0.2 --sq 2000 --sk 1000 --hq 3 --hkv 1
    run check "${h[@]}" --b 1 --sq 4096 --sk 4096 --hq 8 --hkv 8 --ref gpu
    run check "${h[@]}" --causal --b 1 --sq 4096 --sk 4096 --hq 8 --hkv 2 --ref gpu --tile deterministic=1
    run check "${h[@]}" --tile stages=1 --causal --sq 1000 --sk 1300 --hq 4 --hkv 2
    run check "${h[@]}" --tile stages=1,dqbufs=2,deterministic=1 --sq 1000 --sk 1300 --hq 4 --hkv 2
    run check --hdim 128 --tile bm=32 --causal --sq 1000 --sk 1300 --hq 4 --hkv 2
    run check --hdim 128 --tile bm=128,dsplit=2,stages=1 --sq 1000 --sk 1300 --hq 4 --hkv 2
    run xcheck "${h[@]}" --causal --sq 300 --sk 517 --hq 4 --hkv 2 --pad 8
    echo "wgmma attn_bwd d256 checks: $pass passed, $fail failed"
    for t in deterministic=0 deterministic=1; do for tool in memcheck racecheck; do
        timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 ./ptxgen check --kernel attn_bwd --mma wgmma --hdim 256 \
            --tile $t --causal --sq 150 --sk 300 --hq 4 --hkv 2 --iters 1 >"$OUT/san.log" 2>&1
        echo "sanitizer $tool [d256 $t causal GQA ragged] rc=$? :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|check:' "$OUT/san.log" | tr '\n' ' ')"
    done; done
    bash scripts/device_manifest.sh 2>&1 | tail -22
fi
if [ "$mode" != check ]; then
    PYTHONPATH=python python3 bench/bwd_peers.py --family wgmma --shape 4,4096,8,8,256,0 --shape 4,4096,8,8,256,1 --shape 4,4096,8,8,256,0,1 \
        --shape 4,4096,16,2,256,1 --shape 4,4096,32,32,128,0 2>&1 | grep -v "^# note"
    for rep in 1 2; do for c in "" --causal; do for t in "" stages=1 stages=1,dqbufs=2; do
        r=$(timeout 60 ./ptxgen bench --kernel attn_bwd --mma wgmma --b 4 --sq 4096 --sk 4096 --hdim 256 --hq 8 --hkv 8 $c \
            ${t:+--tile $t} --iters 20 --warmup 3 2>&1 | grep -E 'bench:|ptxgen:' | head -1)
        echo "[rep $rep d=256 ${c:-noncausal} ${t:-default}] $r"
    done; done; done
fi
