#!/usr/bin/env python3
"""Sparse MLA forward (mla_fwd) against a PyTorch formulation of the same math
(gather the top-k rows, matmul, masked softmax, matmul), eager and
torch.compile, in one process on the same GPU and tensors (BENCH.md method).
Ours is launched from its manifest alone (peer_bench.KernelSet).

usage: mla_bench.py [--ptxgen ./ptxgen] [--arch sm_90] [--tile KEY=V,...] [--sq N] [--skv N] [--topk N]
                    [--heads 64,128] [--no-compile] [--out FILE]
FLOPs (KERNELS.md): 2 * s_q * h_q * topk * (d_qk + d_v), invalid slots counted.
"""
import argparse, json, math, sys
import torch
from peer_bench import KernelSet, median_ms, rel_l2

D_QK, D_V = 576, 512

def torch_mla_fwd(q, kv, idx, scale):
    """o [s_q, h, d_v], lse [s_q, h]: fp32 softmax over the valid slots of each token."""
    s_kv = kv.shape[0]
    valid = (idx >= 0) & (idx < s_kv)
    rows = kv[idx.clamp(0, s_kv - 1).long()]                            # [s_q, topk, d_qk]
    s = torch.einsum("thd,tkd->thk", q, rows).float() * scale
    s = s.masked_fill(~valid[:, None, :], float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0).to(q.dtype)
    o = torch.einsum("thk,tkd->thd", p, rows[..., :D_V])
    return o, lse

def make_indices(s_q, s_kv, topk, gen):
    """Distinct random rows per token, with ~3% of the slots invalid (-1, s_kv, INT32_MIN) as DeepSeek's top-k pads."""
    idx = torch.stack([torch.randperm(s_kv, generator=gen)[:topk] for _ in range(s_q)]).int()
    bad = torch.rand(s_q, topk, generator=gen) < 0.03
    fill = torch.tensor([-1, s_kv, -2**31], dtype=torch.int32)[torch.randint(0, 3, (s_q, topk), generator=gen)]
    return torch.where(bad, fill, idx)

def run(args, h):
    s_q, s_kv, topk = args.sq, args.skv, args.topk
    gen = torch.Generator().manual_seed(1)
    q = (torch.randn(s_q, h, D_QK, generator=gen)).to("cuda", torch.bfloat16)
    kv = (torch.randn(s_kv, D_QK, generator=gen)).to("cuda", torch.bfloat16)
    idx = make_indices(s_q, s_kv, topk, gen).to("cuda")
    o = torch.full((s_q, h, D_V), float("nan"), device="cuda", dtype=torch.bfloat16)
    lse = torch.full((s_q, h), float("nan"), device="cuda", dtype=torch.float32)
    scale = 1 / math.sqrt(D_QK)
    kern = KernelSet(args.ptxgen, args.arch, "mla_fwd", D_QK, False, "bf16", args.tile)
    kern.bind(dict(q=q, kv=kv, indices=idx, topk_length=None, o=o, lse=lse),
              dict(s_q=s_q, s_kv=s_kv, h_q=h, topk=topk), scale)
    kern.launch(); torch.cuda.synchronize()
    ref_o, ref_lse = torch_mla_fwd(q, kv, idx, scale)
    err_o, err_lse = rel_l2(o, ref_o), rel_l2(lse, ref_lse)
    flops = 2 * s_q * h * topk * (D_QK + D_V)
    row = dict(s_q=s_q, s_kv=s_kv, h=h, topk=topk, regs=kern.regs[0], local=kern.local[0], entry=kern.entries[0],
               err_o=err_o, err_lse=err_lse)
    peers = {"eager": lambda: torch_mla_fwd(q, kv, idx, scale)}
    if not args.no_compile:
        compiled = torch.compile(torch_mla_fwd)
        peers["compile"] = lambda: compiled(q, kv, idx, scale)
    row["ours_ms"] = median_ms(kern.launch)
    for name, fn in peers.items():
        try:
            row[name + "_ms"] = median_ms(fn, iters=10, warmup=2)
        except Exception as e:  # a peer may run out of memory at a shape; ours is still reported
            row[name + "_ms"] = float("nan"); print(f"# {name} unavailable: {e}", file=sys.stderr)
    for key in ["ours", *peers]:
        row[key + "_tflops"] = flops / (row[key + "_ms"] * 1e-3) / 1e12
    if not (err_o < 5e-3 and err_lse < 1e-4):
        row["note"] = "MISMATCH vs torch"
    return row

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptxgen", default="./ptxgen")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--tile", default=None)
    ap.add_argument("--sq", type=int, default=4096)
    ap.add_argument("--skv", type=int, default=8192)
    ap.add_argument("--topk", type=int, default=2048)
    ap.add_argument("--heads", default="64,128")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = []
    print("| kernel | s_q | s_kv | h | topk | ours TFLOP/s | torch eager | torch.compile | ours/compile | regs | spill B | o err | lse err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for h in [int(x) for x in args.heads.split(",")]:
        r = run(args, h)
        rows.append(r)
        comp = r.get("compile_tflops", float("nan"))
        print(f"| mla_fwd | {r['s_q']} | {r['s_kv']} | {h} | {r['topk']} | {r['ours_tflops']:.1f} | {r['eager_tflops']:.1f} | "
              f"{comp:.1f} | {r['ours_tflops'] / comp:.2f} | {r['regs']} | {r['local']} | {r['err_o']:.2e} | "
              f"{r['err_lse']:.2e} {r.get('note', '')}|", flush=True)
    if args.out: json.dump(rows, open(args.out, "w"), indent=1)

if __name__ == "__main__":
    main()
