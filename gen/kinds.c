#include "kinds.h"
#include "ptxgen.h"
#include <stdio.h>
#include <string.h>
#include "mla.h"

static const int fwd_hdims[] = {64, 128, 256}, bwd_hdims[] = {64, 128}, mla_hdims[] = {MLA_D_QK};
/* d=256 on wgmma's attn_bwd: two CTAs a key block (dsplit), 128 columns of dK and dV each */
static const int bwd_wg_hdims[] = {64, 128, 256};
/* d=256 on wgmma: O alone is 128 registers per consumer thread, and the driver's JIT spilled it (360 B) */
static const int fwd_wg_hdims[] = {64, 128, 256}, tc_hdims[] = {64, 128, 192, 256};
/* the MLA mma.sync kinds: two warps per 16 rows of bm */
static int mla_pair_warps(const AttnTile *t) { return 2 * t->bm / 16; }

static const KernelKind kinds[] = {
    {"attn_fwd", "FlashAttention-2 forward (m16n8k16), bf16/fp16, d 64|128|256, causal, GQA/MQA, varlen, block-sparse, paged KV, "
     "split-KV, GQA heads packed for decode, LSE", FAM_MMA_SYNC,
     attn_fwd_keys, &attn_fwd_nkeys, attn_fwd_default_tile, attn_fwd_check_tile,
     NULL, NULL, attn_fwd_plan, attn_fwd_spec, attn_fwd_emit, fwd_hdims, 3, 128, 0, 1, NULL, 0, 1, attn_fwd_sparse,
     PAGED_KV | PAGED_SPLIT, attn_fwd_decode_tile, NULL},
    {"attn_fwd", "FlashAttention-3 forward (wgmma + TMA, warp-specialised: a TMA producer warpgroup, bm/64 consumer "
     "warpgroups), bf16/fp16, d 64|128|256, causal, GQA/MQA, varlen, block-sparse, paged KV, split-KV, LSE", FAM_WGMMA, attn_fwd_wg_keys, &attn_fwd_wg_nkeys,
     attn_fwd_wg_default_tile, attn_fwd_wg_check_tile, NULL, NULL, attn_fwd_wg_plan, attn_fwd_wg_spec, attn_fwd_wg_emit,
     fwd_wg_hdims, 3, 128, 0, 1, NULL, 0, 1, attn_fwd_wg_sparse, PAGED_KV | PAGED_SPLIT,
     NULL, attn_fwd_wg_refine_tile},
    {"attn_fwd", "FlashAttention forward on tcgen05 (S, P and O in TMEM, FA4's roles: a TMA producer warp, one "
     "MMA-issuing thread, a softmax warpgroup with one query row per thread writing P back to TMEM for a TS-MMA P V, "
     "a correction warpgroup rescaling O), bf16/fp16, "
     "d 64|128|192|256 (d_v any of them: 192/128 for MLA prefill), causal, GQA/MQA, varlen, block-sparse, paged KV, "
     "split-KV, GQA heads packed for decode, LSE", FAM_TCGEN05, attn_fwd_tc_keys, &attn_fwd_tc_nkeys, attn_fwd_tc_default_tile,
     attn_fwd_tc_check_tile, NULL, NULL, attn_fwd_tc_plan, attn_fwd_tc_spec, attn_fwd_tc_emit, tc_hdims, 4, 128, 0,
     1, attn_fwd_tc_warps, 1, 1, attn_fwd_tc_sparse, PAGED_KV | PAGED_SPLIT,
     NULL, NULL},
    {"attn_bwd", "FlashAttention-2 backward (m16n8k16): delta, dK/dV, dQ kernels; bf16/fp16, d 64|128, causal, "
     "GQA/MQA, varlen, block-sparse, deterministic by default", FAM_MMA_SYNC, attn_bwd_keys, &attn_bwd_nkeys, attn_bwd_default_tile, attn_bwd_check_tile,
     attn_bwd_plan, attn_bwd_build, NULL, NULL, NULL, bwd_hdims, 2, 128, 0, 1, NULL, 0, 1, attn_bwd_sparse, 0, NULL, NULL},
    {"attn_bwd", "FlashAttention-3 backward (wgmma + TMA: a TMA producer warpgroup, bn/64 consumer warpgroups; "
     "dQ = dS K in the same kernel, added by a dQ-writer warp's TMA reduce-adds, in key-block order under a "
     "semaphore per query block when deterministic): delta, main, dQ convert kernels; bf16/fp16, d 64|128|256 (256 "
     "split over 2 CTAs per key block), causal, GQA/MQA, varlen, block-sparse", FAM_WGMMA, attn_bwd_wg_keys,
     &attn_bwd_wg_nkeys, attn_bwd_wg_default_tile, attn_bwd_wg_check_tile, attn_bwd_wg_plan, attn_bwd_wg_build, NULL,
     NULL, NULL, bwd_wg_hdims, 3, 128, 0, 1, NULL, 0, 1,
     attn_bwd_wg_sparse, 0, NULL, attn_bwd_wg_refine_tile},
    {"attn_bwd", "FlashAttention backward on tcgen05 (dK, dV in TMEM: a TMA producer warp, one MMA-issuing thread, "
     "4 compute warps with one key row each; S^T, dP^T in TMEM, P^T and dS^T written back for TS-MMAs, dQ = dS K "
     "with M = 64 added by vector atomics, in key-block order under semaphores when deterministic): delta, main, dQ convert "
     "kernels; bf16/fp16, d 64|128|192|256 (192 and 256 split over 3 and 2 CTAs per key block), causal, GQA/MQA, varlen, block-sparse",
     FAM_TCGEN05, attn_bwd_tc_keys, &attn_bwd_tc_nkeys, attn_bwd_tc_default_tile, attn_bwd_tc_check_tile,
     attn_bwd_tc_plan, attn_bwd_tc_build, NULL, NULL, NULL, tc_hdims, 4, 128, 0, 1, NULL, 0, 1, attn_bwd_tc_sparse, 0, NULL, NULL},
    {"mla_fwd", "sparse MLA forward: top-k gathered rows of one latent kv head, d_qk 576, d_v 512, bf16/fp16, "
     "optional topk_length, LSE", FAM_MMA_SYNC, mla_fwd_keys, &mla_fwd_nkeys, mla_fwd_default_tile,
     mla_fwd_check_tile, NULL, NULL, mla_fwd_plan, mla_fwd_spec, mla_fwd_emit, mla_hdims, 1, MLA_D_QK, MLA_D_V, 0,
     mla_pair_warps, 0, 0, NULL, 0, NULL, NULL},
    {"mla_fwd", "sparse MLA forward on wgmma + TMA (a producer warpgroup gathers the top-k rows by cp.async, two "
     "consumer warpgroups split each step's slots for S and d_v for O), d_qk 576, d_v 512, bf16/fp16, optional "
     "topk_length, LSE", FAM_WGMMA, mla_fwd_wg_keys, &mla_fwd_wg_nkeys, mla_fwd_wg_default_tile,
     mla_fwd_wg_check_tile, NULL, NULL, mla_fwd_wg_plan, mla_fwd_wg_spec, mla_fwd_wg_emit, mla_hdims, 1, MLA_D_QK,
     MLA_D_V, 0, NULL, 0, 0, NULL, 0, NULL, NULL},
    {"mla_fwd", "sparse MLA forward on tcgen05 (the top-k slots as the MMAs' M: S^T and O^T in TMEM, a TMA gather4 "
     "producer warp, one MMA-issuing thread, 4 compute warps with one slot each), d_qk 576, d_v 512, bf16/fp16, "
     "optional topk_length, LSE", FAM_TCGEN05, mla_fwd_tc_keys, &mla_fwd_tc_nkeys, mla_fwd_tc_default_tile,
     mla_fwd_tc_check_tile, NULL, NULL, mla_fwd_tc_plan, mla_fwd_tc_spec, mla_fwd_tc_emit, mla_hdims, 1, MLA_D_QK,
     MLA_D_V, 0, NULL, 0, 0, NULL, 0, NULL, NULL},
    {"mla_bwd", "sparse MLA backward: delta, main (dq, dkv scattered over the top-k rows), convert; "
     "deterministic=1 sums dkv in 64-bit fixed point; bf16/fp16", FAM_MMA_SYNC, mla_bwd_keys, &mla_bwd_nkeys,
     mla_bwd_default_tile, mla_bwd_check_tile, mla_bwd_plan, mla_bwd_build, NULL, NULL, NULL, mla_hdims, 1, MLA_D_QK,
     MLA_D_V, 0, mla_pair_warps, 0, 0, NULL, 0, NULL, NULL},
    {"mla_bwd", "sparse MLA backward on wgmma + TMA (a producer warpgroup gathers the top-k rows by cp.async, two "
     "consumer warpgroups split each step's slots for S and dP, and d_qk for dq and dkv): delta, main, convert; "
     "deterministic=1 sums dkv in 64-bit fixed point; bf16/fp16", FAM_WGMMA, mla_bwd_wg_keys, &mla_bwd_wg_nkeys, mla_bwd_wg_default_tile,
     mla_bwd_wg_check_tile, mla_bwd_wg_plan, mla_bwd_wg_build, NULL, NULL, NULL, mla_hdims, 1, MLA_D_QK, MLA_D_V, 0, NULL, 0, 0, NULL, 0, NULL, NULL},
    {"mla_bwd", "sparse MLA backward on tcgen05 (TMEM accumulators): delta; bm=128 (default) a CTA-pair dq kernel "
     "(cta_group::2) and a KV-stationary dkv kernel, bm=16/32 one main kernel (cta_group::1); convert; "
     "deterministic=1 sums dkv in 64-bit fixed point; bf16/fp16", FAM_TCGEN05, mla_bwd_tc_keys, &mla_bwd_tc_nkeys,
     mla_bwd_tc_default_tile, mla_bwd_tc_check_tile, mla_bwd_tc_plan, mla_bwd_tc_build, NULL, NULL, NULL, mla_hdims, 1,
     MLA_D_QK, MLA_D_V, 0, NULL, 0, 0, NULL, 0, NULL, NULL},
};
#define NKINDS (int)(sizeof kinds / sizeof kinds[0])


