/* Split-KV for attn_fwd (KERNELS.md "Paged KV": split-KV for long contexts): the forward's CTAs of a row block are
 * num_splits (a runtime size) per batch entry, CTA z = b num_splits + split taking key blocks
 * [split chunk, (split + 1) chunk), chunk = cdiv(blocks, num_splits), and storing its rows' normalized O and LSE in
 * fp32 workspaces ([b num_splits, h_q, s_q] rows; a split with no key has O 0 and LSE +inf, as any row without keys);
 * a combine kernel after it merges them: LSE = log sum exp LSE_i, O = sum exp(LSE_i - LSE) O_i over the splits with
 * keys, and writes o and lse as the unsplit kernel would. */
#ifndef PTXGEN_ATTN_SPLITKV_H
#define PTXGEN_ATTN_SPLITKV_H
#include "attn_emit.h"
#include "../templates/warp_mma.h"

/* The forward's split-KV parameters: the two workspaces it writes and num_splits. */
void abi_splitkv(KernelSpec *ks);
/* The forward's batch entry and split of this CTA (%ctaid.z = b num_splits + split). */
void splitkv_coords(Kctx *k, Reg *b, Reg *split);
/* Key blocks [lo, hi) of this split among [0, n_max), and n_full (unmasked below it) clamped into them. */
void splitkv_range(Kctx *k, Reg split, Reg n_max, Reg n_full, Reg *lo, Reg *hi);
/* This CTA's partial row of (query head, token): an index into lse_part, and times d_v into o_part. */
Reg splitkv_row(Kctx *k, Reg head, Reg tok);
/* The row partials: this warp's rows of O (normalized, fp32) and their LSE, each at its (token, head) of pr (pack 1:
 * tokens tok0 + row of head h0), the problem's rows only, into the workspaces. */
void splitkv_store(Kctx *k, const Acc *o, const Reg *lse, int mt, Reg warp_row0, const PackedRows *pr);

/* The combine kernel appended to the set: its plan, then its spec, workspaces and PTX. */
void splitkv_plan(const AttnDesc *d, Plan *p);
void splitkv_build(const AttnDesc *d, KernelSet *ks, Buf *module);
#endif
