#!/usr/bin/env bash
# One device call for the wgmma attn_bwd: build, GPU checks (ragged, causal, GQA, fp16, padded strides,
# deterministic, tiles), sim-vs-GPU cross-checks, sanitizers, then the peer benchmark and a tile sweep.
# usage: scripts/device_bwd_wg.sh [check|bench|all|det|dqbufs|d256] [bench tiles...]; logs under $OUT
# d256: d 256 (two CTAs a key block, tile key dsplit): checks (ragged, causal, GQA, fp16, deterministic bitwise,
# varlen with empty sequences, block-sparse, s 4096 against NVRTC, tiles), xcheck, sanitizers, the manifest-only
# launcher, then the peers and the ring depth; d256 check (or d256 bench) for one half
# dqbufs: two dQ staging buffers (tile key dqbufs) against one, checks then ptxgen bench alternating
# det: the deterministic path alone (dQ added in key-block order): its checks, sanitizers, and the bench rows
# of deterministic=1 beside deterministic=0 of the same shape, with the peers, in one run
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
mode=${1:-all}; shift || true
pass=0; fail=0; seed=700
run() {   # run <mode> <args...>
    local m=$1; shift; seed=$((seed + 1))
    if out=$(timeout 120 ./ptxgen $m --kernel attn_bwd --mma wgmma --seed $seed "$@" 2>&1); then
        pass=$((pass + 1)); echo "PASS $m $* :: $(echo "$out" | grep -E '^(  (dq|dk|dv|sim vs gpu|registers)[a-z ]*|  deterministic)' | tr -s ' ' | tr '\n' ' ')"
    else
        fail=$((fail + 1)); echo "FAIL $m $*"; echo "$out" | tail -8 | sed 's/^/    /'
    fi
}
san() {   # san <tool> <log> <args...>: compute-sanitizer's tool over one check at a small ragged GQA shape
    local tool=$1 log=$OUT/$2; shift 2
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 ./ptxgen check --kernel attn_bwd --mma wgmma "$@" \
        --sq 150 --sk 300 --hq 4 --hkv 2 --iters 1 >"$log" 2>&1
    echo "sanitizer $tool [$*] rc=$? :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|check:' "$log" | tr '\n' ' ')"
}
if [ "$mode" = dqbufs ]; then   # two dQ staging buffers (tile key dqbufs) against one: checks, then A/B in one call
    for t in dqbufs=2 dqbufs=2,deterministic=1; do
        for d in 64 128; do
            run check --hdim $d --causal --tile $t --sq 77 --sk 1537 --hq 16 --hkv 2 --b 2 --pad 8
            run check --hdim $d --tile $t --sq 1537 --sk 1000 --hq 4 --hkv 1 --dtype fp16
        done
        run check --hdim 64 --tile $t --b 2 --sq 4096 --sk 4096 --hq 16 --hkv 16 --ref gpu
        run xcheck --hdim 64 --causal --tile $t --sq 300 --sk 517 --hq 4 --hkv 2 --pad 8
    done
    echo "wgmma attn_bwd dqbufs=2 checks: $pass passed, $fail failed"
    san racecheck san_dq2.log --tile deterministic=1,dqbufs=2 --hdim 64
    for rep in 1 2; do
        for sh in "64 64 64" "64 64 64 --causal" "128 32 32" "128 32 32 --causal" "128 64 8 --causal"; do
            set -- $sh
            for det in 0 1; do for nb in 1 2; do
                r=$(timeout 60 ./ptxgen bench --kernel attn_bwd --mma wgmma --b 4 --sq 4096 --sk 4096 --hdim $1 --hq $2 \
                    --hkv $3 ${4:-} --tile deterministic=$det,dqbufs=$nb --iters 20 --warmup 3 2>&1 | grep -E 'bench:|ptxgen:' | head -1)
                echo "[rep $rep d=$1 h=$2/$3 ${4:-} det=$det dqbufs=$nb] $r"
            done; done
        done
    done
    exit 0
fi
if [ "$mode" = det ]; then
    for d in 64 128; do
        for c in "" "--causal"; do
            run check --hdim $d $c --tile deterministic=1 --sq 1000 --sk 1000 --hq 4 --hkv 4
            run check --hdim $d $c --tile deterministic=1 --sq 77 --sk 1537 --hq 16 --hkv 2 --b 2 --pad 8
            run check --hdim $d $c --tile deterministic=1 --sq 1537 --sk 77 --hq 4 --hkv 1 --dtype fp16
        done
        run xcheck --hdim $d --causal --tile deterministic=1 --sq 300 --sk 517 --hq 4 --hkv 2 --pad 8
    done
    run check --hdim 128 --tile deterministic=1 --b 2 --sq 4096 --sk 4096 --hq 16 --hkv 16 --ref gpu
    run check --hdim 128 --tile deterministic=1 --causal --b 2 --sq 4096 --sk 4096 --hq 16 --hkv 4 --ref gpu
    run check --hdim 64 --tile deterministic=1 --causal --b 1 --sq 4096 --sk 4096 --hq 16 --hkv 2 --ref gpu
    run check --hdim 64 --tile deterministic=1 --sq 1537 --sk 1000 --hq 8 --hkv 2
    run bench --hdim 128 --causal --tile deterministic=1 --sq 1000 --sk 1000 --hq 4 --hkv 4 --iters 3 --warmup 1
    echo "wgmma attn_bwd deterministic checks: $pass passed, $fail failed"
    for args in "--hdim 128 --causal" "--hdim 64"; do
        for tool in memcheck racecheck; do san $tool san_det_$tool.log --tile deterministic=1 $args; done
    done
    shapes=()
    for sh in 4,4096,32,32,128,0 4,4096,32,32,128,0,1 4,4096,32,32,128,1 4,4096,32,32,128,1,1 4,4096,64,8,128,1 \
              4,4096,64,8,128,1,1 4,4096,64,8,128,0 4,4096,64,8,128,0,1 4,4096,64,64,64,0 4,4096,64,64,64,0,1 \
              4,4096,64,64,64,1 4,4096,64,64,64,1,1; do shapes+=(--shape "$sh"); done
    PYTHONPATH=python:bench timeout 300 python3 bench/bwd_peers.py --family wgmma "${shapes[@]}" --out "$OUT/bwd_det.json" 2>&1 \
        | tee "$OUT/bwd_det.txt"
    exit 0
