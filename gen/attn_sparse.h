/* Block-sparse attention (KERNELS.md "Block-sparse"): the tiles each CTA visits.
 *
 * The caller gives a block mask [b, n_mask_heads, mask_rows, mask_cols] int32 at block_m x block_n (multiples of
 * the kernels' tiles) and head_mask_type [h_q] (0: dense; k > 0: mask head k - 1). Before the set's other kernels,
 * a small kernel per kind of list turns mask, head types, causal and lengths into lists the main kernels walk:
 *   key lists   "key_lists"   [b, h_q, Mt, 1 + Nt]: per query tile its count, then its key tiles, ascending
 *   query lists "query_lists" [b, h_kv, Nt, 1 + group Mt]: per key tile its count, then entries
 *               (query head within the kv head's group) * Mt + query tile, head-major and ascending
 * with Mt = cdiv(s_q, bm), Nt = cdiv(s_k, bn) of the launch's s_q, s_k. A tile is listed when its head is dense or
 * its mask block is set, it holds rows of the (varlen: its sequence's) lengths, and causal lets one of its keys
 * reach one of its queries; one warp builds each list by ballots, 32 candidates at a time. A head type outside
 * [0, n_mask_heads] lists nothing (never a read off the mask); ptxgen_head_mask_check refuses it before a launch. */
#ifndef PTXGEN_ATTN_SPARSE_H
#define PTXGEN_ATTN_SPARSE_H
#include "attn_emit.h"

/* The tiles a list kind is built at (bm = 0: that kind is not built) */
typedef struct { int bm, bn; } SparseTiles;
/* order: the key-list kernel also files each query tile by its count for a persistent main kernel, which hands
 * the longest out first (attn_sched.h). early: the main kernel is a programmatic dependent of the list kernel
 * (KernelSpec.pdl), which lets it launch as the list kernel starts (griddepcontrol.launch_dependents). */
typedef struct SparseLists { SparseTiles keys, queries; int order, early; } SparseLists;

/* Whether the kind's first kernel follows list kernels and so, on sm_90 and later, is a programmatic dependent of
 * the last one (KernelSpec.pdl), as each list kernel after the first is of the one before */
static inline int sparse_follows(const AttnDesc *d) { return d->block_m > 0 && arch_has_pdl(d->arch); }

/* Refuses mask blocks that are not whole tiles of the lists' kernels; err names the tile. */
int  sparse_check(const AttnDesc *d, const SparseLists *l, const char *who, char *err, size_t errlen);
/* The list kernels of l (0, 1 or 2): their plans, specs and workspaces, their PTX. */
int  sparse_plan(const AttnDesc *d, const SparseLists *l, Plan *plans);
void sparse_build(const AttnDesc *d, const SparseLists *l, KernelSet *ks, Buf *module);

/* A main kernel's view of its list: the parameter (abi_sparse_keys / abi_sparse_queries, in its ABI) and the address
 * of the count of one list, whose entries follow. */
void abi_sparse_keys(KernelSpec *ks);
void abi_sparse_queries(KernelSpec *ks);
/* (batch b, query head h, query tile m)'s key list of tiles bm x bn */
Reg  sparse_key_list(Kctx *k, int bm, int bn, Reg b, Reg h, Reg m);
/* (batch b, kv head kvh, key tile n)'s query list; *mt: query tiles per head (the entries' radix) */
Reg  sparse_query_list(Kctx *k, int bm, int bn, Reg b, Reg kvh, Reg n, Reg *mt);
/* list[1 + i]: entry i */
Reg  sparse_entry(Kctx *k, Reg list, Reg i);
/* entry i, or 0 when the list has no entry i (count <= i): a tile a prologue may load */
Reg  sparse_entry_or0(Kctx *k, Reg list, Reg count, Reg i);

/* The key loop over a key list: t = first .. count - 1 over entries n = list[1 + t], step(n) masked for n >= n_full
 * (ragged or causal tiles), one copy of the step body per kind with uniform branches. kl->t is the position the
 * step is at (for its next entry: sparse_next). */
typedef struct { Reg list, count, t, next; } KeyList;   /* next: entry t + 1 (0 past the list), loaded by the loop */
void sparse_key_loop(Kctx *k, KeyStep step, void *ctx, KeyList *kl, int first, Reg n_full, Reg n_max);
/* The same walk for a step whose unmasked body needs no key block (the wgmma forward's consumers, whose producer
 * loads the blocks), given u = sparse_unmasked_entries: the entries below n_full, a prefix of the ascending list, run
 * without reading an entry (step's n is the position there); only masked steps load theirs. A list entry loaded a
 * step ahead still held the warp where ptxas moved it into a uniform register, as soon as it was loaded (H200: a
 * 100 % block mask ran 2-3 % faster without, the other warpgroup no longer waiting on it at the ping-pong barrier). */
void sparse_key_loop_prefix(Kctx *k, KeyStep step, void *ctx, KeyList *kl, int first, Reg u, Reg n_max);
/* How many of kl's entries are below n_full (in every lane of the warp; tiles bm x bn) */
Reg  sparse_unmasked_entries(Kctx *k, const KeyList *kl, int bm, int bn, Reg n_full);
/* (batch b, query head h, query tile m)'s key list: its address, count and a position register, into kl */
void sparse_key_list_at(Kctx *k, KeyList *kl, int bm, int bn, Reg b, Reg h, Reg m);
/* The entry after kl->t into *next, or a branch to skip (a label the caller places) when kl->t is the last. */
void sparse_next(Kctx *k, const KeyList *kl, Reg next, int skip);
#endif
