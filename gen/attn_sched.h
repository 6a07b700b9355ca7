/* Persistent CTAs for attn_fwd (tile key persist = P > 0): the grid is min(tiles, P) CTAs, and each walks tiles
 * (row block m, query head h, batch b; m fastest, as a grid of one CTA per tile would launch them) until none is
 * left. Each CTA's producer fetches its tiles from a counter in the workspace tile_counter (an atomic add), so a CTA
 * whose tiles are short takes more of them, and a CTA that only starts once the others are done (a GPU with fewer
 * SMs than P) finds none left rather than holding a tile back to the end; it hands each tile to its consumers
 * through two shared-memory slots guarded by mbarriers. The counter starts at 0 and the kernel leaves it 0: a
 * launch makes tiles + grid fetches (every CTA one per tile it runs and one past the end), and the one that reads
 * tiles + grid - 1 is the last atomic on it, so its thread stores 0. Any grid is correct; P = the SM count is the
 * fast one. The point is the prologue and epilogue: the producer loads the next tile's Q and first K/V
 * blocks while the consumers finish and store this one, which a CTA per tile pays at every tile. */
#ifndef PTXGEN_ATTN_SCHED_H
#define PTXGEN_ATTN_SCHED_H
#include "attn_emit.h"

/* The launch pieces: grid x min(cdiv(s_q, bm) h_q b, persist), y = z = 1; the size b; the workspace param. */
void sched_abi(KernelSpec *ks, int bm, int persist);
/* The set's workspace tile_counter (4 bytes, zeroed once; the kernel leaves it zeroed). */
WorkspaceSpec sched_workspace(void);
/* How many tiles: cdiv(s_q, bm) h_q b. */
Reg sched_tiles(Kctx *k, int bm);
/* Tile t's row block, head and batch; last_first: row blocks from the last (causal: the longest rows first). */
void sched_coords(Kctx *k, Reg t, int bm, int last_first, Reg *m, Reg *h, Reg *b);

/* Two slots of 8 bytes at shared offset `slots` (a tile index and a word that goes with it), and their full barriers
 * from full0 (count 1: the producer's arrive) and empty ones from empty0 (count: every consumer thread), 8 bytes
 * apart. order: the tiles go out longest first (below). */
typedef struct { int slots; Reg full0, empty0; int order; } TileSlots;
#define SCHED_SLOTS_BYTES 16   /* both slots */
/* The producer thread's next tile: the counter's old value, or (ts->order) the tile that many places down the
 * order; past the tiles, the value itself. The launch's last fetch stores 0. */
Reg sched_next(Kctx *k, const TileSlots *ts, Reg tiles);

/* Longest first (block-sparse): tiles of few key blocks run last, so that the launch ends on short tiles rather than
 * on a long tile one CTA took at the end (a tail of about half a tile: at 10 % of the blocks a tile is an eighth of
 * a CTA's work). The key-list kernel files tile t's class, min(floor(log2(count + 1)), SCHED_CLASSES - 1) of its
 * key-block count, at tile_order[t] and counts it in tile_classes (an atomic); a one-CTA order kernel then writes
 * the tiles class by class from the top, each class in the tiles' own order, at tile_order[tiles + i], and sets the
 * counts back to 0. In the tiles' own order the CTAs running at once walk few heads, which share their K and V in
 * L2: an order by the atomics, tried first, cost 2-3 % at full density on the H200. Counts that do not sum to the
 * tiles (the list kernel run again without the order kernel) give the tiles' own order. */
#define SCHED_CLASSES 8
/* The two workspaces (tile_classes kept zero, tile_order) of tiles of bm query rows, at ws; returns 2. */
int  sched_order_workspaces(WorkspaceSpec *ws, int bm);
/* Their parameters in a kernel's ABI; who: what the kernel does with them. */
void sched_order_abi(KernelSpec *ks, const char *who);
/* The key-list kernel: lane 0 files tile (m, h, b) of count key blocks; mt, hq, nb: the grid's tiles per head, heads,
 * batches (it has one warp a tile). */
void sched_order_file(Kctx *k, Reg count, Reg m, Reg h, Reg b, Reg mt, Reg hq, Reg nb, int last_first);
/* The order kernel of tiles of bm query rows: its plan, and its spec and PTX into ks, module. */
void sched_order_plan(const AttnDesc *d, int bm, Plan *p);
void sched_order_build(const AttnDesc *d, int bm, KernelSpec *ks, Buf *module);
/* The producer thread hands tile t and the word w to the consumers as their it-th (0, 1, ..): slot it % 2 once it
 * was read. */
void sched_publish(Kctx *k, const TileSlots *ts, Reg it, Reg t, Reg w);
/* The consumer threads take their it-th tile and the word (then free the slot); both the same in every lane. */
Reg sched_take(Kctx *k, const TileSlots *ts, Reg it, Reg *w);
#endif
