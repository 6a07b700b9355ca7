#!/usr/bin/env python3
"""Benchmark a ptxgen kernel set (attn_fwd, attn_bwd) against PyTorch SDPA
(flash = FA2, cudnn) in one process on the same GPU and the same tensors
(BENCH.md method).

Our kernels are launched from the manifest JSON alone: every kernel of the
set in manifest order on torch's current stream, parameters in order, grid
expressions, dynamic shared memory, workspaces (allocated once per shape,
zeroed before every launch of the set when zero_init says so; that zeroing is
timed as part of our work). That makes this script an independent consumer of
the manifest too.

usage: peer_bench.py [--kernel attn_fwd|attn_bwd] [--ptxgen ./ptxgen] [--arch sm_90] [--quick] [--d D]
                     [--dtype bf16|fp16] [--gqa N] [--tile KEY=V,...] [--gen-arg ARG ...] [--out FILE]
"""
import argparse, ctypes, json, math, os, re, subprocess, sys, tempfile, warnings
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

# PTX parameter types of the manifest -> ctypes (core/kernel.c param_type_ptx: pointers are .u64).
PTX_CTYPES = {".u64": ctypes.c_uint64, ".u32": ctypes.c_uint32, ".s64": ctypes.c_int64, ".s32": ctypes.c_int32,
              ".f32": ctypes.c_float}
TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
BSHD = {"b": 0, "s": 1, "h": 2, "d": 3}
# Names this script may meet for dO (the runner calls it dout in C because "do" is a C keyword).
ALIASES = {"dout": "do", "d_o": "do", "dO": "do"}

def shape_dims(shape):
    """'[b, s_q, h_q, d]' -> ['b', 's_q', 'h_q', 'd']"""
    return [t.strip() for t in shape.strip().strip("[]").split(",") if t.strip()]

def axis_of(shape, dim):
    """Axis of stride dimension dim ('b', 's', 'h') in a manifest tensor shape: 's' is s_q/s_k, 'h' is h_q/h_kv."""
    for i, t in enumerate(shape_dims(shape)):
        if t == dim or t.startswith(dim + "_"):
            return i
    return None

