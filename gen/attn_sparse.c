/* Block-sparse attention: the list kernels and the main kernels' walk over a list (attn_sparse.h). */
#include "attn_sparse.h"
#include "attn_bwd_math.h"
#include "attn_sched.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_LISTS_BYTES "b * h_q * cdiv(s_q, %d) * (1 + cdiv(s_k, %d)) * 4"
#define QUERY_LISTS_BYTES "b * h_kv * cdiv(s_k, %d) * (1 + h_q / h_kv * cdiv(s_q, %d)) * 4"

int sparse_check(const AttnDesc *d, const SparseLists *l, const char *who, char *err, size_t errlen) {
    const SparseTiles *t[2] = {&l->keys, &l->queries};
    for (int i = 0; i < 2; i++) {
        if (!t[i]->bm) continue;
        if (d->block_m % t[i]->bm || d->block_n % t[i]->bn) {
            snprintf(err, errlen, "block-sparse mask blocks %dx%d (--block-m, --block-n) must be whole tiles of the %s, "
                     "%dx%d (query rows x keys): use multiples of them", d->block_m, d->block_n, who, t[i]->bm, t[i]->bn);
            return 1;
        }
    }
    return 0;
}

static void list_plan(const AttnDesc *d, Plan *p, const char *kind, SparseTiles t) {
    *p = (Plan){.threads = 32, .regs_est = 32};
    char what[96];
    snprintf(what, sizeof what, "block-sparse %s lists (tiles %dx%d, mask blocks %dx%d)", kind, t.bm, t.bn, d->block_m,
             d->block_n);
    plan_finish(p, d->arch, what);
}

int sparse_plan(const AttnDesc *d, const SparseLists *l, Plan *plans) {
    int n = 0;
    if (l->keys.bm) list_plan(d, &plans[n++], "key", l->keys);
    if (l->queries.bm) list_plan(d, &plans[n++], "query", l->queries);
    return n;
}

static const char *const list_sizes[] = {"s_q", "s_k", "h_q", "h_kv", "n_mask_heads", "mask_rows", "mask_cols"};

static void list_spec(const AttnDesc *d, KernelSpec *ks, int queries, SparseTiles t, int order) {
    *ks = (KernelSpec){.block = {32, 1, 1}};
    snprintf(ks->entry, sizeof ks->entry, "attn_sparse_%s_lists_bm%d_bn%d_mb%d_nb%d%s%s", queries ? "query" : "key", t.bm,
             t.bn, d->block_m, d->block_n, d->causal ? "_causal" : "", d->varlen ? "_varlen" : "");
    static char mask_meaning[2][160];
    snprintf(mask_meaning[queries], sizeof mask_meaning[queries], "block (r, c) covers query rows [%d r, %d r + %d) and "
             "keys [%d c, %d c + %d); nonzero: computed; mask_rows = cdiv(s_q, %d), mask_cols = cdiv(s_k, %d); contiguous",
             d->block_m, d->block_m, d->block_m, d->block_n, d->block_n, d->block_n, d->block_m, d->block_n);
    abi_tensor(ks, "block_mask", PR_IN, mask_meaning[queries], "[b, n_mask_heads, mask_rows, mask_cols]", "int32", "");
    abi_tensor(ks, "head_mask_type", PR_IN, "per query head: 0 dense, k in 1 .. n_mask_heads mask head k - 1 "
               "(ptxgen_head_mask_check)", "[h_q]", "int32", "");
    abi_workspace(ks, queries ? "query_lists" : "key_lists", "written here");
    if (order) sched_order_abi(ks, "each query tile filed by its count, here");
    if (d->varlen) abi_varlen(ks);
    abi_sizes(ks, list_sizes, (int)(sizeof list_sizes / sizeof list_sizes[0]));
    snprintf(ks->grid[0], sizeof ks->grid[0], queries ? "cdiv(s_k, %d)" : "cdiv(s_q, %d)", queries ? t.bn : t.bm);
    snprintf(ks->grid[1], sizeof ks->grid[1], queries ? "h_kv" : "h_q");
    snprintf(ks->grid[2], sizeof ks->grid[2], "b");
}

