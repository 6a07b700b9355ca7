/* Self-check of the sparse MLA host pieces: the float64 forward on
 * hand-computed cases (invalid indices, duplicates, an empty token,
 * topk_length), the forward against the dense attention reference, the
 * backward against central differences and the dense backward, and the
 * drawn indices and topk_length. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hostdata.h"
#include "ref.h"

/* ---- hand-checkable forward ----
 * kv row r = (r + 0.5, 7), d_qk = 2, d_v = 1 (V is the first column); head 0
 * has q = (1, 0), so its scores are the rows' V values; head 1 has q = (0, 1),
 * so its scores are all 7 (a plain mean of V over the valid slots). */

enum { HS_Q = 4, HS_KV = 4, HTOPK = 3, HH = 2 };

static const int32_t hand_idx[HS_Q * HTOPK] = {
    1, -1, 2,                       /* rows 1 and 2 */
    3, 3, 0,                        /* row 3 twice: once per slot */
    -1, HS_KV, INT32_MIN,           /* nothing valid */
    INT32_MAX, 0, HS_KV + 7,        /* row 0 only */
};

typedef struct { double o[HS_Q * HH], lse[HS_Q * HH]; } HandOut;

static void hand_inputs(float *q, float *kv)
{
    for (int r = 0; r < HS_KV; r++)
        kv[2 * r] = (float)r + 0.5f, kv[2 * r + 1] = 7.0f;
    for (int t = 0; t < HS_Q; t++) {
        float *qt = q + (size_t)t * HH * 2;
        qt[0] = 1, qt[1] = 0, qt[2] = 0, qt[3] = 1;
    }
}

/* Expected head-0 and head-1 output of token t from the V values (row + 0.5) of its used slots. */
static void hand_expect(HandOut *e, int t, const double *v, int n)
{
    double z = 0, zo = 0, mean = 0;
    for (int i = 0; i < n; i++) z += exp(v[i]), zo += v[i] * exp(v[i]), mean += v[i] / n;
    e->lse[t * HH] = n ? log(z) : INFINITY;
    e->o[t * HH] = n ? zo / z : 0;
    e->lse[t * HH + 1] = n ? 7 + log(n) : INFINITY;
    e->o[t * HH + 1] = n ? mean : 0;
}

static int hand_matches(const HandOut *got, const HandOut *want, char *why, size_t len)
{
    for (int i = 0; i < HS_Q * HH; i++) {
        int lse_ok = isinf(want->lse[i]) ? got->lse[i] == want->lse[i] : fabs(got->lse[i] - want->lse[i]) < 1e-12;
        int o_ok = want->o[i] == 0 ? got->o[i] == 0 : fabs(got->o[i] - want->o[i]) < 1e-12;
        if (!lse_ok || !o_ok) {
            snprintf(why, len, "token %d head %d: lse %.15g want %.15g, o %.15g want %.15g", i / HH, i % HH, got->lse[i],
                     want->lse[i], got->o[i], want->o[i]);
            return 0;
        }
    }
    return 1;
}

static void test_hand(const char *name, const int32_t *topk_length)
{
    float q[HS_Q * HH * 2], kv[HS_KV * 2];
    hand_inputs(q, kv);
    RefMla p = { HS_Q, HS_KV, HH, HTOPK, 2, 1, 1.0, hand_idx, topk_length };
    HandOut got, want;
    ref_mla_fwd(&p, q, kv, got.o, got.lse, 2);
    for (int t = 0; t < HS_Q; t++) {
        double v[HTOPK];
        int n = 0;
        for (int j = 0; j < HTOPK; j++)
            if (ref_mla_valid(&p, t, j)) v[n++] = hand_idx[t * HTOPK + j] + 0.5;
        hand_expect(&want, t, v, n);
    }
    char why[256] = "";
    check(hand_matches(&got, &want, why, sizeof why), name, "%s", why);
}

