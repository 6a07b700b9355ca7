/* The public API: request -> description -> plan -> kernel set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ptxgen.h"
#include "kinds.h"
#include "attn_sched.h"
#include "attn_splitkv.h"
#include "tuned.h"
#include "mla.h"
#include "expr.h"
#include "manifest.h"
#include "kctx.h"
#include "target.h"

struct ptxgen_set {
    KernelSet ks;
    AttnDesc desc;
    char constants[320];
    unsigned asked;        /* the family the request named (FAM_AUTO: none) */
    char note[200];        /* why auto fell back from the arch's newest family ("": it did not) */
    char tuned[400];       /* where a tuned tile came from, or why it was not used ("": no tuned tile) */
    SizeList sizes;        /* the problem sizes its expressions use */
};

/* Block-sparse: the lists the kind's kernels walk (none when dense) */
static SparseLists kind_lists(const KernelKind *kind, const AttnDesc *d) {
    SparseLists l = {{0, 0}, {0, 0}, 0, 0};
    if (d->block_m && kind->sparse) kind->sparse(d, &l);
    return l;
}

/* The list kernels first (block-sparse), then the kind's own. */
static int kind_plan(const KernelKind *kind, const AttnDesc *d, Plan *plans) {
    SparseLists l = kind_lists(kind, d);
    int n = sparse_plan(d, &l, plans);
    if (kind->plan) n += kind->plan(d, plans + n);
    else kind->plan1(d, &plans[n++]);
    if (d->splitkv) splitkv_plan(d, &plans[n++]);
    return n;
}

/* A single kernel is deterministic: no kind has float atomics outside a set (a persistent attn_fwd's counter only
 * hands out tiles, each computed the same wherever it runs). The kind's kernels are built as a set of their own and
 * follow the list kernels. */
static void kind_build(const KernelKind *kind, const AttnDesc *d, KernelSet *ks, Buf *m) {
    SparseLists l = kind_lists(kind, d);
    int n0 = sparse_plan(d, &l, (Plan[MAX_KERNELS]){0});
    KernelSet own = {0};
    memcpy(own.plan, ks->plan + n0, sizeof own.plan - n0 * sizeof own.plan[0]);
    ks->nws = 0;
    sparse_build(d, &l, ks, m);
    if (kind->build) kind->build(d, &own, m);
    else {
        own.nk = 1;
        own.deterministic = 1;
        kind->spec1(d, &own.plan[0], &own.k[0]);
        kind->emit1(d, &own.k[0], &own.plan[0], m);
        if (d->tile.persist) own.ws[own.nws++] = sched_workspace();
    }
    for (int i = 0; i < own.nk; i++) ks->k[n0 + i] = own.k[i];
    for (int i = 0; i < own.nws; i++) ks->ws[ks->nws++] = own.ws[i];
    ks->nk = n0 + own.nk;
    ks->deterministic = own.deterministic;
    if (d->splitkv) splitkv_build(d, ks, m);
}

/* Block-sparse: mask blocks of both sides, on a kind that walks lists (whole tiles of them: sparse_tiles). */
static int parse_sparse(const ptxgen_request *rq, const KernelKind *kind, AttnDesc *d, char *err, size_t errlen) {
    if (!rq->block_m && !rq->block_n) return 0;
    if (rq->block_m <= 0 || rq->block_n <= 0) {
        snprintf(err, errlen, "block-sparse needs both mask block sizes > 0 (got block_m %d, block_n %d)", rq->block_m,
                 rq->block_n);
        return 2;
    }
    if (!kind->sparse) {
        if (!strncmp(kind->name, "mla_", 4))
            snprintf(err, errlen, "%s takes no block mask: its indices already choose the rows each token sees",
                     kind->name);
        else
            snprintf(err, errlen, "block-sparse attention is not in the %s %s yet; the mma.sync one takes it (--mma sync)",
                     family_name(kind->family), kind->name);
        return 2;
    }
    d->block_m = rq->block_m, d->block_n = rq->block_n;
    return 0;
}

/* Paged KV: a kind that reads a paged cache, one power-of-two page size, not with varlen or a mask (the sequence
 * lengths come from seqlens_k). Whole key tiles in a page, or whole pages in a key tile: paged_tiles. */
static int parse_paged(const ptxgen_request *rq, const KernelKind *kind, AttnDesc *d, char *err, size_t errlen) {
    if (rq->splitkv && !(kind->paged & PAGED_SPLIT)) {
        snprintf(err, errlen, "split-KV is not in the %s %s yet; attn_fwd takes it in every family",
                 family_name(kind->family), kind->name);
        return 2;
    }
    if (rq->splitkv && (d->varlen || rq->block_m)) {
        snprintf(err, errlen, "split-KV splits a sequence's keys evenly: not with --varlen or a block mask");
        return 2;
    }
    d->splitkv = rq->splitkv != 0;
    if (!rq->page_size) return 0;
    if (!(kind->paged & PAGED_KV)) {
        snprintf(err, errlen, "a paged KV cache is not in the %s %s yet; attn_fwd takes it in every family",
                 family_name(kind->family), kind->name);
        return 2;
    }
    int ps = rq->page_size;
    if (ps < 16 || ps > 256 || (ps & (ps - 1))) {
        snprintf(err, errlen, "page size %d: a power of two from 16 to 256", ps);
        return 2;
    }
    if (d->varlen || rq->block_m) {
        snprintf(err, errlen, "a paged KV cache takes its lengths from seqlens_k: not with --varlen or a block mask");
        return 2;
    }
    d->page_size = ps;
    return 0;
}

