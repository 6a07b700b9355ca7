"""ptxgen from Python: the C library through ctypes (include/ptxgen.h), and torch ops on top.

emit() needs no GPU. attention() and sparse_mla() take CUDA torch tensors, build the kernel set for
their GPU once per process, and launch it on the current stream with the tensors' own pointers and
strides; their backward runs ptxgen's backward kernels."""
import ctypes
import ctypes.util
import json
import math
import operator
import os
import threading

__all__ = ["emit", "attention", "sparse_mla", "PtxgenError", "library_path"]

MAX_RANK = 5
_ERR = 4096


class PtxgenError(RuntimeError):
    """A call into libptxgen failed; .code is its PTXGEN_E* code."""

    def __init__(self, what, code, message):
        super().__init__(f"ptxgen: {what}: {message}")
        self.code = code


class _Request(ctypes.Structure):
    _fields_ = [("arch", ctypes.c_char_p), ("kernel", ctypes.c_char_p), ("dtype", ctypes.c_char_p),
                ("hdim", ctypes.c_int), ("causal", ctypes.c_int), ("tile", ctypes.c_char_p),
                ("family", ctypes.c_char_p), ("shape_class", ctypes.c_char_p), ("hdim_v", ctypes.c_int),
                ("varlen", ctypes.c_int), ("block_m", ctypes.c_int), ("block_n", ctypes.c_int),
                ("page_size", ctypes.c_int), ("splitkv", ctypes.c_int)]


class _Size(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_longlong)]


class _Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("ptr", ctypes.c_ulonglong), ("rank", ctypes.c_int),
                ("shape", ctypes.c_longlong * MAX_RANK), ("strides", ctypes.c_longlong * MAX_RANK)]


def library_path():
    """Where libptxgen.so is taken from: $PTXGEN_LIB, the installed package, or the repository's build/."""
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.environ.get("PTXGEN_LIB"), os.path.join(here, "libptxgen.so"),
                 os.path.join(here, "..", "..", "build", "libptxgen.so")):
        if path and os.path.exists(path):
            return os.path.abspath(path)
    raise PtxgenError("load", 0, "libptxgen.so not found: set PTXGEN_LIB, pip install ./python, or run make")


_lib = None
_lock = threading.RLock()   # re-entrant: _Device.of opens a device, which loads the library under it


def _library():
    global _lib
    with _lock:
        if _lib is None:
            lib = ctypes.CDLL(library_path())
            P, I, S = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
            sigs = {
                "ptxgen_build": (I, [ctypes.POINTER(_Request), ctypes.POINTER(P), ctypes.c_char_p, S]),
                "ptxgen_free": (None, [P]),
                "ptxgen_ptx": (ctypes.c_char_p, [P]),
                "ptxgen_manifest_json": (P, [P]),
                "ptxgen_device_open": (I, [ctypes.c_char_p, ctypes.POINTER(P), ctypes.c_char_p, S]),
                "ptxgen_device_arch": (I, [P, ctypes.c_char_p, S, ctypes.c_char_p, S]),
                "ptxgen_load": (I, [P, P, ctypes.POINTER(P), ctypes.c_char_p, S]),
                "ptxgen_launch": (I, [P, P, ctypes.POINTER(_Tensor), I, ctypes.POINTER(_Size), I, ctypes.c_float,
                                      ctypes.c_char_p, S]),
                "ptxgen_shape_class": (I, [ctypes.c_char_p, ctypes.POINTER(_Size), I, ctypes.c_char_p, S]),
                "ptxgen_varlen_check": (I, [ctypes.POINTER(I), ctypes.POINTER(I), I, ctypes.c_longlong,
                                            ctypes.c_longlong, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_char_p, S]),
                "ptxgen_head_mask_check": (I, [ctypes.POINTER(I), I, I, ctypes.c_char_p, S]),
                "ptxgen_paged_check": (I, [ctypes.POINTER(I), ctypes.POINTER(I), I, I, I, I, ctypes.c_char_p, S]),
                "ptxgen_num_splits": (I, [P, ctypes.POINTER(_Size), I, I]),
            }
            for name, (res, args) in sigs.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = res, args
            _lib = lib
    return _lib


