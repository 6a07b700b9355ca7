#!/usr/bin/env python3
"""attn_bwd of every family against PyTorch SDPA's cuDNN and flash (FA2) backwards, one process, one GPU, the same
tensors (BENCH.md method). Our kernel sets are built and launched through libptxgen (ptxgen_build, ptxgen_load,
ptxgen_launch: the library encodes the TMA maps and allocates and zeroes the workspaces), the path a host
application uses. O and the LSE come from one forward (peer_bench.forward_o_lse), outside the timing; each peer's
backward is timed alone on its own recorded forward (peer_bench.BwdPeer).

usage: PYTHONPATH=python python3 bench/bwd_peers.py [--family wgmma|mma.sync ...] [--tile T] [--quick]
       [--shape b,s,hq,hkv,d,causal[,det] ...] [--out FILE.json]
det=1 builds the deterministic set (the `deterministic=1` tile key, added to --tile).
Prints one row per (shape, family): median ms and TFLOP/s (2.5 x the forward's FLOPs), each peer's, the ratios,
and the largest relative L2 error of dq, dk, dv against FA2's (cuDNN's when FA2 refuses).
"""
import json, math, sys
import torch
from torch.nn.attention import SDPBackend
import ptxgen
from peer_bench import (interleaved_ms, rel_l2, expand_kv, forward_o_lse, BwdPeer, family_bench_args, family_bench_header,
                        family_bench_row, fa4_func)

DEFAULT_SHAPES = ["4,4096,32,32,128,0", "4,4096,32,32,128,1", "4,4096,64,64,64,0", "4,4096,64,8,128,1",
                  "4,4096,32,32,128,0,1"]


def flops(b, s, h, d, causal):
    f = 2.5 * 4.0 * b * h * s * s * d
    return f / 2 if causal else f


def ours(t, causal, family, tile, scale):
    dev = ptxgen._Device.of(t["q"])
    d = t["q"].shape[-1]
    loaded = dev.kernel_set("attn_bwd", dtype="bf16", hdim=d, causal=causal, family=family, tile=tile)
    return lambda: ptxgen._launch(loaded, t, scale)


class Fa4Bwd:
    """FA4's backward alone: its forward once here (outside the timing), then the autograd backward of that graph.
    Its k and v keep h_kv heads (FA4 takes GQA natively), so its dk and dv are per kv head like ours."""
    def __init__(self, fn, q, k, v, do, causal):
        self.leaves = [x.detach().requires_grad_() for x in (q, k, v)]
        out = fn(*self.leaves, causal=causal)
        self.out = out[0] if isinstance(out, tuple) else out
        self.do = do

    def __call__(self):
        return torch.autograd.grad(self.out, self.leaves, grad_outputs=self.do, retain_graph=True)


def main():
    a = family_bench_args("b,s,hq,hkv,d,causal[,det]")
    fams, reps = a.families, a.reps
    torch.manual_seed(1234)
    family_bench_header(38)
    fa4 = fa4_func()
    rows = []
    for spec in a.shape or DEFAULT_SHAPES:
        f = [int(x) for x in spec.split(",")]
        b, s, hq, hkv, d, causal = f[:6]
        det = len(f) > 6 and f[6]
        g = hq // hkv
        scale = 1.0 / math.sqrt(d)
        q, do = (torch.randn(b, s, hq, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        k, v = (torch.randn(b, s, hkv, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        kx, vx = expand_kv(k, g), expand_kv(v, g)
        o, lse, _ = forward_o_lse(q, kx, vx, scale, bool(causal))
        fl = flops(b, s, hq, d, causal)
        sides, ref = {}, None   # every side's backward, timed together below (interleaved_ms)
        for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION)):
            try:
                p = BwdPeer(be, q, kx, vx, do, bool(causal), scale)
                p()
                sides[name] = p
                if ref is None or name == "fa2":
                    ref = p.grads_bshd()
            except Exception as ex:   # a backend that refuses the shape is reported, not fatal
                print(f"# {name} refused {spec}: {str(ex).splitlines()[0][:100]}")
        if ref is not None and g > 1:
            ref = [ref[0]] + [x.float().view(b, s, hkv, g, d).sum(3) for x in ref[1:]]
        if fa4 is not None and not det:   # FA4's deterministic backward is not timed here
            try:
                p = Fa4Bwd(fa4, q, k, v, do, bool(causal))
                e4 = max(rel_l2(x, r) for x, r in zip(p(), ref)) if ref else float("nan")
                sides["fa4"] = p
                print(f"# fa4 {spec}: max rel err dq/dk/dv vs the reference {e4:.1e}")
            except Exception as ex:
                print(f"# fa4 refused {spec}: {str(ex).splitlines()[0][:100]}")
        tile = ",".join(x for x in (a.tile, "deterministic=1" if det else None) if x) or None
        errs = {}
        for fam in fams:
            t = dict(q=q, k=k, v=v, o=o, lse=lse, do=do, dq=torch.full_like(q, float("nan")),
                     dk=torch.full_like(k, float("nan")), dv=torch.full_like(v, float("nan")))
            try:
                run = ours(t, bool(causal), fam, tile, scale)
                run(); torch.cuda.synchronize()
            except Exception as ex:
                print(f"# {fam} failed {spec}: {str(ex).splitlines()[0][:160]}")
                continue
            errs[fam] = max(rel_l2(t[n], r) for n, r in zip(("dq", "dk", "dv"), ref)) if ref else float("nan")
            sides[fam] = run
        times = interleaved_ms(sides, reps)
        peers = {n: times[n] for n in ("cudnn", "fa2", "fa4") if n in times}
        for fam in errs:
            ms, err = times[fam], errs[fam]
            tf = fl / ms / 1e9
            cd, fa, f4 = peers.get("cudnn"), peers.get("fa2"), peers.get("fa4")
            label = f"b{b} s{s} h{hq}/{hkv} d{d}{' causal' if causal else ''}{' det' if det else ''}"
            family_bench_row(label, fam, ms, fl, peers, 38, f"max rel err dq/dk/dv {err:.1e}")
            if not err < 2e-2:
                print(f"# FAIL: {fam} {label} differs from the peer's gradients (rel L2 {err:.2e})")
            rows.append(dict(shape=spec, family=fam, tile=tile, ms=ms, tflops=tf, cudnn_ms=cd, fa2_ms=fa, fa4_ms=f4, rel_err=err))
        sides = p = None   # the peers hold their graphs
        del q, do, k, v, kx, vx, o, lse, ref
        torch.cuda.empty_cache()
    if a.out:
        json.dump(rows, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
