#!/usr/bin/env bash
# Block-sparse attn_fwd at s 8k, d 128, h 16 over tiles (bm=64 lets two CTAs share an SM, hiding one CTA's fixed
# costs under the other's key loop): dense, 10 % and 50 % masks. usage: scripts/device_sparse_tiles.sh
make -j16 all > /dev/null 2>&1 || exit 1
S="--b 1 --sq 8192 --sk 8192 --hq 16 --hkv 16 --hdim 128 --iters 10 --warmup 2 --kernel attn_fwd"
for a in sm_90a sm_90; do for t in "" bm=64 "bm=64,stages=3"; do
  [ $a = sm_90 ] && [ -n "$t" ] && [ "$t" != bm=64 ] && continue
  [ $a = sm_90 ] && [ "$t" = bm=64 ] && t="bm=64,warps=4"
  for m in dense random:0.1 random:0.5; do
    x=""; [ $m != dense ] && x="--block-mask $m"
    r=$(./ptxgen bench --arch $a $S $x ${t:+--tile $t} 2>&1 | grep -E "^bench:|^ptxgen" | head -1 | sed 's/.*: median/median/')
    echo "[$a ${t:-default} $m] $r"
  done
done; done
