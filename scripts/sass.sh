#!/usr/bin/env bash
# SASS of a PTX file without a GPU: ptxas (the toolkit's) assembles it, nvdisasm prints it. The toolkit here has no
# nvdisasm or cuobjdump; PyPI's nvidia-cuda-nvdisasm wheel has one, fetched once into build/tools/. Used to see what
# ptxas made of a kernel (register reuse, wgmma serialisation, branches around predicated reductions) before or
# instead of a device call, e.g. whether deleting instructions let ptxas drop what fed them (BENCHMARKS.md,
# 2026-11-29: the wgmma mla_bwd's HGMMA count fell from 224 to 162).
# usage: scripts/sass.sh FILE.ptx [ARCH (sm_90a)] [--count REGEX...]
#   without --count: the SASS on stdout; with it: one line per REGEX, how many SASS instructions match it
set -eu
ptx=$1 arch=${2:-sm_90a}
shift $(($# < 2 ? $# : 2))
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$root/build/tools
nvd=$(find "$tools/nvdisasm" -name nvdisasm -type f 2>/dev/null | head -n 1 || true)
if [ -z "$nvd" ]; then
    mkdir -p "$tools/nvdisasm"
    pip download --no-deps --quiet nvidia-cuda-nvdisasm -d "$tools/nvdisasm" >&2
    python3 -m zipfile -e "$tools"/nvdisasm/nvidia_cuda_nvdisasm-*.whl "$tools/nvdisasm/x"
    nvd=$(find "$tools/nvdisasm" -name nvdisasm -type f | head -n 1)
    chmod +x "$nvd"
fi
cubin=$(mktemp --suffix=.cubin)
trap 'rm -f "$cubin"' EXIT
ptxas -arch="$arch" "$ptx" -o "$cubin"
if [ "${1:-}" = --count ]; then
    shift
    sass=$("$nvd" -c "$cubin")
    for re in "$@"; do printf '%s %s\n' "$re" "$(grep -cE -- "$re" <<<"$sass" || true)"; done
else
    "$nvd" -c "$cubin"
fi
