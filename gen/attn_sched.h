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
 * apart. order: the tiles go out longest first (below), the class counts at slots + SCHED_SLOTS_BYTES. */
typedef struct { int slots; Reg full0, empty0; int order; } TileSlots;
#define SCHED_SLOTS_BYTES 16   /* both slots */
/* The producer thread's next tile: the counter's old value (ordered, where sched_order_begin's `ordered` holds: the
 * tile that many places down the class order); the launch's last fetch stores 0 (and the class counts). */
Reg sched_next(Kctx *k, const TileSlots *ts, Reg tiles, Reg ordered);

/* Longest first (block-sparse): tiles of few key blocks run last, so that the launch ends on short tiles rather than
 * on the one long tile a CTA took at the end (the tail is about half a tile: at 10 % of the blocks a tile is an
 * eighth of a CTA's work). The key-list kernel files tile t under the class of its key-block count c,
 * min(floor(log2(c + 1)), SCHED_CLASSES - 1), in the workspace tile_order [SCHED_CLASSES][tiles] at a place counted
 * by an atomic on its class count in tile_classes [SCHED_CLASSES]. The producer hands out fetch i < tiles as the
 * i-th tile in class order from the top, taking the counts once at its start. Within a class the order is the
 * atomics', which mixes the heads' tiles: CTAs running at once then share less of their K and V in L2, so the order
 * is taken only where the tiles differ much, their nonempty classes three or more apart; else (and where the counts
 * do not sum to tiles: a main kernel launched without its list kernel, the counts 0) fetch i is tile i. The launch's
 * last fetch sets the counts back to 0. Each tile is computed the same wherever it runs. (A stable order, each class
 * in the tiles' own order, took a kernel of its own: its launch cost more than the order gained, 8436914.) */
#define SCHED_CLASSES 8
_Static_assert(SCHED_CLASSES % 4 == 0, "the counts move as v4 words");
#define SCHED_ORDER_BYTES (SCHED_SLOTS_BYTES + 4 * SCHED_CLASSES)   /* the slots and the class counts */
/* Whether a set's persistent forward takes its tiles in this order (its key-list kernel files them): block-sparse */
static inline int sched_ordered(const AttnDesc *d) { return d->tile.persist > 0 && d->block_m > 0; }
/* The two workspaces (tile_classes kept zero, tile_order) of tiles of bm query rows, at ws; returns 2. */
int  sched_order_workspaces(WorkspaceSpec *ws, int bm);
/* Their parameters in a kernel's ABI; who: what the kernel does with them. */
void sched_order_abi(KernelSpec *ks, const char *who);
/* The key-list kernel: lane 0 files tile (m, h, b) of count key blocks; mt, hq, nb: the grid's tiles per head, heads,
 * batches (it has one warp a tile). */
void sched_order_file(Kctx *k, Reg count, Reg m, Reg h, Reg b, Reg mt, Reg hq, Reg nb, int last_first);
/* The producer thread, before its first fetch: the class counts into shared memory; returns whether to take the
 * order: they sum to tiles and the nonempty classes are three or more apart. */
Reg  sched_order_begin(Kctx *k, const TileSlots *ts, Reg tiles);
/* The producer thread hands tile t and the word w to the consumers as their it-th (0, 1, ..): slot it % 2 once it
 * was read. */
void sched_publish(Kctx *k, const TileSlots *ts, Reg it, Reg t, Reg w);
/* The consumer threads take their it-th tile and the word (then free the slot); both the same in every lane. */
Reg sched_take(Kctx *k, const TileSlots *ts, Reg it, Reg *w);
#endif