/* The expectations spelled out, so a slip in ref_mla_valid cannot hide in both sides. */
static void test_hand_values(void)
{
    float q[HS_Q * HH * 2], kv[HS_KV * 2];
    hand_inputs(q, kv);
    const int32_t len[HS_Q] = { 2, -1, 3, 100 };
    RefMla p = { HS_Q, HS_KV, HH, HTOPK, 2, 1, 1.0, hand_idx, NULL };
    HandOut got;
    ref_mla_fwd(&p, q, kv, got.o, got.lse, 1);
    double e = exp(1.0);
    int ok = fabs(got.lse[0] - (0.5 + log(e + e * e))) < 1e-12 &&                       /* token 0: rows 1, 2 */
             fabs(got.o[0] - (1.5 * e + 2.5 * e * e) / (e + e * e)) < 1e-12 &&
             fabs(got.lse[2] - (3.5 + log(2 + exp(-3.0)))) < 1e-12 &&                   /* token 1: 3, 3, 0 */
             fabs(got.o[3] - (3.5 + 3.5 + 0.5) / 3) < 1e-12 && fabs(got.lse[3] - (7 + log(3.0))) < 1e-12 &&
             got.lse[4] == INFINITY && got.lse[5] == INFINITY && got.o[4] == 0 && got.o[5] == 0 &&   /* token 2 */
             got.lse[6] == 0.5 && got.o[6] == 0.5 && got.lse[7] == 7 && got.o[7] == 0.5;            /* token 3 */
    check(ok, "mla ref hand values: invalid, duplicate, empty token", "lse %g %g %g o %g %g %g", got.lse[0], got.lse[2],
          got.lse[6], got.o[0], got.o[3], got.o[6]);
    p.topk_length = len;
    ref_mla_fwd(&p, q, kv, got.o, got.lse, 1);
    ok = got.lse[0] == 1.5 && got.o[0] == 1.5 &&       /* slots 0, 1: only row 1 */
         got.lse[2] == INFINITY && got.o[2] == 0 &&     /* negative length: none */
         got.lse[6] == 0.5 && got.o[6] == 0.5;          /* a length above topk: every slot */
    check(ok, "mla ref hand values: topk_length 2, -1, above topk", "lse %g %g %g o %g %g %g", got.lse[0], got.lse[2],
          got.lse[6], got.o[0], got.o[2], got.o[6]);
}

/* ---- random inputs ---- */

static float *rand_floats(Rng *r, size_t n)
{
    float *a = test_alloc(sizeof *a * n);
    for (size_t i = 0; i < n; i++)
        a[i] = bf16_to_f32(f32_to_bf16((float)rng_normal(r)));
    return a;
}

static double *zeros(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

/* Largest |a - b| / (|b| + floor) over n values; infinities must match. */
static double max_rel(const double *a, const double *b, size_t n, double floor)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        if (isinf(a[i]) || isinf(b[i])) {
            if (a[i] != b[i]) return INFINITY;
            continue;
        }
        double d = fabs(a[i] - b[i]) / (fabs(b[i]) + floor);
        worst = d > worst ? d : worst;
    }
    return worst;
}

/* Every token selects every row (in a per-token rotation): the dense
 * attention reference with h_kv = 1, K = kv, V = kv[:, :d_v]. */
typedef struct { RefMla m; RefAttn a; float *q, *kv, *v, *dout; int32_t *idx; } Dense;

static Dense dense_case(int s_q, int s_kv, int h_q, int d_qk, int d_v)
{
    Rng r;
    rng_seed(&r, 11);
    Dense c = { .a = { 1, s_q, s_kv, h_q, 1, d_qk, d_v, 0, 0.3 } };
    c.q = rand_floats(&r, (size_t)s_q * h_q * d_qk);
    c.kv = rand_floats(&r, (size_t)s_kv * d_qk);
    c.dout = rand_floats(&r, (size_t)s_q * h_q * d_v);
    c.v = test_alloc(sizeof(float) * (size_t)s_kv * d_v);
    c.idx = test_alloc(sizeof(int32_t) * (size_t)s_q * s_kv);
    for (int k = 0; k < s_kv; k++) memcpy(c.v + (size_t)k * d_v, c.kv + (size_t)k * d_qk, sizeof(float) * d_v);
    for (int t = 0; t < s_q; t++)
        for (int j = 0; j < s_kv; j++) c.idx[t * s_kv + j] = (j + 3 * t) % s_kv;
    c.m = (RefMla){ s_q, s_kv, h_q, s_kv, d_qk, d_v, 0.3, c.idx, NULL };
    return c;
}