/* A tile whose key steps (bn not requested) neither divide the page nor are whole pages takes the largest bn that
 * divides it, else the largest that is whole pages, no longer than the default's (a longer step may not fit where the
 * default does: d 256's 80 keys take 64 in pages of 128), and the tile note says so. */
static void page_bn(const KernelKind *kind, ptxgen_set *s, int other_keys) {
    AttnDesc *d = &s->desc;
    const TileKey *key = kind_key(kind, "bn");
    if (!d->page_size || d->page_size % d->tile.bn == 0 || !key) return;
    /* a default step of whole pages stays: on the H200 the wgmma prefill over pages of 64 ran 614-616 TFLOP/s at 128
     * keys a step (two pages) against 514-520 at 64, and the mma.sync decode over pages of 16 at 64 keys (four pages)
     * read KV at the copy's bandwidth (BENCHMARKS.md); where the request set other tile keys, a step within a page
     * first, as before (a longer step may not fit beside them: stages=3 at 128 keys spills the registers) */
    if (d->page_size < d->tile.bn && d->tile.bn % d->page_size == 0 && !other_keys) return;
    int best = 0, pages = 0;   /* a step within a page, else one of whole pages */
    for (int j = 0; j < key->nallowed; j++) {
        int bn = key->allowed[j];
        if (bn > d->tile.bn) continue;   /* the default's step or less: a longer one may not fit where it does */
        if (d->page_size % bn == 0 && bn > best) best = bn;
        if (bn % d->page_size == 0 && bn > pages) pages = bn;
    }
    best = best ? best : pages;
    if (!best) return;   /* none fits: paged_tiles refuses, naming bn */
    size_t n = strlen(s->tuned);
    snprintf(s->tuned + n, sizeof s->tuned - n, "%sbn=%d for pages of %d keys (the default %d %s)", n ? "; " : "", best,
             d->page_size, d->tile.bn, d->page_size % best ? "is no whole number of pages" : "spans pages");
    d->tile.bn = best;
}

static int paged_tiles(const KernelKind *kind, const AttnDesc *d, char *err, size_t errlen) {
    if (!d->page_size || d->page_size % d->tile.bn == 0) return 0;
    if (d->page_size < d->tile.bn && d->tile.bn % d->page_size == 0) {   /* a key block of whole pages, a load each */
        /* mma.sync's cp.async loader copies a page in passes of threads / (d / 8) rows, which must divide it */
        int pass = kind->family == FAM_MMA_SYNC ? 32 * d->tile.warps * 8 / d->d : 0;
        if (!pass || d->page_size % pass == 0) return 0;
        snprintf(err, errlen, "page size %d: the mma.sync attn_fwd's %d threads copy %d rows of d=%d a pass, which a page "
                 "must hold whole: use pages of %d keys or more, or fewer warps", d->page_size, 32 * d->tile.warps, pass,
                 d->d, pass);
        return 2;
    }
    const TileKey *key = kind_key(kind, "bn");
    int least = d->tile.bn;
    for (int j = 0; key && j < key->nallowed; j++)
        if (key->allowed[j] < least) least = key->allowed[j];
    snprintf(err, errlen, "page size %d is not a whole number of the %s %s's key tiles (bn=%d), nor are its key tiles "
             "whole pages: use a page of at least %d keys (its smallest bn), or a tile with bn dividing the page or a "
             "multiple of it", d->page_size, family_name(kind->family), kind->name, d->tile.bn, least);
    return 2;
}

static int sparse_tiles(const KernelKind *kind, const AttnDesc *d, char *err, size_t errlen) {
    if (!d->block_m) return 0;
    SparseLists l = kind_lists(kind, d);
    char who[64];
    snprintf(who, sizeof who, "%s %s", family_name(kind->family), kind->name);
    return sparse_check(d, &l, who, err, errlen) ? 2 : 0;
}

/* d_v: the kind's own (MLA's 512, else d), or the request's where the kind takes d_v != d (one of its head dims) */
static int parse_hdim_v(const KernelKind *kind, const ptxgen_request *rq, AttnDesc *d, char *err, size_t errlen) {
    if (!rq->hdim_v || rq->hdim_v == d->dv) return 0;
    if (kind->dv_free && kind_has_hdim(kind, rq->hdim_v)) {
        d->dv = rq->hdim_v;
        return 0;
    }
    if (kind->dv_free) {
        Buf dims = {0};
        for (int i = 0; i < kind->nhdims; i++) buf_printf(&dims, "%s%d", i ? ", " : "", kind->hdims[i]);
        snprintf(err, errlen, "d_v %d is not supported by the %s %s: d_v takes the head dims d does (%s)", rq->hdim_v,
                 family_name(kind->family), kind->name, dims.s);
        buf_free(&dims);
    }
    else if (kind->dv)
        snprintf(err, errlen, "d_v %d is not supported by %s: its d_v is %d", rq->hdim_v, kind->name, kind->dv);
    else
        snprintf(err, errlen, "d_v %d != d %d is not supported by the %s %s, which takes d_v = d; the tcgen05 attn_fwd "
                 "(sm_100a, sm_103a) takes d_v != d", rq->hdim_v, d->d, family_name(kind->family), kind->name);
    return 2;
}

