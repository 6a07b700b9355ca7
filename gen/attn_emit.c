#include "attn_emit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Reg tensor_base(Kctx *k, const char *t, char d1, Reg i1, char d2, Reg i2) {
    Emit *e = &k->e;
    char s1[24], s2[24];
    snprintf(s1, sizeof s1, "%s_stride_%c", t, d1);
    snprintf(s2, sizeof s2, "%s_stride_%c", t, d2);
    Reg p = kc_ptr(k, t), a64 = e_reg(e, RC_B64), b64 = e_reg(e, RC_B64), off = e_reg(e, RC_B64);
    INS(e, CVT_U64_U32, R(a64), R(i1));
    INS(e, CVT_U64_U32, R(b64), R(i2));
    INS(e, MUL_LO_U64, R(off), R(a64), R(kc_u64(k, s1)));
    INS(e, MUL_LO_U64, R(b64), R(b64), R(kc_u64(k, s2)));
    INS(e, ADD_U64, R(off), R(off), R(b64));
    INS(e, MUL_LO_U64, R(off), R(off), I(2));
    INS(e, ADD_U64, R(p), R(p), R(off));
    return p;
}

Reg head_base(Kctx *k, const char *t, Reg b, Reg h) { return tensor_base(k, t, 'b', b, 'h', h); }

Reg stride_bytes(Kctx *k, const char *t, char dim) {
    char name[24];
    snprintf(name, sizeof name, "%s_stride_%c", t, dim);
    Reg s64 = kc_u64(k, name), r = e_reg(&k->e, RC_B32);
    INS(&k->e, CVT_U32_U64, R(r), R(s64));
    INS(&k->e, SHL_B32, R(r), R(r), I(1));
    return r;
}

Reg row_stride_bytes(Kctx *k, const char *t) { return stride_bytes(k, t, 's'); }

void cta_coords(Kctx *k, Reg *b, Reg *h) {
    *b = e_reg(&k->e, RC_B32);
    *h = e_reg(&k->e, RC_B32);
    INS(&k->e, MOV_B32, R(*h), SR("%ctaid.y"));
    INS(&k->e, MOV_B32, R(*b), SR("%ctaid.z"));
}

Reg kv_head_of(Kctx *k, Reg h) {
    Reg group = e_reg(&k->e, RC_B32), kvh = e_reg(&k->e, RC_B32);
    INS(&k->e, DIV_U32, R(group), R(kc_u32(k, "h_q")), R(kc_u32(k, "h_kv")));
    INS(&k->e, DIV_U32, R(kvh), R(h), R(group));
    return kvh;
}

Reg paged_seqlen(Kctx *k, Reg b) {
    Emit *e = &k->e;
    Reg a = e_reg(e, RC_B64), s_k = e_reg(e, RC_B32);
    INS(e, MAD_WIDE_U32, R(a), R(b), I(4), R(kc_ptr(k, "seqlens_k")));
    INS(e, LD_GLOBAL_NC_B32, R(s_k), A(a, 0));
    return s_k;
}

Reg block_table_at(Kctx *k, Reg b, Reg pg) {
    Emit *e = &k->e;
    Reg id = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    INS(e, MAD_LO_U32, R(id), R(b), R(kc_u32(k, "max_pages")), R(pg));
    INS(e, MAD_WIDE_U32, R(a), R(id), I(4), R(kc_ptr(k, "block_table")));
    return a;
}

Reg paged_page(Kctx *k, int page_size, Reg b, Reg row) {
    Emit *e = &k->e;
    Reg pg = e_reg(e, RC_B32), id = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(pg), R(row), I(__builtin_ctz((unsigned)page_size)));
    INS(e, LD_GLOBAL_NC_B32, R(id), A(block_table_at(k, b, pg), 0));
    INS(e, AND_B32, R(row), R(row), I(page_size - 1));
    return id;
}

