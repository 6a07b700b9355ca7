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
/* The producer thread's next tile: the counter's old value; the launch's last fetch stores 0. */
Reg sched_next(Kctx *k, Reg tiles);

/* Two slots of 8 bytes at shared offset `slots` (a tile index and a word that goes with it), and their full barriers
 * from full0 (count 1: the producer's arrive) and empty ones from empty0 (count: every consumer thread), 8 bytes
 * apart. */
typedef struct { int slots; Reg full0, empty0; } TileSlots;
#define SCHED_SLOTS_BYTES 16   /* both slots */
/* The producer thread hands tile t and the word w to the consumers as their it-th (0, 1, ..): slot it % 2 once it
 * was read. */
void sched_publish(Kctx *k, const TileSlots *ts, Reg it, Reg t, Reg w);
/* The consumer threads take their it-th tile and the word (then free the slot); both the same in every lane. */
Reg sched_take(Kctx *k, const TileSlots *ts, Reg it, Reg *w);
#endif
