make -j16 all >/tmp/b.log 2>&1 || tail -20 /tmp/b.log
export PYTHONPATH=python
for d in 128 64 256; do for t in bn=128 bn=96 bn=64 bn=96,stages=3 bn=64,stages=3 bn=64,producer=1 bn=96,producer=1; do
  l=$(timeout 60 ./ptxgen check --kernel attn_fwd --hdim $d --tile $t --sq 300 --sk 300 --hq 1 --hkv 1 2>&1 | grep -E 'registers|check:|ptxgen:' | tr -s ' ' | tr '\n' ' ')
  sp=$(timeout 60 python3 bench/fwd_peers.py --family wgmma --quick --tile $t --shape 4,4096,$((4096/d)),$((4096/d)),$d,0 --shape 4,4096,$((4096/d)),$((4096/d)),$d,1 2>&1 | grep -v '^#\|^shape' | cut -c35-88 | tr -s ' ' | tr '\n' '|')
  echo "d=$d $t :: $l :: TFLOP/s, x cuDNN (full, causal): $sp"
done; done