Reg paged_sub_page(Kctx *k, int page_size, Reg b, Reg row, int j, Reg s_k, Reg first, Reg *in, Reg *start_out) {
    Emit *e = &k->e;
    Reg start = e_reg(e, RC_B32), pg = e_reg(e, RC_B32), id = e_reg(e, RC_B32);
    if (start_out) *start_out = start;
    *in = e_reg(e, RC_PRED);
    INS(e, ADD_U32, R(start), R(row), I(j * page_size));
    INS(e, SETP_LT_U32, R(*in), R(start), R(s_k));
    INS(e, SHR_U32, R(pg), R(start), I(__builtin_ctz((unsigned)page_size)));
    INS(e, MOV_B32, R(id), R(first));
    INSP(e, *in, 0, LD_GLOBAL_NC_B32, R(id), A(block_table_at(k, b, pg), 0));
    return id;
}

void paged_suffix(const AttnDesc *d, char *buf, size_t len) {
    size_t n = strlen(buf);
    if (d->page_size) n += (size_t)snprintf(buf + n, len - n, "_page%d", d->page_size);
    if (d->splitkv && n < len) snprintf(buf + n, len - n, "_split");
}

void packed_heads(Kctx *k, int pack, Reg y, Reg *group, Reg *kvh, Reg *j0, Reg *h0) {
    Emit *e = &k->e;
    Reg nb = e_reg(e, RC_B32);
    *group = e_reg(e, RC_B32), *kvh = e_reg(e, RC_B32), *j0 = e_reg(e, RC_B32), *h0 = e_reg(e, RC_B32);
    INS(e, DIV_U32, R(*group), R(kc_u32(k, "h_q")), R(kc_u32(k, "h_kv")));
    INS(e, ADD_U32, R(nb), R(*group), I(pack - 1));
    INS(e, DIV_U32, R(nb), R(nb), I(pack));
    INS(e, DIV_U32, R(*kvh), R(y), R(nb));
    INS(e, REM_U32, R(*j0), R(y), R(nb));
    INS(e, MUL_LO_U32, R(*j0), R(*j0), I(pack));
    INS(e, MAD_LO_U32, R(*h0), R(*kvh), R(*group), R(*j0));
}

void packed_row(Kctx *k, const PackedRows *pr, Reg warp_row0, int r, Reg *tok, Reg *head, Reg *ok) {
    Emit *e = &k->e;
    Reg row = e_reg(e, RC_B32), j = e_reg(e, RC_B32), p = e_reg(e, RC_PRED);
    *tok = e_reg(e, RC_B32), *head = e_reg(e, RC_B32), *ok = e_reg(e, RC_PRED);
    INS(e, SHR_U32, R(row), R(k->lane), I(2));
    INS(e, ADD_U32, R(row), R(row), R(warp_row0));
    INS(e, ADD_U32, R(row), R(row), I(16 * (r >> 1) + 8 * (r & 1)));
    if (pr->pack == 1) {   /* one head: the row is the token */
        INS(e, ADD_U32, R(*tok), R(row), R(pr->tok0));
        INS(e, MOV_B32, R(*head), R(pr->h0));
        INS(e, SETP_LT_U32, R(*ok), R(*tok), R(pr->s_q));
        return;
    }
    INS(e, SHR_U32, R(*tok), R(row), I(__builtin_ctz((unsigned)pr->pack)));
    INS(e, ADD_U32, R(*tok), R(*tok), R(pr->tok0));
    INS(e, AND_B32, R(j), R(row), I(pr->pack - 1));
    INS(e, ADD_U32, R(*head), R(pr->h0), R(j));
    INS(e, SETP_LT_U32, R(*ok), R(*tok), R(pr->s_q));
    INS(e, SETP_LT_U32, R(p), R(j), R(pr->heads));
    INS(e, AND_PRED, R(*ok), R(*ok), R(p));
}

Reg stats_row(Kctx *k, Reg b, Reg h) {
    Reg row = e_reg(&k->e, RC_B32);
    INS(&k->e, MAD_LO_U32, R(row), R(b), R(kc_u32(k, "h_q")), R(h));
    INS(&k->e, MUL_LO_U32, R(row), R(row), R(kc_u32(k, "s_q")));
    return row;
}

/* offsets[b] and offsets[b + 1] - offsets[b] from the int32 array param */
static void span(Kctx *k, const char *param, Reg b, Reg *first, Reg *len) {
    Emit *e = &k->e;
    Reg a = e_reg(e, RC_B64), end = e_reg(e, RC_B32);
    *first = e_reg(e, RC_B32), *len = e_reg(e, RC_B32);
    INS(e, MAD_WIDE_U32, R(a), R(b), I(4), R(kc_ptr(k, param)));
    INS(e, LD_GLOBAL_NC_B32, R(*first), A(a, 0));
    INS(e, LD_GLOBAL_NC_B32, R(end), A(a, 4));
    INS(e, SUB_U32, R(*len), R(end), R(*first));
}