static void dense_free(Dense *c) { free(c->q), free(c->kv), free(c->v), free(c->dout), free(c->idx); }

static void test_vs_dense(void)
{
    Dense c = dense_case(5, 23, 3, 24, 16);
    size_t no = (size_t)5 * 3 * 16, nl = 5 * 3;
    double *o = zeros(no), *lse = zeros(nl), *ao = zeros(no), *alse = zeros(nl);
    ref_mla_fwd(&c.m, c.q, c.kv, o, lse, 3);
    ref_attn_fwd(&c.a, c.q, c.kv, c.v, ao, alse, 1);
    /* attention's lse is [b, h_q, s_q], MLA's [s_q, h_q] */
    double *alse_t = zeros(nl);
    for (int h = 0; h < 3; h++)
        for (int t = 0; t < 5; t++) alse_t[t * 3 + h] = alse[h * 5 + t];
    double eo = max_rel(o, ao, no, 1e-3), el = max_rel(lse, alse_t, nl, 1e-3);
    check(eo < 1e-12 && el < 1e-12, "mla ref fwd = dense attention when every row is selected", "o %.3e lse %.3e", eo, el);

    size_t nq = (size_t)5 * 3 * 24, nkv = (size_t)23 * 24;
    double *dq = zeros(nq), *dkv = zeros(nkv), *adq = zeros(nq), *adk = zeros(nkv), *adv = zeros((size_t)23 * 16);
    ref_mla_bwd(&c.m, c.q, c.kv, NULL, c.dout, dq, dkv, NULL, 4);
    ref_attn_bwd(&c.a, c.q, c.kv, c.v, NULL, c.dout, adq, adk, adv, NULL, 1);
    for (int k = 0; k < 23; k++)
        for (int i = 0; i < 16; i++) adk[k * 24 + i] += adv[k * 16 + i];   /* dkv[:, :d_v] also gets dV */
    double eq = max_rel(dq, adq, nq, 1e-3), ek = max_rel(dkv, adk, nkv, 1e-3);
    check(eq < 1e-10 && ek < 1e-10, "mla ref bwd = dense attention bwd (dkv = dK + dV) when every row is selected",
          "dq %.3e dkv %.3e", eq, ek);
    free(o), free(lse), free(ao), free(alse), free(alse_t), free(dq), free(dkv), free(adq), free(adk), free(adv);
    dense_free(&c);
}

/* ---- backward against central differences ---- */

typedef struct { RefMla p; float *q, *kv, *dout; int32_t *idx, *len; double *o, *lse; size_t nq, nkv, no; } Sparse;

static Sparse sparse_case(int s_q, int s_kv, int h_q, int topk, int d_qk, int d_v, int with_len, uint64_t seed)
{
    Rng r;
    rng_seed(&r, seed);
    Sparse c = { .nq = (size_t)s_q * h_q * d_qk, .nkv = (size_t)s_kv * d_qk, .no = (size_t)s_q * h_q * d_v };
    c.q = rand_floats(&r, c.nq);
    c.kv = rand_floats(&r, c.nkv);
    c.dout = rand_floats(&r, c.no);
    c.idx = test_alloc(sizeof(int32_t) * (size_t)s_q * topk);
    mla_draw_indices(&r, s_q, s_kv, topk, c.idx);
    if (with_len) {
        c.len = test_alloc(sizeof(int32_t) * (size_t)s_q);
        mla_draw_topk_length(&r, c.idx, s_q, s_kv, topk, c.len);
    }
    c.o = zeros(c.no);
    c.lse = zeros((size_t)s_q * h_q);
    c.p = (RefMla){ s_q, s_kv, h_q, topk, d_qk, d_v, 0.4, c.idx, c.len };
    return c;
}

