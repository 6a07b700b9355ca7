#!/usr/bin/env bash
# One device call for mla_bwd: build, GPU checks against the float64 CPU
# reference (small) and the NVRTC reference (realistic), determinism,
# sim-vs-GPU cross-check, sanitizers, CLI bench over tiles, and the PyTorch
# peer table (eager and torch.compile). QUICK=1 stops after the checks and
# the CLI bench of the default tile.
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
check() {
    ./ptxgen check --kernel mla_bwd "$@" 2>&1 | grep -E "shape:|rel_l2|determin|canary|check:|FAIL|rror|local \(spill" |
        grep -v "registers" | tr '\n' ' '
    echo " [$*]"
}
check --sq 8 --skv 8192 --hq 128 --topk 2048 --ref cpu
check --sq 12 --skv 8192 --hq 64 --topk 2048 --topk-length --ref cpu
check --sq 17 --skv 3000 --hq 100 --topk 520 --pad 8 --dtype fp16 --ref cpu
check --sq 9 --skv 2 --hq 16 --topk 64 --ref cpu
check --sq 33 --skv 4096 --hq 128 --topk 512 --tile bm=32 --ref cpu
check --sq 20 --skv 999 --hq 48 --topk 256 --tile bm=16 --topk-length --ref cpu
check --sq 11 --skv 5000 --hq 128 --topk 1024 --tile deterministic=1 --topk-length --ref cpu
check --sq 256 --skv 8192 --hq 128 --topk 2048 --ref gpu
check --sq 128 --skv 8192 --hq 64 --topk 2048 --tile deterministic=1 --ref gpu
./ptxgen xcheck --kernel mla_bwd --sq 4 --skv 200 --hq 64 --topk 128 --topk-length 2>&1 |
    grep -E "rel_l2|bit-identical|xcheck:" | tr '\n' ' '; echo
for tool in memcheck racecheck; do
    for t in deterministic=0 deterministic=1; do
        compute-sanitizer --tool $tool ./ptxgen check --kernel mla_bwd --tile $t --sq 4 --skv 300 --hq 64 --topk 128 \
            --topk-length >"$OUT/san.log" 2>&1
        echo "compute-sanitizer $tool $t: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|check:' "$OUT/san.log" | tr '\n' ' ')"
    done
done
bench() {
    ./ptxgen bench --kernel mla_bwd --sq 4096 --skv 8192 --topk 2048 "$@" 2>&1 | grep -E "bench:|ptxgen:|registers|  [a-z_]+: [0-9.]+ ms" |
        tr '\n' ' ' | sed "s/^/[$*] /"; echo
}
for h in 64 128; do bench --hq $h; done
[ "${QUICK:-0}" = 1 ] && exit 0
for h in 64 128; do bench --hq $h --tile bm=32; bench --hq $h --tile deterministic=1; done
python3 bench/mla_bench.py --kernel mla_bwd --heads 64,128 --out "$OUT/mla_bwd.json" 2>&1 | tail -12