SeqSpan seq_span(Kctx *k, Reg b) {
    SeqSpan s;
    span(k, "cu_seqlens_q", b, &s.q0, &s.s_q);
    span(k, "cu_seqlens_k", b, &s.k0, &s.s_k);
    return s;
}

static int key_side(const char *t) { return !strcmp(t, "k") || !strcmp(t, "v") || !strcmp(t, "dk") || !strcmp(t, "dv"); }

void attn_lengths(Kctx *k, const AttnDesc *d, Reg b, Reg *s_q, Reg *s_k) {
    Reg first;
    if (d->varlen) span(k, "cu_seqlens_q", b, &first, s_q);
    else *s_q = kc_u32(k, "s_q");
    if (!s_k) return;
    if (d->varlen) span(k, "cu_seqlens_k", b, &first, s_k);
    else *s_k = kc_u32(k, "s_k");
}

Reg attn_head_base(Kctx *k, const AttnDesc *d, const char *t, Reg b, Reg h) {
    if (!d->varlen) return head_base(k, t, b, h);
    Reg first, len;
    span(k, key_side(t) ? "cu_seqlens_k" : "cu_seqlens_q", b, &first, &len);
    return tensor_base(k, t, 's', first, 'h', h);
}

Reg attn_stats_row(Kctx *k, const AttnDesc *d, Reg b, Reg h) {
    if (!d->varlen) return stats_row(k, b, h);
    Reg first, len;
    span(k, "cu_seqlens_q", b, &first, &len);
    return varlen_stats_row(k, h, first);
}

int varlen_exit(Kctx *k, const AttnDesc *d, int bm, int last_first) {
    if (!d->varlen) return 0;
    Emit *e = &k->e;
    Reg m = e_reg(e, RC_B32), b = e_reg(e, RC_B32), s_q, past = e_reg(e, RC_PRED);
    RowBlocks rb = {.bm = bm, .last_first = last_first};
    row_block(k, &rb, m);
    INS(e, MUL_LO_U32, R(m), R(m), I(bm));
    INS(e, MOV_B32, R(b), SR("%ctaid.z"));
    attn_lengths(k, d, b, &s_q, NULL);
    INS(e, SETP_GE_U32, R(past), R(m), R(s_q));
    int label = e_label(e);
    INSP(e, past, 0, BRA_UNI, L(label));
    return label;
}

int varlen_keys_exit(Kctx *k, const AttnDesc *d, int bn, int parts) {
    if (!d->varlen) return 0;
    Emit *e = &k->e;
    Reg key0 = e_reg(e, RC_B32), b = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(key0), SR("%ctaid.x"));
    if (parts > 1) INS(e, DIV_U32, R(key0), R(key0), I(parts));
    INS(e, MUL_LO_U32, R(key0), R(key0), I(bn));
    INS(e, MOV_B32, R(b), SR("%ctaid.z"));
    return varlen_keys_exit_at(k, d, b, key0);
}

int varlen_keys_exit_at(Kctx *k, const AttnDesc *d, Reg b, Reg key0) {
    Emit *e = &k->e;
    Reg s_q, s_k, past = e_reg(e, RC_PRED);
    attn_lengths(k, d, b, &s_q, &s_k);
    INS(e, SETP_GE_U32, R(past), R(key0), R(s_k));
    int label = e_label(e);
    INSP(e, past, 0, BRA_UNI, L(label));
    return label;
}

Reg varlen_stats_row(Kctx *k, Reg h, Reg q0) {
    Reg row = e_reg(&k->e, RC_B32);
    INS(&k->e, MAD_LO_U32, R(row), R(h), R(kc_u32(k, "total_q")), R(q0));
    return row;
}

void sync_tiles(Kctx *k) {
    INS(&k->e, CP_ASYNC_WAIT, I(0));
    INS(&k->e, BAR_SYNC, I(0));
}