def _int(name, v, bits=32):
    """v as a C int of that many bits, or ValueError: ctypes would keep the low bits of a larger one (2**32 + 64 as
    64) with no word"""
    try:
        v = operator.index(v)   # ints, numpy's and torch's integer scalars
    except TypeError:
        raise TypeError(f"ptxgen: {name} needs an int, got {type(v).__name__}") from None
    if not -(1 << (bits - 1)) <= v < 1 << (bits - 1):
        raise ValueError(f"ptxgen: {name} = {v} does not fit a {bits}-bit int")
    return v


def _ints(name, vs):
    return [_int(f"{name}[{i}]", v) for i, v in enumerate(vs)]


def _text(name, v, optional=False):
    """v as a C string, or ValueError/TypeError: a NUL inside would end it early ("sm_90\0x" read as sm_90)"""
    if v is None and optional:
        return None
    if not isinstance(v, str):
        raise TypeError(f"ptxgen: {name} needs a str, got {type(v).__name__}")
    if "\0" in v:
        raise ValueError(f"ptxgen: {name} {v!r} holds a NUL character")
    return v.encode()


def _sizes(sizes):
    return [_Size(_text("size name", k), _int(k, int(v), 64)) for k, v in sizes.items()]


def _check(rc, what, err):
    if rc:
        raise (ValueError(f"ptxgen: {what}: {err.value.decode()}") if rc == 2 else
               PtxgenError(what, rc, err.value.decode()))


def _build(kernel, arch, dtype="bf16", hdim=None, causal=False, tile=None, family=None, shape_class=None, hdim_v=None,
           varlen=False, block=None, page_size=None, splitkv=False):
    lib = _library()
    block_m, block_n = block if block else (0, 0)
    rq = _Request(_text("arch", arch), _text("kernel", kernel), _text("dtype", dtype), _int("hdim", hdim or 0),
                  int(bool(causal)), _text("tile", tile or None, True), _text("family", family or None, True),
                  _text("shape_class", shape_class, True), _int("hdim_v", hdim_v or 0), int(bool(varlen)),
                  _int("block_m", block_m), _int("block_n", block_n), _int("page_size", page_size or 0),
                  int(bool(splitkv)))
    s, err = ctypes.c_void_p(), ctypes.create_string_buffer(_ERR)
    _check(lib.ptxgen_build(ctypes.byref(rq), ctypes.byref(s), err, _ERR), f"build {kernel} for {arch}", err)
    return s


def varlen_check(cu_seqlens_q, cu_seqlens_k, total_q, total_k, max_seqlen_q, max_seqlen_k):
    """Raises ValueError unless the offsets (b + 1 ints each, host lists) start at 0, never decrease, end at the
    packed tensors' rows and hold no sequence longer than the launch's s_q / s_k: what a varlen kernel trusts."""
    lib = _library()
    b = len(cu_seqlens_q) - 1
    if b < 1 or len(cu_seqlens_k) != b + 1:
        raise ValueError(f"ptxgen: varlen: cu_seqlens_q and cu_seqlens_k need the same b + 1 >= 2 entries "
                         f"({len(cu_seqlens_q)} and {len(cu_seqlens_k)})")
    cq = (ctypes.c_int * (b + 1))(*_ints("cu_seqlens_q", cu_seqlens_q))
    ck = (ctypes.c_int * (b + 1))(*_ints("cu_seqlens_k", cu_seqlens_k))
    err = ctypes.create_string_buffer(_ERR)
    _check(lib.ptxgen_varlen_check(cq, ck, b, _int("total_q", total_q, 64), _int("total_k", total_k, 64),
                                   _int("max_seqlen_q", max_seqlen_q, 64), _int("max_seqlen_k", max_seqlen_k, 64), err,
                                   _ERR), "varlen", err)


