#!/usr/bin/env bash
# Paged KV on a GPU (issue 18): build; check attn_fwd over a paged cache, the mma.sync kernel (GQA heads packed into
# the CTA's rows, causal multi-token decode, split-KV) and the wgmma one (prefill shapes), shuffled pages, drawn
# lengths with 0 and NaN in every row no sequence owns, against the float64 reference; compute-sanitizer memcheck;
# then issue 18's targets, memory bound: KV bytes read per second against this GPU's device-to-device copy bandwidth,
# measured by the same bench call, at b 64, s_k 4k, page 64, GQA 64/8, d 128 and at b 1, s_k 128k with split-KV;
# and the wgmma kernel's prefill over pages against contiguous k, v. TILES_A, SPLITS narrow or widen the sweeps;
# SMALL_PAGES=1 adds pages shorter than the key tile (16, 32) to the decode and prefill benches (the checks hold them);
# SKIP_CHECKS=1 runs the benches alone, SKIP_BENCH=1 the checks alone.
# usage: scripts/device_paged.sh.
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
pass=0; fail=0
[ "${SKIP_CHECKS:-0}" = 1 ] || for cfg in "--page-size 64 --b 9 --sq 1 --sk 3000 --hq 64 --hkv 8" \
        "--page-size 64 --b 5 --sq 4 --sk 2000 --hq 32 --hkv 4 --causal --tile bm=32,warps=2,bn=64,pack=8" \
        "--page-size 32 --b 7 --sq 1 --sk 900 --hq 12 --hkv 2 --tile bm=16,warps=1,bn=32,pack=8" \
        "--page-size 256 --b 3 --sq 16 --sk 1500 --hq 8 --hkv 1 --causal --hdim 64 --dtype fp16" \
        "--page-size 64 --b 4 --sq 2 --sk 700 --hq 4 --hkv 4 --hdim 256" \
        "--split-kv --page-size 64 --b 1 --sq 1 --sk 20000 --hq 64 --hkv 8 --splits 48 --full-kv --tile bm=16,warps=1,bn=64,pack=8" \
        "--split-kv --page-size 128 --b 3 --sq 3 --sk 5000 --hq 16 --hkv 2 --causal --splits 7" \
        "--split-kv --sq 300 --sk 2000 --hq 4 --hkv 2 --causal --splits 5" \
        "--arch sm_90a --page-size 64 --b 3 --sq 700 --sk 3000 --hq 8 --hkv 2 --causal" \
        "--arch sm_90a --page-size 128 --b 4 --sq 300 --sk 1000 --hq 4 --hkv 4 --hdim 64 --dtype fp16" \
        "--arch sm_90a --page-size 256 --b 2 --sq 129 --sk 2000 --hq 2 --hkv 1 --hdim 256" \
        "--arch sm_90a --page-size 64 --b 5 --sq 1 --sk 3000 --hq 32 --hkv 4" \
        "--page-size 16 --b 9 --sq 1 --sk 3000 --hq 64 --hkv 8" "--page-size 16 --b 3 --sq 300 --sk 1000 --hq 4 --hkv 2 --causal" \
        "--page-size 32 --b 5 --sq 5 --sk 2000 --hq 32 --hkv 8 --hdim 64" "--page-size 32 --b 3 --sq 9 --sk 1500 --hq 16 --hkv 8 --causal" \
        "--page-size 16 --b 6 --sq 4 --sk 2500 --hq 64 --hkv 8 --causal" "--page-size 32 --b 9 --sq 1 --sk 3000 --hq 64 --hkv 8" \
        "--page-size 16 --b 2 --sq 100 --sk 700 --hq 4 --hkv 4 --hdim 256" \
        "--split-kv --page-size 16 --b 2 --sq 1 --sk 9000 --hq 16 --hkv 2 --splits 9" \
        "--arch sm_90a --page-size 16 --b 3 --sq 700 --sk 3000 --hq 8 --hkv 2 --causal" \
        "--arch sm_90a --page-size 32 --b 4 --sq 300 --sk 1000 --hq 4 --hkv 4 --hdim 64 --dtype fp16" \
        "--arch sm_90a --page-size 32 --b 2 --sq 129 --sk 2000 --hq 2 --hkv 1 --hdim 256" \
        "--arch sm_90a --page-size 16 --b 5 --sq 1 --sk 3000 --hq 32 --hkv 4 --mma wgmma" \
        "--arch sm_90a --split-kv --page-size 32 --b 2 --sq 200 --sk 5000 --hq 4 --hkv 2 --causal --splits 5"; do
    [[ $cfg == *--arch* ]] || cfg="--arch sm_90 $cfg"
    if ./ptxgen check --kernel attn_fwd $cfg --ref cpu --seed $RANDOM >"$OUT/c.log" 2>&1; then pass=$((pass + 1)); r=PASS
    else fail=$((fail + 1)); r=FAIL; fi
    echo "$r [$cfg] $(grep -E '^kernel:|^  (o|lse|deterministic):' "$OUT/c.log" | tr -s ' ' | tr '\n' ' ' | cut -c1-300)"
    [ $r = FAIL ] && tail -5 "$OUT/c.log"