static int parse_hdim(const KernelKind *kind, const ptxgen_request *rq, AttnDesc *d, char *err, size_t errlen) {
    d->d = d->dv = rq->hdim ? rq->hdim : kind->default_hdim;
    if (kind->dv) d->dv = kind->dv;
    if (kind_has_hdim(kind, d->d)) return parse_hdim_v(kind, rq, d, err, errlen);
    if (kind->dv)
        snprintf(err, errlen, "head dim %d is not supported by %s: d_qk is %d (512 latent + 64 rope) and d_v %d",
                 d->d, kind->name, kind->default_hdim, kind->dv);
    else if (!strcmp(kind->name, "attn_fwd"))
        snprintf(err, errlen, "head dim %d is not supported by the %s attn_fwd (%s)", d->d, family_name(kind->family),
                 kind->family == FAM_WGMMA ? "64, 128 or 256: its TMA tiles are slabs of 64 columns, and past 256 the "
                 "output accumulator alone would take more than a consumer thread's 240 registers" :
                 kind->family == FAM_TCGEN05 ? "64, 128, 192 or 256: its TMA tiles are slabs of 64 columns, and an MMA's "
                 "N (O's d_v columns) is at most 256" : "64, 128 or 256: its swizzled shared tiles need d to be a multiple "
                 "of 64 and whole 16-byte rows per thread group");
    else if (kind->family == FAM_TCGEN05)
        snprintf(err, errlen, "head dim %d is not supported by the tcgen05 attn_bwd (64, 128, 192 or 256: its TMA tiles "
                 "and the MN-major operands of dK, dV and dQ are slabs of 64 columns)", d->d);
    else if (kind->family == FAM_WGMMA)
        snprintf(err, errlen, "head dim %d is not supported by the wgmma attn_bwd (64, 128 or 256: its TMA tiles and the "
                 "MN-major operands of dK, dV and dQ are slabs of 64 columns, and a CTA's 64 or 128 of them, d 256 split "
                 "over two CTAs, keep dK and dV in a consumer thread's registers)", d->d);
    else   /* attn_bwd: where each warp keeps dK and dV for the whole kernel */
        snprintf(err, errlen, "head dim %d is not supported by the mma.sync attn_bwd (64 or 128: each warp keeps dK and dV "
                 "rows of d fp32 values in registers, 256 registers per thread at d=256)", d->d);
    return 2;
}

static int parse_arch(const ptxgen_request *rq, AttnDesc *d, char *err, size_t errlen) {
    if (rq->arch && (d->arch = arch_find(rq->arch))) return 0;
    Buf names = {0};
    for (int i = 0; i < arch_count(); i++) buf_printf(&names, "%s%s", i ? ", " : "", arch_at(i)->name);
    snprintf(err, errlen, "unknown arch '%s' (known: %s)", rq->arch ? rq->arch : "(none)", names.s);
    buf_free(&names);
    return 2;
}

/* The arch, then the kind table's row for (kernel, family). */
static int parse_kind(const ptxgen_request *rq, AttnDesc *d, unsigned *asked, const KernelKind **kind, char *note,
                      size_t notelen, char *err, size_t errlen) {
    if (parse_arch(rq, d, err, errlen) || family_parse(rq->family, asked, err, errlen)) return 2;
    return kind_pick(rq->kernel, d->arch, *asked, kind, note, notelen, err, errlen);
}

int ptxgen_pick_family(const ptxgen_request *rq, const char **family, char *note, size_t notelen, char *err,
                       size_t errlen) {
    errlen = err ? errlen : 0;   /* a NULL err takes no message (snprintf with 0 writes nothing) */
    if (!rq || !family || !note || !notelen) return snprintf(err, errlen, "ptxgen_pick_family: a NULL argument"), 2;
    AttnDesc d = {0};
    unsigned asked;
    const KernelKind *kind;
    if (parse_kind(rq, &d, &asked, &kind, note, notelen, err, errlen)) return 2;
    *family = family_name(kind->family);
    return 0;
}

static int parse_dtype(const ptxgen_request *rq, AttnDesc *d, char *err, size_t errlen) {
    if (!rq->dtype || !strcmp(rq->dtype, "bf16")) d->dtype = DT_BF16;
    else if (!strcmp(rq->dtype, "fp16")) d->dtype = DT_FP16;
    else {
        snprintf(err, errlen, "unknown dtype '%s' (bf16 or fp16)", rq->dtype);
        return 2;
    }
    return 0;
}

static void tuned_tile(const ptxgen_request *rq, const KernelKind *kind, ptxgen_set *s);
static void decode_pack(const KernelKind *kind, ptxgen_set *s);
static int plan_all(const KernelKind *kind, const AttnDesc *d, Plan *plans, int *n, char *err, size_t errlen);