void key_loop(Kctx *k, KeyStep step, void *ctx, Reg n, Reg end, Reg n_max, int masked) {
    Emit *e = &k->e;
    int top = e_label(e), done = e_label(e);
    Reg p = e_reg(e, RC_PRED);
    e_place(e, top);
    INS(e, SETP_GE_U32, R(p), R(n), R(end));
    INSP(e, p, 0, BRA_UNI, L(done));
    step(k, ctx, n, n_max, masked);
    INS(e, ADD_U32, R(n), R(n), I(1));
    INS(e, BRA_UNI, L(top));
    e_place(e, done);
}

Reg scale_log2(Kctx *k) {
    Reg r = kc_f32(k, "softmax_scale");
    INS(&k->e, MUL_F32, R(r), R(r), FI((float)M_LOG2E));
    return r;
}

int attn_check_copy(const AttnDesc *d, char *err, size_t errlen) {
    const AttnTile *t = &d->tile;
    int threads = 32 * t->warps, cpr = d->d / 8;
    if (threads % cpr || t->bn % (threads / cpr) || t->bm % (threads / cpr)) {
        snprintf(err, errlen, "tile bn=%d/bm=%d cannot be copied by %d threads in whole rows of d=%d", t->bn, t->bm, threads, d->d);
        return 1;
    }
    return 0;
}

void key_blocks(Kctx *k, const RowBlocks *rb, Reg n_full, Reg n_max) {
    Emit *e = &k->e;
    int bn = rb->bn;
    INS(e, ADD_U32, R(n_max), R(rb->s_k), I(bn - 1));
    INS(e, DIV_U32, R(n_max), R(n_max), I(bn));
    INS(e, DIV_U32, R(n_full), R(rb->s_k), I(bn));
    if (!rb->causal) return;
    Reg last = e_reg(e, RC_B32), first = e_reg(e, RC_B32);
    /* the CTA's last row sees keys < min(m_start + bm, s_q) + off */
    INS(e, ADD_U32, R(last), R(rb->m_start), I(rb->bm));
    INS(e, MIN_U32, R(last), R(last), R(rb->s_q));
    INS(e, ADD_S32, R(last), R(last), R(rb->off));
    INS(e, MAX_S32, R(last), R(last), I(0));
    INS(e, ADD_U32, R(last), R(last), I(bn - 1));
    INS(e, DIV_U32, R(last), R(last), I(bn));
    INS(e, MIN_U32, R(n_max), R(n_max), R(last));
    /* its first row sees keys < m_start + off + 1 */
    INS(e, ADD_S32, R(first), R(rb->m_start), R(rb->off));
    INS(e, ADD_S32, R(first), R(first), I(1));
    INS(e, MAX_S32, R(first), R(first), I(0));
    INS(e, DIV_U32, R(first), R(first), I(bn));
    INS(e, MIN_U32, R(n_full), R(n_full), R(first));
    INS(e, MIN_U32, R(n_full), R(n_full), R(n_max));
}

/* Recomputed per masked block from the CTA and lane ids rather than kept
 * live through the unmasked loop. */
void row_block(Kctx *k, const RowBlocks *rb, Reg m) {
    Emit *e = &k->e;
    INS(e, MOV_B32, R(m), SR("%ctaid.x"));
    if (rb->pair) INS(e, SHR_U32, R(m), R(m), I(1));
    if (rb->last_first) {
        Reg last = e_reg(e, RC_B32);
        INS(e, MOV_B32, R(last), SR("%nctaid.x"));
        if (rb->pair) INS(e, SHR_U32, R(last), R(last), I(1));
        INS(e, SUB_U32, R(last), R(last), I(1));
        INS(e, SUB_U32, R(m), R(last), R(m));
    }
}