int kind_count(void) { return NKINDS; }
const KernelKind *kind_at(int i) { return i >= 0 && i < NKINDS ? &kinds[i] : NULL; }

unsigned kind_families(const char *kernel) {
    unsigned fams = 0;
    for (int i = 0; kernel && i < NKINDS; i++)
        if (!strcmp(kinds[i].name, kernel)) fams |= kinds[i].family;
    return fams;
}

static const KernelKind *kind_find(const char *kernel, Family f) {
    for (int i = 0; i < NKINDS; i++)
        if (!strcmp(kinds[i].name, kernel) && kinds[i].family == f) return &kinds[i];
    return NULL;
}

/* Each kernel once, in table order, though it may have a row per family. */
static int first_row(int i) {
    for (int j = 0; j < i; j++)
        if (!strcmp(kinds[j].name, kinds[i].name)) return 0;
    return 1;
}

static int unknown_kernel(const char *kernel, char *err, size_t errlen) {
    Buf names = {0};
    for (int i = 0; i < NKINDS; i++)
        if (first_row(i)) buf_printf(&names, "%s%s", names.s ? ", " : "", kinds[i].name);
    snprintf(err, errlen, "unknown kernel '%s' (available: %s)", kernel ? kernel : "(none)", names.s);
    buf_free(&names);
    return 2;
}

