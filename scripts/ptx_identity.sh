#!/usr/bin/env bash
# Whether a change left the generated kernels byte-identical: emits the PTX and manifest of every kernel kind
# (attention: each arch, kernel, family, head dim, causal, dtype and a few tile keys; MLA: each arch, kernel,
# family, dtype and tile) at a git revision and at the working tree, and lists the files that differ.
# Configs a build refuses are left out on both sides (and a config only one side emits is listed).
# usage: scripts/ptx_identity.sh [REV (HEAD)]     exit 0: identical, 1: some differ
set -eu
rev=${1:-HEAD}
root=$(git rev-parse --show-toplevel)
out=$(mktemp -d)
tree=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || true; rm -rf "$tree" "$out"' EXIT
git -C "$root" worktree add --detach -q "$tree" "$rev"
make -C "$tree" -s ptxgen
make -C "$root" -s ptxgen

emit_all() {   # emit_all PTXGEN DIR
    local p=$1 dir=$2 a k m d c t tile n
    mkdir -p "$dir"
    for a in sm_80 sm_90 sm_90a sm_100a sm_103a sm_120; do
        for m in sync wgmma tcgen05; do
            for k in attn_fwd attn_bwd; do for d in 64 128 256; do for c in "" --causal; do for t in bf16 fp16; do
                for tile in "" deterministic=1 persist=0 poly=0 pingpong=0 producer=1; do
                    n=$a.$k.$m.$d${c:+.c}.$t.${tile:-def}
                    "$p" --arch $a --kernel $k --mma $m --hdim $d $c --dtype $t ${tile:+--tile $tile} -o "$dir/$n.ptx" \
                        --manifest "$dir/$n.json" 2>/dev/null || rm -f "$dir/$n.ptx" "$dir/$n.json"
                done
            done; done; done; done
            for k in mla_fwd mla_bwd; do for t in bf16 fp16; do
                for tile in "" deterministic=1 bm=32 bm=16,bn=32; do
                    n=$a.$k.$m.$t.${tile:-def}
                    "$p" --arch $a --kernel $k --mma $m --dtype $t ${tile:+--tile $tile} -o "$dir/$n.ptx" \
                        --manifest "$dir/$n.json" 2>/dev/null || rm -f "$dir/$n.ptx" "$dir/$n.json"
                done
            done; done
        done
    done
}

emit_all "$tree/ptxgen" "$out/rev"
emit_all "$root/ptxgen" "$out/work"
echo "ptx_identity: $(ls "$out/rev" | wc -l) files at $rev, $(ls "$out/work" | wc -l) in the working tree"
differ=$(diff -rq "$out/rev" "$out/work" | sed "s|$out/||g" || true)
if [ -z "$differ" ]; then echo "ptx_identity: byte-identical"; exit 0; fi
echo "$differ"
exit 1