static void sparse_free(Sparse *c) { free(c->q), free(c->kv), free(c->dout), free(c->idx), free(c->len), free(c->o), free(c->lse); }

static double loss(Sparse *c)
{
    ref_mla_fwd(&c->p, c->q, c->kv, c->o, c->lse, 1);
    double l = 0;
    for (size_t i = 0; i < c->no; i++) l += c->o[i] * c->dout[i];
    return l;
}

static double numeric_grad(Sparse *c, float *x)
{
    float keep = *x, hi = keep + 1e-2f, lo = keep - 1e-2f;
    *x = hi;
    double lh = loss(c);
    *x = lo;
    double ll = loss(c);
    *x = keep;
    return (lh - ll) / ((double)hi - (double)lo);
}

/* A kv row that no valid slot selects; -1 if every row is selected. */
static int unselected_row(const RefMla *p)
{
    for (int k = 0; k < p->s_kv; k++) {
        int hit = 0;
        for (int t = 0; t < p->s_q && !hit; t++)
            for (int j = 0; j < p->topk && !hit; j++) hit = ref_mla_valid(p, t, j) && p->indices[t * p->topk + j] == k;
        if (!hit) return k;
    }
    return -1;
}

/* An empty token's dq and an unselected kv row's dkv are exactly 0. */
static int exact_zeros_ok(const Sparse *c, const double *dq, const double *dkv)
{
    int ok = 1, k = unselected_row(&c->p);
    for (int c2 = 0; k >= 0 && c2 < c->p.d_qk; c2++) ok &= dkv[(size_t)k * c->p.d_qk + c2] == 0;
    for (int t = 0; t < c->p.s_q; t++) {
        int n = 0;
        for (int j = 0; j < c->p.topk; j++) n += ref_mla_valid(&c->p, t, j);
        for (size_t i = 0; !n && i < (size_t)c->p.h_q * c->p.d_qk; i++) ok &= dq[(size_t)t * c->p.h_q * c->p.d_qk + i] == 0;
    }
    return ok;
}

static void test_bwd_case(const char *name, int with_len, uint64_t seed)
{
    Sparse c = sparse_case(6, 80, 2, 24, 12, 8, with_len, seed);
    double *dq = zeros(c.nq), *dkv = zeros(c.nkv);
    ref_mla_bwd(&c.p, c.q, c.kv, NULL, c.dout, dq, dkv, NULL, 3);
    Rng r;
    rng_seed(&r, seed + 1);
    double worst = 0;
    for (int s = 0; s < 40; s++) {
        int on_q = s % 2 == 0;
        size_t i = (size_t)(rng_u64(&r) % (on_q ? c.nq : c.nkv));
        double g = on_q ? dq[i] : dkv[i], num = numeric_grad(&c, on_q ? &c.q[i] : &c.kv[i]);
        double err = fabs(num - g) / (fabs(num) + 0.05);
        worst = err > worst ? err : worst;
    }
    check(worst < 2e-3, name, "worst relative gap to the central difference %.3e", worst);
    char zname[160];
    snprintf(zname, sizeof zname, "%s: empty tokens' dq and unselected rows' dkv exactly 0", name);
    check(exact_zeros_ok(&c, dq, dkv) && unselected_row(&c.p) >= 0, zname, "a nonzero (or no unselected row)");
    free(dq), free(dkv);
    sparse_free(&c);
}