/* "sm_120 has mma.sync only; tcgen05 needs sm_100a or sm_103a" */
static int arch_lacks(const ArchInfo *a, Family f, char *err, size_t errlen) {
    Buf has = {0}, where = {0};
    family_list(a->families, &has);
    arch_names_with(f, &where);
    snprintf(err, errlen, "%s has %s%s; %s needs %s", a->name, has.s, (a->families & (a->families - 1)) ? "" : " only",
             family_name(f), where.s);
    buf_free(&has);
    buf_free(&where);
    return 2;
}

/* "attn_bwd has no tcgen05 generator yet (families: mma.sync and wgmma)" */
static int kernel_lacks(const char *kernel, unsigned have, Family f, char *err, size_t errlen) {
    Buf fams = {0};
    family_list(have, &fams);
    snprintf(err, errlen, "%s has no %s generator yet (families: %s)", kernel, family_name(f), fams.s);
    buf_free(&fams);
    return 2;
}

int kind_pick(const char *kernel, const ArchInfo *a, unsigned asked, const KernelKind **kind, char *note, size_t notelen,
              char *err, size_t errlen) {
    unsigned have = kind_families(kernel);
    *note = 0;
    if (!have) return unknown_kernel(kernel, err, errlen);
    if (asked != FAM_AUTO && !(a->families & asked)) return arch_lacks(a, (Family)asked, err, errlen);
    if (asked != FAM_AUTO && !(have & asked)) return kernel_lacks(kernel, have, (Family)asked, err, errlen);
    Family pick = asked != FAM_AUTO ? (Family)asked : family_newest(a->families & have);
    if (!pick) return kernel_lacks(kernel, have, family_newest(a->families), err, errlen);
    Family newest = family_newest(a->families);
    if (asked == FAM_AUTO && pick != newest)
        snprintf(note, notelen, "--mma auto: %s has no %s generator yet, so %s gets %s", kernel, family_name(newest),
                 a->name, family_name(pick));
    *kind = kind_find(kernel, pick);
    return 0;
}

const TileKey *kind_key(const KernelKind *k, const char *key) {
    for (int i = 0; i < *k->nkeys; i++)
        if (!strcmp(k->keys[i].key, key)) return &k->keys[i];
    return NULL;
}

int kind_has_hdim(const KernelKind *k, int d) {
    for (int j = 0; j < k->nhdims; j++)
        if (k->hdims[j] == d) return 1;
    return 0;
}

const KernelKind *kind_for_hdim(const char *kernel, const ArchInfo *a, int d, int varlen, int sparse,
                                const KernelKind *tried) {
    const KernelKind *best = NULL;
    for (int i = 0; i < NKINDS; i++) {
        const KernelKind *k = &kinds[i];
        if (k != tried && kind_has_hdim(k, d) && (!varlen || k->varlen_ok) && (!sparse || k->sparse) && !strcmp(k->name, kernel) &&
            (a->families & k->family) &&
            (!best || family_newest(k->family | best->family) == k->family))
            best = k;
    }
    return best;
}

int ptxgen_num_kinds(void) { return NKINDS; }

int ptxgen_kind_info(int i, ptxgen_kind *out) {
    if (!out || i < 0 || i >= NKINDS) return 2;
    *out = (ptxgen_kind){kinds[i].name, family_name(kinds[i].family), kinds[i].what};
    return 0;
}

int ptxgen_kind_on_arch(int i, const char *arch) {
    const ArchInfo *a = arch ? arch_find(arch) : NULL;
    return i >= 0 && i < NKINDS && a && (a->families & kinds[i].family);
}