void row_room(Kctx *k, const RowBlocks *rb, Reg n_start, Reg *room) {
    Emit *e = &k->e;
    int tiles = rb->rows_per_warp / 16;
    Reg g = e_reg(e, RC_B32), col0 = e_reg(e, RC_B32), row = e_reg(e, RC_B32);
    Reg s_k = rb->own_lengths ? rb->s_k : kc_u32(k, "s_k");
    INS(e, AND_B32, R(col0), R(k->lane), I(3));
    INS(e, MAD_LO_U32, R(col0), R(col0), I(2), R(n_start));
    if (!rb->causal) {
        for (int r = 0; r < 2 * tiles; r++) {
            room[r] = e_reg(e, RC_B32);
            INS(e, SUB_S32, R(room[r]), R(s_k), R(col0));
        }
        return;
    }
    /* row + s_k - s_q */
    Reg t = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(g), R(k->lane), I(2));
    if (rb->m_held) INS(e, MOV_B32, R(row), R(rb->m_start));
    else {
        row_block(k, rb, row);
        INS(e, MUL_LO_U32, R(row), R(row), I(rb->bm));
    }
    INS(e, SHR_U32, R(t), R(k->tid), I(5));
    if (rb->first_warp) INS(e, SUB_U32, R(t), R(t), I(rb->first_warp));
    Reg base = row, lrow = row;
    if (rb->pack > 1) {   /* the block's first token + s_k - s_q; each row adds its own token, (lane's warp row) / pack */
        base = e_reg(e, RC_B32), lrow = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(base), R(row), R(s_k));
        INS(e, SUB_U32, R(base), R(base), R(rb->own_lengths ? rb->s_q : kc_u32(k, "s_q")));
        INS(e, MAD_LO_U32, R(lrow), R(t), I(rb->rows_per_warp), R(g));
    } else {
        INS(e, MAD_LO_U32, R(row), R(t), I(rb->rows_per_warp), R(row));
        INS(e, ADD_U32, R(row), R(row), R(g));
        INS(e, ADD_U32, R(row), R(row), R(s_k));
        INS(e, SUB_U32, R(row), R(row), R(rb->own_lengths ? rb->s_q : kc_u32(k, "s_q")));
    }
    for (int r = 0; r < 2 * tiles; r++) {
        /* key j visible to row i iff j <= i + s_k - s_q, and j < s_k */
        room[r] = e_reg(e, RC_B32);
        if (rb->pack > 1) {   /* row block + token of the row (warp row / pack) */
            Reg local = e_reg(e, RC_B32);
            INS(e, ADD_U32, R(local), R(lrow), I(16 * (r >> 1) + 8 * (r & 1)));
            INS(e, SHR_U32, R(local), R(local), I(__builtin_ctz((unsigned)rb->pack)));
            INS(e, ADD_U32, R(room[r]), R(base), R(local));
            INS(e, ADD_S32, R(room[r]), R(room[r]), I(1));
        } else INS(e, ADD_S32, R(room[r]), R(row), I(16 * (r >> 1) + 8 * (r & 1) + 1));
        INS(e, MIN_S32, R(room[r]), R(room[r]), R(s_k));
        INS(e, SUB_S32, R(room[r]), R(room[r]), R(col0));
    }
}

const char *const attn_size_names[4] = {"s_q", "s_k", "h_q", "h_kv"};

static void add(KernelSpec *ks, ParamSpec p) {
    if (ks->nparams >= MAX_PARAMS) {
        fprintf(stderr, "ptxgen internal: %s has more than %d parameters\n", ks->entry, MAX_PARAMS);
        abort();
    }
    ks->params[ks->nparams++] = p;
}