static int parse_desc(const ptxgen_request *rq, ptxgen_set *s, const KernelKind **kind, char *err, size_t errlen) {
    AttnDesc *d = &s->desc;
    if (parse_kind(rq, d, &s->asked, kind, s->note, sizeof s->note, err, errlen) || parse_dtype(rq, d, err, errlen))
        return 2;
    if (s->asked == FAM_AUTO && rq->hdim && !kind_has_hdim(*kind, rq->hdim)) {
        const KernelKind *alt = kind_for_hdim(rq->kernel, d->arch, rq->hdim, rq->varlen, rq->block_m > 0, *kind);
        if (alt) {
            snprintf(s->note, sizeof s->note, "--mma auto: the %s %s takes no d=%d, so %s gets %s",
                     family_name((*kind)->family), (*kind)->name, rq->hdim, d->arch->name, family_name(alt->family));
            *kind = alt;
        }
    }
    if (s->asked == FAM_AUTO && rq->varlen && !(*kind)->varlen_ok) {
        int hd = rq->hdim ? rq->hdim : (*kind)->default_hdim;
        const KernelKind *alt = kind_for_hdim(rq->kernel, d->arch, hd, 1, rq->block_m > 0, *kind);
        if (alt) {
            snprintf(s->note, sizeof s->note, "--mma auto: the %s %s takes no variable lengths yet, so %s gets %s",
                     family_name((*kind)->family), (*kind)->name, d->arch->name, family_name(alt->family));
            *kind = alt;
        }
    }
    unsigned need = (rq->page_size > 0 ? PAGED_KV : 0) | (rq->splitkv ? PAGED_SPLIT : 0);
    int dsq = 0, dg = 0;   /* a GQA decode shape: the family that packs the group's heads into one CTA's rows */
    if (s->asked == FAM_AUTO && !rq->varlen && !rq->block_m && rq->shape_class &&
        sscanf(rq->shape_class, "decode sq=%d g=%d", &dsq, &dg) == 2 && dg > 1 && !kind_key(*kind, "pack")) {
        for (int i = 0; i < kind_count(); i++) {
            const KernelKind *alt = kind_at(i);
            if (kind_key(alt, "pack") && (alt->paged & need) == need && !strcmp(alt->name, rq->kernel) &&
                (d->arch->families & alt->family) && kind_has_hdim(alt, rq->hdim ? rq->hdim : alt->default_hdim)) {
                snprintf(s->note, sizeof s->note, "--mma auto: the %s %s packs no query heads, so this decode shape (s_q "
                         "%d, %d query heads per kv head) on %s gets %s, which reads each K/V tile once for the group",
                         family_name((*kind)->family), (*kind)->name, dsq, dg, d->arch->name, family_name(alt->family));
                *kind = alt;
                break;
            }
        }
    }
    if (s->asked == FAM_AUTO && rq->block_m > 0 && !(*kind)->sparse) {
        int hd = rq->hdim ? rq->hdim : (*kind)->default_hdim;
        const KernelKind *alt = kind_for_hdim(rq->kernel, d->arch, hd, rq->varlen, 1, *kind);
        if (alt) {
            snprintf(s->note, sizeof s->note, "--mma auto: the %s %s takes no block mask yet, so %s gets %s",
                     family_name((*kind)->family), (*kind)->name, d->arch->name, family_name(alt->family));
            *kind = alt;
        }
    }
    if (parse_hdim(*kind, rq, d, err, errlen)) return 2;
    d->varlen = rq->varlen != 0;
    if (d->varlen && !(*kind)->varlen_ok) {   /* every attention kind takes them; sparse MLA has no batch */
        snprintf(err, errlen, "%s takes no variable lengths (cu_seqlens): sparse MLA has no batch, its s_q tokens are "
                 "already packed, each with its own top-k rows; attn_fwd and attn_bwd take them", (*kind)->name);
        return 2;
    }
    d->causal = rq->causal != 0;
    if (d->causal && !(*kind)->causal_ok) {
        snprintf(err, errlen, "%s has no causal mode: the indices choose which rows each token sees", (*kind)->name);
        return 2;
    }
    if (parse_sparse(rq, *kind, d, err, errlen) || parse_paged(rq, *kind, d, err, errlen)) return 2;
    d->tile = (*kind)->default_tile(d->arch, d->d, d->dv);
    if (tile_parse((*kind)->keys, *(*kind)->nkeys, rq->tile, &d->tile, err, errlen)) return 2;
    if ((*kind)->warps_of) d->tile.warps = (*kind)->warps_of(&d->tile);
    if (rq->shape_class && sscanf(rq->shape_class, "decode sq=%d g=%d", &d->decode_sq, &d->decode_group) != 2)
        d->decode_sq = d->decode_group = 0;
    if (!rq->tile || !rq->tile[0]) decode_pack(*kind, s);
    if (!rq->tile || !strstr(rq->tile, "bn=")) page_bn(*kind, s, rq->tile && rq->tile[0]);   /* bn not chosen by it */
    if ((*kind)->refine_tile) (*kind)->refine_tile(d, rq->tile);
    if ((*kind)->check_tile(d, err, errlen)) return 2;
    if ((!rq->tile || !rq->tile[0]) && !rq->block_m && !rq->page_size) tuned_tile(rq, *kind, s);   /* a tune knows no
                                                                                                      mask or pages */
    return sparse_tiles(*kind, d, err, errlen) || paged_tiles(*kind, d, err, errlen) ? 2 : 0;
}

/* A decode shape on a kind that packs query heads into a CTA's bm rows (tile key pack): the pack that
 * needs the fewest CTAs per kv head, cdiv(g, pack) x cdiv(s_q, bm / pack), since each of them reads the
 * whole of K and V (the smaller pack on a tie), then the kind's decode tile (KernelKind.decode_tile); the tile note
 * says so. */