/* The row of mask head type - 1 for batch b at mask row r: its first int32's address; *ok: type in 1 .. n_mask_heads
 * and r a row of the mask (else nothing of it is read) */
static Reg mask_row(Kctx *k, Reg type, Reg b, Reg r, Reg ok) {
    Emit *e = &k->e;
    Reg i = e_reg(e, RC_B32), p = e_reg(e, RC_PRED), a = e_reg(e, RC_B64);
    INS(e, SETP_LT_U32, R(ok), R(r), R(kc_u32(k, "mask_rows")));
    INS(e, SUB_U32, R(i), R(type), I(1));
    INS(e, SETP_LT_U32, R(p), R(i), R(kc_u32(k, "n_mask_heads")));   /* type 0 wraps past: not a mask head */
    INS(e, AND_PRED, R(ok), R(ok), R(p));
    INS(e, MAD_LO_U32, R(i), R(b), R(kc_u32(k, "n_mask_heads")), R(i));
    INS(e, MAD_LO_U32, R(i), R(i), R(kc_u32(k, "mask_rows")), R(r));
    INS(e, MUL_LO_U32, R(i), R(i), R(kc_u32(k, "mask_cols")));
    INS(e, MAD_WIDE_U32, R(a), R(i), I(4), R(kc_ptr(k, "block_mask")));
    return a;
}

/* Whether this lane's candidate is listed: in range (in), and its head dense or its block set. The block is
 * mask[row][c] where row is at a (ok: readable), c < mask_cols. */
static Reg candidate(Kctx *k, Reg in, Reg dense, Reg a, Reg ok, Reg c) {
    Emit *e = &k->e;
    Reg act = e_reg(e, RC_PRED), rd = e_reg(e, RC_PRED), v = e_reg(e, RC_B32), at = e_reg(e, RC_B64);
    INS(e, SETP_LT_U32, R(rd), R(c), R(kc_u32(k, "mask_cols")));
    INS(e, AND_PRED, R(rd), R(rd), R(ok));
    INS(e, AND_PRED, R(rd), R(rd), R(in));
    INS(e, MOV_B32, R(v), I(0));
    INS(e, MAD_WIDE_U32, R(at), R(c), I(4), R(a));
    INSP(e, rd, 0, LD_GLOBAL_NC_B32, R(v), A(at, 0));
    INS(e, SETP_NE_U32, R(act), R(v), I(0));
    INS(e, OR_PRED, R(act), R(act), R(dense));
    INS(e, AND_PRED, R(act), R(act), R(in));
    return act;
}

/* The warp's ballot over act: the lanes that hold an entry write value at list[1 + *count + rank]; count moves on. */
static void append(Kctx *k, Reg list, Reg count, Reg act, Reg value) {
    Emit *e = &k->e;
    Reg bal = e_reg(e, RC_B32), below = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    INS(e, VOTE_BALLOT, R(bal), R(act), IX(0xffffffffu));
    INS(e, MOV_B32, R(below), SR("%lanemask_lt"));
    INS(e, AND_B32, R(below), R(bal), R(below));
    INS(e, POPC_B32, R(below), R(below));
    INS(e, ADD_U32, R(below), R(below), R(count));
    INS(e, MAD_WIDE_U32, R(a), R(below), I(4), R(list));
    INSP(e, act, 0, ST_GLOBAL_B32, A(a, 4), R(value));
    INS(e, POPC_B32, R(bal), R(bal));
    INS(e, ADD_U32, R(count), R(count), R(bal));
}

/* for (x = lo + lane; uniformly while lo < hi; lo += 32): body(x, x < hi) */
typedef void (*Sweep)(Kctx *k, void *ctx, Reg x, Reg in);
static void sweep(Kctx *k, Reg lo, Reg hi, Sweep body, void *ctx) {
    Emit *e = &k->e;
    int top = e_label(e), done = e_label(e);
    Reg base = e_reg(e, RC_B32), x = e_reg(e, RC_B32), in = e_reg(e, RC_PRED), p = e_reg(e, RC_PRED);
    INS(e, MOV_B32, R(base), R(lo));
    e_place(e, top);
    INS(e, SETP_GE_U32, R(p), R(base), R(hi));
    INSP(e, p, 0, BRA_UNI, L(done));
    INS(e, ADD_U32, R(x), R(base), R(k->lane));
    INS(e, SETP_LT_U32, R(in), R(x), R(hi));
    body(k, ctx, x, in);
    INS(e, ADD_U32, R(base), R(base), I(32));
    INS(e, BRA_UNI, L(top));
    e_place(e, done);
}

