#!/usr/bin/env bash
# One device call: the wgmma attn_fwd with FA4's lazy rescale (tile key lazy=1) against the default: GPU checks
# (ragged, causal, GQA, fp16, logits scaled up so maxima move by more and less, every head dim), the sim-vs-GPU
# cross-check, then ptxgen bench alternating lazy=0 and lazy=1, two repetitions.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
make -j16 all >/dev/null 2>&1 || { echo "build failed"; exit 1; }
pass=0; fail=0; seed=500
for a in "--hdim 128 --sq 1537 --sk 1000 --hq 4 --hkv 1" "--hdim 128 --causal --sq 77 --sk 1537 --hq 16 --hkv 2 --b 2 --pad 8" \
         "--hdim 64 --causal --sq 1000 --sk 1000 --hq 4 --hkv 4 --dtype fp16" "--hdim 256 --sq 700 --sk 900 --hq 2 --hkv 2" \
         "--hdim 128 --scale 1.0 --causal --sq 1000 --sk 3000 --hq 4 --hkv 2" "--hdim 64 --scale 1.0 --sq 2000 --sk 2000 --hq 4 --hkv 4 --dtype fp16" \
         "--hdim 128 --b 2 --sq 4096 --sk 4096 --hq 16 --hkv 16 --ref gpu"; do
    seed=$((seed + 1))
    if out=$(timeout 120 ./ptxgen check --kernel attn_fwd --mma wgmma --tile lazy=1 $a --seed $seed 2>&1); then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "FAIL lazy=1 $a"; echo "$out" | tail -4; fi
done
seed=$((seed + 1))
if out=$(timeout 200 ./ptxgen xcheck --kernel attn_fwd --mma wgmma --tile lazy=1 --hdim 128 --causal --scale 1.0 --sq 300 --sk 517 \
         --hq 4 --hkv 2 --seed $seed 2>&1); then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL xcheck"; echo "$out" | tail -4; fi
echo "lazy=1 checks: $pass passed, $fail failed"
for rep in 1 2; do
    for sh in "128 32 32" "128 32 32 --causal" "64 64 64" "64 64 64 --causal" "128 64 8 --causal" "256 16 16"; do
        set -- $sh
        for lz in 0 1; do
            r=$(timeout 60 ./ptxgen bench --kernel attn_fwd --mma wgmma --b 4 --sq 4096 --sk 4096 --hdim $1 --hq $2 --hkv $3 \
                ${4:-} --tile lazy=$lz --iters 20 --warmup 3 2>&1 | grep -E 'bench:|ptxgen:' | head -1 | grep -o '[0-9.]* TFLOP/s\|ptxgen:.*')
            echo "[rep $rep d=$1 h=$2/$3 ${4:-} lazy=$lz] $r"
        done
    done
done
