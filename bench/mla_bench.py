#!/usr/bin/env python3
"""Sparse MLA forward (mla_fwd) or backward (mla_bwd) against a PyTorch formulation of the same math
(gather the top-k rows, matmul, masked softmax, matmul; autograd for the backward), eager and
torch.compile, in one process on the same GPU and tensors (BENCH.md method).
Ours: both through libptxgen (ptxgen_build/load/launch, as a host app and sparse_mla do), for the GPU's own
target; --family picks the instruction family (default: --mma auto).

usage: mla_bench.py [--kernel mla_fwd|mla_bwd] [--family sync|wgmma]
                    [--tile KEY=V,...] [--sq N]
                    [--skv N] [--topk N] [--heads 64,128] [--no-compile] [--out FILE]
FLOPs (KERNELS.md): fwd 2 * s_q * h_q * topk * (d_qk + d_v); bwd 2 * s_q * h_q * topk * (3 * d_qk + 2 * d_v);
invalid slots counted.
"""
import argparse, json, math, sys
import torch
import ptxgen
from peer_bench import NoTF32, median_ms, rel_l2

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
    # through libptxgen (it encodes the wgmma kernel's TMA maps), for the GPU's own target: --family picks
    loaded = ptxgen._Device.of(q).kernel_set("mla_fwd", dtype="bf16", family=args.family, tile=args.tile)
    tensors = dict(q=q, kv=kv, indices=idx, topk_length=None, o=o, lse=lse)
    launch = lambda: ptxgen._launch(loaded, tensors, scale)
    launch(); torch.cuda.synchronize()
    ref_o, ref_lse = torch_mla_fwd(q, kv, idx, scale)
    err_o, err_lse = rel_l2(o, ref_o), rel_l2(lse, ref_lse)
    flops = 2 * s_q * h * topk * (D_QK + D_V)
    row = dict(s_q=s_q, s_kv=s_kv, h=h, topk=topk, family=args.family or "auto", err_o=err_o, err_lse=err_lse)
    peers = {"eager": lambda: torch_mla_fwd(q, kv, idx, scale)}
    if not args.no_compile:
        compiled = torch.compile(torch_mla_fwd)
        peers["compile"] = lambda: compiled(q, kv, idx, scale)
    row["ours_ms"] = median_ms(launch)
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

def torch_mla_bwd_ref(q, kv, idx, do, scale, chunk=256):
    """The check's reference: fp32 dq, dkv by autograd of torch_mla_fwd on fp32 copies (no TF32), tokens in chunks
    (dkv summed over them). Not bf16 eager: its kv[idx] backward (index_put accumulate into bf16) sums the
    ~s_q*topk/s_kv contributions to a row of dkv in bf16: 1.4e-2 rel L2 vs float64 at 128 per row on the CPU
    (not measured on CUDA); the line under each row prints the bf16 peer's own error."""
    kv32 = kv.float().requires_grad_()
    dq, dkv = torch.empty(q.shape, device=q.device), torch.zeros(kv.shape, device=q.device)
    with NoTF32():
        for t0 in range(0, q.shape[0], chunk):
            qc = q[t0:t0 + chunk].float().requires_grad_()
            o = torch_mla_fwd(qc, kv32, idx[t0:t0 + chunk], scale)[0]
            gq, gkv = torch.autograd.grad(o, (qc, kv32), do[t0:t0 + chunk].float())
            dq[t0:t0 + chunk] = gq; dkv += gkv
    return dq, dkv

def median_bwd_ms(fwd, ins, do, iters=10, warmup=2):
    """Median ms of a peer's backward alone. Each repetition reruns the forward fwd() -> o outside the timed
    region, then times torch.autograd.grad(o, ins, do), which frees that graph (no retain_graph, so none through
    a compiled graph either). The start event is queued after the forward's kernels, so their GPU time is not
    counted; the CPU queues the backward while they run."""
    times = []
    for i in range(warmup + iters):
        o = fwd()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); torch.autograd.grad(o, ins, do); b.record(); b.synchronize()
        del o
        if i >= warmup: times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]

