#!/usr/bin/env python3
"""Benchmark ptxgen attn_fwd against PyTorch SDPA (flash = FA2, cudnn) in one
process on the same GPU and the same tensors (BENCH.md method).

Our kernel is launched from its manifest JSON alone: parameters in order,
grid expressions, dynamic shared memory. That makes this script an
independent consumer of the manifest too.

usage: peer_bench.py [--ptxgen ./ptxgen] [--arch sm_90] [--quick] [--tile KEY=V,...] [--out FILE]
"""
import argparse, ctypes, json, math, os, re, subprocess, sys, tempfile
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

cu = ctypes.CDLL("libcuda.so.1")

def check(rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        cu.cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"{what} failed: {name.value.decode() if name.value else rc}")

def eval_expr(text, sizes):
    env = dict(sizes, cdiv=lambda a, b: -(-a // b), min=min, max=max)
    if not re.fullmatch(r"[\w\s+\-*/(),]+", text):
        raise ValueError(f"bad launch expression {text!r}")
    return int(eval(text.replace("/", "//"), {"__builtins__": {}}, env))

class Kernel:
    def __init__(self, ptxgen, arch, d, causal, dtype, tile):
        tmp = tempfile.mkdtemp()
        ptx, man = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.json")
        cmd = [ptxgen, "--arch", arch, "--kernel", "attn_fwd", "--hdim", str(d), "--dtype", dtype, "-o", ptx, "--manifest", man]
        if causal: cmd.append("--causal")
        if tile: cmd += ["--tile", tile]
        subprocess.run(cmd, check=True)
        self.man = json.load(open(man))
        self.k = self.man["kernels"][0]
        torch.cuda.init()
        torch.zeros(1, device="cuda")  # make torch's primary context current
        self.mod, self.fn = ctypes.c_void_p(), ctypes.c_void_p()
        check(cu.cuModuleLoadData(ctypes.byref(self.mod), open(ptx, "rb").read() + b"\0"), "cuModuleLoadData")
        check(cu.cuModuleGetFunction(ctypes.byref(self.fn), self.mod, self.k["entry"].encode()), "cuModuleGetFunction")
        check(cu.cuFuncSetAttribute(self.fn, 8, self.k["dynamic_smem_bytes"]), "cuFuncSetAttribute(max dyn smem)")
        regs, local = ctypes.c_int(), ctypes.c_int()
        check(cu.cuFuncGetAttribute(ctypes.byref(regs), 4, self.fn), "cuFuncGetAttribute(regs)")
        check(cu.cuFuncGetAttribute(ctypes.byref(local), 3, self.fn), "cuFuncGetAttribute(local)")
        self.regs, self.local = regs.value, local.value

    def launch(self, tensors, sizes, scale):
        vals = []
        for p in self.k["params"]:
            role = p["role"]
            if role in ("input", "output"):
                vals.append(ctypes.c_uint64(tensors[p["name"]].data_ptr()))
            elif role == "size":
                vals.append(ctypes.c_uint32(sizes[p["size"]]))
            elif role == "stride":
                t = tensors[p["tensor"]]
                vals.append(ctypes.c_uint64(t.stride({"b": 0, "s": 1, "h": 2}[p["dim"]])))
            elif role == "scale":
                vals.append(ctypes.c_float(scale))
        ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
        grid = [eval_expr(g, sizes) for g in self.k["grid"]]
        blk = self.k["block"]
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        check(cu.cuLaunchKernel(self.fn, *grid, *blk, self.k["dynamic_smem_bytes"], stream, ptrs, None), "cuLaunchKernel")

def median_ms(fn, iters=30, warmup=5):
    for _ in range(warmup): fn()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]

def run_shape(args, d, s, causal, dtype=torch.bfloat16):
    b, h = max(1, 16384 // s), 2048 // d
    sizes = dict(b=b, s_q=s, s_k=s, h_q=h, h_kv=h)
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=dtype) for _ in range(3))
    o = torch.full((b, s, h, d), float("nan"), device="cuda", dtype=dtype)
    lse = torch.full((b, h, s), float("nan"), device="cuda", dtype=torch.float32)
    scale = 1 / math.sqrt(d)
    kern = Kernel(args.ptxgen, args.arch, d, causal, "bf16" if dtype == torch.bfloat16 else "fp16", args.tile)
    ours = lambda: kern.launch(dict(q=q, k=k, v=v, o=o, lse=lse), sizes, scale)
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    def peer(backend):
        def f():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=scale)
        return f
    ours(); torch.cuda.synchronize()
    ref = peer(SDPBackend.FLASH_ATTENTION)().transpose(1, 2)
    err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    row = dict(d=d, s=s, b=b, h=h, causal=causal, regs=kern.regs, local=kern.local, entry=kern.k["entry"], err_vs_fa2=err)
    row["ours_ms"] = median_ms(ours)
    for name, be in (("fa2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            row[name + "_ms"] = median_ms(peer(be))
        except Exception as e:  # a backend may refuse a shape
            row[name + "_ms"] = float("nan"); print(f"# {name} unavailable: {e}", file=sys.stderr)
    for key in ("ours", "fa2", "cudnn"):
        row[key + "_tflops"] = flops / (row[key + "_ms"] * 1e-3) / 1e12
    if not (err < 1e-2):
        row["note"] = "MISMATCH vs FA2"
    return row

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptxgen", default="./ptxgen")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--tile", default=None)
    ap.add_argument("--quick", action="store_true", help="one shape: --d (default 128), s=4096, non-causal")
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    shapes = [(args.d, 4096, False)] if args.quick else [
        (d, s, c) for d in (64, 128) for s in (1024, 4096, 16384) for c in (False, True)]
    print(f"# GPU: {torch.cuda.get_device_name()}  torch {torch.__version__}  tile {args.tile or 'default'}")
    print("| d | s | b x h | causal | ours TFLOP/s | FA2 | cuDNN | ours/FA2 | ours/cuDNN | regs | spill B | rel err vs FA2 | entry |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for d, s, c in shapes:
        r = run_shape(args, d, s, c); rows.append(r)
        print(f"| {d} | {s} | {r['b']}x{r['h']} | {'yes' if c else 'no'} | {r['ours_tflops']:.1f} | {r['fa2_tflops']:.1f} | "
              f"{r['cudnn_tflops']:.1f} | {r['ours_tflops']/r['fa2_tflops']:.3f} | {r['ours_tflops']/r['cudnn_tflops']:.3f} | "
              f"{r['regs']} | {r['local']} | {r['err_vs_fa2']:.2e}{' ' + r.get('note', '')} | {r['entry']} |", flush=True)
    if args.out:
        json.dump(rows, open(args.out, "w"), indent=1)

if __name__ == "__main__":
    main()
