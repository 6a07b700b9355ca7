#!/usr/bin/env bash
# One device call for a wgmma MLA kernel (sm_90a): build, GPU checks at realistic and ragged shapes,
# sim-vs-GPU cross-check, sanitizers, and speed against the mma.sync kernel and PyTorch in one run.
# usage: scripts/device_mla_wg.sh [check|bench|all] [mla_fwd|mla_bwd]
set -u
what=${1:-all} kernel=${2:-mla_fwd}
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
A="--kernel $kernel --arch sm_90a"
shapes=("--sq 32 --skv 8192 --hq 128 --topk 2048" "--sq 40 --skv 8192 --hq 64 --topk 2048 --topk-length"
        "--sq 17 --skv 3000 --hq 100 --topk 520 --pad 8 --dtype fp16" "--sq 20 --skv 999 --hq 48 --topk 256 --topk-length"
        "--sq 7 --skv 70000 --hq 32 --topk 1000 --dtype fp16")
if [ "$kernel" = mla_fwd ]; then shapes+=("--sq 9 --skv 1 --hq 16 --topk 64" "--sq 256 --skv 8192 --hq 128 --topk 2048 --ref gpu"
                                          "--sq 256 --skv 8192 --hq 64 --topk 2048 --topk-length --ref gpu"); else
    shapes+=("--sq 9 --skv 2 --hq 16 --topk 64" "--sq 33 --skv 5000 --hq 128 --topk 1024 --tile deterministic=1"
             "--sq 12 --skv 800 --hq 20 --topk 300 --topk-length --dtype fp16 --tile deterministic=1"
             "--sq 256 --skv 8192 --hq 128 --topk 2048 --ref gpu"); fi
if [ "$what" != bench ]; then
    for args in "${shapes[@]}"; do
        ./ptxgen check $A $args 2>&1 | grep -E "shape:|rel_l2|check:|FAIL|ptxgen:|deterministic:" | tr '\n' ' '
        echo " [$args]"
    done
    ./ptxgen xcheck $A --sq 6 --skv 200 --hq 64 --topk 128 --topk-length 2>&1 | grep -E "rel_l2|bit-identical|xcheck:" | tr '\n' ' '; echo
    for tool in memcheck racecheck; do
        for t in deterministic=0 deterministic=1; do
            [ "$kernel" = mla_fwd ] && [ $t = deterministic=1 ] && continue
            tl=""; [ "$kernel" = mla_bwd ] && tl="--tile $t"
            compute-sanitizer --tool $tool ./ptxgen check $A $tl --sq 5 --skv 300 --hq 40 --topk 200 --topk-length \
                >"$OUT/san_${tool}_$t.log" 2>&1
            echo "compute-sanitizer $tool $tl: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|check:' "$OUT/san_${tool}_$t.log" | tr '\n' ' ')"
        done
    done
fi
if [ "$what" != check ]; then
    for h in 64 128; do for arch in sm_90a sm_90; do
        ./ptxgen bench --kernel $kernel --arch $arch --sq 4096 --skv 8192 --hq $h --topk 2048 2>&1 | grep -E "bench:|ptxgen:|kernel:" | tr '\n' ' ' | sed "s/^/[h=$h $arch] /"; echo
    done; done
    for fam in wgmma sync; do
        PYTHONPATH=python:bench python3 bench/mla_bench.py --kernel $kernel --family $fam --heads 64,128 \
            --out "$OUT/${kernel}_$fam.json" 2>&1 | grep -v "^# note" | tail -7
    done
fi
