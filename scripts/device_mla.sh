#!/usr/bin/env bash
# One device call for mla_fwd: build, GPU checks at realistic and ragged
# shapes, sim-vs-GPU cross-check, sanitizers, CLI bench over tiles, and the
# PyTorch peer table (eager and torch.compile).
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
for args in "--sq 32 --skv 8192 --hq 128 --topk 2048" "--sq 40 --skv 8192 --hq 64 --topk 2048 --topk-length" \
            "--sq 17 --skv 3000 --hq 100 --topk 520 --pad 8 --dtype fp16" "--sq 9 --skv 1 --hq 16 --topk 64" \
            "--sq 33 --skv 4096 --hq 128 --topk 512 --tile bm=32,bn=64" "--sq 33 --skv 4096 --hq 128 --topk 512 --tile bm=64,bn=32" \
            "--sq 20 --skv 999 --hq 48 --topk 256 --tile bm=16,bn=32 --topk-length"; do
    ./ptxgen check --kernel mla_fwd $args 2>&1 | grep -E "shape:|rel_l2|check:|FAIL|local \(spill" | grep -v "registers" | tr '\n' ' '
    echo " [$args]"
done
./ptxgen xcheck --kernel mla_fwd --sq 6 --skv 200 --hq 64 --topk 128 --topk-length 2>&1 | grep -E "rel_l2|bit-identical|xcheck:" | tr '\n' ' '; echo
for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool ./ptxgen check --kernel mla_fwd --sq 5 --skv 300 --hq 64 --topk 128 --topk-length >"$OUT/san.log" 2>&1
    echo "compute-sanitizer $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|check:' "$OUT/san.log" | tr '\n' ' ')"
done
for t in "bm=64,bn=64" "bm=64,bn=32" "bm=32,bn=64" "bm=32,bn=32"; do
    for h in 64 128; do
        ./ptxgen bench --kernel mla_fwd --sq 4096 --skv 8192 --hq $h --topk 2048 --tile $t 2>&1 | grep -E "bench:|ptxgen:|registers" | tr '\n' ' ' | sed "s/^/[h=$h $t] /"; echo
    done
done
python3 bench/mla_bench.py --heads 64,128 --out "$OUT/mla_fwd.json" 2>&1 | grep -v "^#" | tail -8
