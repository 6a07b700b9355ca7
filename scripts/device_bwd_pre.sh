#!/usr/bin/env bash
# One device call after a change to the attn_bwd pre kernel (gen/attn_bwd_rows.c: the stats blocks and the dQ
# semaphores it zeroes): the wgmma backward against float64 at each stats block size (64, 80, 128 rows) with and
# without the semaphores (deterministic), varlen and block-sparse, and the pre kernel's time beside the set's.
# usage: scripts/device_bwd_pre.sh; lines to stdout and $OUT/pre.txt
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
log() { echo "$*" | tee -a "$OUT/pre.txt"; }
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
make -j16 ptxgen >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
pass=0; fail=0; seed=1600
run() {
    seed=$((seed + 1))
    if out=$(timeout 150 ./ptxgen check --kernel attn_bwd --mma wgmma --seed $seed "$@" 2>&1); then
        pass=$((pass + 1)); log "PASS $* :: $(echo "$out" | grep -E '^  (dq|dk|dv|deterministic)' | tr -s ' ' | tr '\n' ' ')"
    else
        fail=$((fail + 1)); log "FAIL $*"; log "$(echo "$out" | tail -6)"
    fi
}
run --tile bm=64,deterministic=1 --causal --b 2 --sq 1000 --sk 1100 --hq 8 --hkv 2
run --tile bm=80,deterministic=1 --b 2 --sq 1030 --sk 900 --hq 6 --hkv 3
run --tile bm=80,deterministic=1 --causal --varlen 130,0,700,81 --varlen-k 200,5,700,0 --hq 4 --hkv 2
run --hdim 64 --tile deterministic=1 --causal --b 3 --sq 600 --sk 700 --hq 4 --hkv 4
run --hdim 64 --varlen 100,0,257,640 --hq 2 --hkv 1
run --causal --b 4 --sq 4096 --sk 4096 --hq 32 --hkv 32 --ref gpu
run --block-mask random:0.3 --sq 1500 --sk 1300 --hq 4 --hkv 2 --causal
log "checks: $pass passed, $fail failed"
log "$(./ptxgen bench --kernel attn_bwd --mma wgmma --hdim 128 --b 4 --sq 4096 --sk 4096 --hq 32 --hkv 32 --iters 20 2>&1 | grep -E '^bench|pre|convert')"
log "$(./ptxgen bench --kernel attn_bwd --mma wgmma --hdim 128 --b 4 --sq 4096 --sk 4096 --hq 32 --hkv 32 --tile bm=64 --iters 20 2>&1 | grep -E '^bench|pre|convert')"
