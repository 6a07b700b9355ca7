/* What the wgmma attention kernels share: TMA copies of [b, s, h, d] row tiles into 128B-swizzled
 * slabs, ring slots freed by the consumer warps, stage offsets of descriptors, and the registers
 * setmaxnreg moves from a TMA producer to the consumer warpgroups. */
#ifndef PTXGEN_ATTN_WG_H
#define PTXGEN_ATTN_WG_H
#include "attn_emit.h"

/* setmaxnreg of the producer warpgroup: one thread issues TMA, the rest exit */
#define WG_PRODUCER_REGS 24
/* The setmaxnreg counts of a producer of `producer` warps and cw consumer warpgroups (0: no setmaxnreg;
 * then wg_consumer_regs is the launch's share, which the spec names as .maxnreg). */
int wg_producer_regs(int cw, int producer);
int wg_consumer_regs(int cw, int producer);
/* FA3's 80-row steps as defaults (the d 256 forward's keys, the d 128 backward's queries): the default tile's
 * step *step (one of d's tile fields) stays where the request did not ask key `key`, the rest of the request allows
 * it (`allowed`: a mask's blocks are whole steps, the other keys take it) and `plan` fits the tile with it; else it
 * falls back to `fallback`. */
void wg_default_step(AttnDesc *d, int *step, const char *key, int allowed, int fallback, const char *asked,
                     void (*plan)(const AttnDesc *, Plan *));
/* A 4-D map over a [b, s, h, d] tensor, innermost first: (d, h, s, b), one 64-column slab of `rows`
 * rows of one head per copy; rows past s read as zeros (loads) or are not written (stores). strides: the
 * byte expressions of h, s and b. */
void wg_bshd_map(KernelSpec *ks, const char *param, const char *tensor, const char *dt, int d, const char *heads,
                 const char *seq, int rows, const char *const strides[3]);
/* The same with a box of `heads` consecutive heads x rows (each row's heads innermost in shared memory). */
void wg_bshd_map_heads(KernelSpec *ks, const char *param, const char *tensor, const char *dt, int d, const char *heads,
                       const char *seq, int box_heads, int rows, const char *const strides[3]);
/* One [rows][cols] tile of head `head`, rows from `row`, batch b, by TMA into cols/64 slabs at shared
 * offset dst + stage_off, completing on barrier bar. */
void wg_tma_rows(Kctx *k, Reg map, int dst, int rows, int cols, Reg stage_off, Reg head, Reg row, Reg b, Reg bar);
enum { WG_MAX_PAGES = 16 };   /* pages a key block spans at most: bn 256 over pages of 16 */
/* Where a key block's rows come from, for its TMA loads: rows from row of batch (or, paged, page) coordinate tb; or,
 * in pages shorter than the block (spans), page j's rows from its first, page ids[j] */
typedef struct { Reg row, tb; int page, spans; Reg ids[WG_MAX_PAGES]; } WgKeyBlock;
/* The block of rows keys from row of sequence b, whose batch coordinate is tb: paged (page_size), its page and row
 * made the row within it (paged_page), or where it spans pages the id of each (paged_sub_page; none read for a page
 * that starts past s_k) */
WgKeyBlock wg_key_block(Kctx *k, int page_size, int rows, Reg b, Reg row, Reg s_k, Reg tb);
/* The block's rows of one tensor by TMA into cols/64 slabs at dst + stage_off (wg_tma_rows), or, spanning pages, a
 * box of a page's rows per page and slab (wg_paged_map's box) */
void wg_tma_key_block(Kctx *k, Reg map, int dst, int rows, int cols, Reg stage_off, Reg head, const WgKeyBlock *kb, Reg bar);
/* A predicate: this thread is thread 0 of its warpgroup (the one that issues the group's TMA stores). */
Reg wg_lead(Kctx *k);
/* One tensor a warpgroup stores: its map parameter, its staging slabs at shared offset src, its columns. */
typedef struct { const char *map; int src, cols; const Reg *col0; /* NULL: from column 0 */ } WgStore;
/* The end of an epilogue: once warpgroup wg's threads staged their rows (fenced for the async proxy, then
 * named barrier bar of its 128 threads), its thread 0 stores the group's 64 rows of each of the n tensors
 * (rows 64 wg of the slabs, slab_bytes apart) to rows row0 + 64 wg of head `head`, batch b, and waits
 * until the copies have read shared memory. */