fi
if [ "$mode" = d256 ]; then
    if [ "${1:-check}" = check ]; then
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
        for t in deterministic=0 deterministic=1; do
            for tool in memcheck racecheck; do san $tool san.log --hdim 256 --tile $t --causal; done
        done
        bash scripts/device_manifest.sh 2>&1 | tail -22
    else
        PYTHONPATH=python:bench python3 bench/bwd_peers.py --family wgmma --shape 4,4096,8,8,256,0 --shape 4,4096,8,8,256,1 \
            --shape 4,4096,8,8,256,0,1 --shape 4,4096,16,2,256,1 --shape 4,4096,32,32,128,0 2>&1 | grep -v "^# note"
        for rep in 1 2; do for c in "" --causal; do for t in "" stages=1; do
            r=$(timeout 60 ./ptxgen bench --kernel attn_bwd --mma wgmma --b 4 --sq 4096 --sk 4096 --hdim 256 --hq 8 --hkv 8 $c \
                ${t:+--tile $t} --iters 20 --warmup 3 2>&1 | grep -E 'bench:|ptxgen:' | head -1)
            echo "[rep $rep d=256 ${c:-noncausal} ${t:-default}] $r"
        done; done; done
    fi
    exit 0
fi
if [ "$mode" != bench ]; then
    for d in 64 128; do
        for c in "" "--causal"; do
            run check --hdim $d $c --sq 1000 --sk 1000 --hq 4 --hkv 4
            run check --hdim $d $c --sq 77 --sk 1537 --hq 16 --hkv 2 --b 2 --pad 8
            run check --hdim $d $c --sq 1537 --sk 77 --hq 4 --hkv 1 --dtype fp16
            run check --hdim $d $c --sq 517 --sk 300 --hq 6 --hkv 2 --tile deterministic=1
        done
        run check --hdim $d --sq 1 --sk 1 --hq 1 --hkv 1
        run xcheck --hdim $d --causal --sq 300 --sk 517 --hq 4 --hkv 2 --pad 8
        run xcheck --hdim $d --sq 200 --sk 130 --hq 2 --hkv 1
    done
    for t in stages=1 bn=64,bm=64,stages=3,deterministic=1 bn=64,bm=64; do run check --hdim 64 --tile $t --causal --sq 777 --sk 1000 --hq 4 --hkv 2; done
    for t in stages=1 stages=1,deterministic=1; do run check --hdim 128 --tile $t --causal --sq 777 --sk 1000 --hq 4 --hkv 2; done
    run check --hdim 128 --b 2 --sq 4096 --sk 4096 --hq 16 --hkv 16 --ref gpu
    run check --hdim 128 --causal --b 2 --sq 4096 --sk 4096 --hq 16 --hkv 4 --ref gpu
    run check --hdim 64 --causal --b 1 --sq 4096 --sk 4096 --hq 16 --hkv 2 --ref gpu
    echo "wgmma attn_bwd checks: $pass passed, $fail failed"
    if command -v compute-sanitizer >/dev/null; then
        n=0
        for args in "--hdim 128 --causal" "--hdim 64 --tile deterministic=1" "--hdim 64"; do
            for tool in memcheck racecheck; do
                n=$((n + 1))
                san $tool "san_${n}_$tool.log" $args
            done
        done
    else echo "SKIP sanitizer: compute-sanitizer is not on this machine"; fi
fi
if [ "$mode" != check ]; then
    PYTHONPATH=python:bench timeout 300 python3 bench/bwd_peers.py --out "$OUT/bwd_peers.json" 2>&1 | tee "$OUT/bwd_peers.txt"
    for t in "$@"; do
        for shape in "4,4096,32,32,128,0" "4,4096,64,64,64,0"; do
            PYTHONPATH=python:bench timeout 100 python3 bench/bwd_peers.py --quick --family wgmma --tile "$t" --shape "$shape" 2>&1 | grep -E "^b|FAIL|failed" | sed "s/^/[tile $t] /"
        done
    done
fi
