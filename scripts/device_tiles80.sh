#!/usr/bin/env bash
# One device call for the 80-row tiles (FA3's shapes): the wgmma attn_bwd at bm=80 (dQ^T = K^T dS^T) and the wgmma
# attn_fwd at d 256 with bn=80. GPU checks against float64 (CPU, or NVRTC at realistic sizes), xcheck, the
# sanitizers, then `ptxgen bench` of each new tile against the default, alternating, ROUNDS times. Every line goes to
# stdout and to $OUT/tiles80.txt as it comes, so a call cut short still returns what ran.
# usage: scripts/device_tiles80.sh [check|bench|all] [ROUNDS (3)]
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
log() { echo "$*" | tee -a "$OUT/tiles80.txt"; }
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
make -j16 ptxgen >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
mode=${1:-all} rounds=${2:-3}; pass=0; fail=0; seed=1400
run() {   # run <check|xcheck> <kernel> <args...>
    local m=$1 kern=$2; shift 2; seed=$((seed + 1))
    if out=$(timeout 150 ./ptxgen $m --kernel $kern --mma wgmma --seed $seed "$@" 2>&1); then
        pass=$((pass + 1)); log "PASS $m $kern $* :: $(echo "$out" | grep -E '^  (o|dq|dk|dv|deterministic|sim vs)' | tr -s ' ' | tr '\n' ' ')"
    else
        fail=$((fail + 1)); log "FAIL $m $kern $*"; log "$(echo "$out" | tail -6)"
    fi
}
if [ "$mode" != bench ]; then
    run check attn_bwd --tile bm=80 --b 4 --sq 4096 --sk 4096 --hq 32 --hkv 32 --ref gpu
    run check attn_bwd --tile bm=80 --causal --b 2 --sq 3000 --sk 3100 --hq 16 --hkv 2 --ref gpu
    run check attn_bwd --tile bm=80 --b 3 --sq 1000 --sk 777 --hq 6 --hkv 2 --pad 8 --dtype fp16
    run check attn_bwd --tile bm=80,deterministic=1 --b 2 --sq 1500 --sk 1600 --hq 8 --hkv 2
    run check attn_bwd --tile bm=80,deterministic=1 --causal --b 2 --sq 700 --sk 500 --hq 4 --hkv 4
    run check attn_bwd --tile bm=80 --causal --varlen 700,0,1300,64,2000 --varlen-k 900,5,1300,0,2100 --hq 8 --hkv 2
    run check attn_bwd --tile bm=80 --block-m 160 --block-n 128 --block-mask random:0.4 --sq 1600 --sk 1280 --hq 4 --hkv 2
    run xcheck attn_bwd --tile bm=80 --causal --sq 300 --sk 517 --hq 4 --hkv 2 --pad 8
    run check attn_fwd --hdim 256 --tile bn=80 --b 4 --sq 4096 --sk 4096 --hq 16 --hkv 16 --ref gpu
    run check attn_fwd --hdim 256 --tile bn=80 --causal --b 2 --sq 1500 --sk 1700 --hq 8 --hkv 2 --pad 8
    run check attn_fwd --hdim 256 --tile bn=80,persist=3 --b 2 --sq 1000 --sk 999 --hq 4 --hkv 1 --dtype fp16
    run xcheck attn_fwd --hdim 256 --tile bn=80 --causal --sq 200 --sk 333 --hq 2 --hkv 1
    log "checks: $pass passed, $fail failed"
    for t in racecheck memcheck; do
        timeout 300 compute-sanitizer --tool $t --error-exitcode 9 ./ptxgen check --kernel attn_bwd --mma wgmma --causal \
            --tile bm=80 --varlen 150,0,300,90 --hq 4 --hkv 2 --iters 1 >"$OUT/san_bwd_$t.log" 2>&1
        log "$t attn_bwd bm=80 rc=$? :: $(grep -E 'SUMMARY|^check:' "$OUT/san_bwd_$t.log" | tr '\n' ' ')"
        timeout 300 compute-sanitizer --tool $t --error-exitcode 9 ./ptxgen check --kernel attn_fwd --mma wgmma --causal \
            --hdim 256 --tile bn=80 --sq 200 --sk 333 --hq 2 --hkv 1 --iters 1 >"$OUT/san_fwd_$t.log" 2>&1
        log "$t attn_fwd d256 bn=80 rc=$? :: $(grep -E 'SUMMARY|^check:' "$OUT/san_fwd_$t.log" | tr '\n' ' ')"
    done
fi
if [ "$mode" != check ]; then
    S="--b 4 --sq 4096 --sk 4096 --iters 20 --warmup 3"
    configs=(
        "bwd d128|--kernel attn_bwd --hdim 128 --hq 32 --hkv 32|bm=64|bm=80"
        "bwd d128 causal|--kernel attn_bwd --hdim 128 --hq 32 --hkv 32 --causal|bm=64|bm=80"
        "bwd d128 GQA 64/8 causal|--kernel attn_bwd --hdim 128 --hq 64 --hkv 8 --causal|bm=64|bm=80"
        "bwd d128 deterministic|--kernel attn_bwd --hdim 128 --hq 32 --hkv 32|bm=64,deterministic=1|bm=80,deterministic=1"
        "fwd d256|--kernel attn_fwd --hdim 256 --hq 16 --hkv 16|bn=64|bn=80"
        "fwd d256 causal|--kernel attn_fwd --hdim 256 --hq 16 --hkv 16 --causal|bn=64|bn=80"
    )
    for r in $(seq 1 "$rounds"); do
        for c in "${configs[@]}"; do
            IFS='|' read -r name args ta tb <<<"$c"
            for t in "$ta" "$tb"; do
                # shellcheck disable=SC2086
                res=$(timeout 120 ./ptxgen bench --mma wgmma $args $S --tile $t 2>&1 | grep -E '^bench:|^ptxgen:' | head -n 1 |
                      sed 's/.*median/median/')
                log "[round $r] $name $t: $res"
            done
        done
    done
fi