typedef struct {
    const AttnDesc *d;
    SparseTiles t;
    Reg list, count, dense, row, ok;   /* the list being built; the head's type is 0; its mask row (ok: readable) */
    Reg b, type, col, hl, mt;          /* query lists: the batch, head type, mask column, head in the group, Mt */
} Lists;

static Reg head_type(Kctx *k, Reg h, Reg *dense) {
    Emit *e = &k->e;
    Reg type = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    INS(e, MAD_WIDE_U32, R(a), R(h), I(4), R(kc_ptr(k, "head_mask_type")));
    INS(e, LD_GLOBAL_NC_B32, R(type), A(a, 0));
    *dense = e_reg(e, RC_PRED);
    INS(e, SETP_EQ_U32, R(*dense), R(type), I(0));
    return type;
}

/* key tile n of the query tile: mask column n bn / block_n */
static void key_candidate(Kctx *k, void *ctx, Reg n, Reg in) {
    Lists *ls = ctx;
    Reg c = e_reg(&k->e, RC_B32);
    INS(&k->e, MUL_LO_U32, R(c), R(n), I(ls->t.bn));
    INS(&k->e, DIV_U32, R(c), R(c), I(ls->d->block_n));
    append(k, ls->list, ls->count, candidate(k, in, ls->dense, ls->row, ls->ok, c), n);
}

/* Mt and Nt of the launch's s_q, s_k (varlen: the longest sequence's) */
static void tiles_of(Kctx *k, SparseTiles t, Reg *mt, Reg *nt) {
    Emit *e = &k->e;
    *mt = e_reg(e, RC_B32), *nt = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(*mt), R(kc_u32(k, "s_q")), I(t.bm - 1));
    INS(e, DIV_U32, R(*mt), R(*mt), I(t.bm));
    INS(e, ADD_U32, R(*nt), R(kc_u32(k, "s_k")), I(t.bn - 1));
    INS(e, DIV_U32, R(*nt), R(*nt), I(t.bn));
}

/* (a list's index in its array, the list's length) -> its address */
static Reg list_at(Kctx *k, const char *ws, Reg index, Reg len) {
    Emit *e = &k->e;
    Reg a = e_reg(e, RC_B64), w = e_reg(e, RC_B64), l1 = e_reg(e, RC_B64);
    INS(e, CVT_U64_U32, R(w), R(index));
    INS(e, CVT_U64_U32, R(l1), R(len));
    INS(e, MUL_LO_U64, R(a), R(w), R(l1));
    INS(e, SHL_B64, R(a), R(a), I(2));
    INS(e, ADD_U64, R(a), R(a), R(kc_ptr(k, ws)));
    return a;
}

Reg sparse_key_list(Kctx *k, int bm, int bn, Reg b, Reg h, Reg m) {
    Emit *e = &k->e;
    Reg mt, nt, i = e_reg(e, RC_B32);
    tiles_of(k, (SparseTiles){bm, bn}, &mt, &nt);
    INS(e, MAD_LO_U32, R(i), R(b), R(kc_u32(k, "h_q")), R(h));
    INS(e, MAD_LO_U32, R(i), R(i), R(mt), R(m));
    INS(e, ADD_U32, R(nt), R(nt), I(1));
    return list_at(k, "key_lists", i, nt);
}

Reg sparse_query_list(Kctx *k, int bm, int bn, Reg b, Reg kvh, Reg n, Reg *mt_out) {
    Emit *e = &k->e;
    Reg mt, nt, i = e_reg(e, RC_B32), len = e_reg(e, RC_B32);
    tiles_of(k, (SparseTiles){bm, bn}, &mt, &nt);
    if (mt_out) *mt_out = mt;
    INS(e, MAD_LO_U32, R(i), R(b), R(kc_u32(k, "h_kv")), R(kvh));
    INS(e, MAD_LO_U32, R(i), R(i), R(nt), R(n));
    INS(e, DIV_U32, R(len), R(kc_u32(k, "h_q")), R(kc_u32(k, "h_kv")));
    INS(e, MAD_LO_U32, R(len), R(len), R(mt), I(1));
    return list_at(k, "query_lists", i, len);
}

