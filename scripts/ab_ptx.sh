#!/usr/bin/env bash
# The PTX of one git revision, for an A/B on a device (scripts/device_ab.sh): builds ptxgen at REV in a temporary
# worktree and emits one PTX per config into OUT/NAME.ptx. Configs come on stdin, one per line:
#   NAME|ptxgen emit arguments            e.g.  d128_causal|--arch sm_90a --kernel attn_bwd --hdim 128 --causal
# usage: scripts/ab_ptx.sh REV OUT < configs     (REV: a commit, a branch, or WORK for the working tree)
set -eu
rev=$1 out=$2
mkdir -p "$out"
root=$(git rev-parse --show-toplevel)
if [ "$rev" = WORK ]; then
    bin=$root/ptxgen
    make -C "$root" -s ptxgen
else
    tree=$(mktemp -d)
    trap 'git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || true; rm -rf "$tree"' EXIT
    git -C "$root" worktree add --detach -q "$tree" "$rev"
    make -C "$tree" -s ptxgen
    bin=$tree/ptxgen
fi
n=0
while IFS='|' read -r name args; do
    [ -z "$name" ] && continue
    case $name in \#*) continue ;; esac
    # shellcheck disable=SC2086
    "$bin" $args -o "$out/$name.ptx"
    n=$((n + 1))
done
echo "ab_ptx: $n PTX of $rev in $out"