void abi_tensor(KernelSpec *ks, const char *name, ParamRole role, const char *meaning, const char *shape,
                const char *dtype, const char *dims) {
    /* parameter names need static storage: one row per tensor that has strides, by dimension b, s, h */
    static const char *const strides[][4] = {
        {"q", "q_stride_b", "q_stride_s", "q_stride_h"},     {"k", "k_stride_b", "k_stride_s", "k_stride_h"},
        {"v", "v_stride_b", "v_stride_s", "v_stride_h"},     {"o", "o_stride_b", "o_stride_s", "o_stride_h"},
        {"do", "do_stride_b", "do_stride_s", "do_stride_h"}, {"dq", "dq_stride_b", "dq_stride_s", "dq_stride_h"},
        {"dk", "dk_stride_b", "dk_stride_s", "dk_stride_h"}, {"dv", "dv_stride_b", "dv_stride_s", "dv_stride_h"},
        {"kv", NULL, "kv_stride_s", NULL},                   {"indices", NULL, "indices_stride_s", NULL},
        {"dkv", NULL, "dkv_stride_s", NULL}};
    static const char *const dim_names[3] = {"b", "s", "h"};
    /* what each stride steps over, named by the shape's dimensions (packed varlen tensors have no b, their rows
     * total_q or total_k) */
    static const char *const dim_meaning[3] = {
        "stride in elements between batch entries (the shape's b; num_pages for a paged cache: between pages)",
        "stride in elements between rows (the shape's s_q, s_k or s_kv; total_q or total_k where sequences are packed; "
        "page_size for a paged cache: between the rows of a page)",
        "stride in elements between heads (the shape's h_q or h_kv)"};
    add(ks, (ParamSpec){name, PT_PTR, role, meaning, shape, dtype, NULL, NULL});
    if (!dims[0]) return;
    for (size_t t = 0; t < sizeof strides / sizeof strides[0]; t++) {
        if (strcmp(strides[t][0], name)) continue;
        for (int i = 0; i < 3; i++) {
            if (!strchr(dims, dim_names[i][0])) continue;
            if (!strides[t][1 + i]) break;
            add(ks, (ParamSpec){strides[t][1 + i], PT_U64, PR_STRIDE, dim_meaning[i], NULL, NULL, strides[t][0],
                                dim_names[i]});
        }
        return;
    }
    fprintf(stderr, "ptxgen internal: no stride names for tensor '%s' dims '%s'\n", name, dims);
    abort();
}

void abi_sizes(KernelSpec *ks, const char *const *names, int n) {
    for (int i = 0; i < n; i++) add(ks, (ParamSpec){names[i], PT_U32, PR_SIZE, "problem size", NULL, NULL, names[i], NULL});
}

void abi_scale(KernelSpec *ks, const char *meaning) {
    add(ks, (ParamSpec){"softmax_scale", PT_F32, PR_SCALE, meaning, NULL, NULL, NULL, NULL});
}

void abi_tensor_map(KernelSpec *ks, const char *tensor, const char *meaning, TensorMapSpec map) {
    if (ks->ntmaps >= MAX_TMAPS) {
        fprintf(stderr, "ptxgen internal: %s has more than %d tensor maps\n", ks->entry, MAX_TMAPS);
        abort();
    }
    add(ks, (ParamSpec){map.param, PT_TMAP, PR_TMAP, meaning, NULL, map.dtype, tensor, NULL});
    ks->tmaps[ks->ntmaps++] = map;
}

void abi_workspace(KernelSpec *ks, const char *name, const char *meaning) {
    add(ks, (ParamSpec){name, PT_PTR, PR_WORKSPACE, meaning, NULL, NULL, name, NULL});
}

void attn_tensor(KernelSpec *ks, const AttnDesc *d, const char *name, ParamRole role, const char *meaning) {
    static const struct { const char *name, *padded, *packed; int dv; } shapes[] = {
        {"q", "[b, s_q, h_q, d]", "[total_q, h_q, d]", 0},     {"k", "[b, s_k, h_kv, d]", "[total_k, h_kv, d]", 0},
        {"v", "[b, s_k, h_kv, dv]", "[total_k, h_kv, dv]", 1}, {"o", "[b, s_q, h_q, dv]", "[total_q, h_q, dv]", 1},
        {"do", "[b, s_q, h_q, dv]", "[total_q, h_q, dv]", 1},  {"dq", "[b, s_q, h_q, d]", "[total_q, h_q, d]", 0},
        {"dk", "[b, s_k, h_kv, d]", "[total_k, h_kv, d]", 0},  {"dv", "[b, s_k, h_kv, dv]", "[total_k, h_kv, dv]", 1}};
    if (!strcmp(name, "lse")) {
        abi_tensor(ks, name, role, meaning, d->varlen ? "[h_q, total_q]" : "[b, h_q, s_q]", "fp32", "");
        return;
    }
    if (d->page_size && (!strcmp(name, "k") || !strcmp(name, "v"))) {   /* strides b: page, s: row, h: head */
        abi_tensor(ks, name, role, meaning, name[0] == 'k' ? "[num_pages, page_size, h_kv, d]" : "[num_pages, page_size, "
                   "h_kv, dv]", dtype_name(d->dtype), "bsh");
        return;
    }
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!strcmp(shapes[i].name, name)) {
            abi_tensor(ks, name, role, meaning, d->varlen ? shapes[i].packed : shapes[i].padded, dtype_name(d->dtype),
                       d->varlen ? "sh" : "bsh");
            return;
        }
    fprintf(stderr, "ptxgen internal: no attention tensor '%s'\n", name);
    abort();
}