/* A list kernel's CTA: its tile x (%ctaid.x), head y, batch b, the lengths, the causal diagonal off = s_k - s_q and
 * the tile's first row (x times rows). */
typedef struct { Reg x, y, s_q, s_k, off, start; } ListCta;
static ListCta list_cta(Kctx *k, const AttnDesc *d, Lists *ls, int rows) {
    Emit *e = &k->e;
    ListCta c = {e_reg(e, RC_B32), e_reg(e, RC_B32), {0}, {0}, e_reg(e, RC_B32), e_reg(e, RC_B32)};
    INS(e, MOV_B32, R(c.x), SR("%ctaid.x"));
    INS(e, MOV_B32, R(c.y), SR("%ctaid.y"));
    INS(e, MOV_B32, R(ls->b = e_reg(e, RC_B32)), SR("%ctaid.z"));
    attn_lengths(k, d, ls->b, &c.s_q, &c.s_k);
    INS(e, SUB_S32, R(c.off), R(c.s_k), R(c.s_q));
    INS(e, MUL_LO_U32, R(c.start), R(c.x), I(rows));
    INS(e, MOV_B32, R(ls->count = e_reg(e, RC_B32)), I(0));
    return c;
}

/* Lane 0 writes the list's count before its entries. */
static void list_count(Kctx *k, const Lists *ls) {
    Emit *e = &k->e;
    Reg p = e_reg(e, RC_PRED), a = e_reg(e, RC_B64);
    INS(e, SETP_EQ_U32, R(p), R(k->lane), I(0));
    INS(e, MOV_B64, R(a), R(ls->list));
    INSP(e, p, 0, ST_GLOBAL_B32, A(a, 0), R(ls->count));
}

/* Per query tile m of head h: key tiles [0, n_max) with n_max from the lengths and causal, as key_blocks. */
static void emit_key_lists(Kctx *k, const AttnDesc *d, SparseTiles t, int order) {
    Emit *e = &k->e;
    Lists ls = {.d = d, .t = t};
    ListCta c = list_cta(k, d, &ls, t.bm);
    Reg m = c.x, h = c.y, s_q = c.s_q, s_k = c.s_k, off = c.off, mstart = c.start, r = e_reg(e, RC_B32);
    Reg n_full = e_reg(e, RC_B32), n_max = e_reg(e, RC_B32), zero = kc_imm32(k, 0), past = e_reg(e, RC_PRED);
    RowBlocks rb = {.causal = d->causal, .bm = t.bm, .bn = t.bn, .s_q = s_q, .s_k = s_k, .off = off, .m_start = mstart,
                    .own_lengths = 1};
    key_blocks(k, &rb, n_full, n_max);
    INS(e, SETP_GE_U32, R(past), R(mstart), R(s_q));   /* a query tile past the sequence's rows visits nothing */
    INS(e, SELP_B32, R(n_max), R(zero), R(n_max), R(past));
    ls.list = sparse_key_list(k, t.bm, t.bn, ls.b, h, m);
    ls.type = head_type(k, h, &ls.dense);
    INS(e, DIV_U32, R(r), R(mstart), I(d->block_m));
    ls.ok = e_reg(e, RC_PRED);
    ls.row = mask_row(k, ls.type, ls.b, r, ls.ok);
    {   /* a type past the mask heads: nothing */
        Reg bad = e_reg(e, RC_PRED);
        INS(e, SETP_GT_U32, R(bad), R(ls.type), R(kc_u32(k, "n_mask_heads")));
        INS(e, SELP_B32, R(n_max), R(zero), R(n_max), R(bad));
    }
    sweep(k, zero, n_max, key_candidate, &ls);
    list_count(k, &ls);
    if (order) {   /* the grid is the tiles: (cdiv(s_q, bm), h_q, b) */
        Reg g[3] = {e_reg(e, RC_B32), e_reg(e, RC_B32), e_reg(e, RC_B32)};
        INS(e, MOV_B32, R(g[0]), SR("%nctaid.x"));
        INS(e, MOV_B32, R(g[1]), SR("%nctaid.y"));
        INS(e, MOV_B32, R(g[2]), SR("%nctaid.z"));
        sched_order_file(k, ls.count, m, h, ls.b, g[0], g[1], g[2], d->causal);
    }
}