static void decode_pack(const KernelKind *kind, ptxgen_set *s) {
    AttnDesc *d = &s->desc;
    if (d->varlen || d->block_m) return;   /* packed heads would span sequences, or key lists of several heads */
    const TileKey *key = kind_key(kind, "pack");
    if (!key || !d->decode_group) return;
    int best = 1, fewest = 0;
    for (int i = 0; i < key->nallowed; i++) {
        int p = key->allowed[i], tokens = d->tile.bm / p;
        int ctas = (d->decode_group + p - 1) / p * ((d->decode_sq + tokens - 1) / tokens);
        if (!fewest || ctas < fewest || (ctas == fewest && p < best)) best = p, fewest = ctas;
    }
    *(int *)((char *)&d->tile + key->offset) = best;
    snprintf(s->tuned, sizeof s->tuned, "pack=%d for the decode shape (s_q %d, %d query heads per kv head): %d CTA%s "
             "per kv head, each reading K and V once for %d heads", best, d->decode_sq, d->decode_group, fewest,
             fewest > 1 ? "s" : "", best < d->decode_group ? best : d->decode_group);
    if (!kind->decode_tile) return;
    int bm = d->tile.bm;
    kind->decode_tile(d);
    size_t n = strlen(s->tuned);
    if (d->tile.bm == bm) return;
    snprintf(s->tuned + n, sizeof s->tuned - n, "; bm=%d warps=%d bn=%d, the fewest rows that hold its %d", d->tile.bm,
             d->tile.warps, d->tile.bn, d->decode_sq * best);
}

/* A tile tune saved for this request's key replaces the default; one that no longer parses or fits is
 * not used, and the note says so (never a silent choice either way). */
static void tuned_tile(const ptxgen_request *rq, const KernelKind *kind, ptxgen_set *s) {
    AttnDesc *d = &s->desc;
    TunedKey k = {d->arch->name, kind->name, family_name(kind->family), dtype_name(d->dtype), d->d, d->causal, rq->shape_class,
                  kind->dv ? 0 : d->dv};
    char tile[128], why[256];
    AttnTile saved = d->tile;
    if (!tuned_lookup(&k, tile, sizeof tile, s->tuned, sizeof s->tuned)) return;
    int bad = tile_parse(kind->keys, *kind->nkeys, tile, &d->tile, why, sizeof why);
    if (!bad && kind->warps_of) d->tile.warps = kind->warps_of(&d->tile);
    bad = bad || kind->check_tile(d, why, sizeof why);
    Plan plans[MAX_KERNELS];
    int n;
    if (!bad && !plan_all(kind, d, plans, &n, why, sizeof why)) bad = 1;
    if (bad) {
        d->tile = saved;
        Buf note = {0};
        buf_printf(&note, "%s is not used: %s; the default tile is used instead", s->tuned, why);
        snprintf(s->tuned, sizeof s->tuned, "%.399s", note.s ? note.s : "");
        buf_free(&note);
    }
}

static void describe(ptxgen_set *s, const KernelKind *kind) {
    const AttnDesc *d = &s->desc;
    Buf tile = {0};
    tile_describe(kind->keys, *kind->nkeys, &d->tile, &tile);
    s->ks.family = kind->family;
    char dv[16] = "";
    if (!kind->dv && d->dv != d->d) snprintf(dv, sizeof dv, " d_v=%d", d->dv);
    char sparse[48] = "", blocks[64] = "";
    if (d->page_size || d->splitkv) {
        snprintf(sparse, sizeof sparse, "%s%.0d%s", d->page_size ? " paged " : "", d->page_size, d->splitkv ? " split-KV" : "");
        snprintf(blocks, sizeof blocks, ", \"page_size\": %d, \"splitkv\": %s", d->page_size, d->splitkv ? "true" : "false");
    }
    if (d->block_m) {
        snprintf(sparse, sizeof sparse, " block-sparse %dx%d", d->block_m, d->block_n);
        snprintf(blocks, sizeof blocks, ", \"block_m\": %d, \"block_n\": %d", d->block_m, d->block_n);
    }
    snprintf(s->ks.summary, sizeof s->ks.summary, "%s %s d=%d%s%s%s on %s, %s, tile %s", kind->name,
             dtype_name(d->dtype), d->d, dv, d->causal ? " causal" : "", sparse, d->arch->name, family_name(kind->family),
             tile.s);
    snprintf(s->constants, sizeof s->constants,
             "{\"dtype\": \"%s\", \"d\": %d, \"dv\": %d, \"causal\": %s, \"family\": \"%s\", "
             "\"deterministic\": %s%s, \"tile\": {\"bm\": %d, \"bn\": %d, \"warps\": %d}}",
             dtype_name(d->dtype), d->d, d->dv, d->causal ? "true" : "false", family_name(kind->family),
             s->ks.deterministic ? "true" : "false", blocks, d->tile.bm, d->tile.bn, d->tile.warps);
    buf_free(&tile);
}

/* The plans of every kernel of the set; 1 if all fit (else err holds the first refusal). */
static int plan_all(const KernelKind *kind, const AttnDesc *d, Plan *plans, int *n, char *err, size_t errlen) {
    *n = kind_plan(kind, d, plans);
    for (int i = 0; i < *n; i++)
        if (!plans[i].ok) {
            snprintf(err, errlen, "%s", plans[i].verdict);
            return 0;
        }
    return 1;
}

