/* The public run API, through include/ptxgen.h only (as a host application
 * sees it), on the sim device: attn_fwd with padded row strides and GQA,
 * then sparse MLA forward and the tcgen05 CTA-pair backward (clusters, a
 * tensor map, workspaces, the optional topk_length), each against a float64
 * reference written here; and the errors a caller gets for bad tensors,
 * sizes and devices. usage: test_api [--seed N] [--device sim|cuda|cuda:N] (a fresh seed each run, printed;
 * the sets are built for the device's arch: on a GPU, "this GPU") */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ptxgen.h"

static int passed, failed;
static void check(int ok, const char *name, const char *detail) {
    printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, ok || !detail ? "" : ": ", ok || !detail ? "" : detail);
    ok ? passed++ : failed++;
}

static unsigned long long rng_state;
static double uniform(void) {   /* xorshift64*, in (-1, 1) */
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) / 4503599627370496.0 - 1.0;
}
static unsigned short to_bf16(double x) {   /* round to nearest even */
    float f = (float)x;
    unsigned u;
    memcpy(&u, &f, 4);
    return (unsigned short)((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}
static double from_bf16(unsigned short h) {
    unsigned u = (unsigned)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* a bf16 tensor of n values at stride rows of `row` elements (the rest zero-padded), uploaded; vals: the rounded values */
static unsigned long long upload_bf16(ptxgen_device *d, double *vals, long long rows, long long width, long long row,
                                      char *err) {
    unsigned short *h = calloc((size_t)(rows * row), 2);
    for (long long r = 0; r < rows; r++)
        for (long long c = 0; c < width; c++) {
            h[r * row + c] = to_bf16(uniform());
            vals[r * width + c] = from_bf16(h[r * row + c]);
        }
    unsigned long long p = 0;
    if (ptxgen_device_alloc(d, (size_t)(rows * row) * 2, &p, err, 512) ||
        ptxgen_device_upload(d, p, h, (size_t)(rows * row) * 2, err, 512))
        p = 0;
    free(h);
    return p;
}

static double rel_l2(const double *x, const double *ref, long long n) {
    double e = 0, r = 0;
    for (long long i = 0; i < n; i++) e += (x[i] - ref[i]) * (x[i] - ref[i]), r += ref[i] * ref[i];
    return r > 0 ? sqrt(e / r) : sqrt(e);
}

static double *download_bf16(ptxgen_device *d, unsigned long long p, long long n, char *err) {
    unsigned short *h = malloc((size_t)n * 2);
    double *v = malloc((size_t)n * sizeof *v);
    if (ptxgen_device_download(d, h, p, (size_t)n * 2, err, 512)) {
        free(h), free(v);
        return NULL;
    }
    for (long long i = 0; i < n; i++) v[i] = from_bf16(h[i]);
    free(h);
    return v;
}

/* attn_fwd, b 1, h_q 4 over h_kv 2, d 64, q and o with padded rows; tile: NULL, or the request's (then only the
 * launches are checked, not the refusals) */
static void attn_fwd(ptxgen_device *dev, const char *arch, int on_gpu, const char *tile) {
    enum { SQ = 37, SK = 70, HQ = 4, HKV = 2, D = 64, PAD = 8 };
    char err[512] = "", msg[600];
    ptxgen_request rq = {.arch = arch, .kernel = "attn_fwd", .hdim = D, .tile = tile};
    ptxgen_set *s = NULL;
    ptxgen_loaded *l = NULL;
    int rc = ptxgen_build(&rq, &s, err, sizeof err) || ptxgen_load(dev, s, &l, err, sizeof err);
    check(!rc, "api: attn_fwd builds and loads", err);
    if (rc) { ptxgen_free(s); return; }
    const char *how = ptxgen_loaded_how(l);
    /* on a GPU a whole-program assembler made the cubin, never the driver's linker; the sim has none */
    check(on_gpu ? strstr(how, "whole program") || strstr(how, "from ptxgen's cache") : !strcmp(how, ""),
          "api: ptxgen_loaded_how names the assembler (\"\" on the sim)", how);
    static double q[SQ * HQ * D], k[SK * HKV * D], v[SK * HKV * D], ref[SQ * HQ * D];
    unsigned long long qp = upload_bf16(dev, q, SQ * HQ, D, D + PAD, err), kp = upload_bf16(dev, k, SK * HKV, D, D, err),
                       vp = upload_bf16(dev, v, SK * HKV, D, D, err), op = 0, lp = 0;
    /* o's rows padded too: its row (s) stride is HQ * (D + PAD), its head stride D + PAD */
    ptxgen_device_alloc(dev, (size_t)SQ * HQ * (D + PAD) * 2, &op, err, sizeof err);
    ptxgen_device_alloc(dev, (size_t)HQ * SQ * 4, &lp, err, sizeof err);
    ptxgen_tensor t[] = {
        {"q", qp, 4, {1, SQ, HQ, D}, {SQ * HQ * (D + PAD), HQ * (D + PAD), D + PAD, 1}},
        {"k", kp, 4, {1, SK, HKV, D}, {SK * HKV * D, HKV * D, D, 1}},
        {"v", vp, 4, {1, SK, HKV, D}, {SK * HKV * D, HKV * D, D, 1}},
        {"o", op, 4, {1, SQ, HQ, D}, {SQ * HQ * (D + PAD), HQ * (D + PAD), D + PAD, 1}},
        {"lse", lp, 3, {1, HQ, SQ}, {HQ * SQ, SQ, 1}}};
    double scale = 1 / sqrt((double)D);
    rc = ptxgen_launch(l, NULL, t, 5, NULL, 0, (float)scale, err, sizeof err) || ptxgen_device_sync(dev, err, sizeof err);
    check(!rc, "api: attn_fwd launches from named tensors alone (sizes from their shapes)", err);
    double *o = rc ? NULL : download_bf16(dev, op, SQ * HQ * (D + PAD), err), oc[SQ * HQ * D];
    if (o) {
        for (int i = 0; i < SQ; i++)
            for (int h = 0; h < HQ; h++) {
                double sc[SK], m = -INFINITY, sum = 0;
                const double *qi = q + (i * HQ + h) * D;
                for (int j = 0; j < SK; j++) {
                    const double *kj = k + (j * HKV + h / (HQ / HKV)) * D;
                    sc[j] = 0;
                    for (int c = 0; c < D; c++) sc[j] += qi[c] * kj[c];
                    sc[j] *= scale, m = fmax(m, sc[j]);
                }
                for (int j = 0; j < SK; j++) sum += sc[j] = exp(sc[j] - m);
                for (int c = 0; c < D; c++) {
                    double a = 0;
                    for (int j = 0; j < SK; j++) a += sc[j] * v[(j * HKV + h / (HQ / HKV)) * D + c];
                    ref[(i * HQ + h) * D + c] = a / sum;
                    oc[(i * HQ + h) * D + c] = o[(i * HQ + h) * (D + PAD) + c];
                }
            }
        double e = rel_l2(oc, ref, SQ * HQ * D);
        snprintf(msg, sizeof msg, "%s %s: rel L2 %.3e (tol 1e-2)", arch, ptxgen_entry(s, 0), e);
        printf("  %s\n", msg);
        check(e < 1e-2, "api: attn_fwd o matches float64 (padded q and o rows, GQA 4/2)", msg);
        /* again over o poisoned: the same bits (a persistent set's tile counter is left zeroed by the first) */
        size_t ob = (size_t)SQ * HQ * (D + PAD) * 2;
        unsigned char *poison = malloc(ob);
        memset(poison, 0xff, ob);
        rc = ptxgen_device_upload(dev, op, poison, ob, err, sizeof err) ||
             ptxgen_launch(l, NULL, t, 5, NULL, 0, (float)scale, err, sizeof err) || ptxgen_device_sync(dev, err, sizeof err);
        double *o2 = rc ? NULL : download_bf16(dev, op, SQ * HQ * (D + PAD), err);
        int same = o2 != NULL;
        for (int i = 0; same && i < SQ * HQ; i++)
            same = !memcmp(o2 + (i / HQ * HQ + i % HQ) * (D + PAD), o + (i / HQ * HQ + i % HQ) * (D + PAD), D * sizeof *o);
        snprintf(msg, sizeof msg, "%s %s: %s", arch, ptxgen_entry(s, 0), rc ? err : same ? "bit-identical" : "differs");
        check(same, "api: a second launch over a poisoned o writes the same o", msg);
        free(o2);
        free(poison);
    }
    free(o);
    if (!tile) {   /* the errors a caller gets, each before anything runs */
        struct { const char *name, *phrase; int idx; ptxgen_tensor bad; } cases[] = {
            {"a tensor of the wrong rank", "rank 3", 0, {"q", qp, 3, {SQ, HQ, D}, {HQ * D, D, 1}}},
            {"sizes that disagree between tensors", "s_q", 3, {"o", op, 4, {1, SQ + 1, HQ, D}, {0, HQ * D, D, 1}}},
            {"a head dim the set was not built for", "built for 64", 1, {"k", kp, 4, {1, SK, HKV, 128}, {0, HKV * 128, 128, 1}}},
            {"an innermost stride that is not 1", "innermost", 2, {"v", vp, 4, {1, SK, HKV, D}, {0, HKV * D * 2, D * 2, 2}}},
            {"a non-dense lse", "dense", 4, {"lse", lp, 3, {1, HQ, SQ}, {HQ * SQ * 2, SQ * 2, 1}}},
            {"a row stride that breaks 16-byte rows", "multiple of 8", 0, {"q", qp, 4, {1, SQ, HQ, D}, {0, HQ * (D + 4), D + 4, 1}}},
            {"a misaligned address", "aligned", 0, {"q", qp + 2, 4, {1, SQ, HQ, D}, {0, HQ * (D + PAD), D + PAD, 1}}},
            {"a null pointer for a required tensor", "null pointer", 1, {"k", 0, 4, {1, SK, HKV, D}, {0, HKV * D, D, 1}}},
            {"a name the set does not have", "no tensor 'qq'", 0, {"qq", qp, 4, {1, SQ, HQ, D}, {0, HQ * D, D, 1}}},
            {"an output whose rows share a stride of 0", "overlap", 3, {"o", op, 4, {1, SQ, HQ, D}, {0, 0, D, 1}}},
            {"an output whose heads overlap (8 apart at d 64)", "overlap", 3, {"o", op, 4, {1, SQ, HQ, D}, {0, HQ * D, 8, 1}}},
            {"extents past 2^63 elements", "2^63", 0, {"q", qp, 4, {1, 1LL << 40, 1LL << 40, D}, {0, 0, D, 1}}},
        };
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            ptxgen_tensor tt[5];
            memcpy(tt, t, sizeof tt);
            tt[cases[c].idx] = cases[c].bad;
            err[0] = '\0';
            rc = ptxgen_launch(l, NULL, tt, 5, NULL, 0, (float)scale, err, sizeof err);
            snprintf(msg, sizeof msg, "rc %d: %s", rc, err);
            char name[160];
            snprintf(name, sizeof name, "api: %s is refused naming it", cases[c].name);
            check(rc == PTXGEN_EINVAL && strstr(err, cases[c].phrase), name, msg);
        }
        ptxgen_size wrong = {"s_q", SQ + 3};
        rc = ptxgen_launch(l, NULL, t, 5, &wrong, 1, (float)scale, err, sizeof err);
        check(rc == PTXGEN_EINVAL && strstr(err, "s_q"), "api: a given size that contradicts the tensors is refused", err);
        rc = ptxgen_launch(l, NULL, t, 4, NULL, 0, (float)scale, err, sizeof err);
        check(rc == PTXGEN_EINVAL && strstr(err, "'lse'") && strstr(err, "not given"), "api: a missing output is refused", err);
        ptxgen_tensor odd[5];   /* 3 query heads over 2 kv heads: q, o and lse agree, the group is not whole */
        memcpy(odd, t, sizeof odd);
        odd[0].shape[2] = odd[3].shape[2] = HQ - 1;
        odd[4] = (ptxgen_tensor){"lse", lp, 3, {1, HQ - 1, SQ}, {(HQ - 1) * SQ, SQ, 1}};
        rc = ptxgen_launch(l, NULL, odd, 5, NULL, 0, (float)scale, err, sizeof err);
        check(rc == PTXGEN_EINVAL && strstr(err, "no multiple of h_kv"), "api: query heads no multiple of the kv heads are "
              "refused", err);
        rc = ptxgen_launch(l, NULL, t, 5, NULL, 0, NAN, err, sizeof err);
        check(rc == PTXGEN_EINVAL && strstr(err, "finite"), "api: a NaN softmax_scale is refused", err);
    }
    unsigned long long ptrs[] = {qp, kp, vp, op, lp};
    for (int i = 0; i < 5; i++) ptxgen_device_free(dev, ptrs[i], err, sizeof err);
    ptxgen_unload(l);
    ptxgen_free(s);
}

/* attn_fwd over variable lengths from the manifest alone: packed q/k/v/o, the offsets as int32 tensors of b + 1
 * entries (b from their extent), the longest lengths as sizes; every sequence against its own float64 reference,
 * a sequence with no queries and one with no keys among them; and the offsets check the API offers. */
static void attn_fwd_varlen(ptxgen_device *dev, const char *arch) {
    enum { B = 3, HQ = 2, HKV = 1, D = 64, TQ = 45, TK = 57 };
    static const int cq[B + 1] = {0, 5, 5, 45}, ck[B + 1] = {0, 30, 37, 57};   /* q 5/0/40, k 30/7/20 */
    char err[512] = "", msg[600];
    ptxgen_request rq = {.arch = arch, .kernel = "attn_fwd", .hdim = D, .causal = 1, .varlen = 1};
    ptxgen_set *s = NULL;
    ptxgen_loaded *l = NULL;
    int rc = ptxgen_build(&rq, &s, err, sizeof err) || ptxgen_load(dev, s, &l, err, sizeof err);
    check(!rc, "api: varlen attn_fwd builds and loads", err);
    if (rc) { ptxgen_free(s); return; }
    rc = ptxgen_varlen_check(cq, ck, B, TQ, TK, 40, 30, err, sizeof err);
    check(!rc, "api: ptxgen_varlen_check takes good offsets", err);
    static const int bad[B + 1] = {0, 5, 4, 45};
    rc = ptxgen_varlen_check(bad, ck, B, TQ, TK, 40, 30, err, sizeof err);
    check(rc == 2 && strstr(err, "decreases"), "api: ptxgen_varlen_check refuses decreasing offsets", err);
    rc = ptxgen_varlen_check(cq, ck, B, TQ, TK + 3, 40, 30, err, sizeof err);
    check(rc == 2 && strstr(err, "60 rows"), "api: ptxgen_varlen_check refuses offsets that end short of the tensor", err);
    static double q[TQ * HQ * D], k[TK * HKV * D], v[TK * HKV * D], ref[TQ * HQ * D];
    unsigned long long qp = upload_bf16(dev, q, TQ * HQ, D, D, err), kp = upload_bf16(dev, k, TK * HKV, D, D, err),
                       vp = upload_bf16(dev, v, TK * HKV, D, D, err), op = 0, lp = 0, cqp = 0, ckp = 0;
    ptxgen_device_alloc(dev, (size_t)TQ * HQ * D * 2, &op, err, sizeof err);
    ptxgen_device_alloc(dev, (size_t)HQ * TQ * 4, &lp, err, sizeof err);
    ptxgen_device_alloc(dev, sizeof cq, &cqp, err, sizeof err);
    ptxgen_device_alloc(dev, sizeof ck, &ckp, err, sizeof err);
    ptxgen_device_upload(dev, cqp, cq, sizeof cq, err, sizeof err);
    ptxgen_device_upload(dev, ckp, ck, sizeof ck, err, sizeof err);
    ptxgen_tensor t[] = {{"q", qp, 3, {TQ, HQ, D}, {HQ * D, D, 1}},     {"k", kp, 3, {TK, HKV, D}, {HKV * D, D, 1}},
                         {"v", vp, 3, {TK, HKV, D}, {HKV * D, D, 1}},   {"o", op, 3, {TQ, HQ, D}, {HQ * D, D, 1}},
                         {"lse", lp, 2, {HQ, TQ}, {TQ, 1}},            {"cu_seqlens_q", cqp, 1, {B + 1}, {1}},
                         {"cu_seqlens_k", ckp, 1, {B + 1}, {1}}};
    ptxgen_size sz[] = {{"s_q", 40}, {"s_k", 30}};
    double scale = 1 / sqrt((double)D);
    rc = ptxgen_launch(l, NULL, t, 7, sz, 2, (float)scale, err, sizeof err) || ptxgen_device_sync(dev, err, sizeof err);
    check(!rc, "api: varlen attn_fwd launches (b from the offsets' b + 1 entries, s_q and s_k given)", err);
    double *o = rc ? NULL : download_bf16(dev, op, TQ * HQ * D, err);
    if (o) {
        for (int b = 0; b < B; b++)   /* causal, bottom-right: query i of sequence b sees keys j <= i + lk - lq */
            for (int i = 0; i < cq[b + 1] - cq[b]; i++)
                for (int h = 0; h < HQ; h++) {
                    int lq = cq[b + 1] - cq[b], lk = ck[b + 1] - ck[b], n = i + lk - lq + 1;
                    n = n < 0 ? 0 : n > lk ? lk : n;
                    double sc[TK], m = -INFINITY, sum = 0;
                    const double *qi = q + ((cq[b] + i) * HQ + h) * D;
                    for (int j = 0; j < n; j++) {
                        sc[j] = 0;
                        for (int c = 0; c < D; c++) sc[j] += qi[c] * k[(ck[b] + j) * D + c];
                        sc[j] *= scale, m = fmax(m, sc[j]);
                    }
                    for (int j = 0; j < n; j++) sum += sc[j] = exp(sc[j] - m);
                    for (int c = 0; c < D; c++) {
                        double a = 0;
                        for (int j = 0; j < n; j++) a += sc[j] * v[(ck[b] + j) * D + c];
                        ref[((cq[b] + i) * HQ + h) * D + c] = n ? a / sum : 0;
                    }
                }
        double e = rel_l2(o, ref, TQ * HQ * D);
        snprintf(msg, sizeof msg, "rel L2 %.3e (tol 1e-2)", e);
        printf("  %s\n", msg);
        check(e < 1e-2, "api: varlen attn_fwd o matches float64 sequence by sequence (causal, GQA 2/1)", msg);
    }
    free(o);
    rc = ptxgen_launch(l, NULL, t, 7, NULL, 0, (float)scale, err, sizeof err);
    check(rc == PTXGEN_EINVAL && strstr(err, "s_q"), "api: varlen without the longest lengths is refused naming them", err);
    ptxgen_size past[] = {{"s_q", 1LL << 31}, {"s_k", 30}};   /* once accepted: 16 M CTAs over nothing */
    rc = ptxgen_launch(l, NULL, t, 7, past, 2, (float)scale, err, sizeof err);
    check(rc == PTXGEN_EINVAL && strstr(err, "past total_q"), "api: varlen s_q past the packed rows is refused", err);
    unsigned long long ptrs[] = {qp, kp, vp, op, lp, cqp, ckp};
    for (int i = 0; i < 7; i++) ptxgen_device_free(dev, ptrs[i], err, sizeof err);
    ptxgen_unload(l);
    ptxgen_free(s);
}

/* Sparse MLA: the forward gives o and lse, the default sm_100a backward (the CTA pair) dq and dkv. */
enum { MSQ = 3, MSKV = 150, MHQ = 72, MTOPK = 140, DQK = 576, DV = 512 };
static double mq[MSQ * MHQ * DQK], mkv[MSKV * DQK], mdo[MSQ * MHQ * DV];
static int midx[MSQ * MTOPK], mlen[MSQ];

static int valid_slot(int t, int j) { return j < mlen[t] && midx[t * MTOPK + j] >= 0 && midx[t * MTOPK + j] < MSKV; }

static void mla(ptxgen_device *dev, const char *arch) {
    char err[512] = "", msg[600];
    ptxgen_request fq = {.arch = arch, .kernel = "mla_fwd"}, bq = {.arch = arch, .kernel = "mla_bwd"};
    ptxgen_set *fs = NULL, *bs = NULL;
    ptxgen_loaded *fl = NULL, *bl = NULL;
    int rc = ptxgen_build(&fq, &fs, err, sizeof err) || ptxgen_build(&bq, &bs, err, sizeof err) ||
             ptxgen_load(dev, fs, &fl, err, sizeof err) || ptxgen_load(dev, bs, &bl, err, sizeof err);
    check(!rc, "api: sparse MLA forward and backward build and load (sm_100a: the tcgen05 pair)", err);
    if (rc) goto out;
    for (int t = 0; t < MSQ; t++) {
        mlen[t] = t == 1 ? 0 : MTOPK - 17 * t;   /* token 1 has no slot: dq 0, lse +inf */
        for (int j = 0; j < MTOPK; j++) {
            int r = (int)((uniform() + 1) * 0.55 * MSKV);   /* some past s_kv: invalid */
            midx[t * MTOPK + j] = j % 13 == 5 ? -1 : j % 17 == 3 ? midx[t * MTOPK] : r;   /* invalid, duplicate */
        }
    }
    unsigned long long qp = upload_bf16(dev, mq, MSQ * MHQ, DQK, DQK, err), kvp = upload_bf16(dev, mkv, MSKV, DQK, DQK, err),
                       dop = upload_bf16(dev, mdo, MSQ * MHQ, DV, DV, err), ip = 0, lenp = 0, op = 0, lp = 0, dqp = 0, dkvp = 0;
    ptxgen_device_alloc(dev, sizeof midx, &ip, err, sizeof err);
    ptxgen_device_upload(dev, ip, midx, sizeof midx, err, sizeof err);
    ptxgen_device_alloc(dev, sizeof mlen, &lenp, err, sizeof err);
    ptxgen_device_upload(dev, lenp, mlen, sizeof mlen, err, sizeof err);
    ptxgen_device_alloc(dev, (size_t)MSQ * MHQ * DV * 2, &op, err, sizeof err);
    ptxgen_device_alloc(dev, (size_t)MSQ * MHQ * 4, &lp, err, sizeof err);
    ptxgen_device_alloc(dev, (size_t)MSQ * MHQ * DQK * 2, &dqp, err, sizeof err);
    ptxgen_device_alloc(dev, (size_t)MSKV * DQK * 2, &dkvp, err, sizeof err);
    ptxgen_tensor t[] = {
        {"q", qp, 3, {MSQ, MHQ, DQK}, {MHQ * DQK, DQK, 1}},   {"kv", kvp, 2, {MSKV, DQK}, {DQK, 1}},
        {"indices", ip, 2, {MSQ, MTOPK}, {MTOPK, 1}},         {"topk_length", lenp, 1, {MSQ}, {1}},
        {"o", op, 3, {MSQ, MHQ, DV}, {MHQ * DV, DV, 1}},      {"lse", lp, 2, {MSQ, MHQ}, {MHQ, 1}},
        {"do", dop, 3, {MSQ, MHQ, DV}, {MHQ * DV, DV, 1}},    {"dq", dqp, 3, {MSQ, MHQ, DQK}, {MHQ * DQK, DQK, 1}},
        {"dkv", dkvp, 2, {MSKV, DQK}, {DQK, 1}}};
    double scale = 1 / sqrt((double)DQK);
    ptxgen_tensor ft[6] = {t[0], t[1], t[2], t[3], t[4], t[5]}, bt[9];
    memcpy(bt, t, sizeof bt);
    rc = ptxgen_launch(fl, NULL, ft, 6, NULL, 0, (float)scale, err, sizeof err) ||
         ptxgen_launch(bl, NULL, bt, 9, NULL, 0, (float)scale, err, sizeof err) || ptxgen_device_sync(dev, err, sizeof err);
    check(!rc, "api: mla_fwd then mla_bwd launch (sm_100a: cluster, tensor map, workspaces from the set)", err);
    if (rc) goto out;
    /* float64: P over the valid slots, O from P, then the gradients with the kernels' own O and lse */
    double *o = download_bf16(dev, op, MSQ * MHQ * DV, err), *dq = download_bf16(dev, dqp, MSQ * MHQ * DQK, err),
           *dkv = download_bf16(dev, dkvp, MSKV * DQK, err);
    static double rdq[MSQ * MHQ * DQK], rdkv[MSKV * DQK], ro[MSQ * MHQ * DV];
    memset(rdkv, 0, sizeof rdkv);
    for (int tk = 0; tk < MSQ; tk++)
        for (int h = 0; h < MHQ; h++) {
            const double *qh = mq + (tk * MHQ + h) * DQK, *doh = mdo + (tk * MHQ + h) * DV;
            double s[MTOPK], m = -INFINITY, sum = 0, delta = 0;
            for (int j = 0; j < MTOPK; j++) {
                s[j] = -INFINITY;
                if (!valid_slot(tk, j)) continue;
                const double *kr = mkv + midx[tk * MTOPK + j] * DQK;
                double a = 0;
                for (int c = 0; c < DQK; c++) a += qh[c] * kr[c];
                s[j] = a * scale, m = fmax(m, s[j]);
            }
            for (int j = 0; j < MTOPK; j++) sum += s[j] = valid_slot(tk, j) ? exp(s[j] - m) : 0;
            for (int c = 0; c < DV; c++) {
                double a = 0;
                for (int j = 0; j < MTOPK; j++)
                    if (s[j] != 0) a += s[j] * mkv[midx[tk * MTOPK + j] * DQK + c];
                ro[(tk * MHQ + h) * DV + c] = sum > 0 ? a / sum : 0;
            }
            for (int c = 0; c < DV; c++) delta += doh[c] * o[(tk * MHQ + h) * DV + c];
            for (int c = 0; c < DQK; c++) rdq[(tk * MHQ + h) * DQK + c] = 0;
            for (int j = 0; j < MTOPK; j++) {
                if (s[j] == 0) continue;
                const double *kr = mkv + midx[tk * MTOPK + j] * DQK;
                double p = s[j] / sum, dp = 0;
                for (int c = 0; c < DV; c++) dp += doh[c] * kr[c];
                double ds = p * (dp - delta) * scale;
                for (int c = 0; c < DQK; c++) {
                    rdq[(tk * MHQ + h) * DQK + c] += ds * kr[c];
                    rdkv[midx[tk * MTOPK + j] * DQK + c] += ds * qh[c] + (c < DV ? p * doh[c] : 0);
                }
            }
        }
    double eo = rel_l2(o, ro, MSQ * MHQ * DV), eq = rel_l2(dq, rdq, MSQ * MHQ * DQK), ek = rel_l2(dkv, rdkv, MSKV * DQK);
    snprintf(msg, sizeof msg, "rel L2 o %.3e, dq %.3e, dkv %.3e (tol 1e-2)", eo, eq, ek);
    printf("  %s\n", msg);
    check(eo < 1e-2 && eq < 1e-2 && ek < 1e-2, "api: sparse MLA o, dq and dkv match float64 (h_q 72, ragged, topk_length)", msg);
    free(o), free(dq), free(dkv);
    /* topk_length is optional: leaving it out is allowed and means every slot */
    ptxgen_tensor nolen[5] = {t[0], t[1], t[2], t[4], t[5]};
    rc = ptxgen_launch(fl, NULL, nolen, 5, NULL, 0, (float)scale, err, sizeof err);
    check(!rc, "api: an optional tensor (topk_length) may be left out", err);
out:
    ptxgen_unload(fl), ptxgen_unload(bl);
    ptxgen_free(fs), ptxgen_free(bs);
}

/* ptxgen_num_splits: 4 CTAs per SM of the split forward, at most a split per key block, 0 where there is no split-KV */
static void num_splits(void) {
    char err[512] = "", cls[64];
    ptxgen_size sz[] = {{"b", 1}, {"s_q", 1}, {"s_k", 131072}, {"h_q", 64}, {"h_kv", 8}, {"max_pages", 2048}};
    ptxgen_shape_class("attn_fwd", sz, 6, cls, sizeof cls);   /* a decode shape: 8 heads a CTA, 8 CTAs */
    ptxgen_request rq = {.arch = "sm_90", .kernel = "attn_fwd", .page_size = 64, .splitkv = 1, .shape_class = cls};
    ptxgen_set *s = NULL;
    int rc = ptxgen_build(&rq, &s, err, sizeof err);
    check(!rc, "api num_splits: the paged split-KV decode set builds", err);
    if (rc) return;
    int n = ptxgen_num_splits(s, sz, 6, 132);
    char got[96];
    snprintf(got, sizeof got, "%d (class %.63s)", n, cls);
    check(n == 66, "api num_splits: 8 CTAs on 132 SMs -> 66 splits", got);
    sz[2].value = 300;   /* 5 key blocks of 64 */
    n = ptxgen_num_splits(s, sz, 6, 132);
    snprintf(got, sizeof got, "%d", n);
    check(n == 5, "api num_splits: at most one split per key block", got);
    check(ptxgen_num_splits(s, sz, 6, 0) == 0, "api num_splits: no SMs, no answer", NULL);
    ptxgen_free(s);
    rq.splitkv = 0;
    rc = ptxgen_build(&rq, &s, err, sizeof err);
    check(!rc && ptxgen_num_splits(s, sz, 6, 132) == 0, "api num_splits: 0 for a set without split-KV", err);
    if (!rc) ptxgen_free(s);
}

/* NULL where the generation API takes a pointer: a clear refusal or an empty answer, never a dereference (each once
 * crashed: the getters of a NULL set, NULL out-pointers, a NULL request, NULL sizes or names, a NULL err) */
static void null_arguments(void) {
    char err[256] = "";
    ptxgen_request rq = {.arch = "sm_80", .kernel = "attn_fwd", .hdim = 64};
    ptxgen_set *s = NULL;
    int fits = 1, rc = ptxgen_build(NULL, &s, err, sizeof err);
    check(rc == 2 && !s && strstr(err, "NULL"), "api: ptxgen_build of a NULL request is refused", err);
    check(ptxgen_build(&rq, NULL, NULL, 64) == 2, "api: ptxgen_build with no place for the set (and a NULL err) is refused", "");
    check(!ptxgen_plan_request(&rq, NULL, err, sizeof err) && !ptxgen_plan_request(NULL, &fits, NULL, 99) && !fits,
          "api: ptxgen_plan_request without fits or request is refused", err);
    const char *fam = NULL;
    check(ptxgen_pick_family(&rq, &fam, NULL, 0, err, sizeof err) == 2 && !fam, "api: ptxgen_pick_family without a note "
          "buffer is refused", err);
    check(!ptxgen_ptx(NULL) && !ptxgen_plan_text(NULL) && !ptxgen_manifest_json(NULL) && !ptxgen_family(NULL) &&
          !ptxgen_num_kernels(NULL) && !ptxgen_entry(NULL, 0) && !ptxgen_num_params(NULL, 0) && !ptxgen_page_size(NULL) &&
          !ptxgen_num_problem_sizes(NULL) && !ptxgen_num_workspaces(NULL) && !ptxgen_deterministic(NULL),
          "api: the getters of a NULL set answer empty", "");
    if (ptxgen_build(&rq, &s, err, sizeof err)) { check(0, "api: the set for the NULL checks builds", err); return; }
    unsigned grid[3], block[3], smem;
    ptxgen_size unnamed[1] = {{NULL, 5}};
    int d = 0;
    ptxgen_head_dims(s, &d, NULL);
    check(d == 64 && !ptxgen_block_sparse(s, NULL, NULL) && ptxgen_param_info(s, 0, 0, NULL) == 2 &&
          ptxgen_workspace_info(s, 0, NULL) == 2 && ptxgen_tensor_map_info(s, 0, 0, NULL) == 2,
          "api: NULL out-pointers are refused or left alone", "");
    check(ptxgen_launch_dims(s, 0, NULL, 5, grid, block, &smem, err, sizeof err) == 2 &&
          ptxgen_launch_dims(s, 0, unnamed, 1, grid, block, &smem, NULL, 512) == 2 &&
          ptxgen_launch_dims(s, 0, NULL, 0, NULL, block, &smem, err, sizeof err) == 2 &&
          ptxgen_cluster_dims(s, 0, NULL, 0, NULL, err, sizeof err) == 2,
          "api: launch_dims and cluster_dims refuse NULL sizes, unnamed sizes and NULL outputs", err);
    check(ptxgen_varlen_check(NULL, NULL, 0, 0, 0, 0, 0, NULL, 512) == 2 && ptxgen_head_mask_check(NULL, 0, 0, NULL, 512) == 2 &&
          ptxgen_paged_check(NULL, NULL, 0, 0, 0, 0, NULL, 512) == 2, "api: the check functions take a NULL err", "");
    ptxgen_free(s);
}

int main(int argc, char **argv) {
    unsigned long long seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 20);   /* fresh each run */
    const char *device = "sim";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
        else { fprintf(stderr, "usage: test_api [--seed N] [--device sim|cuda|cuda:N]\n"); return 2; }
    }
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
    printf("test_api: public API on %s, seed %llu\n", device, seed);
    char err[512] = "";
    ptxgen_device *dev = NULL;
    int rc = ptxgen_device_open("gpu7", &dev, err, sizeof err);
    check(rc == PTXGEN_EINVAL && strstr(err, "gpu7"), "api: an unknown device name is refused naming it", err);
    rc = ptxgen_device_open("cuda:x", &dev, err, sizeof err);
    check(rc == PTXGEN_EINVAL, "api: cuda:x is refused", err);
    check(ptxgen_launch(NULL, NULL, NULL, 0, NULL, 0, 1, err, sizeof err) == PTXGEN_EINVAL, "api: a NULL set is refused", err);
    rc = ptxgen_device_open(device, &dev, err, sizeof err);
    check(!rc, "api: the device opens", err);
    if (rc) return 1;
    char arch[16];
    rc = ptxgen_device_arch(dev, arch, sizeof arch, err, sizeof err);
    check(!rc && (strcmp(device, "sim") || !strcmp(arch, "sm_100a")), "api: the device names its arch (the sim: sm_100a)", arch);
    attn_fwd(dev, arch, strcmp(device, "sim") != 0, NULL);
    /* the wgmma kernel through the library with 2 persistent CTAs walking its 4 tiles (on a GPU: its default) */
    if (!strcmp(device, "sim")) attn_fwd(dev, "sm_90a", 0, "persist=2");
    attn_fwd_varlen(dev, arch);
    mla(dev, arch);
    num_splits();
    null_arguments();
    ptxgen_device_close(dev);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
