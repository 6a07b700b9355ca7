#!/usr/bin/env bash
# One device call after a change to the wgmma attn_fwd: `ptxgen check` of its persistent defaults (dense, causal GQA
# ragged padded, block-sparse with empty tiles, one CTA walking every tile, s 4096 against the NVRTC reference),
# racecheck, then issue 16's forward peer table (bench/fwd_peers.py). Logs under $OUT.
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
pass=0; fail=0
for cfg in "--causal --sq 77 --sk 1537 --hq 16 --hkv 2 --b 2 --pad 8" "--block-mask random:0.15 --sq 3000 --sk 1000 --hq 6 --hkv 2" \
           "--tile persist=1 --sq 1000 --sk 700 --hq 4 --hkv 2 --causal" "--causal --sq 4096 --sk 4096 --hq 16 --hkv 4 --b 2 --ref gpu"; do
    if timeout 200 ./ptxgen check --kernel attn_fwd --arch sm_90a $cfg --seed $RANDOM >"$OUT/c.log" 2>&1; then
        pass=$((pass + 1)); r=PASS
    else fail=$((fail + 1)); r=FAIL; tail -5 "$OUT/c.log"; fi
    echo "$r [$cfg] $(grep -E '^kernel: attn_fwd' "$OUT/c.log" | head -1)"
done
echo "GPU checks: $pass passed, $fail failed"
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 ./ptxgen check --kernel attn_fwd --arch sm_90a \
    --tile persist=2 --block-mask random:0.3 --sq 600 --sk 457 --hq 4 --hkv 2 --iters 1 >"$OUT/san.log" 2>&1
echo "racecheck rc=$? :: $(grep -E 'SUMMARY' "$OUT/san.log")"
PYTHONPATH=python timeout 300 python3 bench/fwd_peers.py --family wgmma 2>&1 | tee "$OUT/fwd_peers.txt"
