/* What the attention emitters share: addressing of [b, s, h, d] tensors with
 * runtime strides, and the launch-ABI pieces their specs are built from. */
#ifndef PTXGEN_ATTN_EMIT_H
#define PTXGEN_ATTN_EMIT_H
#include "attn.h"
#include "../templates/kctx.h"

/* ptr + 2 * (i1 * stride_d1 + i2 * stride_d2) for 16-bit tensor t; dims are 'b', 's', 'h' */
Reg tensor_base(Kctx *k, const char *t, char d1, Reg i1, char d2, Reg i2);
/* ptr + 2 * (b * stride_b + h * stride_h) for tensor t */
Reg head_base(Kctx *k, const char *t, Reg b, Reg h);
/* t's stride along dim in bytes (the runner guarantees it fits 32 bits) */
Reg stride_bytes(Kctx *k, const char *t, char dim);
/* t's row stride (dim 's') in bytes */
Reg row_stride_bytes(Kctx *k, const char *t);
/* batch (ctaid.z) and head (ctaid.y) of this CTA */
void cta_coords(Kctx *k, Reg *b, Reg *h);
/* the kv head query head h reads: h / (h_q / h_kv) */
Reg kv_head_of(Kctx *k, Reg h);
/* (b * h_q + h) * s_q: the first row of (b, h) in [b, h_q, s_q] statistics */
Reg stats_row(Kctx *k, Reg b, Reg h);

/* Variable lengths (AttnDesc.varlen): sequence b's rows of the packed [total, h, d] tensors, queries
 * [q0, q0 + s_q) from cu_seqlens_q[b .. b + 1], keys [k0, k0 + s_k) from cu_seqlens_k. */
typedef struct { Reg q0, s_q, k0, s_k; } SeqSpan;
SeqSpan seq_span(Kctx *k, Reg b);
/* h * total_q + q0: the first row of (sequence, h) in varlen [h_q, total_q] statistics */
Reg varlen_stats_row(Kctx *k, Reg h, Reg q0);
/* The varlen launch ABI's own parameters: cu_seqlens_q, cu_seqlens_k; total_q */
void abi_varlen(KernelSpec *ks);
/* A paged KV cache's (AttnDesc.page_size): block_table, seqlens_k; max_pages. k and v are [num_pages, page_size,
 * h_kv, d] (attn_tensor): stride b steps pages, s rows, h heads. */
void abi_paged(KernelSpec *ks);
/* Batch entry b's lengths and where (b, h)'s rows start, padded or (d->varlen) packed: s_q, s_k the parameters or
 * the sequence's; tensor t's base at head h (the query-side q, o, do, dq from cu_seqlens_q[b], the key-side k, v,
 * dk, dv from cu_seqlens_k[b]); the first row of (b, h) in the statistics ([b, h_q, s_q], or [h_q, total_q]).
 * Varlen reads the offsets again at each call rather than hold them. s_k may be NULL (not asked). */
void attn_lengths(Kctx *k, const AttnDesc *d, Reg b, Reg *s_q, Reg *s_k);
Reg attn_head_base(Kctx *k, const AttnDesc *d, const char *t, Reg b, Reg h);
Reg attn_stats_row(Kctx *k, const AttnDesc *d, Reg b, Reg h);
/* Varlen: every thread of a CTA whose row block (of bm rows, counted from the last when last_first, as row_block)
 * starts past its own sequence's rows jumps to the returned label, which the caller places after everything
 * (before any role, barrier or allocation); 0 and nothing emitted when not varlen. */
int varlen_exit(Kctx *k, const AttnDesc *d, int bm, int last_first);
/* The same for a backward's key blocks: CTA x owns keys from (x / parts) bn. */
int varlen_keys_exit(Kctx *k, const AttnDesc *d, int bn, int parts);
/* The same for a CTA that owns keys from key0 of batch b, however it derived them (varlen only). */
int varlen_keys_exit_at(Kctx *k, const AttnDesc *d, Reg b, Reg key0);
/* An attention tensor's parameter (and its strides) by name, padded or packed by d->varlen: q, k, v, o, do, dq,
 * dk, dv ([b, s, h, d] or [total, h, d]) and lse ([b, h_q, s_q] or [h_q, total_q], fp32). */
void attn_tensor(KernelSpec *ks, const AttnDesc *d, const char *name, ParamRole role, const char *meaning);

/* Paged KV (KERNELS.md "Paged KV"): sequence b's keys, seqlens_k[b]; the address of block_table[b][pg]. */
Reg paged_seqlen(Kctx *k, Reg b);
Reg block_table_at(Kctx *k, Reg b, Reg pg);
/* A TMA box's coordinates for sequence b's key `row` (a key tile within one page): the page id it returns, row made
 * the row within the page. The table entry is read unguarded: the caller walks the sequence's pages only. */
Reg paged_page(Kctx *k, int page_size, Reg b, Reg row);
/* Paged, a key block from row (a multiple of page_size) longer than a page: the table entry of its page j (rows
 * row + j page_size ..), read only where that page starts before s_k (*in); a page past the sequence is none of its
 * own and its entry may hold anything, so it takes first instead (the caller's choice: a valid page, or 0 where it
 * reads no row of it); *start, unless NULL, is the page's first key */
Reg paged_sub_page(Kctx *k, int page_size, Reg b, Reg row, int j, Reg s_k, Reg first, Reg *in, Reg *start);
/* The entry-name suffix of the decode options, "_page<N>" and "_split", appended to buf. */
void paged_suffix(const AttnDesc *d, char *buf, size_t len);

/* Decode packing (tile key pack > 1): CTA y takes query heads j0 .. j0 + pack - 1 of kv head y / cdiv(g, pack)'s
 * group of g = h_q / h_kv, j0 = pack (y % cdiv(g, pack)); h0 = kvh g + j0 is the first of them. */