def head_mask_check(head_mask_type, n_mask_heads):
    """Raises ValueError unless every head type (a host list, h_q ints) is 0 (dense) or a mask head 1 .. n_mask_heads:
    what a block-sparse set expects of its head_mask_type."""
    lib, h_q = _library(), len(head_mask_type)
    types = (ctypes.c_int * max(h_q, 1))(*_ints("head_mask_type", head_mask_type))
    err = ctypes.create_string_buffer(_ERR)
    _check(lib.ptxgen_head_mask_check(types, h_q, _int("n_mask_heads", n_mask_heads), err, _ERR), "block-sparse", err)


def paged_check(block_table, seqlens_k, num_pages, page_size):
    """Raises ValueError unless every sequence's length fits its block-table row (b rows of max_pages ints, host
    lists) and the pages it uses are ids in [0, num_pages): what a paged set trusts."""
    lib, b = _library(), len(seqlens_k)
    max_pages = len(block_table[0]) if b and block_table else 0
    if len(block_table) != b or any(len(r) != max_pages for r in block_table):
        raise ValueError("ptxgen: paged: block_table needs one row of max_pages entries per sequence")
    flat = (ctypes.c_int * max(b * max_pages, 1))(*_ints("block_table", [x for r in block_table for x in r]))
    lens = (ctypes.c_int * max(b, 1))(*_ints("seqlens_k", seqlens_k))
    err = ctypes.create_string_buffer(_ERR)
    _check(lib.ptxgen_paged_check(flat, lens, b, max_pages, _int("num_pages", num_pages), _int("page_size", page_size),
                                  err, _ERR), "paged", err)


def emit(kernel, arch, dtype="bf16", hdim=None, causal=False, tile=None, family=None, hdim_v=None, varlen=False,
         block=None, page_size=None, splitkv=False):
    """The kernel set's PTX text and its manifest (a dict: kernels, parameters, launch expressions, workspaces).
    hdim_v: d_v where the kind takes d_v != d (the tcgen05 attn_fwd). varlen: packed sequences with cu_seqlens_q/k
    (check the offsets with varlen_check before a launch). block=(block_m, block_n): block-sparse attention over a
    block mask at that granularity (whole tiles; check the head types with head_mask_check). page_size: attn_fwd over
    a paged KV cache (check the tables with paged_check); splitkv: split-KV with its combine kernel (num_splits at
    launch). A bad request raises ValueError naming the problem. No GPU is needed."""
    lib = _library()
    s = _build(kernel, arch, dtype, hdim, causal, tile, family, hdim_v=hdim_v, varlen=varlen, block=block,
               page_size=page_size, splitkv=splitkv)
    try:
        ptx = lib.ptxgen_ptx(s).decode()
        raw = lib.ptxgen_manifest_json(s)
        if not raw:
            raise PtxgenError("manifest", 6, "out of memory")
        text = ctypes.string_at(raw).decode()
        ctypes.CDLL(None).free(ctypes.c_void_p(raw))
        return ptx, json.loads(text)
    finally:
        lib.ptxgen_free(s)


def num_splits(arch, sm_count, dtype="bf16", hdim=None, causal=False, page_size=None, tile=None, family=None, **sizes):
    """num_splits for a split-KV attn_fwd over this problem (sizes: b, s_q, s_k, h_q, h_kv; max_pages with page_size) on
    a GPU of sm_count SMs: 4 CTAs per SM of the split forward, at most one split per key block
    (ptxgen_num_splits)."""
    lib = _library()
    s = _build("attn_fwd", arch, dtype, hdim, causal, tile, family, shape_class=_shape_class("attn_fwd", **sizes),
               page_size=page_size, splitkv=True)
    try:
        arr = (_Size * len(sizes))(*_sizes(sizes))
        return lib.ptxgen_num_splits(s, arr, len(sizes), _int("sm_count", int(sm_count)))
    finally:
        lib.ptxgen_free(s)