class KernelSet:
    """A generated kernel set, loaded into torch's context, launched from its manifest alone."""
    def __init__(self, ptxgen, arch, kernel, d, causal, dtype, tile, extra=()):
        tmp = tempfile.mkdtemp()
        ptx, man = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.json")
        cmd = [ptxgen, "--arch", arch, "--kernel", kernel, "--hdim", str(d), "--dtype", dtype, "-o", ptx, "--manifest", man]
        if causal: cmd.append("--causal")
        if tile: cmd += ["--tile", tile]
        cmd += list(extra)
        subprocess.run(cmd, check=True)
        self.man = json.load(open(man))
        self.kernels = self.man["kernels"]
        if not self.kernels:
            raise RuntimeError(f"manifest {man} lists no kernels")
        self.k = self.kernels[0]
        self.consts = {c: self.man.get("constants", {}).get(c) for c in ("d", "dv")}
        self.consts = {c: v for c, v in self.consts.items() if isinstance(v, int)}
        # Tensor shapes as the manifest states them (for stride axes and for scratch outputs).
        self.tshape, self.tdtype = {}, {}
        for k in self.kernels:
            for p in k["params"]:
                if p["role"] in ("input", "output") and "shape" in p:
                    self.tshape[p["name"]], self.tdtype[p["name"]] = p["shape"], p.get("dtype")
            for c in k.get("cluster", ["1", "1", "1"]):
                if str(c).strip() != "1":  # cuLaunchKernel cannot launch clusters; the runner neither
                    raise NotImplementedError(f"{k['entry']}: cluster {k['cluster']} needs cuLaunchKernelEx")
            if k.get("tensor_maps"):  # a CUtensorMap parameter needs cuTensorMapEncodeTiled, which this script lacks
                raise NotImplementedError(f"{k['entry']}: tensor maps {[t['param'] for t in k['tensor_maps']]}")
        torch.cuda.init()
        torch.zeros(1, device="cuda")  # make torch's primary context current
        self.mod = ctypes.c_void_p()
        check(cu.cuModuleLoadData(ctypes.byref(self.mod), open(ptx, "rb").read() + b"\0"), "cuModuleLoadData")
        self.fns, self.regs, self.local, self.entries = [], [], [], []
        for k in self.kernels:
            fn = ctypes.c_void_p()
            check(cu.cuModuleGetFunction(ctypes.byref(fn), self.mod, k["entry"].encode()), f"cuModuleGetFunction({k['entry']})")
            check(cu.cuFuncSetAttribute(fn, 8, k["dynamic_smem_bytes"]), f"cuFuncSetAttribute(max dyn smem, {k['entry']})")
            regs, local = ctypes.c_int(), ctypes.c_int()
            check(cu.cuFuncGetAttribute(ctypes.byref(regs), 4, fn), "cuFuncGetAttribute(regs)")
            check(cu.cuFuncGetAttribute(ctypes.byref(local), 3, fn), "cuFuncGetAttribute(local)")
            self.fns.append(fn); self.regs.append(regs.value); self.local.append(local.value); self.entries.append(k["entry"])
        self.fn = self.fns[0]
        self.bound = None

    def _tensor(self, tensors, name, role):
        if name in tensors: return tensors[name]
        if ALIASES.get(name) in tensors: return tensors[ALIASES[name]]
        shape, dt = self.tshape.get(name), self.tdtype.get(name)
        if role == "output" and shape and dt in TORCH_DTYPES:
            # an output this script does not check (scratch): allocate it from the manifest's shape
            dims = [eval_expr(t, dict(self.sizes, **self.consts)) for t in shape_dims(shape)]
            print(f"# note: manifest output {name!r} {shape} {dt} is not checked here; allocated as scratch", file=sys.stderr)
            tensors[name] = torch.empty(dims, device="cuda", dtype=TORCH_DTYPES[dt])
            return tensors[name]
        raise KeyError(f"manifest parameter needs tensor {name!r} ({role}, {shape}, {dt}); peer_bench has {sorted(tensors)}")

    def _stride(self, tensors, name, dim):
        t = self._tensor(tensors, name, "input")
        ax = axis_of(self.tshape[name], dim) if name in self.tshape else None
        if ax is None: ax = BSHD[dim]
        return t.stride(ax)  # torch strides are in elements, as the manifest's are

    def bind(self, tensors, sizes, scale):
        """Fix the tensors of one problem: allocate the workspaces and build every kernel's argument list once."""
        self.sizes = dict(sizes)
        env = dict(sizes, **self.consts)
        self.ws, self.zero = {}, []
        for w in self.man.get("workspaces", []):
            nbytes = eval_expr(w["bytes"], env)
            self.ws[w["name"]] = torch.empty(max(nbytes, 1), dtype=torch.uint8, device="cuda")
            if w.get("kept_zero"): self.ws[w["name"]].zero_()  # the set leaves it zeroed
            elif w.get("zero_init"): self.zero.append(self.ws[w["name"]])
        self.bound = []
        for k, fn in zip(self.kernels, self.fns):
            vals = []
            for p in k["params"]:
                if p["role"] == "tensor_map":
                    raise ValueError(f"{k['entry']}: parameter {p['name']!r} is a TMA tensor map; this launcher "
                                     "does not encode tensor maps yet")
                role, ct = p["role"], PTX_CTYPES[p["ptx_type"]]
                if role in ("input", "output"):
                    t = self._tensor(tensors, p["name"], role)
                    val = 0 if t is None else t.data_ptr()   # None: an optional tensor left out (null)
                elif role == "size":
                    val = sizes[p["size"]]
                elif role == "stride":
                    val = self._stride(tensors, p["tensor"], p["dim"])
                elif role == "scale":
                    val = scale
                    if "log2" in p["name"]:  # none so far: attn_fwd has softmax_scale in natural units
                        val = scale * math.log2(math.e)
                    elif p["name"] != "softmax_scale":
                        print(f"# warning: scale parameter {p['name']!r} ({p.get('meaning')}) gets softmax_scale", file=sys.stderr)
                elif role == "workspace":
                    val = self.ws[p["workspace"]].data_ptr()  # gen/manifest.c writes the workspace name as "workspace"
                else:
                    raise ValueError(f"{k['entry']}: parameter {p['name']!r} has unknown role {role!r}")
                if ct is ctypes.c_uint32 and not 0 <= val <= 0xFFFFFFFF:
                    raise ValueError(f"{p['name']} = {val} does not fit u32")
                vals.append(ct(val))
            ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
            grid = [eval_expr(g, env) for g in k["grid"]]
            self.bound.append((fn, grid, k["block"], k["dynamic_smem_bytes"], vals, ptrs, k["entry"]))

    def launch(self, tensors=None, sizes=None, scale=None):
        """One run of the set on torch's current stream: zero the zero_init workspaces, then every kernel in order."""
        if tensors is not None: self.bind(tensors, sizes, scale)
        for w in self.zero: w.zero_()
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        for fn, grid, blk, smem, _vals, ptrs, entry in self.bound:
            check(cu.cuLaunchKernel(fn, *grid, *blk, smem, stream, ptrs, None), f"cuLaunchKernel({entry})")

