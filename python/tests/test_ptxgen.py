"""The Python binding. Without a GPU (or without torch) the generation part runs and each GPU check prints
SKIP with the reason; with one, attention and sparse MLA forward and backward are checked against float64
references computed here with torch. Run: python3 python/tests/test_ptxgen.py [--seed N] (or pytest)."""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ptxgen  # noqa: E402

SEED = random.SystemRandom().randrange(1 << 30)


def test_emit_attn_fwd():
    ptx, man = ptxgen.emit("attn_fwd", "sm_90", hdim=64)
    assert ".visible .entry attn_fwd_bf16_d64" in ptx and ".target sm_90" in ptx, ptx[:300]
    assert man["kernel"] == "attn_fwd" and len(man["kernels"]) == 1, man.keys()
    names = [p["name"] for p in man["kernels"][0]["params"]]
    assert names[:5] == ["q", "q_stride_b", "q_stride_s", "q_stride_h", "k"], names


def test_emit_attn_fwd_dv():
    """d_v != d (MLA prefill's 192/128) reaches the tcgen05 kernel through the request's last field."""
    ptx, man = ptxgen.emit("attn_fwd", "sm_100a", hdim=192, hdim_v=128)
    assert ".visible .entry attn_fwd_tc_bf16_d192_dv128_" in ptx, ptx[:400]
    assert man["constants"]["d"] == 192 and man["constants"]["dv"] == 128, man["constants"]
    try:
        ptxgen.emit("attn_fwd", "sm_90a", hdim=128, hdim_v=64)
    except ValueError as e:
        assert "d_v 64 != d 128" in str(e), str(e)
    else:
        raise AssertionError("the wgmma attn_fwd accepted d_v != d")


def test_emit_block_sparse():
    """block=(block_m, block_n) reaches the generator through the request's last fields: the list kernels come first,
    the mask and head types are inputs with their mask sizes, and the head-type check refuses a type past the mask
    heads."""
    ptx, man = ptxgen.emit("attn_bwd", "sm_90a", block=(128, 256))
    entries = [k["entry"] for k in man["kernels"]]
    assert entries[0].startswith("attn_sparse_query_lists_bm64_bn128_mb128_nb256"), entries
    assert man["constants"]["block_m"] == 128 and man["constants"]["block_n"] == 256, man["constants"]
    params = {p["name"]: p for p in man["kernels"][0]["params"]}
    assert params["block_mask"]["shape"] == "[b, n_mask_heads, mask_rows, mask_cols]", params["block_mask"]
    assert params["head_mask_type"]["shape"] == "[h_q]" and "mask_rows" in params, sorted(params)
    assert "query_lists" in [w["name"] for w in man["workspaces"]], man["workspaces"]
    _, dense = ptxgen.emit("attn_bwd", "sm_90a")
    assert "block_m" not in dense["constants"] and len(dense["kernels"]) == len(entries) - 1
    ptxgen.head_mask_check([0, 1, 2, 2], 2)
    for types, phrase in (([0, 3], "head_mask_type[1] is 3"), ([-1], "head_mask_type[0] is -1")):
        try:
            ptxgen.head_mask_check(types, 2)
        except ValueError as e:
            assert phrase in str(e), str(e)
        else:
            raise AssertionError(f"head types {types} were accepted")
    try:
        ptxgen.emit("attn_fwd", "sm_90a", block=(96, 128))
    except ValueError as e:
        assert "whole tiles of the wgmma attn_fwd" in str(e), str(e)
    else:
        raise AssertionError("mask blocks of 96 rows were accepted")