/* query tile m of head hl: mask row m bm / block_m */
static void query_candidate(Kctx *k, void *ctx, Reg m, Reg in) {
    Lists *ls = ctx;
    Emit *e = &k->e;
    Reg r = e_reg(e, RC_B32), ok = e_reg(e, RC_PRED), entry = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(r), R(m), I(ls->t.bm));
    INS(e, DIV_U32, R(r), R(r), I(ls->d->block_m));
    Reg row = mask_row(k, ls->type, ls->b, r, ok);
    INS(e, MAD_LO_U32, R(entry), R(ls->hl), R(ls->mt), R(m));
    append(k, ls->list, ls->count, candidate(k, in, ls->dense, row, ok, ls->col), entry);
}

/* Per key tile n of kv head kvh: each head of its group in turn, query tiles [m_lo, m_end) as query_blocks. */
static void emit_query_lists(Kctx *k, const AttnDesc *d, SparseTiles t) {
    Emit *e = &k->e;
    Lists ls = {.d = d, .t = t};
    ListCta c = list_cta(k, d, &ls, t.bn);
    Reg nt, n = c.x, kvh = c.y, s_q = c.s_q, s_k = c.s_k, key0 = c.start, off = c.off;
    Reg group = e_reg(e, RC_B32), m_hi = e_reg(e, RC_B32), h = e_reg(e, RC_B32), hi = e_reg(e, RC_B32);
    Reg past = e_reg(e, RC_PRED), bad = e_reg(e, RC_PRED), p = e_reg(e, RC_PRED);
    INS(e, DIV_U32, R(group), R(kc_u32(k, "h_q")), R(kc_u32(k, "h_kv")));
    tiles_of(k, t, &ls.mt, &nt);
    QueryBlocks qb;
    query_blocks(k, d->causal, t.bm, t.bn, key0, s_q, off, group, &qb);
    INS(e, ADD_U32, R(m_hi), R(qb.m_lo), R(qb.per_head));
    INS(e, SETP_GE_U32, R(past), R(key0), R(s_k));   /* a key tile past the sequence's keys is seen by nothing */
    INS(e, SELP_B32, R(m_hi), R(qb.m_lo), R(m_hi), R(past));
    ls.list = sparse_query_list(k, t.bm, t.bn, ls.b, kvh, n, NULL);
    INS(e, DIV_U32, R(ls.col = e_reg(e, RC_B32)), R(key0), I(d->block_n));
    INS(e, MOV_B32, R(ls.hl = e_reg(e, RC_B32)), I(0));
    int top = e_label(e), done = e_label(e);
    e_place(e, top);
    INS(e, SETP_GE_U32, R(p), R(ls.hl), R(group));
    INSP(e, p, 0, BRA_UNI, L(done));
    INS(e, MAD_LO_U32, R(h), R(kvh), R(group), R(ls.hl));
    ls.type = head_type(k, h, &ls.dense);
    INS(e, SETP_GT_U32, R(bad), R(ls.type), R(kc_u32(k, "n_mask_heads")));
    INS(e, SELP_B32, R(hi), R(qb.m_lo), R(m_hi), R(bad));   /* a type past the mask heads: nothing */
    sweep(k, qb.m_lo, hi, query_candidate, &ls);
    INS(e, ADD_U32, R(ls.hl), R(ls.hl), I(1));
    INS(e, BRA_UNI, L(top));
    e_place(e, done);
    list_count(k, &ls);
}