def _event_ms(fn, iters, warmup):
    """GPU times of fn over iters runs, each between two events, all enqueued back to back and read after one
    synchronize: the host's launch work for a run overlaps the GPU's previous run, so each side's time is its GPU time
    (its host overhead shows only where it exceeds the GPU time of a run)."""
    for _ in range(warmup): fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for a, b in ev:
        a.record(); fn(); b.record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in ev]

def median_ms(fn, iters=30, warmup=5):
    """Median GPU time of fn over iters runs (_event_ms)."""
    times = sorted(_event_ms(fn, iters, warmup))
    return times[len(times) // 2]

def interleaved_ms(sides, iters=30, warmup=3):
    """Median GPU time of each side (name -> fn) over about iters runs, timed in one round per side, each round
    visiting the sides in a rotated order, so that each side runs first, second, ... once. The H200 slows a few
    launches into a series (BENCHMARKS.md, 2026-11-27 and 2026-11-29), so a side that always ran first would always
    meet the faster GPU; here each meets the same mix of places."""
    names = list(sides)
    if not names: return {}   # every side refused or failed: nothing to time
    per = -(-iters // len(names))
    times = {n: [] for n in names}
    for r in range(len(names)):
        for n in names[r:] + names[:r]:
            times[n] += _event_ms(sides[n], per, warmup)
    return {n: sorted(t)[len(t) // 2] for n, t in times.items()}

def family_bench_args(shape_help):
    """The command line fwd_peers.py and bwd_peers.py share: families, tile, shapes, --quick, --out."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", action="append", help="ptxgen families to time (default: wgmma and mma.sync)")
    ap.add_argument("--tile", default=None)
    ap.add_argument("--shape", action="append", help=shape_help)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    a = ap.parse_args()
    a.families = a.family or ["wgmma", "mma.sync"]
    a.reps = 10 if a.quick else 30
    return a

def family_bench_header(width):
    print(f"# {torch.cuda.get_device_name()}  torch {torch.__version__}  cudnn {torch.backends.cudnn.version()}  seed 1234")
    print(f"{'shape':{width}s} {'ours':10s} {'ms':>8s} {'TFLOP/s':>8s} {'cuDNN':>8s} {'FA4':>8s} {'FA2':>8s} "
          f"{'x cuDNN':>8s} {'x FA4':>7s} {'x FA2':>7s}")

def fa4_func():
    """FlashAttention-4's flash_attn_func (its SM90 path on Hopper), or None where it is not importable: it is
    not in the device image and is carried there (BENCH.md)."""
    try:
        from flash_attn.cute import flash_attn_func
        # its JIT warns once per kernel that an auxiliary argument is passed as a Python object; harmless
        warnings.filterwarnings("ignore", message="Argument aux_data")
        return flash_attn_func
    except Exception as ex:
        print(f"# FA4 not available: {str(ex).splitlines()[0][:160] if str(ex) else type(ex).__name__}")
        return None

def family_bench_row(label, fam, ms, flops, peers, width, note):
    """One row: our median ms and TFLOP/s, each peer's TFLOP/s (peers: name -> ms, absent when it refused or is
    not installed) and the ratios, then the note (the error)."""
    nan = float("nan")
    tf = {n: flops / peers[n] / 1e9 if peers.get(n) else nan for n in ("cudnn", "fa4", "fa2")}
    x = {n: peers[n] / ms if peers.get(n) else nan for n in ("cudnn", "fa4", "fa2")}
    print(f"{label:{width}s} {fam:10s} {ms:8.3f} {flops / ms / 1e9:8.1f} {tf['cudnn']:8.1f} {tf['fa4']:8.1f} "
          f"{tf['fa2']:8.1f} {x['cudnn']:8.2f} {x['fa4']:7.2f} {x['fa2']:7.2f}  ({note})", flush=True)

def rel_l2(x, ref):
    x, ref = x.float(), ref.float()
    return ((x - ref).norm() / ref.norm()).item()

def expand_kv(x, g):
    """[b, s, h_kv, d] -> [b, s, h_kv * g, d], query head h uses kv head h // g (the runner's ref: hk = h / (h_q / h_kv))."""
    return x if g == 1 else x.repeat_interleave(g, dim=2)

def fmt_set(xs):
    return "/".join(str(x) for x in xs)

def one_or_str(xs):
    return xs[0] if len(xs) == 1 else fmt_set(xs)

def dtype_name(dtype):
    return "bf16" if dtype == torch.bfloat16 else "fp16"

def time_row(row, ours, peers, flops, err, tol):
    """Times ours and each peer (a callable, or None when its setup failed; a
    backend may also refuse a shape) into row, in rotated rounds (interleaved_ms): ms, TFLOP/s, and a MISMATCH note
    when err is not below tol."""
    sides = {"ours": ours}
    for name, fn in peers.items():
        try:
            if fn is None: raise RuntimeError("setup failed")
            fn()   # a backend that refuses the shape raises here, before the timing
            sides[name] = fn
        except Exception as e:
            row[name + "_ms"] = float("nan"); print(f"# {name} unavailable: {e}", file=sys.stderr)
    row.update({n + "_ms": t for n, t in interleaved_ms(sides).items()})
    for key in ["ours", *peers]:
        row[key + "_tflops"] = flops / (row[key + "_ms"] * 1e-3) / 1e12
    if not (err < tol):
        row["note"] = "MISMATCH vs FA2"
    return row

def run_shape(args, d, s, causal, dtype=torch.bfloat16):
    b, h = max(1, 16384 // s), 2048 // d
    g = args.gqa
    h_kv = h // g
    sizes = dict(b=b, s_q=s, s_k=s, h_q=h, h_kv=h_kv)
    q = torch.randn(b, s, h, d, device="cuda", dtype=dtype)
    k, v = (torch.randn(b, s, h_kv, d, device="cuda", dtype=dtype) for _ in range(2))
    o = torch.full((b, s, h, d), float("nan"), device="cuda", dtype=dtype)
    lse = torch.full((b, h, s), float("nan"), device="cuda", dtype=torch.float32)
    scale = 1 / math.sqrt(d)
    kern = KernelSet(args.ptxgen, args.arch, "attn_fwd", d, causal, dtype_name(dtype), args.tile, args.gen_arg)
    kern.bind(dict(q=q, k=k, v=v, o=o, lse=lse), sizes, scale)
    ours = kern.launch
    # peers at GQA run on k/v expanded to h_q heads (same FLOPs as ours, more kv bytes)
    qt, kt, vt = (x.transpose(1, 2) for x in (q, expand_kv(k, g), expand_kv(v, g)))
    def peer(backend):
        def f():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=scale)
        return f
    ours(); torch.cuda.synchronize()
    ref = peer(SDPBackend.FLASH_ATTENTION)().transpose(1, 2)
    err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    row = dict(d=d, s=s, b=b, h=h, h_kv=h_kv, causal=causal, regs=one_or_str(kern.regs), local=one_or_str(kern.local),
               entry=", ".join(kern.entries), err_vs_fa2=err)
    return time_row(row, ours, {"fa2": peer(SDPBackend.FLASH_ATTENTION), "cudnn": peer(SDPBackend.CUDNN_ATTENTION)},
                    flops, err, 1e-2)

# ---------------------------------------------------------------- attn_bwd

def lse_rows(q, kx, scale, causal, bi, h0, h1, r0, r1):
    """fp32 logsumexp(scale * q k^T) over keys for batch bi, heads [h0, h1), query rows [r0, r1): [h1-h0, r1-r0].
    Causal is bottom-right aligned: query i sees key j iff j <= i + s_k - s_q."""
    s_q, s_k = q.shape[1], kx.shape[1]
    qf = q[bi, r0:r1, h0:h1].float().transpose(0, 1)       # [hc, rc, d]
    kf = kx[bi, :, h0:h1].float().permute(1, 2, 0)         # [hc, d, s_k]
    sc = torch.bmm(qf, kf) * scale                         # [hc, rc, s_k]
    if causal:
        i = torch.arange(r0, r1, device=q.device).view(1, -1, 1)
        j = torch.arange(s_k, device=q.device).view(1, 1, -1)
        sc.masked_fill_(j > i + (s_k - s_q), float("-inf"))
    return torch.logsumexp(sc, dim=-1)

def lse_reference(q, kx, scale, causal):
    """The whole [b, h_q, s_q] lse in chunks (<= 512 MiB of fp32 scores at a time)."""
    b, s_q, h = q.shape[0], q.shape[1], q.shape[2]
    s_k = kx.shape[1]
    out = torch.empty(b, h, s_q, device=q.device, dtype=torch.float32)
    rc = min(s_q, 1024)
    hc = max(1, min(h, (1 << 29) // (rc * s_k * 4)))
    for bi in range(b):
        for h0 in range(0, h, hc):
            for r0 in range(0, s_q, rc):
                h1, r1 = min(h, h0 + hc), min(s_q, r0 + rc)
                out[bi, h0:h1, r0:r1] = lse_rows(q, kx, scale, causal, bi, h0, h1, r0, r1)
    return out

class NoTF32:
    """fp32 matmuls for the lse reference (allow_tf32 is False by default; make sure)."""
    def __enter__(self):
        self.old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
    def __exit__(self, *exc):
        torch.backends.cuda.matmul.allow_tf32 = self.old

def forward_o_lse(q, kx, vx, scale, causal):
    """o [b, s, h_q, d] contiguous and lse [b, h_q, s_q] fp32 contiguous (natural log) for the backward's inputs.

    Verified (PyTorch native_functions.yaml / torch/_meta_registrations.py):
      aten::_scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value, float dropout_p=0.,
        bool is_causal=False, bool return_debug_mask=False, *, float? scale=None)
        -> (output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, rng_state/philox_seed, unused/philox_offset, debug_attn_mask)
      inputs [b, h, s, d]; logsumexp is fp32 [b, h, s_q] (meta registration). FA2's softmax_lse is natural log.
    Not verified without a GPU: that it runs on these views, and the units; so a slice of it is checked against
    torch.logsumexp of the fp32 scores here, and on any doubt the whole lse is computed that way instead."""
    s = q.shape[1]
    qt, kt, vt = (x.transpose(1, 2) for x in (q, kx, vx))
    with torch.no_grad(), NoTF32():
        try:
            res = torch.ops.aten._scaled_dot_product_flash_attention(qt, kt, vt, 0.0, causal, False, scale=scale)
            o, lse = res[0].transpose(1, 2).contiguous(), res[1][..., :s].float().contiguous()
            hh = min(2, q.shape[2])
            worst = 0.0
            for r0, r1 in ((0, min(s, 256)), (max(0, s - 256), s)):
                ref = lse_rows(q, kx, scale, causal, 0, 0, hh, r0, r1)
                worst = max(worst, (lse[0, :hh, r0:r1] - ref).abs().max().item())
            if tuple(lse.shape) == (q.shape[0], q.shape[2], s) and worst < 1e-3:
                return o, lse, "aten flash lse"
            print(f"# note: aten flash logsumexp {tuple(res[1].shape)} differs from torch.logsumexp by {worst:.3g}; "
                  f"computing lse in chunks", file=sys.stderr)
        except Exception as e:
            print(f"# note: aten._scaled_dot_product_flash_attention unusable ({str(e).splitlines()[0][:200]}); "
                  f"SDPA flash for o, lse in chunks",
                  file=sys.stderr)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            o = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=scale).transpose(1, 2).contiguous()
        return o, lse_reference(q, kx, scale, causal).contiguous(), "chunked torch.logsumexp"

def grad_fn_names(t, depth=3):
    names, fn = [], t.grad_fn
    while fn is not None and len(names) < depth:
        names.append(fn.name())
        nxt = [f for f, _ in fn.next_functions if f is not None]
        fn = nxt[0] if nxt else None
    return names

class BwdPeer:
    """SDPA's backward alone for one backend on our tensors ([b, s, h, d], viewed as [b, h, s, d] like the fwd code).

    The forward runs once here, outside the timing. Which backward runs is fixed by the forward: SDPA picks the
    backend at forward time and records that backend's op in the graph (e.g. _scaled_dot_product_flash_attention,
    whose derivative in tools/autograd/derivatives.yaml is _scaled_dot_product_flash_attention_backward); the
    sdpa_kernel context does not steer the backward. We keep the context active around the backward anyway.
    profile_bwd_kernels() checks this on the GPU: it runs a backward outside any sdpa_kernel context and prints
    the CUDA kernels it launched (FA2's are named flash_bwd_*), together with the grad_fn names of the output.
    Checked without a GPU (torch 2.15 CPU): the output's grad_fn is the backend's own node
    (ScaledDotProductFlashAttentionForCpuBackward0 under FLASH_ATTENTION, Bmm/... nodes under MATH), so the graph
    does record the backend at forward time; on CUDA expect ScaledDotProductFlashAttentionBackward0 and
    ScaledDotProductCudnnAttentionBackward0 in the per-row "peer grad_fn" line."""
    def __init__(self, backend, q, kx, vx, do, causal, scale):
        self.backend = backend
        self.leaves = [x.detach().requires_grad_() for x in (q, kx, vx)]
        self.ins = [x.transpose(1, 2) for x in self.leaves]  # grads are taken w.r.t. these [b, h, s, d] views
        self.dot = do.transpose(1, 2)                         # same layout as out (bshd memory), last stride 1
        with sdpa_kernel(backend):
            self.out = F.scaled_dot_product_attention(*self.ins, is_causal=causal, scale=scale)
        self.nodes = grad_fn_names(self.out)

    def __call__(self):
        with sdpa_kernel(self.backend):
            return torch.autograd.grad(self.out, self.ins, grad_outputs=self.dot, retain_graph=True)

    def grads_bshd(self):
        return [x.transpose(1, 2) for x in self()]

def profile_bwd_kernels(d, dtype, causal):
    """Once per run: which CUDA kernels each peer's backward launches, run outside any sdpa_kernel context."""
    from torch.profiler import profile, ProfilerActivity
    b, s, h = 1, 1024, 4
    q, k, v, do = (torch.randn(b, s, h, d, device="cuda", dtype=dtype) for _ in range(4))
    for name, be in (("FA2", SDPBackend.FLASH_ATTENTION), ("cuDNN", SDPBackend.CUDNN_ATTENTION)):
        try:
            peer = BwdPeer(be, q, k, v, do, causal, 1 / math.sqrt(d))
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                torch.autograd.grad(peer.out, peer.ins, grad_outputs=peer.dot, retain_graph=True)
                torch.cuda.synchronize()
            kernels = sorted({e.key for e in prof.key_averages() if not e.key.startswith("cuda")})  # drop runtime API rows
            flag = ""
            if name == "FA2" and not any("flash" in x.lower() for x in kernels):
                flag = "  WARNING: no flash kernel in FA2's backward"
            print(f"# {name} backward (no sdpa_kernel context): grad_fn {' <- '.join(peer.nodes)}; kernels: "
                  f"{'; '.join(x[:90] for x in kernels[:8])}{flag}", flush=True)
        except Exception as e:
            print(f"# {name} backward profile failed: {e}", flush=True)

def run_shape_bwd(args, d, s, causal, dtype=torch.bfloat16):
    b, h = max(1, 16384 // s), 2048 // d
    g = args.gqa
    h_kv = h // g
    sizes = dict(b=b, s_q=s, s_k=s, h_q=h, h_kv=h_kv)
    scale = 1 / math.sqrt(d)
    q = torch.randn(b, s, h, d, device="cuda", dtype=dtype)
    k, v = (torch.randn(b, s, h_kv, d, device="cuda", dtype=dtype) for _ in range(2))
    do = torch.randn(b, s, h, d, device="cuda", dtype=dtype)
    kx, vx = expand_kv(k, g), expand_kv(v, g)
    o, lse, lse_src = forward_o_lse(q, kx, vx, scale, causal)
    dq = torch.full((b, s, h, d), float("nan"), device="cuda", dtype=dtype)
    dk, dv = (torch.full((b, s, h_kv, d), float("nan"), device="cuda", dtype=dtype) for _ in range(2))
    kern = KernelSet(args.ptxgen, args.arch, "attn_bwd", d, causal, dtype_name(dtype), args.tile, args.gen_arg)
    kern.bind(dict(q=q, k=k, v=v, o=o, do=do, lse=lse, dq=dq, dk=dk, dv=dv), sizes, scale)
    ours = kern.launch
    ours(); torch.cuda.synchronize()

    # Peers: at GQA they run on k/v expanded to h_q heads (timed that way too: same FLOPs as ours, more kv
    # bytes); their dk/dv are summed over the g query heads of each kv head before the comparison.
    peers = {}
    for name, be in (("fa2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            peers[name] = BwdPeer(be, q, kx, vx, do, causal, scale)
        except Exception as e:  # a backend may refuse a shape
            peers[name] = None; print(f"# {name} forward unavailable: {e}", file=sys.stderr)
    errs = dict(dq=float("nan"), dk=float("nan"), dv=float("nan"))
    if peers["fa2"] is not None:
        rq, rk, rv = peers["fa2"].grads_bshd()
        if g > 1:
            rk, rv = (x.float().view(b, s, h_kv, g, d).sum(3) for x in (rk, rv))
        errs = dict(dq=rel_l2(dq, rq), dk=rel_l2(dk, rk), dv=rel_l2(dv, rv))
        del rq, rk, rv
    err = max(errs.values()) if not any(math.isnan(x) for x in errs.values()) else float("nan")
    fwd_flops = 4 * b * h * s * s * d / (2 if causal else 1)
    flops = 2.5 * fwd_flops
    row = dict(d=d, s=s, b=b, h=h, h_kv=h_kv, causal=causal, regs=one_or_str(kern.regs), local=one_or_str(kern.local),
               entry=", ".join(kern.entries), err_vs_fa2=err, errs_vs_fa2=errs, lse_source=lse_src,
               peer_grad_fns={n: (p.nodes if p else None) for n, p in peers.items()})
    return time_row(row, ours, {n: peers[n] for n in ("fa2", "cudnn")}, flops, err, 2e-2)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", choices=("attn_fwd", "attn_bwd"), default="attn_fwd")
    ap.add_argument("--ptxgen", default="./ptxgen")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--tile", default=None)
    ap.add_argument("--quick", action="store_true", help="one shape: --d (default 128), s=4096, non-causal")
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    ap.add_argument("--gqa", type=int, default=1, help="h_kv = h_q / N for our kernel; peers run on expanded k/v")
    ap.add_argument("--gen-arg", action="append", default=[], help="extra argument for ptxgen (repeatable; write --gen-arg=--flag for one that starts with --)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    dtype = TORCH_DTYPES[args.dtype]
    shapes = [(args.d, 4096, False)] if args.quick else [
        (d, s, c) for d in (64, 128) for s in (1024, 4096, 16384) for c in (False, True)]
    for d, _, _ in shapes:
        if args.gqa < 1 or (2048 // d) % args.gqa:
            sys.exit(f"--gqa {args.gqa} does not divide h = {2048 // d} (d = {d})")
    extra = ""
    if args.kernel != "attn_fwd" or args.dtype != "bf16" or args.gqa != 1:
        extra = f"  kernel {args.kernel}  dtype {args.dtype}  gqa {args.gqa}"
    print(f"# GPU: {torch.cuda.get_device_name()}  torch {torch.__version__}  tile {args.tile or 'default'}{extra}")
    if args.kernel == "attn_bwd":
        print("# bwd: backward alone; FLOPs 2.5 x fwd (fwd 4*b*h*s*s*d, half causal); ours includes workspace "
              "zeroing; rel err = max over dq, dk, dv vs FA2" + (f"; peers on k/v expanded x{args.gqa}" if args.gqa > 1 else ""))
    print("| d | s | b x h | causal | ours TFLOP/s | FA2 | cuDNN | ours/FA2 | ours/cuDNN | regs | spill B | rel err vs FA2 | entry |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    run = run_shape_bwd if args.kernel == "attn_bwd" else run_shape
    for d, s, c in shapes:
        r = run(args, d, s, c, dtype); rows.append(r)
        bh = f"{r['b']}x{r['h']}" + (f" (h_kv {r['h_kv']})" if r["h_kv"] != r["h"] else "")
        print(f"| {d} | {s} | {bh} | {'yes' if c else 'no'} | {r['ours_tflops']:.1f} | {r['fa2_tflops']:.1f} | "
              f"{r['cudnn_tflops']:.1f} | {r['ours_tflops']/r['fa2_tflops']:.3f} | {r['ours_tflops']/r['cudnn_tflops']:.3f} | "
              f"{r['regs']} | {r['local']} | {r['err_vs_fa2']:.2e}{' ' + r.get('note', '')} | {r['entry']} |", flush=True)
        if args.kernel == "attn_bwd":
            e = r["errs_vs_fa2"]
            print(f"#   dq {e['dq']:.2e}  dk {e['dk']:.2e}  dv {e['dv']:.2e}  lse from {r['lse_source']}  "
                  f"peer grad_fn {r['peer_grad_fns']}", flush=True)
            torch.cuda.empty_cache()
    if args.kernel == "attn_bwd":
        profile_bwd_kernels(shapes[0][0], dtype, shapes[0][2])
    if args.out:
        json.dump(rows, open(args.out, "w"), indent=1)

if __name__ == "__main__":
    main()