def test_emit_paged_splitkv():
    """page_size and splitkv reach the generator: k and v are the paged cache, the tables are inputs, the combine
    kernel comes last and num_splits is a size; the table check refuses a page id off the cache."""
    ptx, man = ptxgen.emit("attn_fwd", "sm_90", page_size=64, splitkv=True)
    entries = [k["entry"] for k in man["kernels"]]
    assert entries[0].endswith("_page64_split") and entries[-1].startswith("attn_fwd_splitkv_combine"), entries
    params = {p["name"]: p for p in man["kernels"][0]["params"]}
    assert params["k"]["shape"] == "[num_pages, page_size, h_kv, d]" and "block_table" in params, sorted(params)
    assert "num_splits" in man["problem_sizes"] and man["kernels"][0]["grid"][2] == "b * num_splits", man["kernels"][0]
    ptxgen.paged_check([[3, 0], [1, -1]], [100, 30], num_pages=4, page_size=64)
    try:
        ptxgen.paged_check([[3, 4], [1, -1]], [100, 30], num_pages=4, page_size=64)
    except ValueError as e:
        assert "block_table[0][1] is 4" in str(e), str(e)
    else:
        raise AssertionError("a page id off the cache was accepted")


def test_num_splits():
    """a GQA 64/8 decode at s_k 128k packs 8 heads a CTA: 8 CTAs, so 66 splits fill 132 SMs four deep; a short
    sequence caps the splits at its key blocks"""
    n = ptxgen.num_splits("sm_90", 132, page_size=64, b=1, s_q=1, s_k=131072, h_q=64, h_kv=8, max_pages=2048)
    assert n == 66, n
    assert ptxgen.num_splits("sm_90", 132, page_size=64, b=1, s_q=1, s_k=300, h_q=64, h_kv=8, max_pages=5) == 5


def test_emit_mla_bwd_pair():
    ptx, man = ptxgen.emit("mla_bwd", "sm_100a")
    entries = [k["entry"] for k in man["kernels"]]
    assert [e.split("_")[2] for e in entries] == ["pre", "dq", "dkv", "convert"], entries
    assert man["kernels"][1]["cluster"] == ["2", "1", "1"] and "tcgen05.mma.cta_group::2" in ptx


def test_emit_refuses_bad_requests():
    for args, phrase in ((("nosuch", "sm_90"), "nosuch"), (("attn_fwd", "sm_999"), "sm_999"),
                         (("mla_bwd", "sm_86", "bf16", None, False, "bm=32"), "101376")):
        try:
            ptxgen.emit(*args)
        except ValueError as e:
            assert phrase in str(e), str(e)
        else:
            raise AssertionError(f"emit{args} was accepted")


def test_refuses_what_c_would_cut():
    """Ints past their C type and strings with a NUL inside are refused (ctypes kept the low bits: hdim 2**32 + 64
    built d 64; "sm_90\\0x" built sm_90)."""
    cases = ((lambda: ptxgen.emit("attn_fwd", "sm_90", hdim=2**32 + 64), "hdim = 4294967360"),
             (lambda: ptxgen.emit("attn_fwd", "sm_90\0x"), "NUL"),
             (lambda: ptxgen.emit("attn_fwd", "sm_90", tile="bm=64\0x"), "NUL"),
             (lambda: ptxgen.varlen_check([0, 2**32 + 5], [0, 5], 5, 5, 5, 5), "cu_seqlens_q[1]"),
             (lambda: ptxgen.head_mask_check([2**32 + 1], 1), "head_mask_type[0]"),
             (lambda: ptxgen.paged_check([[0, 2**32 + 1]], [100], 2, 64), "block_table[1]"))
    for call, phrase in cases:
        try:
            call()
        except ValueError as e:
            assert phrase in str(e), str(e)
        else:
            raise AssertionError(f"accepted: {phrase}")


def test_device_and_load_on_the_sim():
    """The load path Python takes (device, arch, a kernel set loaded once and kept), on the sim."""
    dev = ptxgen._Device("sim")
    assert dev.arch == "sm_100a", dev.arch
    a = dev.kernel_set("mla_bwd", dtype="bf16")
    assert a and dev.kernel_set("mla_bwd", dtype="bf16") is a, "a kernel set is loaded once per device"