/* The summary, the family and how it was chosen, then each kernel's plan. */
static char *plan_text(const ptxgen_set *s, int n) {
    Buf out = {0};
    buf_printf(&out, "%s\n%-24s%s (", s->ks.summary, "family:", family_name(s->ks.family));
    if (s->asked) buf_printf(&out, "--mma %s)\n", family_flag((Family)s->asked));
    else if (*s->note) buf_printf(&out, "%s)\n", s->note);
    else buf_printf(&out, "--mma auto: %s's newest)\n", s->ks.arch->name);
    if (*s->tuned) buf_printf(&out, "%-24s%s\n", "tile:", s->tuned);
    for (int i = 0; i < n; i++) {
        if (i) buf_puts(&out, "\n");
        plan_print(&s->ks.plan[i], s->ks.arch, &out);
    }
    return buf_take(&out);
}

char *ptxgen_plan_request(const ptxgen_request *rq, int *fits, char *err, size_t errlen) {
    ptxgen_set s = {0};
    const KernelKind *kind;
    errlen = err ? errlen : 0;
    if (fits) *fits = 0;
    if (!rq || !fits) return snprintf(err, errlen, "ptxgen_plan_request: a NULL argument"), NULL;
    if (parse_desc(rq, &s, &kind, err, errlen)) return NULL;
    int n;
    *fits = plan_all(kind, &s.desc, s.ks.plan, &n, err, errlen);
    s.ks.deterministic = !kind->build || s.desc.tile.deterministic;
    s.ks.arch = s.desc.arch;
    describe(&s, kind);
    char *text = plan_text(&s, n);
    if (!text) snprintf(err, errlen, "out of memory while printing the plan");
    return text;
}

int ptxgen_build(const ptxgen_request *rq, ptxgen_set **out, char *err, size_t errlen) {
    errlen = err ? errlen : 0;
    if (!rq || !out) return snprintf(err, errlen, "ptxgen_build: a NULL argument"), 2;
    *out = NULL;
    ptxgen_set *s = calloc(1, sizeof *s);
    const KernelKind *kind;
    int n;
    if (!s) { snprintf(err, errlen, "out of memory"); return 2; }
    if (parse_desc(rq, s, &kind, err, errlen) || !plan_all(kind, &s->desc, s->ks.plan, &n, err, errlen)) {
        free(s);
        return 2;
    }
    snprintf(s->ks.kernel, sizeof s->ks.kernel, "%s", kind->name);
    s->ks.arch = s->desc.arch;
    Buf body = {0}, m = {0};
    kind_build(kind, &s->desc, &s->ks, &body);
    if (body.oom) {   /* emission ran out of memory somewhere: nothing half-written leaves */
        snprintf(err, errlen, "out of memory while emitting %s", kind->name);
        buf_free(&body);
        kernel_set_free(&s->ks);
        free(s);
        return PTXGEN_ENOMEM;
    }
    char version[16];
    if (emit_target_check(body.s, s->desc.arch, version, err, errlen)) {   /* a generator bug: say it, emit nothing */
        buf_free(&body);
        kernel_set_free(&s->ks);
        free(s);
        return 2;
    }
    module_header(&m, s->desc.arch, version);
    buf_puts(&m, body.s ? body.s : "");
    buf_free(&body);
    s->ks.ptx = buf_take(&m);
    if (!s->ks.ptx) {
        snprintf(err, errlen, "out of memory while assembling the %s module", kind->name);
        kernel_set_free(&s->ks);
        free(s);
        return PTXGEN_ENOMEM;
    }
    describe(s, kind);
    set_problem_sizes(&s->ks, &s->sizes);
    *out = s;
    return 0;
}

void ptxgen_free(ptxgen_set *s) {
    if (!s) return;
    kernel_set_free(&s->ks);
    free(s);
}

const char *ptxgen_ptx(const ptxgen_set *s) { return s ? s->ks.ptx : NULL; }

char *ptxgen_plan_text(const ptxgen_set *s) { return s ? plan_text(s, s->ks.nk) : NULL; }
const char *ptxgen_family(const ptxgen_set *s) { return s ? family_name(s->ks.family) : NULL; }
const char *ptxgen_family_note(const ptxgen_set *s) { return s && *s->note ? s->note : NULL; }
const char *ptxgen_tile_note(const ptxgen_set *s) { return s && *s->tuned ? s->tuned : NULL; }

int ptxgen_shape_class(const char *kernel, const ptxgen_size *sizes, int n, char *out, size_t len) {
    long long s_max = 0, h_q = 0, h_kv = 0, s_q = 0;
    if (!kernel || !out || !len || n < 0 || (n && !sizes)) return 2;
    for (int i = 0; i < n; i++) {
        if (!sizes[i].name) return 2;
        if (!strcmp(sizes[i].name, "h_q")) h_q = sizes[i].value;
        if (!strcmp(sizes[i].name, "h_kv")) h_kv = sizes[i].value;
        if (!strcmp(sizes[i].name, "s_q")) s_q = sizes[i].value;
        if (!strncmp(sizes[i].name, "s_", 2) && sizes[i].value > s_max) s_max = sizes[i].value;
    }
    if (!strcmp(kernel, "attn_fwd") && s_q >= 1 && s_q <= ATTN_DECODE_MAX_SQ && h_kv > 0 && h_q % h_kv == 0 && h_q / h_kv >= 2)
        snprintf(out, len, "decode sq=%lld g=%lld", s_q, h_q / h_kv);
    else tuned_shape_class(!strncmp(kernel, "mla_", 4), s_max, h_q, out, len);
    return 0;
}