static void test_threads(void)
{
    Sparse c = sparse_case(9, 70, 3, 40, 16, 8, 1, 21);
    size_t nl = (size_t)9 * 3;
    double *o1 = zeros(c.no), *l1 = zeros(nl), *dq1 = zeros(c.nq), *dkv1 = zeros(c.nkv), *dq2 = zeros(c.nq), *dkv2 = zeros(c.nkv);
    ref_mla_fwd(&c.p, c.q, c.kv, o1, l1, 1);
    ref_mla_fwd(&c.p, c.q, c.kv, c.o, c.lse, 7);
    double t1[2], t2[2];   /* dq's squared term norm (verify.h's floor): summed in row order, whatever the threads */
    ref_mla_bwd(&c.p, c.q, c.kv, NULL, c.dout, dq1, dkv1, t1, 1);
    ref_mla_bwd(&c.p, c.q, c.kv, NULL, c.dout, dq2, dkv2, t2, 5);
    int same = !memcmp(o1, c.o, c.no * 8) && !memcmp(l1, c.lse, nl * 8) && !memcmp(dq1, dq2, c.nq * 8) &&
               !memcmp(dkv1, dkv2, c.nkv * 8);
    check(same, "mla ref single vs multi thread identical (fwd and bwd)", "outputs differ");
    check(!memcmp(t1, t2, sizeof t1) && t1[0] > 0 && t1[1] == 0, "mla ref dq term norm single vs multi thread identical",
          "%.17g vs %.17g (dkv's %g)", t1[0], t2[0], t1[1]);
    free(o1), free(l1), free(dq1), free(dkv1), free(dq2), free(dkv2);
    sparse_free(&c);
}

/* ---- drawn indices and topk_length ---- */

typedef struct { int invalid[5], dup, empty, lead_invalid, last_only, valid; } IdxStats;

static IdxStats idx_stats(const int32_t *idx, int s_q, int s_kv, int topk)
{
    const int64_t want[5] = { -1, INT32_MIN, s_kv, (int64_t)s_kv + 7 > INT32_MAX ? INT32_MAX : (int64_t)s_kv + 7, INT32_MAX };
    IdxStats st = { { 0 }, 0, 0, 0, 0, 0 };
    for (int t = 0; t < s_q; t++) {
        const int32_t *row = idx + (size_t)t * topk;
        int n = 0, first = -1;
        for (int j = 0; j < topk; j++) {
            int ok = row[j] >= 0 && row[j] < s_kv;
            n += ok;
            if (ok && first < 0) first = j;
            for (int k = 0; k < 5; k++) st.invalid[k] |= row[j] == want[k];
            for (int i = 0; ok && i < j; i++) st.dup |= row[i] == row[j];
        }
        st.valid += n;
        st.empty += n == 0;
        st.lead_invalid |= topk >= 4 && first >= topk / 2;
        st.last_only |= n == 1 && first == topk - 1;
    }
    return st;
}

static void test_draw_indices(void)
{
    int ok = 1;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        Rng r;
        rng_seed(&r, seed);
        int s_q = 10 + (int)(seed % 5), s_kv = seed % 2 ? 50 : INT32_MAX, topk = 8 + (int)seed * 3;
        int32_t *idx = test_alloc(sizeof(int32_t) * (size_t)s_q * topk);
        mla_draw_indices(&r, s_q, s_kv, topk, idx);
        IdxStats st = idx_stats(idx, s_q, s_kv, topk);
        int all_invalid = st.invalid[0] && st.invalid[1] && st.invalid[2] && st.invalid[3] && st.invalid[4];
        int good = all_invalid && st.dup && st.empty >= 1 && st.lead_invalid && st.last_only &&
                   st.valid * 2 > s_q * topk;
        if (!good && ok)
            printf("  seed %llu: invalid %d%d%d%d%d dup %d empty %d lead %d last %d valid %d of %d\n",
                   (unsigned long long)seed, st.invalid[0], st.invalid[1], st.invalid[2], st.invalid[3], st.invalid[4],
                   st.dup, st.empty, st.lead_invalid, st.last_only, st.valid, s_q * topk);
        ok &= good;
        free(idx);
    }
    check(ok, "mla indices: every invalid value, duplicates, empty/late/last-only tokens, mostly valid", "see above");

    /* small shapes: the specials still fit where they can */
    Rng r;
    rng_seed(&r, 3);
    int32_t one[1], two[2 * 7];
    mla_draw_indices(&r, 1, 1, 1, one);
    mla_draw_indices(&r, 2, 9, 7, two);
    IdxStats st = idx_stats(two, 2, 9, 7);
    check(st.empty == 1 && st.invalid[0] && st.invalid[4] && st.dup, "mla indices s_q=2 topk=7: one empty token and the specials",
          "empty %d dup %d", st.empty, st.dup);

    Rng a, b;
    rng_seed(&a, 77);
    rng_seed(&b, 77);
    int32_t x[64], y[64];
    mla_draw_indices(&a, 4, 100, 16, x);
    mla_draw_indices(&b, 4, 100, 16, y);
    int same = !memcmp(x, y, sizeof x);
    rng_seed(&b, 78);
    mla_draw_indices(&b, 4, 100, 16, y);
    check(same && memcmp(x, y, sizeof x), "mla indices deterministic per seed, fresh across seeds", "same %d", same);
}