def run_bwd(args, h):
    s_q, s_kv, topk = args.sq, args.skv, args.topk
    gen = torch.Generator().manual_seed(1)
    q = (torch.randn(s_q, h, D_QK, generator=gen)).to("cuda", torch.bfloat16)
    kv = (torch.randn(s_kv, D_QK, generator=gen)).to("cuda", torch.bfloat16)
    idx = make_indices(s_q, s_kv, topk, gen).to("cuda")
    do = (torch.randn(s_q, h, D_V, generator=gen)).to("cuda", torch.bfloat16)
    scale = 1 / math.sqrt(D_QK)
    # o and lse (the backward's inputs) from our mla_fwd (--mma auto, default tile; --family and --tile are mla_bwd's)
    dev = ptxgen._Device.of(q)
    o = torch.empty(s_q, h, D_V, device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(s_q, h, device="cuda", dtype=torch.float32)
    ptxgen._launch(dev.kernel_set("mla_fwd", dtype="bf16"), dict(q=q, kv=kv, indices=idx, topk_length=None, o=o, lse=lse),
                   scale)
    dq = torch.full((s_q, h, D_QK), float("nan"), device="cuda", dtype=torch.bfloat16)
    dkv = torch.full((s_kv, D_QK), float("nan"), device="cuda", dtype=torch.bfloat16)
    # through libptxgen, as sparse_mla's backward (it encodes the wgmma kernel's TMA maps, owns the workspaces)
    loaded = dev.kernel_set("mla_bwd", dtype="bf16", family=args.family, tile=args.tile)
    tensors = dict(q=q, kv=kv, indices=idx, topk_length=None, o=o, do=do, lse=lse, dq=dq, dkv=dkv)
    launch = lambda: ptxgen._launch(loaded, tensors, scale)
    launch(); torch.cuda.synchronize()
    ref_dq, ref_dkv = torch_mla_bwd_ref(q, kv, idx, do, scale)
    flops = 2 * s_q * h * topk * (3 * D_QK + 2 * D_V)
    row = dict(s_q=s_q, s_kv=s_kv, h=h, topk=topk, family=args.family or "auto", err_dq=rel_l2(dq, ref_dq),
               err_dkv=rel_l2(dkv, ref_dkv))
    row["ours_ms"] = median_ms(launch)  # includes zeroing the zero_init workspaces (the library's launch does)
    torch.cuda.empty_cache()
    leaves = [q.detach().requires_grad_(), kv.detach().requires_grad_()]  # dkv by autograd of kv[idx] (index_put accumulate)
    try:  # the bf16 eager peer's own error, for the record
        e_dq, e_dkv = torch.autograd.grad(torch_mla_fwd(*leaves, idx, scale)[0], leaves, do)
        row["eager_err_dq"], row["eager_err_dkv"] = rel_l2(e_dq, ref_dq), rel_l2(e_dkv, ref_dkv)
        del e_dq, e_dkv
    except torch.cuda.OutOfMemoryError:
        print("# eager: OOM", file=sys.stderr)
    del ref_dq, ref_dkv
    torch.cuda.empty_cache()
    peers = {"eager": lambda: torch_mla_fwd(*leaves, idx, scale)[0]}
    if not args.no_compile:
        compiled = torch.compile(torch_mla_fwd)  # AOTAutograd compiles the forward and its backward (at first use)
        peers["compile"] = lambda: compiled(*leaves, idx, scale)[0]
    for name, fn in peers.items():
        try:
            row[name + "_ms"] = median_bwd_ms(fn, leaves, do)
        except torch.cuda.OutOfMemoryError:
            row[name + "_ms"] = float("nan"); print(f"# {name}: OOM", file=sys.stderr)
        except Exception as e:  # e.g. torch.compile failing: report it, keep the others
            row[name + "_ms"] = float("nan"); print(f"# {name} unavailable: {e}", file=sys.stderr)
        torch.cuda.empty_cache()
    for key in ["ours", *peers]:
        row[key + "_tflops"] = flops / (row[key + "_ms"] * 1e-3) / 1e12
    if not (row["err_dq"] < 1e-2 and row["err_dkv"] < 1e-2):  # NaN fails
        row["note"] = "MISMATCH vs torch"
    return row

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", choices=("mla_fwd", "mla_bwd"), default="mla_fwd")
    ap.add_argument("--family", default=None, choices=("sync", "wgmma"), help="--kernel's family (default: --mma auto)")
    ap.add_argument("--tile", default=None, help="tile of --kernel (mla_bwd's o/lse come from mla_fwd's default tile)")
    ap.add_argument("--sq", type=int, default=4096)
    ap.add_argument("--skv", type=int, default=8192)
    ap.add_argument("--topk", type=int, default=2048)
    ap.add_argument("--heads", default="64,128")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = []
    if args.kernel == "mla_bwd":
        print(f"# GPU: {torch.cuda.get_device_name()}  torch {torch.__version__}  tile {args.tile or 'default'}")
        print("# mla_bwd: backward alone; ours: the mla_bwd set incl. zeroing its zero_init workspaces, o/lse from our "
              "mla_fwd; peers: autograd of torch_mla_fwd, forward rerun untimed before each backward; "
              "err: rel L2 vs autograd of torch_mla_fwd in fp32 (1e-2)")
        print("| kernel | family | s_q | s_kv | h | topk | ours TFLOP/s | torch eager | torch.compile | ours/eager | ours/compile | dq err | dkv err |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for h in [int(x) for x in args.heads.split(",")]:
            r = run_bwd(args, h)
            rows.append(r)
            eag, comp = r["eager_tflops"], r.get("compile_tflops", float("nan"))
            print(f"| mla_bwd | {r['family']} | {r['s_q']} | {r['s_kv']} | {h} | {r['topk']} | {r['ours_tflops']:.1f} | "
                  f"{eag:.1f} | {comp:.1f} | {r['ours_tflops'] / eag:.2f} | {r['ours_tflops'] / comp:.2f} | "
                  f"{r['err_dq']:.2e} | {r['err_dkv']:.2e} {r.get('note', '')}|", flush=True)
            print(f"#   torch eager (bf16) vs the fp32 reference: dq {r.get('eager_err_dq', float('nan')):.2e}  "
                  f"dkv {r.get('eager_err_dkv', float('nan')):.2e}", flush=True)
            torch.cuda.empty_cache()
        if args.out: json.dump(rows, open(args.out, "w"), indent=1)
        return
    print(f"# GPU: {torch.cuda.get_device_name()}  torch {torch.__version__}  family {args.family or 'auto'}  "
          f"tile {args.tile or 'default'}")
    print("| kernel | family | s_q | s_kv | h | topk | ours TFLOP/s | torch eager | torch.compile | ours/compile | o err | lse err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for h in [int(x) for x in args.heads.split(",")]:
        r = run(args, h)
        rows.append(r)
        comp = r.get("compile_tflops", float("nan"))
        print(f"| mla_fwd | {r['family']} | {r['s_q']} | {r['s_kv']} | {h} | {r['topk']} | {r['ours_tflops']:.1f} | "
              f"{r['eager_tflops']:.1f} | {comp:.1f} | {r['ours_tflops'] / comp:.2f} | {r['err_o']:.2e} | "
              f"{r['err_lse']:.2e} {r.get('note', '')}|", flush=True)
    if args.out: json.dump(rows, open(args.out, "w"), indent=1)

if __name__ == "__main__":
    main()