char *ptxgen_manifest_json(const ptxgen_set *s) {
    if (!s) return NULL;
    Buf out = {0};
    manifest_write(&s->ks, s->constants, &out);
    return buf_take(&out);
}

int ptxgen_num_kernels(const ptxgen_set *s) { return s ? s->ks.nk : 0; }

int ptxgen_kernel_plan_info(const ptxgen_set *s, int k, ptxgen_kernel_plan *out) {
    if (!s || !out || k < 0 || k >= s->ks.nk) return 2;
    const Plan *p = &s->ks.plan[k];
    *out = (ptxgen_kernel_plan){p->threads, p->smem_bytes, p->regs_est, p->ctas_per_sm, p->ntmem ? plan_tmem_alloc(p) : 0};
    return 0;
}
int ptxgen_block_sparse(const ptxgen_set *s, int *block_m, int *block_n) {
    if (!s || !block_m || !block_n) return 0;
    *block_m = s->desc.block_m, *block_n = s->desc.block_n;
    return s->desc.block_m > 0;
}
int ptxgen_page_size(const ptxgen_set *s) { return s ? s->desc.page_size : 0; }

int ptxgen_num_splits(const ptxgen_set *s, const ptxgen_size *sizes, int nsizes, int sm_count) {
    if (!s || !s->desc.splitkv || sm_count < 1 || nsizes < 0 || nsizes > 64 || (nsizes && !sizes)) return 0;
    for (int i = 0; i < nsizes; i++)
        if (!sizes[i].name) return 0;
    ptxgen_size one[65];
    long long s_k = -1;
    int n = 0;
    for (int i = 0; i < nsizes; i++) {
        if (!strcmp(sizes[i].name, "num_splits")) continue;
        if (!strcmp(sizes[i].name, "s_k")) s_k = sizes[i].value;
        one[n++] = sizes[i];
    }
    one[n++] = (ptxgen_size){"num_splits", 1};
    unsigned grid[3], block[3], smem;
    char err[256];
    if (s_k < 1 || ptxgen_launch_dims(s, 0, one, n, grid, block, &smem, err, sizeof err)) return 0;   /* 0: the forward */
    long long ctas = (long long)grid[0] * grid[1] * grid[2], blocks = (s_k + s->desc.tile.bn - 1) / s->desc.tile.bn;
    long long want = (4LL * sm_count + ctas - 1) / ctas;
    return (int)(want < 1 ? 1 : want > blocks ? blocks : want > 4096 ? 4096 : want);
}
int ptxgen_deterministic(const ptxgen_set *s) { return s ? s->ks.deterministic : 0; }
void ptxgen_head_dims(const ptxgen_set *s, int *d, int *dv) {
    if (d) *d = s ? s->desc.d : 0;
    if (dv) *dv = s ? s->desc.dv : 0;
}
const char *ptxgen_entry(const ptxgen_set *s, int k) { return s && k >= 0 && k < s->ks.nk ? s->ks.k[k].entry : NULL; }
int ptxgen_num_params(const ptxgen_set *s, int k) { return s && k >= 0 && k < s->ks.nk ? s->ks.k[k].nparams : 0; }

int ptxgen_param_info(const ptxgen_set *s, int k, int i, ptxgen_param *o) {
    if (!s || !o || k < 0 || k >= s->ks.nk || i < 0 || i >= s->ks.k[k].nparams) return 2;
    const ParamSpec *p = &s->ks.k[k].params[i];
    *o = (ptxgen_param){p->name, (ptxgen_param_type)p->type, (ptxgen_param_role)p->role, p->meaning, p->shape, p->dtype,
                        p->of, p->dim};
    return 0;
}

int ptxgen_num_problem_sizes(const ptxgen_set *s) { return s ? s->sizes.n : 0; }
const char *ptxgen_problem_size(const ptxgen_set *s, int i) { return s && i >= 0 && i < s->sizes.n ? s->sizes.name[i] : NULL; }

int ptxgen_num_tensor_maps(const ptxgen_set *s, int k) { return s && k >= 0 && k < s->ks.nk ? s->ks.k[k].ntmaps : 0; }

int ptxgen_tensor_map_info(const ptxgen_set *s, int k, int i, ptxgen_tensor_map *o) {
    if (!s || !o || k < 0 || k >= s->ks.nk || i < 0 || i >= s->ks.k[k].ntmaps) return 2;
    const TensorMapSpec *t = &s->ks.k[k].tmaps[i];
    *o = (ptxgen_tensor_map){t->param, t->tensor, t->dtype, t->rank, t->dims, t->strides, t->box, t->elem_strides,
                             t->swizzle, t->interleave, t->oob_fill};
    return 0;
}

int ptxgen_num_workspaces(const ptxgen_set *s) { return s ? s->ks.nws : 0; }

