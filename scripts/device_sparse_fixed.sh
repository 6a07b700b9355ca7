#!/usr/bin/env bash
# What a block-sparse attn_fwd tile costs besides its key blocks, and an A/B of two PTX sets of it (scripts/ab_ptx.sh
# with the config line `sp|--arch sm_90a --kernel attn_fwd --mma wgmma --block-m 128 --block-n 128`):
#   - then checks: the tail of tests/gpu_matrix.sh (tests/sim_cuda on the GPU, varlen, block-sparse, paged, API),
#     then compute-sanitizer on the persistent block-sparse forward;
#   - `ptxgen bench --ptx` of A then B, alternating, ROUNDS times: b 16 x h 1 (no dense head: every tile walks its
#     list) under local:1, 2, 4, 8 masks (1, 3, 7, 15 key blocks a tile) and random:0.1, dense, and issue 18's row
#     (b 1, h 16, head 0 dense). A tile's fixed cost is the intercept of time against key blocks.
#   - VARIANTS="TILE ...": those tiles of the working tree's build as well (local:1, local:8 and issue 18's row).
# usage: [SKIP_CHECKS=1] [VARIANTS=...] scripts/device_sparse_fixed.sh DIR_A DIR_B [ROUNDS (2)]; logs under $OUT
#        (DIR_A -: no PTX A/B, only the variants)
set -u
a=$1 b=$2 rounds=${3:-2}
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all build/tests/test_sim build/tests/test_problem build/tests/test_api >"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
S="--kernel attn_fwd --arch sm_90a --sq 8192 --sk 8192 --hdim 128 --block-m 128 --block-n 128"
for r in $(seq 1 "$rounds"); do
    [ "$a" = - ] || for m in local:1 local:2 local:4 local:8 random:0.1 random:1 "h16 random:0.1" "h16 random:0.5" "h16 random:1"; do
        shape="--b 16 --hq 1 --hkv 1"
        case $m in h16*) shape="--b 1 --hq 16 --hkv 16"; m=${m#h16 } ;; esac
        for side in "$a" "$b"; do
            # shellcheck disable=SC2086
            res=$(timeout 120 ./ptxgen bench $S $shape --block-mask $m --ptx "$side/sp.ptx" --iters 20 --warmup 3 2>&1 |
                  grep -E '^bench:|^ptxgen:' | head -n 1 | sed 's/.*median/median/')
            echo "[round $r] $shape $m $(basename "$side"): $res"
        done
    done
    for shape in "--b 16 --hq 1 --hkv 1" "--b 1 --hq 16 --hkv 16"; do   # dense: the same PTX on both sides
        # shellcheck disable=SC2086
        res=$(timeout 120 ./ptxgen bench --kernel attn_fwd --arch sm_90a --sq 8192 --sk 8192 --hdim 128 $shape \
              --iters 20 --warmup 3 2>&1 | grep -E '^bench:|^ptxgen:' | head -n 1 | sed 's/.*median/median/')
        echo "[round $r] $shape dense: $res"
    done
    for t in ${VARIANTS:-}; do   # other tiles of the working tree's build (no --ptx)
        for m in local:1 local:2 local:8 random:0.1 "h16 random:0.1" "h16 random:0.5"; do
            shape="--b 16 --hq 1 --hkv 1"
            case $m in h16*) shape="--b 1 --hq 16 --hkv 16"; m=${m#h16 } ;; esac
            # shellcheck disable=SC2086
            res=$(timeout 120 ./ptxgen bench $S $shape --block-mask $m --tile $t --iters 20 --warmup 3 2>&1 |
                  grep -E '^bench:|^ptxgen:' | head -n 1 | sed 's/.*median/median/')
            echo "[round $r] $shape $m tile $t: $res"
        done
    done
done | tee "$OUT/ab.txt"

if [ "${SKIP_CHECKS:-0}" != 1 ]; then
    # gpu_matrix.sh's set-up and helpers, then everything from tests/sim_cuda on (the shape matrices before it are
    # the long part; `make gpu-test` runs them)
    { sed -n '1,/^shapes=/p' tests/gpu_matrix.sh | sed '$d' | sed "s|^cd .*|cd $PWD|"
      sed -n '/^# our CUDA C++ sim kernels/,$p' tests/gpu_matrix.sh; } >"$OUT/gpu_tail.sh"
    bash "$OUT/gpu_tail.sh" 2>&1 | tee "$OUT/gpu_tail.log" | grep -E "^(FAIL|SKIP|gpu-test)|^    " | head -60
    for tool in memcheck racecheck; do
        for x in "--block-mask random:0.3 --sq 700 --sk 900" "--block-mask random:0.5 --sq 300 --sk 457 --causal --tile persist=3"; do
            timeout 250 compute-sanitizer --tool $tool --error-exitcode 9 ./ptxgen check --kernel attn_fwd --arch sm_90a \
                --hq 4 --hkv 2 $x --iters 1 --seed $RANDOM >"$OUT/san.log" 2>&1
            echo "sanitizer $tool [$x] rc=$? :: $(grep -E 'SUMMARY|^kernel:|  o:' "$OUT/san.log" | tr -s ' ' | tr '\n' ' ')"
        done
    done
fi