class _Device:
    """One GPU as libptxgen sees it, and the kernel sets loaded on it (by request)."""
    _all = {}

    def __init__(self, name):
        lib, err = _library(), ctypes.create_string_buffer(_ERR)
        self.dev = ctypes.c_void_p()
        _check(lib.ptxgen_device_open(name.encode(), ctypes.byref(self.dev), err, _ERR), "device", err)
        arch = ctypes.create_string_buffer(16)
        _check(lib.ptxgen_device_arch(self.dev, arch, 16, err, _ERR), "device arch", err)
        self.arch = arch.value.decode()
        self.loaded = {}
        self.lock = threading.Lock()

    @classmethod
    def of(cls, tensor):
        index = tensor.device.index if tensor.device.index is not None else 0
        with _lock:
            if index not in cls._all:
                cls._all[index] = cls(f"cuda:{index}")
            return cls._all[index]

    def kernel_set(self, kernel, **rq):
        key = (kernel, tuple(sorted(rq.items())))
        with self.lock:
            if key not in self.loaded:
                lib, err = _library(), ctypes.create_string_buffer(_ERR)
                s = _build(kernel, self.arch, **rq)
                l = ctypes.c_void_p()
                rc = lib.ptxgen_load(self.dev, s, ctypes.byref(l), err, _ERR)
                if rc:
                    lib.ptxgen_free(s)
                    _check(rc, f"load {kernel}", err)
                self.loaded[key] = (s, l)   # kept for the process's life, like a JIT-compiled extension
            return self.loaded[key][1]


def _shape_class(kernel, **sizes):
    """ptxgen_shape_class: the class a tile saved by `ptxgen tune --save` is kept for."""
    arr = (_Size * len(sizes))(*_sizes(sizes))
    out, lib = ctypes.create_string_buffer(64), _library()
    return out.value.decode() if not lib.ptxgen_shape_class(kernel.encode(), arr, len(sizes), out, 64) else None


def _dtype_name(t):
    import torch
    names = {torch.bfloat16: "bf16", torch.float16: "fp16"}
    if t.dtype not in names:
        raise ValueError(f"ptxgen: {t.dtype} tensors are not supported (bf16 or fp16)")
    return names[t.dtype]


def _launch(loaded, tensors, scale, sizes=None):
    """tensors: name -> torch tensor (None: an optional input left out); sizes: name -> value for sizes no tensor
    carries (varlen's s_q, s_k: the longest sequence's lengths)."""
    import torch
    lib, err = _library(), ctypes.create_string_buffer(_ERR)
    arr = (_Tensor * len(tensors))()
    n, device = 0, None
    for name, t in tensors.items():
        if t is None:
            continue
        if not t.is_cuda:
            raise ValueError(f"ptxgen: tensor '{name}' is on {t.device}; the kernels need a CUDA tensor")
        if t.dim() > MAX_RANK:
            raise ValueError(f"ptxgen: tensor '{name}' has rank {t.dim()} (at most {MAX_RANK})")
        device = device or t.device
        if t.device != device:
            raise ValueError(f"ptxgen: tensor '{name}' is on {t.device}, the others on {device}")
        arr[n].name, arr[n].ptr, arr[n].rank = name.encode(), t.data_ptr(), t.dim()
        for i in range(t.dim()):
            arr[n].shape[i], arr[n].strides[i] = t.shape[i], t.stride(i)
        n += 1
    stream = torch.cuda.current_stream(device).cuda_stream
    sizes = sizes or {}
    sz = (_Size * max(len(sizes), 1))(*_sizes(sizes))
    rc = lib.ptxgen_launch(loaded, ctypes.c_void_p(stream), arr, n, sz if sizes else None, len(sizes), float(scale),
                           err, _ERR)
    _check(rc, "launch", err)


def _rows_ok(t):
    """The kernels read 16-byte rows: innermost stride 1 and the others multiples of 8 elements."""
    return t.stride(-1) == 1 and all(s % 8 == 0 for s in t.stride()[:-1])