void wg_store_group(Kctx *k, Reg bar, Reg wg, Reg row0, const WgStore *st, int n, int slab_bytes, Reg head, Reg b);
/* The same without that wait, so the warpgroup goes on while the copy reads: wg_store_wait before its threads write
 * the slabs again, and before the kernel ends. */
void wg_store_group_async(Kctx *k, Reg bar, Reg wg, Reg row0, const WgStore *st, int n, int slab_bytes, Reg head, Reg b);
/* Thread 0 of the warpgroup waits until its copies read shared memory. */
void wg_store_wait(Kctx *k);
/* Varlen: warpgroup wg's 64 staged rows (cols wide, slabs of slab_bytes at shared offset src) by plain 16-byte
 * stores to base + (64 wg + r) * rs, rows below rows_left only; its threads meet at barrier bar first. */
void wg_store_rows_masked(Kctx *k, Reg bar, Reg wg, int src, int cols, int slab_bytes, Reg base, Reg rs, Reg rows_left);
/* Varlen's TMA map over a packed [total, heads, d] tensor: rank 4 as the padded maps, rows total (at least 1: a
 * map needs extents), batch 1. param, tensor: "q_map", "q" (q, k, v, o, do); total: "total_q" or "total_k". */
/* The same over a paged cache (k or v, [num_pages, page_size, h_kv, d]): rows of one page, the page the outer
 * coordinate (attn_fwd's paged KV). */
void wg_paged_map(KernelSpec *ks, const char *param, const char *tensor, const char *dt, int d, int page_size, int rows);
void wg_packed_map(KernelSpec *ks, const char *param, const char *tensor, const char *dt, int d, const char *heads,
                   const char *total, int rows);
/* The same for one tensor whose warpgroup owns columns, not rows: nslabs slabs (slab_bytes apart from the
 * shared address src, a register) to columns col0 .. col0 + 64 nslabs of row `row`, head `head`, batch b. */
void wg_store_cols(Kctx *k, Reg bar, const char *map, Reg src, int nslabs, int slab_bytes, Reg col0, Reg head, Reg row,
                   Reg b);
/* The kernel's two roles once the CTA met at barrier 0 (its mbarriers initialised): the threads for which
 * is_consumer holds run consumer(ctx), the others producer(ctx); both then reach the kernel's end. */
typedef void (*WgRole)(Kctx *k, void *ctx);
void wg_roles(Kctx *k, Reg is_consumer, WgRole producer, WgRole consumer, void *ctx);
/* One copy of side(ctx, c) for each consumer warpgroup c < n, the warps whose warpgroup is wg (a register) running
 * theirs, so that in each copy c, and what derives from it (shared-memory descriptors), is a constant; pred is a
 * predicate register the branches use. */
typedef void (*WgSide)(Kctx *k, void *ctx, int c);
void wg_each_consumer(Kctx *k, Reg wg, Reg pred, int n, WgSide side, void *ctx);
/* Pass `it` over a ring of `stages` slots whose barriers start at bar0 (8 bytes apart): that slot's barrier
 * and the parity its pass completes, the same slot's barrier in the twin ring from twin0 (full <-> empty),
 * and the slot's byte offset from slot 0 (slots slot_bytes apart). */
Reg wg_ring_slot(Kctx *k, Reg bar0, Reg twin0, int stages, Reg it, int slot_bytes, Reg *bar, Reg *parity, Reg *twin);
/* Every warp's share of the group's products is done: lane 0 of each arrives on the slot's empty barrier,
 * and the ring's pass counter moves on. */
void wg_release(Kctx *k, Reg empty, Reg it);
/* desc moved by a runtime stage offset in bytes. */
Reg wg_desc_plus(Kctx *k, Reg desc, Reg stage);
#endif
