/* Copies of whole rows into a swizzled shared tile where each row has its own
 * source address: gathered rows (top-k slots of MLA) or rows whose width has
 * no thread split TileLoader can use (576 columns = 72 chunks). Thread tid
 * owns row tid / tpr and copies its chunks tid % tpr + tpr * i, so each
 * thread needs its row's address once per tile. The tile is either the
 * smem_tile.h layout (each row cols * 2 bytes) or, for wgmma operands,
 * cols / 64 slabs of [rows][64] with 128-byte rows (wgmma.h). */
#ifndef PTXGEN_ROW_GATHER_H
#define PTXGEN_ROW_GATHER_H
#include "smem_tile.h"

typedef struct {
    int rows, cols, tpr;       /* threads per row: divides 8 and cols / 8 */
    Reg row, part;             /* this thread's row and first chunk */
    Reg dst[8];                /* per (chunk & 7) / tpr pattern: shared address of the swizzled chunk */
    int npat;
    int slabs;                 /* 1: 64-column slabs of `rows` rows (wgmma.h); 0: smem_tile.h rows */
    int passes, pass_rows;     /* the rows take `passes` passes of pass_rows = threads / tpr: row + pass_rows * p */
    int hinted;                /* 1: each copy carries `policy`, an L2 cache policy (createpolicy) */
    Reg policy;
} RowGather;

/* For tiles of `rows` x `cols` copied by `threads` threads (threads = rows * tpr). */
void rg_init(Kctx *k, RowGather *g, int rows, int cols, int threads);
/* The same into 128B-swizzled slabs of [rows][64], the layout a TMA copy writes and wgmma reads, with tpr
 * threads per row: tpr = 8 makes a warp's copy four whole 128-byte rows of one slab, four cache lines, where
 * 2 per row touch sixteen. Rows past threads / tpr take further passes. */
void rg_init_slabs(Kctx *k, RowGather *g, int rows, int cols, int threads, int tpr);
/* Issues this thread's copies of its row into t (moved by `shift` bytes, or
 * NOGUARD): 16-byte cp.async from src (b64, the row's first byte), each of
 * `bytes` 16 (copy) or 0 (zero-fill, no read of src). */
void rg_issue(Kctx *k, const RowGather *g, SmemTile t, Reg shift, Reg src, Reg bytes);
/* The same for this thread's row of pass `pass` (row + pass_rows * pass). */
void rg_issue_pass(Kctx *k, const RowGather *g, SmemTile t, Reg shift, int pass, Reg src, Reg bytes);
/* The same for columns [col0, col0 + ncols) of the row only (src still the row's first byte): col0 a
 * multiple of 64 (a slab, or a group of 8 chunks of one swizzle pattern), ncols a multiple of 8 tpr. */
void rg_issue_cols(Kctx *k, const RowGather *g, SmemTile t, Reg shift, int pass, Reg src, Reg bytes, int col0,
                   int ncols);
#endif
