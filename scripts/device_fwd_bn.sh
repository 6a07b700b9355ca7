#!/usr/bin/env bash
# One device call: the wgmma attn_fwd at 160- and 176-key steps (FA3's hdim-128 tile is 176) against the
# default 128: GPU checks of the new tiles, then ptxgen bench alternating, two repetitions.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
make -j16 all >/dev/null 2>&1 || { echo "build failed"; exit 1; }
pass=0; fail=0; seed=300
for t in bn=160 bn=176; do
    for a in "--hdim 128 --sq 1537 --sk 1000 --hq 4 --hkv 1" "--hdim 128 --causal --sq 77 --sk 1537 --hq 16 --hkv 2 --b 2 --pad 8" \
             "--hdim 64 --causal --sq 1000 --sk 1000 --hq 4 --hkv 4 --dtype fp16"; do
        seed=$((seed + 1))
        if out=$(timeout 120 ./ptxgen check --kernel attn_fwd --mma wgmma --tile $t $a --seed $seed 2>&1); then pass=$((pass + 1))
        else fail=$((fail + 1)); echo "FAIL $t $a"; echo "$out" | tail -4; fi
    done
done
echo "checks: $pass passed, $fail failed"
for rep in 1 2; do
    for sh in "128 32 32" "128 32 32 --causal" "64 64 64" "64 64 64 --causal"; do
        set -- $sh
        for bn in 128 160 176; do
            [ "$1" = 64 ] && [ "$bn" = 160 ] && continue
            r=$(timeout 60 ./ptxgen bench --kernel attn_fwd --mma wgmma --b 4 --sq 4096 --sk 4096 --hdim $1 --hq $2 --hkv $3 \
                ${4:-} --tile bn=$bn --iters 20 --warmup 3 2>&1 | grep -E 'bench:|ptxgen:' | head -1 | grep -o '[0-9.]* TFLOP/s\|ptxgen:.*')
            echo "[rep $rep d=$1 h=$2/$3 ${4:-} bn=$bn] $r"
        done
    done
done