void packed_heads(Kctx *k, int pack, Reg y, Reg *group, Reg *kvh, Reg *j0, Reg *h0);
/* A packed CTA's rows: row r is token tok0 + r / pack of query head h0 + r % pack; rows of heads past the CTA's
 * heads (the group's end) or of tokens at or past s_q hold nothing. */
typedef struct { int pack; Reg tok0, s_q, h0, heads; } PackedRows;
/* The lane's row r of the fragment layout (rows g and g + 8 of each 16-row tile from warp_row0): its token, query
 * head and whether it is a row of the problem. */
void packed_row(Kctx *k, const PackedRows *pr, Reg warp_row0, int r, Reg *tok, Reg *head, Reg *ok);

/* A CTA that owns query rows [m_start, m_start + bm) and steps over keys bn
 * at a time; each warp owns rows_per_warp of the rows (fwd, bwd dQ). */
typedef struct {
    int causal, bm, bn, rows_per_warp;
    Reg s_q, s_k, off, m_start;       /* off = s_k - s_q: the causal diagonal */
    int first_warp;                   /* warps before it own no rows (a producer warpgroup) */
    int last_first;                   /* 1: CTA x owns the row block nctaid.x - 1 - x (row_block) */
    int pair;                         /* 1: CTAs x and x + 1 (a cluster of 2) share the row block x / 2 */
    int own_lengths;                  /* 1: s_q, s_k are the sequence's (varlen), not the parameters row_room rereads */
    int pack;                         /* > 1: row r is token m_start + r / pack (PackedRows); bm counts tokens */
    int m_held;                       /* 1: row_room reads m_start, not %ctaid (persistent CTAs walk several blocks) */
} RowBlocks;
/* The row block this CTA owns, into m: %ctaid.x (x / 2 for a pair), or counted from the last when
 * rb->last_first (causal: the longest rows start first, so the grid's last wave is short rows). Read where
 * used, not held. */
void row_block(Kctx *k, const RowBlocks *rb, Reg m);
/* Key blocks [0, n_full) need no mask; [n_full, n_max) do; none past n_max is visible. */
void key_blocks(Kctx *k, const RowBlocks *rb, Reg n_full, Reg n_max);
/* For each row this lane holds (2 per 16-row tile): how many columns from
 * its first column in the key block (n_start + 2t) are visible. */
void row_room(Kctx *k, const RowBlocks *rb, Reg n_start, Reg *room);

#define ATTN_LSE_MEANING "log-sum-exp of the scaled scores, natural log, +inf for rows with no valid key; contiguous"
#define ATTN_SCALE_MEANING "S = softmax_scale * Q K^T (natural units)"
extern const char *const attn_size_names[4];   /* s_q s_k h_q h_kv */

/* One step of a key loop: key block n of [.., n_max), masked or not. */
typedef void (*KeyStep)(Kctx *k, void *ctx, Reg n, Reg n_max, int masked);
/* for (; n < end; n++) step(n): one copy of the step body, uniform branches */
void key_loop(Kctx *k, KeyStep step, void *ctx, Reg n, Reg end, Reg n_max, int masked);
/* softmax_scale * log2(e): scores go through ex2 */
Reg scale_log2(Kctx *k);

/* Every cp.async of this thread landed, then a CTA barrier: the tiles are in
 * and everyone is past its reads of the buffers about to be refilled. */
void sync_tiles(Kctx *k);

/* The tile rule every attention kernel shares: Q/K/V tiles of bm and bn rows
 * are copied by 32*warps threads in whole 16-byte rows of d; err names it. */
int attn_check_copy(const AttnDesc *d, char *err, size_t errlen);

/* Launch-ABI pieces. A tensor gets one stride parameter per dimension named
 * in dims ("bsh", "sh", "s" or "" for none): q k v o do dq dk dv have b, s
 * and h strides, kv indices dkv an s stride. */
void abi_tensor(KernelSpec *ks, const char *name, ParamRole role, const char *meaning, const char *shape,
                const char *dtype, const char *dims);
void abi_sizes(KernelSpec *ks, const char *const *names, int n);
/* attn_fwd's tensors (q k v in, o lse out), sizes, scale and grid (a CTA per bm query rows, head, batch):
 * every family's forward takes these, a family adding its own parameters after them. */
/* the attn_fwd launch ABI every family shares: padded [b, s, h, d] tensors, or varlen's packed ones */
void attn_fwd_abi(KernelSpec *ks, const AttnDesc *d, int bm);
void abi_scale(KernelSpec *ks, const char *meaning);
void abi_workspace(KernelSpec *ks, const char *name, const char *meaning);
/* A TMA tensor map over `tensor`, passed by value in parameter map.param (see ParamType PT_TMAP). */
void abi_tensor_map(KernelSpec *ks, const char *tensor, const char *meaning, TensorMapSpec map);

/* Row-wise arithmetic on 16-byte chunks of 16-bit elements. */
/* v[0..3] = the 16 bytes at addr (global) */
void ld16_global(Kctx *k, Reg *v, Reg addr);
/* sum of x[i] * y[i] over the 8 elements of two chunks, in f32 */
Reg  dot8_packed(Kctx *k, DType dt, const Reg *x, const Reg *y);
/* the two 16-bit values of w (fp16 or bf16) as f32: the low half to lo */
void unpack2(Kctx *k, DType dt, Reg w, Reg *lo, Reg *hi);
/* 8 f32 values rounded into one chunk (4 packed pairs, the lower element low) */
void f32x8_pack(Kctx *k, DType dt, const Reg *f, Reg *out);
#endif
