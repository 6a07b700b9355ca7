/* tcgen05 (UMMA) building blocks of a single-CTA (cta_group::1) kernel:
 * instruction and shared-memory descriptors, the canonical operand layouts
 * the MMA reads, copies into them, and the ordering rules around TMEM and
 * mbarriers. Bit positions: PTX ISA "tcgen05 Instruction descriptor" and
 * "tcgen05 Shared Memory Descriptor"; layouts: "tcgen05 canonical layouts"
 * (PTX_FACTS §3). */
#ifndef PTXGEN_UMMA_H
#define PTXGEN_UMMA_H
#include "kctx.h"
#include "dtype.h"

/* kind::f16 with fp32 accumulators: A and B of type dt, M x N, each operand
 * K-major (0) or MN-major (1). A from TMEM must be K-major. */
uint32_t umma_idesc_f16(DType dt, int m, int n, int a_mn, int b_mn);

/* A shared-memory operand: its canonical layout's swizzle width (32, 64 or
 * 128 bytes), LBO and SBO in bytes. */
typedef struct { int swizzle, lbo, sbo; } UmmaLayout;

/* The descriptor of an operand starting at byte off of the dynamic shared
 * memory. The start must sit on the swizzle pattern's first row (base offset
 * 0): regions are 1024-aligned. */
Reg  umma_desc(Kctx *k, int off, UmmaLayout l);
/* desc moved by `bytes` along its start address (a K step inside an atom, the next atom). */
Reg  umma_desc_at(Kctx *k, Reg desc, int bytes);

/* K-major, 128-byte swizzle, 16-bit elements: a [rows][cols] tile stored as
 * cols/64 slabs of [rows][64], each row 128 bytes, 16-byte chunk c of row r at
 * chunk c ^ (r & 7). Slab s starts at s * rows * 128. The same bytes are the
 * MN-major operand whose MN runs along cols (atoms at LBO = rows * 128). */
#define UMMA_SLAB_COLS 64
static inline UmmaLayout umma_kmajor128(void) { return (UmmaLayout){128, 16, 1024}; }
static inline UmmaLayout umma_mn128(int rows) { return (UmmaLayout){128, rows * 128, 1024}; }

/* Rows [0, rows) of a [rows][cols] 16-bit tensor at src + r * stride into a
 * K-major 128B tile, one (row, slab) per thread and pass; rows >= nrows are
 * zero-filled without a read. Adds to the current cp.async group. */
void umma_tile_copy(Kctx *k, Reg tile_addr, int rows, int cols, int threads, Reg src, Reg stride, Reg nrows);

/* MN-major operand written by threads: row r (one K index) of `w` bytes
 * (32, 64 or 128: the swizzle width) at tile + r * w, chunk c of it
 * at chunk c ^ ((r * w / 128) & (w / 16 - 1)). SBO = 8 rows. */
static inline UmmaLayout umma_mn_rows(int w) { return (UmmaLayout){w, 16, 8 * w}; }   /* one atom: LBO unused */
Opnd umma_mn_row_chunk(Kctx *k, Reg tile_addr, Reg r, int w, int c);

/* The prologue of a tcgen05 kernel: n mbarriers at shared offset `bars` (bar[i]: the address of
 * the i-th, 8 bytes each) initialised by thread 0 with counts[i] (an immediate or a register); warp 0
 * allocates `cols` TMEM columns (pair: cta_group::2, warp 0 of each CTA) into the word after them;
 * the CTA (pair: the cluster) syncs and every thread reads the base. Returns it; *tq is the base at
 * this warp's lane quarter (warp % 4). */
Reg  umma_prologue(Kctx *k, int bars, int n, const Opnd *counts, Reg *bar, int cols, int pair, Reg *tq);
/* tq = taddr at this warp's lane quarter (warp % 4), as the prologue's; a role past setmaxnreg may derive its own
 * rather than keep the prologue's live across it (ptxas spilled it there) */
void umma_lane_quarter(Kctx *k, Reg taddr, Reg tq);
/* The end of a tcgen05 kernel: every thread (pair: of both CTAs) past its TMEM work, then warp 0
 * gives the prologue's columns back. */
void umma_epilogue(Kctx *k, Reg taddr, int cols, int pair);
/* A predicate that is always v (enable-input-d operands take a predicate, not an immediate). */
Reg  umma_const_pred(Kctx *k, int v);
/* In an issuing warp whose lanes all wait, only `leader` goes on: the others branch to the returned
 * label, which the caller places after the group it issues. */
int  umma_leader_only(Kctx *k, Reg leader);

/* n columns of this thread's TMEM lane from col + off (col: the warp's lane-quarter address) into v, 16 at a
 * time (tcgen05.ld 32x32b.x16), then the wait for them. */
void umma_tmem_load(Kctx *k, Reg col, int off, Reg *v, int n);
/* The roles of a single-CTA tcgen05 kernel of 6 warps: warps 0-3, whose TMEM lane quarters are the MMAs' rows,
 * run lanes(ctx) (the role `name` in the PTX's comments), warp 4 issuer(ctx) (its lanes wait, lane 0 issues),
 * warp 5 producer(ctx); all then go on. */
typedef void (*UmmaRole)(Kctx *k, void *ctx);
void umma_roles6(Kctx *k, const char *name, UmmaRole lanes, UmmaRole issuer, UmmaRole producer, void *ctx);

/* Thread ordering around tcgen05 work: fence::before_thread_sync, bar.sync 0,
 * fence::after_thread_sync. */
void umma_sync(Kctx *k);
/* Wait until the mbarrier at bar completes the phase with parity `parity`
 * (register), then order later tcgen05 work after it. */
void umma_wait(Kctx *k, Reg bar, Reg parity);
/* The same at cluster scope: for a barrier a peer CTA arrives on (a remote arrival, a multicast commit). */
void umma_wait_cluster(Kctx *k, Reg bar, Reg parity);
/* umma_sync across a CTA pair: the fences around barrier.cluster (every thread of both CTAs). */
void umma_pair_sync(Kctx *k);
#endif
