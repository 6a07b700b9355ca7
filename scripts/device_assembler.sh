#!/usr/bin/env bash
# One device call: the wgmma attn_fwd assembled by the toolkit's ptxas (found on the machine) and by the
# driver's JIT (PTXGEN_PTXAS=driver), both whole program: registers and local memory after load, how
# it was made, and the speed in fwd_peers' method per tile; then load_bench (cold and warm loads) for each.
# usage: [ASMS="found driver"] [LOAD_BENCH=1] scripts/device_assembler.sh ["D TILE"...] ; logs under $OUT
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
export PYTHONPATH=python PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
tiles=("$@"); [ ${#tiles[@]} -gt 0 ] || tiles=("128 bn=96" "128 bn=128" "64 bn=128")
for asm in ${ASMS:-found driver}; do
    if [ $asm = driver ]; then export PTXGEN_PTXAS=driver; else unset PTXGEN_PTXAS; fi
    for d_t in "${tiles[@]}"; do
        set -- $d_t
        l=$(PTXGEN_CACHE_DIR=$OUT/cache_$asm timeout 120 ./ptxgen check --kernel attn_fwd --hdim $1 --tile $2 \
            --sq 1000 --sk 1000 --hq 4 --hkv 4 2>&1 | grep -E '^module load|registers|check:' | tr -s ' ' | tr '\n' ' ')
        sp=$(timeout 120 python3 bench/fwd_peers.py --family wgmma --quick --tile $2 --shape 4,4096,$((4096/$1)),$((4096/$1)),$1,0 \
             --shape 4,4096,$((4096/$1)),$((4096/$1)),$1,1 2>&1 | grep -v '^#\|^shape' | cut -c35-88 | tr -s ' ' | tr '\n' '|')
        echo "d=$1 $2 [$asm] :: $l :: TFLOP/s, x cuDNN (full, causal): $sp"
    done
    [ "${LOAD_BENCH:-1}" = 1 ] || continue
    rm -rf "$OUT/lb"; mkdir -p "$OUT/lb"
    echo "load_bench [$asm]:"; CUDA_CACHE_DISABLE=1 PTXGEN_CACHE_DIR=$OUT/lb timeout 300 build/load_bench cuda 5
done
rm -rf "$OUT/cache_found" "$OUT/cache_driver" "$OUT/lb"