static void list_emit(const AttnDesc *d, const KernelSpec *ks, int queries, SparseTiles t, int order, int early, Buf *m) {
    Kctx kc;
    kctx_begin(&kc, ks);
    /* the main kernel may take the SMs this one leaves from here on; it waits for the lists in griddepcontrol.wait */
    if (early) INS0(&kc.e, GRIDDEP_LAUNCH);
    if (queries) emit_query_lists(&kc, d, t);
    else emit_key_lists(&kc, d, t, order);
    kctx_finish(&kc, m);
}

void sparse_build(const AttnDesc *d, const SparseLists *l, KernelSet *ks, Buf *module) {
    const SparseTiles *t[2] = {&l->keys, &l->queries};
    int n = 0;
    for (int q = 0; q < 2; q++) {
        if (!t[q]->bm) continue;
        WorkspaceSpec *w = &ks->ws[ks->nws++];
        *w = (WorkspaceSpec){q ? "query_lists" : "key_lists", "", 0,
                             q ? "int32 [b, h_kv, cdiv(s_k, bn), 1 + h_q / h_kv * cdiv(s_q, bm)]: per key tile the count, "
                                 "then (query head in the group) * cdiv(s_q, bm) + query tile of each query tile it visits; "
                                 "written by the query-list kernel"
                               : "int32 [b, h_q, cdiv(s_q, bm), 1 + cdiv(s_k, bn)]: per query tile the count, then the "
                                 "key tiles it visits, ascending; written by the key-list kernel"};
        if (q) snprintf(w->bytes, sizeof w->bytes, QUERY_LISTS_BYTES, t[q]->bn, t[q]->bm);
        else snprintf(w->bytes, sizeof w->bytes, KEY_LISTS_BYTES, t[q]->bm, t[q]->bn);
        int order = !q && l->order;   /* the key lists' order for a persistent main kernel */
        if (order) ks->nws += sched_order_workspaces(&ks->ws[ks->nws], t[q]->bm);
        list_spec(d, &ks->k[n], q, *t[q], order);
        ks->k[n].pdl = n > 0 && arch_has_pdl(d->arch);
        list_emit(d, &ks->k[n], q, *t[q], order, l->early, module);
        buf_puts(module, "\n");
        n++;
    }
}

void abi_sparse_keys(KernelSpec *ks) { abi_workspace(ks, "key_lists", "block-sparse key lists, read here"); }
void abi_sparse_queries(KernelSpec *ks) { abi_workspace(ks, "query_lists", "block-sparse query lists, read here"); }

Reg sparse_entry(Kctx *k, Reg list, Reg i) {
    Emit *e = &k->e;
    Reg v = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    INS(e, MAD_WIDE_U32, R(a), R(i), I(4), R(list));
    INS(e, LD_GLOBAL_NC_B32, R(v), A(a, 4));
    return v;
}

Reg sparse_entry_or0(Kctx *k, Reg list, Reg count, Reg i) {
    Emit *e = &k->e;
    Reg v = e_reg(e, RC_B32), a = e_reg(e, RC_B64), p = e_reg(e, RC_PRED);
    INS(e, MOV_B32, R(v), I(0));
    INS(e, SETP_LT_U32, R(p), R(i), R(count));
    INS(e, MAD_WIDE_U32, R(a), R(i), I(4), R(list));
    INSP(e, p, 0, LD_GLOBAL_NC_B32, R(v), A(a, 4));
    return v;
}

void sparse_key_list_at(Kctx *k, KeyList *kl, int bm, int bn, Reg b, Reg h, Reg m) {
    kl->list = sparse_key_list(k, bm, bn, b, h, m);
    INS(&k->e, LD_GLOBAL_NC_B32, R(kl->count = e_reg(&k->e, RC_B32)), A(kl->list, 0));
    kl->t = e_reg(&k->e, RC_B32);
}

/* Entry t + 1 is loaded as step t begins, so neither the step's prefetch of it nor the next step waits on the
 * load. */