done
echo "paged GPU checks: $pass passed, $fail failed"
[ "${SKIP_CHECKS:-0}" = 1 ] || for x in "--arch sm_90 --sq 2 --hq 16" "--arch sm_90 --sq 2 --hq 16 --split-kv --splits 5" \
                                       "--arch sm_90a --sq 200 --hq 4" "--arch sm_90a --sq 150 --hq 2 --hdim 64 --page-size 128" \
                                       "--arch sm_90a --sq 200 --hq 4 --page-size 16"; do
    [[ $x == *--page-size* ]] || x="$x --page-size 64"
    compute-sanitizer --tool memcheck ./ptxgen check --kernel attn_fwd --b 5 --sk 700 --hkv 2 --causal $x --ref cpu \
        >"$OUT/san.log" 2>&1
    echo "memcheck paged [$x] rc=$? :: $(grep -E 'ERROR SUMMARY|check:' "$OUT/san.log" | tr '\n' ' ')"
done
[ "${SKIP_BENCH:-0}" = 1 ] && exit 0
bench() {   # name, flags
    local name=$1; shift
    local a="--arch sm_90"
    [[ "$*" == *--arch* ]] && a=""
    ./ptxgen bench --kernel attn_fwd $a --iters ${ITERS:-20} --warmup 3 "$@" >"$OUT/b.log" 2>&1
    local rc=$?
    echo "[$name] rc=$rc $(grep -E '^kernel:' "$OUT/b.log" | head -1)"
    grep -E '^bench:|^  attn_|^tile:|^ptxgen' "$OUT/b.log" | sed 's/^/    /'
}
A="--page-size 64 --b 64 --sq 1 --sk 4096 --hq 64 --hkv 8 --hdim 128 --full-kv"
for t in ${TILES_A:-""}; do
    bench "A ${t:-default}" $A ${t:+--tile $t}
done
B="--split-kv --page-size 64 --b 1 --sq 1 --sk 131072 --hq 64 --hkv 8 --hdim 128 --full-kv"
for s in ${SPLITS:-33 66}; do for t in ${TILES_B:-""}; do
    bench "B splits $s ${t:-default}" $B --splits $s ${t:+--tile $t}
done; done
# prefill over a paged cache on the wgmma kernel (sm_90a) against the same kernel over contiguous k, v, alternating
C="--arch sm_90a --b 4 --sq 4096 --sk 4096 --hq 16 --hkv 16 --hdim 128"
for rep in 1 2; do
    bench "C contiguous" $C
    bench "C paged 128" $C --page-size 128 --full-kv
    bench "C paged 64" $C --page-size 64 --full-kv
    [ "${SMALL_PAGES:-0}" = 1 ] || continue   # pages shorter than the key tile, and 64 at its old 64-key step
    bench "C paged 64, bn 64" $C --page-size 64 --full-kv --tile bn=64
    bench "C paged 32" $C --page-size 32 --full-kv
    bench "C paged 16" $C --page-size 16 --full-kv
done
[ "${SMALL_PAGES:-0}" = 1 ] && for p in 32 16; do bench "A page $p" ${A/--page-size 64/--page-size $p}; done