def _attn_fwd(q, k, v, causal, scale):
    import torch
    dev = _Device.of(q)
    b, s_q, h_q, d = q.shape
    dv = v.shape[-1]
    extra = {"hdim_v": dv} if dv != d else {}   # d_v != d: the kinds that take it (tcgen05), else a clear refusal
    loaded = dev.kernel_set("attn_fwd", dtype=_dtype_name(q), hdim=d, causal=causal,
                            shape_class=_shape_class("attn_fwd", s_q=s_q, s_k=k.shape[1], h_q=h_q, h_kv=k.shape[2]),
                            **extra)
    o = torch.empty(b, s_q, h_q, dv, dtype=q.dtype, device=q.device)
    lse = torch.empty(b, h_q, s_q, dtype=torch.float32, device=q.device)
    _launch(loaded, {"q": q, "k": k, "v": v, "o": o, "lse": lse}, scale)
    return o, lse


def _make_autograd():
    import torch

    class Attention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, causal, scale):
            o, lse = _attn_fwd(q, k, v, causal, scale)
            ctx.save_for_backward(q, k, v, o, lse)
            ctx.causal, ctx.scale = causal, scale
            ctx.mark_non_differentiable(lse)
            return o, lse

        @staticmethod
        def backward(ctx, do, dlse):
            q, k, v, o, lse = ctx.saved_tensors
            if not _rows_ok(do):
                do = do.contiguous()
            dev = _Device.of(q)
            loaded = dev.kernel_set("attn_bwd", dtype=_dtype_name(q), hdim=q.shape[-1], causal=ctx.causal,
                                    shape_class=_shape_class("attn_bwd", s_q=q.shape[1], s_k=k.shape[1]))
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            _launch(loaded, {"q": q, "k": k, "v": v, "o": o, "lse": lse, "do": do, "dq": dq, "dk": dk, "dv": dv},
                    ctx.scale)
            return dq, dk, dv, None, None

    class SparseMla(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, kv, indices, topk_length, scale):
            dev = _Device.of(q)
            loaded = dev.kernel_set("mla_fwd", dtype=_dtype_name(q), shape_class=_shape_class("mla_fwd", h_q=q.shape[1]))
            s_q, h_q = q.shape[0], q.shape[1]
            o = torch.empty(s_q, h_q, 512, dtype=q.dtype, device=q.device)
            lse = torch.empty(s_q, h_q, dtype=torch.float32, device=q.device)
            _launch(loaded, {"q": q, "kv": kv, "indices": indices, "topk_length": topk_length, "o": o, "lse": lse},
                    scale)
            ctx.save_for_backward(q, kv, indices, topk_length, o, lse)
            ctx.scale = scale
            ctx.mark_non_differentiable(lse)
            return o, lse

        @staticmethod
        def backward(ctx, do, dlse):
            q, kv, indices, topk_length, o, lse = ctx.saved_tensors
            if not _rows_ok(do):
                do = do.contiguous()
            dev = _Device.of(q)
            loaded = dev.kernel_set("mla_bwd", dtype=_dtype_name(q), shape_class=_shape_class("mla_bwd", h_q=q.shape[1]))
            dq, dkv = torch.empty_like(q), torch.empty_like(kv)
            _launch(loaded, {"q": q, "kv": kv, "indices": indices, "topk_length": topk_length, "o": o, "lse": lse,
                             "do": do, "dq": dq, "dkv": dkv}, ctx.scale)
            return dq, dkv, None, None, None

    class AttentionVarlen(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, cu_q, cu_k, max_q, max_k, causal, scale):
            dev = _Device.of(q)
            loaded = dev.kernel_set("attn_fwd", dtype=_dtype_name(q), hdim=q.shape[-1], causal=causal, varlen=True)
            o = torch.empty(q.shape[0], q.shape[1], v.shape[-1], dtype=q.dtype, device=q.device)
            lse = torch.empty(q.shape[1], q.shape[0], dtype=torch.float32, device=q.device)
            tensors = {"q": q, "k": k, "v": v, "o": o, "lse": lse, "cu_seqlens_q": cu_q, "cu_seqlens_k": cu_k}
            _launch(loaded, tensors, scale, {"s_q": max_q, "s_k": max_k})
            ctx.save_for_backward(q, k, v, o, lse, cu_q, cu_k)
            ctx.causal, ctx.scale, ctx.max = causal, scale, (max_q, max_k)
            ctx.mark_non_differentiable(lse)
            return o, lse

        @staticmethod
        def backward(ctx, do, dlse):
            q, k, v, o, lse, cu_q, cu_k = ctx.saved_tensors
            if not _rows_ok(do):
                do = do.contiguous()
            dev = _Device.of(q)
            loaded = dev.kernel_set("attn_bwd", dtype=_dtype_name(q), hdim=q.shape[-1], causal=ctx.causal, varlen=True)
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            _launch(loaded, {"q": q, "k": k, "v": v, "o": o, "lse": lse, "do": do, "dq": dq, "dk": dk, "dv": dv,
                             "cu_seqlens_q": cu_q, "cu_seqlens_k": cu_k}, ctx.scale,
                    {"s_q": ctx.max[0], "s_k": ctx.max[1]})
            return dq, dk, dv, None, None, None, None, None, None

    return Attention, SparseMla, AttentionVarlen


