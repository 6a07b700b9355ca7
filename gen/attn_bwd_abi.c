/* attn_bwd (mma.sync family): the ABI pieces every kernel of the set shares,
 * its entry names and the inputs the main and dQ kernels read. The lowest
 * file of attn_bwd: the kernels' files and the set's description call it. */
#include "attn_bwd.h"
#include "attn_wg.h"
#include <stdio.h>
#include <stdlib.h>

void bwd_entry(KernelSpec *ks, const AttnDesc *d, const char *part, int with_tile) {
    const AttnTile *t = &d->tile;
    char tile[48] = "";
    if (with_tile) snprintf(tile, sizeof tile, "_bm%d_bn%d_w%d", t->bm, t->bn, t->warps);
    snprintf(ks->entry, sizeof ks->entry, "attn_bwd_%s_%s_d%d%s%s%s%s%s", part, dtype_name(d->dtype), d->d, tile,
             d->causal ? "_causal" : "", t->deterministic ? "_det" : "", d->varlen ? "_varlen" : "",
             d->block_m ? "_sparse" : "");
}

void bwd_tensors(KernelSpec *ks, const AttnDesc *d) {
    attn_tensor(ks, d, "q", PR_IN, "queries");
    attn_tensor(ks, d, "k", PR_IN, "keys");
    attn_tensor(ks, d, "v", PR_IN, "values");
    attn_tensor(ks, d, "do", PR_IN, "gradient of the output");
}

void bwd_inputs(KernelSpec *ks, const AttnDesc *d) {
    bwd_tensors(ks, d);
    attn_tensor(ks, d, "lse", PR_IN, ATTN_LSE_MEANING);
    abi_workspace(ks, "delta", "rowsum(dO * O), read here");
}

void bwd_key_grads(KernelSpec *ks, const AttnDesc *d) {
    attn_tensor(ks, d, "dk", PR_OUT, "gradient of the keys, summed over the query heads of each kv head");
    attn_tensor(ks, d, "dv", PR_OUT, "gradient of the values, summed over the query heads of each kv head");
    if (d->varlen) abi_varlen(ks);
    abi_sizes(ks, attn_size_names, 4);
}

void bwd_stats_map(KernelSpec *ks, int bm) {
    static const char *const b32[] = {"64", "b * h_q * cdiv(s_q, 32)", "256"};
    static const char *const b64[] = {"128", "b * h_q * cdiv(s_q, 64)", "512"};
    static const char *const b80[] = {"160", "b * h_q * cdiv(s_q, 80)", "640"};
    static const char *const b128[] = {"256", "b * h_q * cdiv(s_q, 128)", "1024"};
    const char *const *x = bm == 32 ? b32 : bm == 64 ? b64 : bm == 80 ? b80 : b128;
    if (x == b128 && bm != 128) {
        fprintf(stderr, "ptxgen internal: no stats map for blocks of %d rows\n", bm);
        abort();
    }
    TensorMapSpec m = {.param = "stats_map", .tensor = "stats", .dtype = "fp32", .rank = 2, .dims = {x[0], x[1]},
                       .strides = {x[2]}, .box = {2 * bm, 1}, .elem_strides = {1, 1}, .swizzle = "none",
                       .interleave = "none", .oob_fill = "zero"};
    abi_tensor_map(ks, "stats", "TMA map over the stats workspace, one row (a block's lse, then its delta) per copy", m);
}

void bwd_input_maps(KernelSpec *ks, const AttnDesc *d, int bm, int bn) {
    const char *dt = dtype_name(d->dtype);
    if (d->varlen) {   /* over the packed tensors: rows from each sequence's first */
        wg_packed_map(ks, "q_map", "q", dt, d->d, "h_q", "total_q", bm);
        wg_packed_map(ks, "k_map", "k", dt, d->d, "h_kv", "total_k", bn);
        wg_packed_map(ks, "v_map", "v", dt, d->dv, "h_kv", "total_k", bn);
        wg_packed_map(ks, "do_map", "do", dt, d->dv, "h_q", "total_q", bm);
        return;
    }
    static const char *const qs[] = {"q_stride_h * 2", "q_stride_s * 2", "q_stride_b * 2"};
    static const char *const kst[] = {"k_stride_h * 2", "k_stride_s * 2", "k_stride_b * 2"};
    static const char *const vs[] = {"v_stride_h * 2", "v_stride_s * 2", "v_stride_b * 2"};
    static const char *const dos[] = {"do_stride_h * 2", "do_stride_s * 2", "do_stride_b * 2"};
    wg_bshd_map(ks, "q_map", "q", dt, d->d, "h_q", "s_q", bm, qs);
    wg_bshd_map(ks, "k_map", "k", dt, d->d, "h_kv", "s_k", bn, kst);
    wg_bshd_map(ks, "v_map", "v", dt, d->dv, "h_kv", "s_k", bn, vs);
    wg_bshd_map(ks, "do_map", "do", dt, d->dv, "h_q", "s_q", bm, dos);
}