void abi_paged(KernelSpec *ks) {
    add(ks, (ParamSpec){"block_table", PT_PTR, PR_IN, "sequence i's key j lives in page block_table[i][j / page_size], row "
                        "j % page_size; entries past its pages are never read (ptxgen_paged_check); contiguous",
                        "[b, max_pages]", "int32", NULL, NULL});
    add(ks, (ParamSpec){"seqlens_k", PT_PTR, PR_IN, "sequence i's keys: seqlens_k[i] <= max_pages * page_size (0 allowed)",
                        "[b]", "int32", NULL, NULL});
    add(ks, (ParamSpec){"max_pages", PT_U32, PR_SIZE, "entries per block_table row", NULL, NULL, "max_pages", NULL});
}

void abi_varlen(KernelSpec *ks) {
    add(ks, (ParamSpec){"cu_seqlens_q", PT_PTR, PR_IN, "sequence i's query rows: [cu_seqlens_q[i], cu_seqlens_q[i + 1]) "
                        "of the packed tensors; starts at 0, never decreases (ptxgen_varlen_check)", "[b + 1]", "int32",
                        NULL, NULL});
    add(ks, (ParamSpec){"cu_seqlens_k", PT_PTR, PR_IN, "sequence i's key rows: [cu_seqlens_k[i], cu_seqlens_k[i + 1])",
                        "[b + 1]", "int32", NULL, NULL});
    add(ks, (ParamSpec){"total_q", PT_U32, PR_SIZE, "rows of the packed queries (cu_seqlens_q[b]): LSE is [h_q, total_q]",
                        NULL, NULL, "total_q", NULL});
}

/* the two elements of a packed pair as f32 */
void unpack2(Kctx *k, DType dt, Reg w, Reg *lo, Reg *hi) {
    Emit *e = &k->e;
    *lo = e_reg(e, RC_F32), *hi = e_reg(e, RC_F32);
    if (dt == DT_FP16) {
        Reg t = e_reg(e, RC_B32);
        INS(e, CVT_F32_F16, R(*lo), R(w));
        INS(e, SHR_U32, R(t), R(w), I(16));
        INS(e, CVT_F32_F16, R(*hi), R(t));
        return;
    }
    /* bf16 is the top half of an f32 */
    Reg a = e_reg(e, RC_B32), b = e_reg(e, RC_B32);
    INS(e, SHL_B32, R(a), R(w), I(16));
    INS(e, AND_B32, R(b), R(w), IX(0xffff0000u));
    INS(e, MOV_F32_B32, R(*lo), R(a));
    INS(e, MOV_F32_B32, R(*hi), R(b));
}

Reg dot8_packed(Kctx *k, DType dt, const Reg *x, const Reg *y) {
    Reg sum = e_reg(&k->e, RC_F32);
    INS(&k->e, MOV_F32, R(sum), FI(0.0f));
    for (int i = 0; i < 4; i++) {
        Reg xl, xh, yl, yh;
        unpack2(k, dt, x[i], &xl, &xh);
        unpack2(k, dt, y[i], &yl, &yh);
        INS(&k->e, FMA_F32, R(sum), R(xl), R(yl), R(sum));
        INS(&k->e, FMA_F32, R(sum), R(xh), R(yh), R(sum));
    }
    return sum;
}

void ld16_global(Kctx *k, Reg *v, Reg addr) {
    for (int i = 0; i < 4; i++) v[i] = e_reg(&k->e, RC_B32);
    INS(&k->e, LD_GLOBAL_V4_B32, V4(v[0], v[1], v[2], v[3]), A(addr, 0));
}

void f32x8_pack(Kctx *k, DType dt, const Reg *f, Reg *out) {
    Op cvt = dt == DT_FP16 ? OP_CVT_F16X2 : OP_CVT_BF16X2;
    for (int i = 0; i < 4; i++) {
        out[i] = e_reg(&k->e, RC_B32);
        e_insn(&k->e, NOGUARD, 0, cvt, OPNDS(R(out[i]), R(f[2 * i + 1]), R(f[2 * i])));
    }
}
