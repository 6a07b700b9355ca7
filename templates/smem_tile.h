/* A tile of 16-bit elements in shared memory: rows of `cols` elements, each
 * row cut into 16-byte chunks, chunk c of row r stored at chunk
 * (c & ~7) | ((c ^ r) & 7). Eight consecutive rows read at one logical chunk
 * (what ldmatrix and cp.async do) then hit eight different 16-byte bank groups,
 * so neither the async copies nor the fragment loads conflict. */
#ifndef PTXGEN_SMEM_TILE_H
#define PTXGEN_SMEM_TILE_H
#include "kctx.h"

typedef struct { int rows, cols, off; } SmemTile;

static inline int tile_row_bytes(SmemTile t) { return t.cols * 2; }
static inline int swz_chunk(int row, int chunk) { return (chunk & ~7) | ((chunk ^ row) & 7); }

/* Global -> shared copies of whole tiles with cp.async (16 B per copy),
 * spread over `threads` threads. Rows past the tensor's end are zero-filled
 * and their addresses clamped, so no byte outside the tensor is read. One
 * loader serves every tile with the same row width: the per-thread state is
 * the same and the tile's offset is an immediate. */
typedef struct {
    int cols, threads;
    int cpr, rpp;           /* chunks per row, rows per pass */
    Reg row0;               /* first row of this thread */
    Reg col64;              /* this thread's chunk offset in bytes (b64) */
    Reg dst[8];             /* shared address by (pass rows % 8) pattern */
    int have[8];
} TileLoader;

/* max_rows: the most rows any tile issued through it has. */
void tl_init(Kctx *k, TileLoader *tl, int cols, int max_rows, int threads);
/* Copies rows [row_start, row_start + t.rows) of a tensor whose row r begins at
 * base + r * stride_bytes into t; rows >= nrows are zero-filled. Adds to the
 * current cp.async group (the caller commits). */
void tl_issue(Kctx *k, TileLoader *tl, SmemTile t, Reg base, Reg stride_bytes, Reg row_start, Reg nrows);
/* The same into t moved by `shift` bytes (a runtime stage offset, see stages.h). */
void tl_issue_at(Kctx *k, TileLoader *tl, SmemTile t, Reg shift, Reg base, Reg stride_bytes, Reg row_start, Reg nrows);
/* Rows of `pack` (a power of two) interleaved heads: tile row r is token tok_start + r / pack of head r % pack, at
 * base + token * tok_stride + head * head_stride (bytes); rows of tokens >= ntok or heads >= nheads are zero-filled. */
void tl_issue_packed(Kctx *k, TileLoader *tl, SmemTile t, Reg base, Reg tok_stride, Reg head_stride, int pack,
                     Reg tok_start, Reg ntok, Reg nheads);

/* ldmatrix addressing: lane L points at tile row (lane_row + row_off) and
 * logical chunk 2*kk + sel. Every row offset used is a multiple of 8, so
 * (row & 7) == (lane & 7) and the swizzled chunk is
 *   8*(kk >> 2) + ((2*(kk & 3) + sel) ^ (lane & 7)).
 * Rows start 128-byte aligned, so the (kk & 3) part is an XOR of 32*(kk & 3)
 * on one per-lane base: one register per operand instead of four. */
typedef struct { SmemTile t; Reg base; } LdsmBases;

void ldsm_bases(Kctx *k, LdsmBases *lb, SmemTile t, Reg lane_row, Reg sel);
/* The same with the chunk pairs counted from a runtime `pair` (a warp's own
 * columns): ldsm_addr(.., kk) then reads pair + kk, exact when kk == 0 or
 * pair is a multiple of 4. */
void ldsm_bases_at(Kctx *k, LdsmBases *lb, SmemTile t, Reg lane_row, Reg sel, Reg pair);
/* Lane rows and chunk selector of an x4 load of two n8 x k16 B tiles (or, with
 * .trans, of an m16 x k16 A tile from a [k][m] tile): lanes 0-15 address rows
 * 0-7, 16-31 rows 8-15, each at chunk (lane >> 3) & 1. */
void ldsm_b_lanes(Kctx *k, Reg *row, Reg *sel);
/* Lane rows of an x4 load of an m16 x k16 A tile (or, with .trans, of two B
 * tiles from a [k][n] tile): l15 = lane & 15, hi = lane >> 4 (the chunk
 * selector), row = row0 + l15. */
void ldsm_a_lanes(Kctx *k, Reg row0, Reg *l15, Reg *hi, Reg *row);
Opnd ldsm_addr(Kctx *k, const LdsmBases *lb, int row_off, int kk);
#endif