int ptxgen_workspace_info(const ptxgen_set *s, int i, ptxgen_workspace *out) {
    if (!s || !out || i < 0 || i >= s->ks.nws) return 2;
    const WorkspaceSpec *w = &s->ks.ws[i];
    *out = (ptxgen_workspace){w->name, w->bytes, w->zero != 0, w->meaning, w->zero == WS_ZERO_KEPT};
    return 0;
}

/* The sizes as expression variables; -1 when one is unnamed or sizes is NULL for nsizes > 0 (a caller's mistake). */
static int size_vars(const ptxgen_size *sizes, int nsizes, ExprVar *vars) {
    int n = nsizes < 16 ? nsizes : 16;
    if (n > 0 && !sizes) return -1;
    for (int i = 0; i < n; i++) {
        if (!sizes[i].name) return -1;
        vars[i] = (ExprVar){sizes[i].name, sizes[i].value};
    }
    return n < 0 ? 0 : n;
}

int ptxgen_workspace_bytes(const ptxgen_set *s, int i, const ptxgen_size *sizes, int nsizes, unsigned long long *bytes,
                           char *err, size_t errlen) {
    errlen = err ? errlen : 0;
    if (!s || !bytes || i < 0 || i >= s->ks.nws) { snprintf(err, errlen, "no workspace %d (or a NULL argument)", i); return 2; }
    ExprVar vars[16];
    long long v;
    int nv = size_vars(sizes, nsizes, vars);
    if (nv < 0) { snprintf(err, errlen, "a size without a name (or sizes NULL)"); return 2; }
    if (expr_eval(s->ks.ws[i].bytes, vars, nv, &v, err, errlen)) return 2;
    if (v < 1) { snprintf(err, errlen, "workspace %s = %s = %lld bytes", s->ks.ws[i].name, s->ks.ws[i].bytes, v); return 2; }
    *bytes = (unsigned long long)v;
    return 0;
}

/* Three launch expressions of kernel k evaluated for a problem, each within [1, limit[i]]. */
static int eval_dims(const char *const expr[3], const char *what, const ptxgen_size *sizes, int nsizes,
                     const long long limit[3], unsigned out[3], char *err, size_t errlen) {
    ExprVar vars[16];
    int n = size_vars(sizes, nsizes, vars);
    if (n < 0) { snprintf(err, errlen, "a size without a name (or sizes NULL)"); return 2; }
    for (int i = 0; i < 3; i++) {
        long long v;
        if (expr_eval(expr[i], vars, n, &v, err, errlen)) return 2;
        if (v < 1 || v > limit[i]) {
            snprintf(err, errlen, "%s dimension %d = %s = %lld is outside the launch limits", what, i, expr[i], v);
            return 2;
        }
        out[i] = (unsigned)v;
    }
    return 0;
}

int ptxgen_launch_dims(const ptxgen_set *s, int k, const ptxgen_size *sizes, int nsizes, unsigned grid[3],
                       unsigned block[3], unsigned *dyn_smem, char *err, size_t errlen) {
    errlen = err ? errlen : 0;
    if (!s || !grid || !block || !dyn_smem) { snprintf(err, errlen, "ptxgen_launch_dims: a NULL argument"); return 2; }
    if (k < 0 || k >= s->ks.nk) { snprintf(err, errlen, "no kernel %d", k); return 2; }
    const KernelSpec *ks = &s->ks.k[k];
    static const long long limits[3] = {2147483647LL, 65535, 65535};
    const char *expr[3] = {ks->grid[0], ks->grid[1], ks->grid[2]};
    if (eval_dims(expr, "grid", sizes, nsizes, limits, grid, err, errlen)) return 2;
    /* the kernels number their CTAs in 32 bits (a linear index, e.g. attn_bwd's CTA order) */
    unsigned long long ctas = (unsigned long long)grid[0] * grid[1] * grid[2];
    if (ctas > 0xFFFFFFFFull) {
        snprintf(err, errlen, "grid %u x %u x %u = %llu CTAs: ptxgen's kernels number their CTAs in 32 bits (at most "
                 "4294967295)", grid[0], grid[1], grid[2], ctas);
        return 2;
    }
    for (int i = 0; i < 3; i++) block[i] = ks->block[i];
    *dyn_smem = ks->dyn_smem;
    return 0;
}

/* A portable cluster has at most 8 CTAs (16 with opt-in on sm_90+); the driver judges the product. */
int ptxgen_programmatic_dependent(const ptxgen_set *s, int k) {
    return s && k >= 0 && k < s->ks.nk && s->ks.k[k].pdl;
}

int ptxgen_cluster_dims(const ptxgen_set *s, int k, const ptxgen_size *sizes, int nsizes, unsigned cluster[3],
                        char *err, size_t errlen) {
    errlen = err ? errlen : 0;
    if (!s || !cluster) { snprintf(err, errlen, "ptxgen_cluster_dims: a NULL argument"); return 2; }
    if (k < 0 || k >= s->ks.nk) { snprintf(err, errlen, "no kernel %d", k); return 2; }
    static const long long limits[3] = {16, 16, 16};
    const KernelSpec *ks = &s->ks.k[k];
    const char *expr[3] = {spec_cluster(ks, 0), spec_cluster(ks, 1), spec_cluster(ks, 2)};
    return eval_dims(expr, "cluster", sizes, nsizes, limits, cluster, err, errlen);
}
