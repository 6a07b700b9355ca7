#!/usr/bin/env bash
# FA4's SM90 backward beside ours, for facts (BENCHMARKS.md "The backward under the power cap"): two device calls back
# to back, FA4 carried as scripts/device_fa4_peers.sh carries it:
#   run: scripts/device_fa4_sass.sh first    carry build/fa4/fa4.part.aa
#   run: scripts/device_fa4_sass.sh second   carry build/fa4/fa4.part.ab
# The second: FA4's kernels of one d128 forward and backward kept as PTX and cubin ($OUT/fa4dump.tar.xz, to read with
# cuobjdump here), then ncu (--clock-control none) on FA4's backward kernels and on our set at the same shape.
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
if [ "${1:-}" = first ]; then
    mkdir -p /tmp/fa4 && cp build/fa4/fa4.part.aa /tmp/fa4/ && ls -l /tmp/fa4
    exit
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cat /tmp/fa4/fa4.part.aa build/fa4/fa4.part.ab | xz -d | tar xf - -C /tmp/fa4 || { echo "FA4 unpack failed"; exit 1; }
export PYTHONPATH=python:bench:/tmp/fa4/fa4:/tmp/fa4/fa4/nvidia_cutlass_dsl/dsl_packages PYTHONUNBUFFERED=1
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
cat >/tmp/fa4_once.py <<'PY'
import torch
from peer_bench import fa4_func
from bwd_peers import Fa4Bwd
fn = fa4_func()
b, s, h, d = 4, 4096, 32, 128
q, k, v, do = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
p = Fa4Bwd(fn, q, k, v, do, False)
for _ in range(2): p()
torch.cuda.synchronize()
print("fa4 backward ran")
PY
mkdir -p /tmp/fa4dump
CUTE_DSL_KEEP_PTX=1 CUTE_DSL_KEEP_CUBIN=1 CUTE_DSL_DUMP_DIR=/tmp/fa4dump python3 /tmp/fa4_once.py 2>&1 | tail -3
ls -la /tmp/fa4dump | head -20
tar cJf "$OUT/fa4dump.tar.xz" -C /tmp fa4dump
NCU_COUNTS=1 . scripts/ncu_metrics.sh
[ -n "$NCU" ] || { echo "no ncu"; exit 0; }
timeout 400 "$NCU" --clock-control none --kernel-name "regex:(?i)bwd|backward|attn_bwd" --launch-skip 0 --launch-count 8 \
    --metrics "$m" --csv python3 /tmp/fa4_once.py >"$OUT/ncu_fa4.csv" 2>"$OUT/ncu_fa4.err" || tail -5 "$OUT/ncu_fa4.err"
timeout 300 "$NCU" --clock-control none --kernel-name "regex:attn_bwd" --launch-count 3 --metrics "$m" --csv \
    ./ptxgen bench --kernel attn_bwd --arch sm_90a --hdim 128 --b 4 --sq 4096 --sk 4096 --hq 32 --hkv 32 --iters 1 \
    --warmup 0 >"$OUT/ncu_ours.csv" 2>"$OUT/ncu_ours.err" || tail -5 "$OUT/ncu_ours.err"
ls -la "$OUT"
