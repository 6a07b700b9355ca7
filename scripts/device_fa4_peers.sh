#!/usr/bin/env bash
# The forward and backward peer tables with FA4 beside cuDNN and FA2, in two device calls back to back (the machine
# keeps /tmp while it stays warm): scripts/fa4_bundle.sh first, then
#   run: scripts/device_fa4_peers.sh first    carry build/fa4/fa4.part.aa
#   run: scripts/device_fa4_peers.sh second   carry build/fa4/fa4.part.ab   (at once, before the machine goes idle)
set -u
if [ "${1:-}" = first ]; then
    mkdir -p /tmp/fa4 && cp build/fa4/fa4.part.aa /tmp/fa4/ && ls -l /tmp/fa4
    exit
fi
cat /tmp/fa4/fa4.part.aa build/fa4/fa4.part.ab | xz -d | tar xf - -C /tmp/fa4 || { echo "FA4 unpack failed"; exit 1; }
export PYTHONPATH=python:/tmp/fa4/fa4:/tmp/fa4/fa4/nvidia_cutlass_dsl/dsl_packages PYTHONUNBUFFERED=1
make -j16 all >/dev/null 2>&1 || { echo "build failed"; exit 1; }
python3 bench/fwd_peers.py --family wgmma "${@:2}" 2>&1 | grep -v "^# note"
python3 bench/bwd_peers.py --family wgmma "${@:2}" 2>&1 | grep -v "^# note"
# issue 16's MLA rows in the same call (no peer runs here: FlashMLA and cuDNN's DSA are published numbers)
M="bench --mma wgmma --sq 4096 --skv 8192 --topk 2048 --iters 30"
for row in "mla_fwd --hq 64" "mla_fwd --hq 128" "mla_bwd --hq 64" "mla_bwd --hq 128" "mla_bwd --hq 64 --tile deterministic=1"; do
    echo "== $row: $(./ptxgen $M --kernel $row 2>&1 | grep -E 'TFLOP|median' | tr '\n' ' ')"
done