static void test_draw_topk_length(void)
{
    Rng r;
    rng_seed(&r, 9);
    enum { S = 16, K = 64 };
    int32_t len[S], idx[S * K];
    mla_draw_indices(&r, S, 500, K, idx);
    mla_draw_topk_length(&r, idx, S, 500, K, len);
    int zero = 0, all = 0, between = 0, negative = 0, above = 0, max = 0;
    for (int t = 0; t < S; t++) {
        zero += len[t] == 0, all += len[t] == K, between += len[t] > 0 && len[t] < K;
        negative += len[t] < 0, above += len[t] > K, max += len[t] == INT32_MAX;
    }
    check(zero && all && between >= S / 2 && negative && above, "mla topk_length: 0, topk, in between, negative, above",
          "zero %d all %d between %d negative %d above %d", zero, all, between, negative, above);

    /* Few tokens: three special ones and lengths of 0, negative or small can
     * leave no token two different valid rows (dq = 0, a check of nothing; CI
     * drew one at s_q 5). Every draw keeps one where its indices have one. */
    int draws = 0, fixed = 0;
    for (uint64_t seed = 1; seed <= 3000; seed++) {
        int s_q = 2 + (int)(seed % 6), topk = (int)(seed % 3) == 0 ? 2 : (int)(seed % 3) == 1 ? 9 : 64, s_kv = 40;
        rng_seed(&r, seed);
        mla_draw_indices(&r, s_q, s_kv, topk, idx);
        mla_draw_topk_length(&r, idx, s_q, s_kv, topk, len);
        int any_full = 0, any_kept = 0;
        for (int t = 0; t < s_q; t++) {
            int32_t n = len[t] < 0 ? 0 : len[t] > topk ? topk : len[t], full = -2, kept = -2;
            for (int j = 0; j < topk; j++) {
                int32_t v = idx[t * topk + j];
                if (v < 0 || v >= s_kv) continue;
                full = full == -2 ? v : full != v ? -1 : full;
                if (j < n) kept = kept == -2 ? v : kept != v ? -1 : kept;
            }
            any_full |= full == -1, any_kept |= kept == -1;
        }
        draws += any_full, fixed += any_full && any_kept;
    }
    check(draws > 1500 && fixed == draws, "mla topk_length: a token keeps two different valid rows (s_q 2-7)",
          "%d of %d draws", fixed, draws);
}

int main(void)
{
    test_hand("mla ref hand case: no topk_length", NULL);
    const int32_t len[HS_Q] = { 2, -1, 3, 100 };
    test_hand("mla ref hand case: topk_length", len);
    test_hand_values();
    test_vs_dense();
    test_bwd_case("mla ref bwd vs central differences", 0, 5);
    test_bwd_case("mla ref bwd vs central differences with topk_length", 1, 6);
    test_threads();
    test_draw_indices();
    test_draw_topk_length();
    return check_summary();
}