_fns = None


def _autograd():
    global _fns
    with _lock:
        if _fns is None:
            _fns = _make_autograd()
    return _fns


def attention(q, k, v, causal=False, softmax_scale=None):
    """Softmax attention: q [b, s_q, h_q, d], k [b, s_k, h_kv, d], v [b, s_k, h_kv, d_v] (h_kv divides h_q), bf16 or
    fp16, on one GPU. Returns (o [b, s_q, h_q, d_v], lse [b, h_q, s_q] fp32, natural log); causal is bottom-right
    aligned. d_v != d only where a forward kernel takes it (tcgen05, sm_100a/103a; others raise ValueError saying
    so). Differentiable in q, k and v (the backward takes d_v = d)."""
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])
    return _autograd()[0].apply(q, k, v, bool(causal), float(scale))


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False,
                     softmax_scale=None):
    """Softmax attention over packed sequences (FA2's varlen form): q [total_q, h_q, d], k [total_k, h_kv, d],
    v [total_k, h_kv, d], sequence i's rows [cu_seqlens_q[i], cu_seqlens_q[i + 1]) (keys: cu_seqlens_k), int32 CUDA
    tensors of b + 1 entries; max_seqlen_q/k: the longest lengths. The offsets are checked on the host before any
    launch (varlen_check: one copy of them). Returns (o [total_q, h_q, d], lse [h_q, total_q] fp32). Differentiable
    in q, k and v."""
    import torch
    if cu_seqlens_q.dtype != torch.int32 or cu_seqlens_k.dtype != torch.int32:
        raise ValueError("ptxgen: cu_seqlens_q and cu_seqlens_k must be int32")
    varlen_check(cu_seqlens_q.tolist(), cu_seqlens_k.tolist(), q.shape[0], k.shape[0], max_seqlen_q, max_seqlen_k)
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])
    return _autograd()[2].apply(q, k, v, cu_seqlens_q, cu_seqlens_k, int(max_seqlen_q), int(max_seqlen_k), bool(causal),
                                float(scale))


def sparse_mla(q, kv, indices, topk_length=None, softmax_scale=None):
    """DeepSeek-style sparse MLA: q [s_q, h_q, 576], kv [s_kv, 576] (K = kv, V = kv[:, :512]), indices [s_q, topk]
    int32 (a slot is valid iff 0 <= idx < s_kv), topk_length [s_q] int32 or None. Returns (o [s_q, h_q, 512],
    lse [s_q, h_q] fp32). Differentiable in q and kv."""
    import torch
    if indices.dtype != torch.int32 or (topk_length is not None and topk_length.dtype != torch.int32):
        raise ValueError("ptxgen: indices and topk_length must be int32")
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])
    return _autograd()[1].apply(q, kv, indices, topk_length, float(scale))
