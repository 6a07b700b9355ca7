#!/usr/bin/env bash
# tests/sim_cuda/ptx.sh FILE.cu ARCH OUT.ptx: nvcc -ptx of FILE for ARCH, with the file's expect / block / smem /
# strict lines and "// arch: ARCH" in front (tests/test_sim.c's headers); a "// nvcc: FLAGS" line adds FLAGS to
# nvcc's (-lineinfo: the .loc, .file and .section debug lines nvcc then writes). nvcc's errors go to stderr.
set -eu
f=$1 arch=$2 out=$3
flags=$(sed -n 's|^// nvcc: ||p' "$f")
# shellcheck disable=SC2086
nvcc -arch="$arch" $flags -ptx "$f" -o "$out.nv"
{ sed -n '/^\/\/ \(expect\|block\|smem\|strict\)/p' "$f"; echo "// arch: $arch"; cat "$out.nv"; } >"$out"
rm -f "$out.nv"
