#!/usr/bin/env python3
"""attn_fwd of every family against PyTorch SDPA's cuDNN and flash (FA2) backends and FA4 where carried (BENCH.md), one process, one GPU, the same
tensors (BENCH.md method). Our kernels are built and launched through libptxgen (ptxgen_build, ptxgen_load,
ptxgen_launch: the library encodes the TMA maps), so this times the same path a host application uses.

usage: PYTHONPATH=python python3 bench/fwd_peers.py [--family wgmma|mma.sync ...] [--tile T] [--quick]
       [--shape b,s,hq,hkv,d,causal ...] [--out FILE.json]
Prints one row per (shape, family): median ms and TFLOP/s over timed repetitions, and each peer's, with ratios.
"""
import json, math, sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
import ptxgen
# one timing method and one table for every peer benchmark (BENCH.md)
from peer_bench import interleaved_ms, rel_l2, family_bench_args, family_bench_header, family_bench_row, fa4_func

DEFAULT_SHAPES = ["4,4096,32,32,128,0", "4,4096,32,32,128,1", "4,4096,64,64,64,0", "4,4096,16,16,256,0",
                  "4,4096,64,8,128,1", "1,16384,16,16,128,0"]


def flops(b, s_q, s_k, h, d, causal):
    f = 4.0 * b * h * s_q * s_k * d
    return f / 2 if causal else f


def ours(q, k, v, causal, family, tile):
    dev = ptxgen._Device.of(q)
    b, s_q, h_q, d = q.shape
    loaded = dev.kernel_set("attn_fwd", dtype="bf16", hdim=d, causal=causal, family=family, tile=tile)
    o = torch.empty(b, s_q, h_q, v.shape[-1], dtype=q.dtype, device=q.device)
    lse = torch.empty(b, h_q, s_q, dtype=torch.float32, device=q.device)
    scale = 1.0 / math.sqrt(d)
    tensors = {"q": q, "k": k, "v": v, "o": o, "lse": lse}
    return (lambda: ptxgen._launch(loaded, tensors, scale)), o


def sdpa(q, k, v, causal, backend):
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))   # SDPA takes [b, h, s, d]
    gqa = q.shape[2] != k.shape[2]
    def run():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, enable_gqa=gqa)
    return run


def main():
    a = family_bench_args("b,s,hq,hkv,d,causal")
    fams, reps = a.families, a.reps
    torch.manual_seed(1234)
    family_bench_header(34)
    fa4 = fa4_func()
    rows = []
    for spec in a.shape or DEFAULT_SHAPES:
        b, s, hq, hkv, d, causal = (int(x) for x in spec.split(","))
        q = torch.randn(b, s, hq, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, s, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, s, hkv, d, device="cuda", dtype=torch.bfloat16)
        fl = flops(b, s, s, hq, d, causal)
        sides = {}   # every side's run, timed together below (interleaved_ms)
        for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION)):
            try:
                sides[name] = sdpa(q, k, v, bool(causal), be)
                sides[name]()
            except Exception as ex:   # a backend that refuses the shape is reported, not fatal
                sides.pop(name)
                print(f"# {name} refused {spec}: {str(ex).splitlines()[0][:100]}")
        if fa4 is not None:   # [b, s, h, d] as ours, k and v at h_kv heads
            try:
                sides["fa4"] = lambda: fa4(q, k, v, causal=bool(causal))
                sides["fa4"]()
            except Exception as ex:
                sides.pop("fa4")
                print(f"# fa4 refused {spec}: {str(ex).splitlines()[0][:100]}")
        ref = sdpa(q, k, v, bool(causal), SDPBackend.CUDNN_ATTENTION)().transpose(1, 2).float()
        errs = {}
        for fam in fams:
            run, o = ours(q, k, v, bool(causal), fam, a.tile)
            o.fill_(float("nan"))
            run(); torch.cuda.synchronize()
            errs[fam] = rel_l2(o, ref)
            sides[fam] = run
        t = interleaved_ms(sides, reps)
        peers = {n: t[n] for n in ("cudnn", "fa2", "fa4") if n in t}
        for fam in fams:
            ms, err = t[fam], errs[fam]
            tf = fl / ms / 1e9
            cd, fa, f4 = peers.get("cudnn"), peers.get("fa2"), peers.get("fa4")
            label = f"b{b} s{s} h{hq}/{hkv} d{d}{' causal' if causal else ''}"
            family_bench_row(label, fam, ms, fl, peers, 34, f"rel err vs cuDNN {err:.1e}")
            if not err < 1e-2:
                print(f"# FAIL: {fam} {label} differs from cuDNN (rel L2 {err:.2e})")
            rows.append(dict(shape=spec, family=fam, ms=ms, tflops=tf, cudnn_ms=cd, fa2_ms=fa, fa4_ms=f4, rel_err=err))
    if a.out:
        json.dump(rows, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