void sparse_key_loop(Kctx *k, KeyStep step, void *ctx, KeyList *kl, int first, Reg n_full, Reg n_max) {
    Emit *e = &k->e;
    int top = e_label(e), done = e_label(e), masked = e_label(e), next = e_label(e);
    Reg p = e_reg(e, RC_PRED), n = e_reg(e, RC_B32), after = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(kl->t), I(first));
    INS(e, MOV_B32, R(n), R(sparse_entry_or0(k, kl->list, kl->count, kl->t)));
    e_place(e, top);
    INS(e, SETP_GE_U32, R(p), R(kl->t), R(kl->count));
    INSP(e, p, 0, BRA_UNI, L(done));
    INS(e, ADD_U32, R(after), R(kl->t), I(1));
    INS(e, MOV_B32, R(kl->next = e_reg(e, RC_B32)), R(sparse_entry_or0(k, kl->list, kl->count, after)));
    INS(e, SETP_GE_U32, R(p), R(n), R(n_full));
    INSP(e, p, 0, BRA_UNI, L(masked));
    step(k, ctx, n, n_max, 0);
    INS(e, BRA_UNI, L(next));
    e_place(e, masked);
    step(k, ctx, n, n_max, 1);
    e_place(e, next);
    INS(e, MOV_B32, R(n), R(kl->next));
    INS(e, ADD_U32, R(kl->t), R(kl->t), I(1));
    INS(e, BRA_UNI, L(top));
    e_place(e, done);
}

/* The entries at or past n_full are the list's last ones, at most cdiv(bm - 1, bn) + 1 of them (a tile's diagonal
 * blocks, or its ragged last block: key_blocks), so the warp's lanes read the last 32 entries and a ballot counts
 * them. */
Reg sparse_unmasked_entries(Kctx *k, const KeyList *kl, int bm, int bn, Reg n_full) {
    Emit *e = &k->e;
    if ((bm - 2) / bn + 2 > 32) {   /* cdiv(bm - 1, bn) + 1; no tile of the kernels that take this walk comes near */
        fprintf(stderr, "ptxgen internal: sparse_unmasked_entries: bm=%d bn=%d can mask more than 32 blocks\n", bm, bn);
        abort();
    }
    Reg u = e_reg(e, RC_B32), i = e_reg(e, RC_B32), v = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    Reg in = e_reg(e, RC_PRED), at = e_reg(e, RC_PRED), bal = e_reg(e, RC_B32);
    INS(e, ADD_S32, R(i), R(kl->count), R(k->lane));
    INS(e, SUB_S32, R(i), R(i), I(32));
    INS(e, SETP_GE_S32, R(in), R(i), I(0));
    INS(e, MOV_B32, R(v), I(0));
    INS(e, MAD_WIDE_U32, R(a), R(i), I(4), R(kl->list));
    INSP(e, in, 0, LD_GLOBAL_NC_B32, R(v), A(a, 4));
    INS(e, SETP_GE_U32, R(at), R(v), R(n_full));
    INS(e, AND_PRED, R(at), R(at), R(in));
    INS(e, VOTE_BALLOT, R(bal), R(at), I(-1));
    INS(e, POPC_B32, R(u), R(bal));
    INS(e, SUB_U32, R(u), R(kl->count), R(u));
    return u;
}

void sparse_key_loop_prefix(Kctx *k, KeyStep step, void *ctx, KeyList *kl, int first, Reg u, Reg n_max) {
    Emit *e = &k->e;
    int top = e_label(e), done = e_label(e);
    Reg p = e_reg(e, RC_PRED);
    INS(e, MOV_B32, R(kl->t), I(first));
    key_loop(k, step, ctx, kl->t, u, n_max, 0);
    e_place(e, top);
    INS(e, SETP_GE_U32, R(p), R(kl->t), R(kl->count));
    INSP(e, p, 0, BRA_UNI, L(done));
    step(k, ctx, sparse_entry(k, kl->list, kl->t), n_max, 1);
    INS(e, ADD_U32, R(kl->t), R(kl->t), I(1));
    INS(e, BRA_UNI, L(top));
    e_place(e, done);
}

void sparse_next(Kctx *k, const KeyList *kl, Reg next, int skip) {
    Emit *e = &k->e;
    Reg i = e_reg(e, RC_B32), last = e_reg(e, RC_PRED);
    INS(e, ADD_U32, R(i), R(kl->t), I(1));
    INS(e, SETP_GE_U32, R(last), R(i), R(kl->count));
    INSP(e, last, 0, BRA_UNI, L(skip));
    INS(e, MOV_B32, R(next), R(kl->next));
}
