#!/usr/bin/env bash
# One device call for the hardware cross-check of the async machinery: the
# emitter-written probe (tests/test_xprobe.c: TMA swizzles, multicast,
# mbarrier, 2-CTA cluster, DSMEM, wgmma SS/RS, TMA store) on the GPU with
# three seeds, each compared with the sim's output for the same seed, and the
# correct files of the planted-bug suite (cluster DSMEM, TMA) on the GPU.
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 all build/tests/test_sim build/tests/test_xprobe >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
build/tests/test_xprobe --ptx >"$OUT/xprobe.ptx"
# the sim writes O for a seed, the GPU runs the same seed and compares with it
for s in 1 2 3; do
  build/tests/test_xprobe --device sim --seed $s --out "$OUT/xprobe_sim_$s.bin" 2>&1 | tee -a "$OUT/xprobe.log"
  build/tests/test_xprobe --device cuda --seed $s --compare "$OUT/xprobe_sim_$s.bin" 2>&1 | tee -a "$OUT/xprobe.log"
done
build/tests/test_sim --device cuda 2>&1 | tail -40 | tee "$OUT/test_sim_gpu.log"
