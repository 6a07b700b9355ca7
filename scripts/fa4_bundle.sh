#!/usr/bin/env bash
# FlashAttention-4 (its SM90 path is the strongest Hopper peer, BENCH.md) packed for the device machine, which
# cannot download: the wheels unpacked into one folder, xz-compressed and split into two halves under build/fa4,
# each small enough for one device call to carry. scripts/device_fa4_peers.sh runs the two calls' commands.
set -eu
tmp=$(mktemp -d)
pip download -q --no-deps --python-version 3.12 --platform manylinux_2_28_x86_64 --only-binary=:all: -d "$tmp" \
    "flash-attn-4==4.0.0b36" nvidia-cutlass-dsl nvidia-cutlass-dsl-libs-base nvidia-cutlass-dsl-libs-core \
    nvidia-cutlass-dsl-libs-cu13 quack-kernels apache-tvm-ffi torch-c-dlpack-ext
mkdir "$tmp/fa4"
for w in "$tmp"/*.whl; do unzip -q -o "$w" -d "$tmp/fa4"; done
find "$tmp/fa4" -path "*stubs*" -name "*.so" -delete      # other platforms' runtime stubs
rm -rf "$tmp/fa4/nvidia_cutlass_dsl/dsl_packages/iket/profiler"
mkdir -p build/fa4 && rm -f build/fa4/fa4.part.*
tar cf - -C "$tmp" fa4 | xz -9e -T2 | split -b 33M - build/fa4/fa4.part.
rm -rf "$tmp"
ls -l build/fa4