def test_shape_class():
    assert ptxgen._shape_class("attn_fwd", s_q=300, s_k=5000) == "s<=16k"
    assert ptxgen._shape_class("mla_bwd", h_q=72, s_q=3) == "h<=128"
    # decode: few query tokens with grouped heads, whose tcgen05 attn_fwd packs the group into a CTA
    assert ptxgen._shape_class("attn_fwd", s_q=8, s_k=4096, h_q=64, h_kv=8) == "decode sq=8 g=8"
    assert ptxgen._shape_class("attn_fwd", s_q=17, s_k=4096, h_q=64, h_kv=8) == "s<=4k"
    assert ptxgen._shape_class("attn_fwd", s_q=8, s_k=4096, h_q=8, h_kv=8) == "s<=4k"


def _gpu():
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU (torch.cuda.is_available() is False)"
    return None


def _rel(x, ref):
    x, ref = x.detach().double(), ref.detach()
    return float((x - ref).norm() / ref.norm().clamp_min(1e-30))


def test_attention_gpu():
    why = _gpu()
    if why:
        return why
    import torch
    g = torch.Generator(device="cuda").manual_seed(SEED)
    for causal, (b, s_q, s_k, h_q, h_kv, d) in ((False, (2, 300, 300, 8, 2, 128)), (True, (1, 257, 257, 4, 4, 64))):
        q, k, v = (torch.randn(b, s, h, d, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
                   for s, h in ((s_q, h_q), (s_k, h_kv), (s_k, h_kv)))
        o, lse = ptxgen.attention(q, k, v, causal=causal)
        do = torch.randn_like(o)
        o.backward(do)
        qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
        rep = h_q // h_kv
        s = torch.einsum("bqhd,bkhd->bhqk", qd, kd.repeat_interleave(rep, 2)) / d ** 0.5
        if causal:
            s = s.masked_fill(torch.ones(s_q, s_k, device="cuda", dtype=torch.bool).triu(s_k - s_q + 1), float("-inf"))
        ref_lse = torch.logsumexp(s, -1)
        ref = torch.einsum("bhqk,bkhd->bqhd", torch.softmax(s, -1), vd.repeat_interleave(rep, 2))
        ref.backward(do.double())
        errs = [_rel(o, ref), _rel(lse, ref_lse), _rel(q.grad, qd.grad), _rel(k.grad, kd.grad), _rel(v.grad, vd.grad)]
        assert max(errs) < 2e-2, f"causal={causal}: rel L2 o, lse, dq, dk, dv = {errs}"


def test_attention_varlen_gpu():
    """attention_varlen against float64 autograd sequence by sequence (a sequence with no queries, one with no keys),
    and the offsets check refusing a decreasing list before anything runs."""
    why = _gpu()
    if why:
        return why
    import torch
    g = torch.Generator(device="cuda").manual_seed(SEED)
    lq, lk, h_q, h_kv, d = [70, 0, 200, 33], [90, 12, 150, 0], 4, 2, 128
    cq = torch.tensor([0] + list(torch.tensor(lq).cumsum(0)), dtype=torch.int32, device="cuda")
    ck = torch.tensor([0] + list(torch.tensor(lk).cumsum(0)), dtype=torch.int32, device="cuda")
    for causal in (False, True):
        q = torch.randn(sum(lq), h_q, d, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
        k, v = (torch.randn(sum(lk), h_kv, d, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
                for _ in range(2))
        o, lse = ptxgen.attention_varlen(q, k, v, cq, ck, max(lq), max(lk), causal=causal)
        do = torch.randn_like(o)
        o.backward(do)
        qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
        refs, lses = [], []
        for i in range(len(lq)):
            qi, ki, vi = qd[cq[i]:cq[i + 1]], kd[ck[i]:ck[i + 1]], vd[ck[i]:ck[i + 1]]
            s = torch.einsum("qhd,khd->hqk", qi, ki.repeat_interleave(h_q // h_kv, 1)) / d ** 0.5
            if causal:
                s = s.masked_fill(torch.ones(lq[i], lk[i], device="cuda", dtype=torch.bool).triu(lk[i] - lq[i] + 1),
                                  float("-inf"))
            lses.append(torch.logsumexp(s, -1))
            p = torch.softmax(s, -1).nan_to_num(0.0)
            refs.append(torch.einsum("hqk,khd->qhd", p, vi.repeat_interleave(h_q // h_kv, 1)))
        ref = torch.cat(refs)
        ref.backward(do.double())
        ref_lse, fin = torch.cat(lses, -1), torch.isfinite(torch.cat(lses, -1))
        assert torch.equal(torch.isinf(lse), ~fin), "rows with no key: lse +inf exactly there"
        errs = [_rel(o, ref), _rel(lse[fin], ref_lse[fin]), _rel(q.grad, qd.grad), _rel(k.grad, kd.grad),
                _rel(v.grad, vd.grad)]
        assert max(errs) < 2e-2, f"varlen causal={causal}: rel L2 o, lse, dq, dk, dv = {errs}"
    try:
        ptxgen.attention_varlen(q, k, v, torch.tensor([0, 80, 70, 303, 303], dtype=torch.int32, device="cuda"), ck,
                                max(lq), max(lk))
    except ValueError as e:
        assert "decreases" in str(e), str(e)
    else:
        raise AssertionError("decreasing offsets were launched")


def test_sparse_mla_gpu():
    why = _gpu()
    if why:
        return why
    import torch
    g = torch.Generator(device="cuda").manual_seed(SEED)
    s_q, s_kv, h_q, topk = 37, 700, 64, 256
    q = torch.randn(s_q, h_q, 576, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
    kv = torch.randn(s_kv, 576, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
    idx = torch.randint(-50, s_kv + 50, (s_q, topk), device="cuda", generator=g, dtype=torch.int32)
    length = torch.randint(0, topk + 1, (s_q,), device="cuda", generator=g, dtype=torch.int32)
    o, lse = ptxgen.sparse_mla(q, kv, idx, length)
    do = torch.randn_like(o)
    o.backward(do)
    qd, kvd = q.detach().double().requires_grad_(), kv.detach().double().requires_grad_()
    valid = (idx >= 0) & (idx < s_kv) & (torch.arange(topk, device="cuda")[None, :] < length[:, None])
    rows = kvd[idx.clamp(0, s_kv - 1).long()]                       # [s_q, topk, 576]
    s = torch.einsum("qhd,qkd->qhk", qd, rows) / 576 ** 0.5
    s = s.masked_fill(~valid[:, None, :], float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)                        # a token with no valid slot: o = 0
    ref = torch.einsum("qhk,qkd->qhd", p, rows[..., :512])
    ref.backward(do.double())
    has = valid.any(1)
    errs = [_rel(o, ref), _rel(q.grad, qd.grad), _rel(kv.grad, kvd.grad),
            _rel(lse[has], torch.logsumexp(s, -1)[has])]
    assert max(errs) < 2e-2, f"rel L2 o, dq, dkv, lse = {errs}"
    assert torch.isinf(lse[~has]).all() and (lse[~has] > 0).all(), "lse of a token with no slot is +inf"


def test_clear_errors_gpu():
    why = _gpu()
    if why:
        return why
    import torch
    q = torch.randn(1, 64, 2, 64, device="cuda", dtype=torch.bfloat16)
    for bad, phrase in ((q.transpose(1, 3), "innermost"), (q.float(), "float32")):
        try:
            ptxgen.attention(bad, q, q)
        except ValueError as e:
            assert phrase in str(e), str(e)
        else:
            raise AssertionError("accepted a bad tensor")


def main():
    for i, a in enumerate(sys.argv[1:]):
        if a == "--seed":
            global SEED
            SEED = int(sys.argv[i + 2])
    print(f"python binding: libptxgen from {ptxgen.library_path()}, seed {SEED}")
    passed = failed = 0
    for name, fn in sorted((n, f) for n, f in globals().items() if n.startswith("test_")):
        try:
            skipped = fn()
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the rest
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            failed += 1
            continue
        if skipped:
            print(f"SKIP {name}: {skipped}")
        else:
            print(f"PASS {name}")
            passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0



def test_varlen_emit_and_offsets():
    """A varlen set's ABI (offsets, packed tensors), the kinds that refuse it, and the host check of the offsets."""
    ptx, man = ptxgen.emit("attn_fwd", "sm_90", varlen=True)
    names = [p["name"] for p in man["kernels"][0]["params"]]
    assert "cu_seqlens_q" in names and "cu_seqlens_k" in names and "total_q" in names and "q_stride_b" not in names
    ptx, man = ptxgen.emit("attn_bwd", "sm_90", varlen=True)
    assert [k["entry"].split("_")[2] for k in man["kernels"]] == ["pre", "main", "dq"], man["kernels"]
    ptx, man = ptxgen.emit("attn_fwd", "sm_90a", varlen=True)
    assert man["kernels"][0]["entry"].startswith("attn_fwd_wg_") and "o_map" not in [p["name"] for p in man["kernels"][0]["params"]]
    ptx, man = ptxgen.emit("attn_fwd", "sm_100a", varlen=True)
    assert man["kernels"][0]["entry"].startswith("attn_fwd_tc_") and man["kernels"][0]["entry"].endswith("_varlen")
    for family in ("wgmma", "tcgen05"):   # every attention kind takes them; sparse MLA has no batch
        ptx, man = ptxgen.emit("attn_bwd", "sm_100a" if family == "tcgen05" else "sm_90a", family=family, varlen=True)
        assert man["kernels"][1]["entry"].endswith("_varlen"), man["kernels"][1]["entry"]
    # every kernel of every family's varlen set takes the packed layout for every attention tensor (a launch binds
    # tensors by these shapes: one padded shape left anywhere refuses the caller's packed tensor)
    for kernel, arch, family in (("attn_fwd", "sm_90", "sync"), ("attn_fwd", "sm_90a", "wgmma"),
                                 ("attn_fwd", "sm_100a", "tcgen05"), ("attn_bwd", "sm_90", "sync"),
                                 ("attn_bwd", "sm_90a", "wgmma"), ("attn_bwd", "sm_100a", "tcgen05")):
        for det in ("deterministic=0", "deterministic=1") if kernel == "attn_bwd" else (None,):
            ptx, man = ptxgen.emit(kernel, arch, family=family, varlen=True, tile=det)
            for kern in man["kernels"]:
                for prm in kern["params"]:
                    if prm["name"] in ("q", "k", "v", "o", "do", "dq", "dk", "dv", "lse"):
                        assert "total_" in prm["shape"], (kern["entry"], prm["name"], prm["shape"])
    try:
        ptxgen.emit("mla_fwd", "sm_90", varlen=True)
    except ValueError as e:
        assert "no variable lengths" in str(e), str(e)
    else:
        raise AssertionError("mla_fwd took varlen")
    ptxgen.varlen_check([0, 3, 3, 10], [0, 5, 5, 9], 10, 9, 7, 5)   # an empty sequence is fine
    # (cu_q, cu_k, total_q, total_k, max_q, max_k), what the refusal names
    for args, phrase in ((([1, 3], [0, 3], 3, 3, 8, 8), "start at 0"), (([0, 5, 3], [0, 1, 2], 3, 2, 8, 8), "decreases"),
                         (([0, 3, 10], [0, 1, 2], 11, 2, 8, 8), "11 rows"), (([0, 3, 9], [0, 1, 2], 9, 2, 5, 8), "more than s_q")):
        try:
            ptxgen.varlen_check(*args)
        except ValueError as e:
            assert phrase in str(e), (phrase, str(e))
        else:
            raise AssertionError(f"offsets {args} accepted")

if __name__ == "__main__":
    sys.exit(main())

