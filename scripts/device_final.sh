#!/usr/bin/env bash
# One device call for a full record: build, check matrix, example app, CLI bench,
# tile sweeps, and the peer table (BENCHMARKS.md). Logs under $OUT.
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
bash tests/gpu_matrix.sh >"$OUT/gpu_matrix.log" 2>&1; echo "matrix rc=$?"
grep -E "^FAIL|gpu-test:" "$OUT/gpu_matrix.log" | head -20
./build/example_host; echo "example rc=$?"
# memory and race checkers on small ragged shapes (zero-filled tails, clamped addresses)
for args in "--sq 77 --sk 130 --hq 4 --hkv 2 --causal" "--sq 130 --sk 77 --hq 2 --hkv 1 --hdim 64 --pad 8" "--sq 1 --sk 1 --hq 1 --hkv 1 --hdim 256"; do
    for tool in memcheck racecheck; do
        compute-sanitizer --tool $tool ./ptxgen check --kernel attn_fwd $args >"$OUT/san.log" 2>&1
        echo "compute-sanitizer $tool [$args]: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|check:' "$OUT/san.log" | tr '\n' ' ')"
    done
done
./ptxgen bench --kernel attn_fwd --b 4 --sq 4096 --sk 4096 --hq 16 --hkv 16 --hdim 128 | tail -1
for t in bm=128,bn=64,warps=4 bm=128,bn=128,warps=4 bm=128,bn=128,warps=8; do
    python3 bench/peer_bench.py --quick --d 64 --tile $t 2>&1 | tail -1
done
for t in bm=128,bn=32,warps=4 bm=128,bn=64,warps=4 bm=128,bn=128,warps=8; do
    python3 bench/peer_bench.py --quick --d 128 --tile $t 2>&1 | tail -1
done
python3 bench/peer_bench.py --out "$OUT/bench.json" 2>&1 | tee "$OUT/bench.md"
