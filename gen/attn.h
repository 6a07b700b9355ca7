/* The attention kernel description: everything fixed at generation time.
 * Shapes (batch, lengths, heads) and strides are runtime parameters. */
#ifndef PTXGEN_ATTN_H
#define PTXGEN_ATTN_H
#include "arch.h"
#include "kernel.h"
#include "tilecfg.h"
#include "dtype.h"

/* attn_fwd: a CTA owns bm query rows and steps over keys bn at a time.
 * attn_bwd: a CTA owns bn key rows and steps over queries bm at a time. */
typedef struct {
    int bm;      /* query rows per CTA (fwd) / per inner step (bwd) */
    int bn;      /* key rows per inner step (fwd) / per CTA (bwd) */
    int warps;   /* warps per CTA, stacked along the rows the CTA owns */
    int deterministic;   /* bwd: dQ without atomics, bit-identical across runs */
    int stages;  /* wgmma: depth of the K and V rings */
    int pingpong;   /* wgmma: consumer warpgroups take turns issuing their products (FA3's ping-pong) */
    int producer;   /* wgmma: warps of the TMA producer (1, or 4: a warpgroup that lends registers by setmaxnreg) */
    int pack;       /* tcgen05 fwd: query heads of one kv head that share a CTA's 128 rows (0 or 1: one head) */
    int dqbufs;     /* wgmma bwd: dQ staging buffers between the consumers and the dQ writer (0 or 1: one) */
    int poly;       /* tcgen05 fwd: 0, or every poly-th exp2 of a softmax row by a polynomial on the FMA units */
    int qtiles;     /* tcgen05 fwd: Q tiles of 128 rows per CTA (0 or 1: one; 2: FA4's M = 2 x 128) */
    int ctas;       /* tcgen05 fwd: CTAs per MMA (0 or 1: one; 2: a CTA pair, cta_group::2 with M = 256) */
    int dsplit;     /* tcgen05 bwd: CTAs per key block, each owning d / dsplit columns of dK, dV and dQ (0 or 1: one) */
    int persist;    /* wgmma fwd: 0 a CTA per tile, else at most this many persistent CTAs walk the tiles (attn_sched.h) */
    int qbufs;      /* wgmma fwd, persistent: Q tile buffers (0 or 1: one; 2: the next tile's Q loads during this one) */
} AttnTile;

#define ATTN_DECODE_MAX_SQ 16   /* query tokens per sequence up to which attn_fwd counts a problem as decode */
typedef struct {
    const ArchInfo *arch;
    DType dtype;
    int d, dv;
    int causal;
    AttnTile tile;
    /* a decode-shaped problem the request's shape class names (0: none): query tokens (1 .. ATTN_DECODE_MAX_SQ),
     * query heads per kv head */
    int decode_sq, decode_group;
    int varlen;       /* packed [total, h, d] tensors with cu_seqlens_q/k (KernelKind.varlen_ok kinds) */
    int block_m, block_n;   /* block-sparse mask blocks, multiples of the tiles (KernelKind.sparse kinds); 0: dense */
    int page_size;          /* paged KV cache rows per page (KernelKind.decode_tile kinds); 0: contiguous k, v */
    int splitkv;            /* split-KV with a combine kernel (KernelKind.decode_tile kinds) */
} AttnDesc;

extern const TileKey attn_fwd_keys[];
extern const int attn_fwd_nkeys;

AttnTile attn_fwd_default_tile(const ArchInfo *a, int d, int dv);
/* Structural tile rules (warp rows, head-dim coverage); err names the rule. */
int  attn_fwd_check_tile(const AttnDesc *d, char *err, size_t errlen);
/* A decode shape's default tile: the fewest rows holding its tokens of the packed heads (attn_desc.c). */
void attn_fwd_decode_tile(AttnDesc *d);
void attn_fwd_plan(const AttnDesc *d, Plan *p);
void attn_fwd_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
/* Appends the kernel to the module. */
void attn_fwd_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
/* block-sparse: the lists (attn_sparse.h) the kernels of the mma.sync attn_fwd and attn_bwd sets walk */
struct SparseLists;
void attn_fwd_sparse(const AttnDesc *d, struct SparseLists *l);
void attn_bwd_sparse(const AttnDesc *d, struct SparseLists *l);
void attn_bwd_wg_sparse(const AttnDesc *d, struct SparseLists *l);
void attn_fwd_tc_sparse(const AttnDesc *d, struct SparseLists *l);
void attn_fwd_wg_sparse(const AttnDesc *d, struct SparseLists *l);   /* attn_fwd_sparse's, the main kernel launched early */
void attn_bwd_tc_sparse(const AttnDesc *d, struct SparseLists *l);
/* attn_fwd, wgmma family (sm_90a): a TMA producer warpgroup and bm/64 consumer warpgroups */
extern const TileKey attn_fwd_wg_keys[];
extern const int attn_fwd_wg_nkeys;
AttnTile attn_fwd_wg_default_tile(const ArchInfo *a, int d, int dv);
int  attn_fwd_wg_check_tile(const AttnDesc *d, char *err, size_t errlen);
/* The default tile's persist for the request (KernelKind.refine_tile): persistent CTAs (WG_PERSIST_CTAS) where the
 * separate O staging fits (d <= 128, and the rest of the tile leaves room), not for varlen, paged or split-KV, which
 * launch a CTA per tile. Measured on the
 * H100 (BENCHMARKS.md, two rounds): d128 697 -> 703-704 TFLOP/s, causal 614-617 -> 633, d64 464 -> 484, GQA 64/8
 * causal 629-634 -> 654-655, block-sparse s 8k 3-4 % faster at 100 % and 50 %, s 16k within the noise. Persistent
 * d 64 takes bm=192 (three consumer warpgroups), the request's bm aside: 546-557 against 480-484. */
void attn_fwd_wg_refine_tile(AttnDesc *d, const char *asked);
void attn_fwd_wg_plan(const AttnDesc *d, Plan *p);
void attn_fwd_wg_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
void attn_fwd_wg_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
/* attn_fwd, tcgen05 family (sm_100a / sm_103a): TMEM accumulators, one MMA-issuing thread */
extern const TileKey attn_fwd_tc_keys[];
extern const int attn_fwd_tc_nkeys;
AttnTile attn_fwd_tc_default_tile(const ArchInfo *a, int d, int dv);
int  attn_fwd_tc_check_tile(const AttnDesc *d, char *err, size_t errlen);
int  attn_fwd_tc_warps(const AttnTile *t);
void attn_fwd_tc_plan(const AttnDesc *d, Plan *p);
void attn_fwd_tc_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
void attn_fwd_tc_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
/* attn_bwd: the kernel set (delta + dQ zeroing, dK/dV main, dQ) */
extern const TileKey attn_bwd_keys[];
extern const int attn_bwd_nkeys;
AttnTile attn_bwd_default_tile(const ArchInfo *a, int d, int dv);
int  attn_bwd_check_tile(const AttnDesc *d, char *err, size_t errlen);
/* One plan per kernel of the set; returns the number of kernels. */
int  attn_bwd_plan(const AttnDesc *d, Plan *plans);
/* Specs, workspaces and the module of the whole set. */
void attn_bwd_build(const AttnDesc *d, KernelSet *ks, Buf *module);
/* attn_bwd, tcgen05 family (sm_100a / sm_103a): the same set around a main kernel with dK, dV in TMEM */
extern const TileKey attn_bwd_tc_keys[];
extern const int attn_bwd_tc_nkeys;
AttnTile attn_bwd_tc_default_tile(const ArchInfo *a, int d, int dv);
int  attn_bwd_tc_check_tile(const AttnDesc *d, char *err, size_t errlen);
int  attn_bwd_tc_plan(const AttnDesc *d, Plan *plans);
void attn_bwd_tc_build(const AttnDesc *d, KernelSet *ks, Buf *module);
/* attn_bwd, wgmma family (sm_90a): the same set around a warp-specialised wgmma main kernel */
extern const TileKey attn_bwd_wg_keys[];
extern const int attn_bwd_wg_nkeys;
AttnTile attn_bwd_wg_default_tile(const ArchInfo *a, int d, int dv);
int  attn_bwd_wg_check_tile(const AttnDesc *d, char *err, size_t errlen);
/* The default tile's bm for the request (KernelKind.refine_tile): 80 at d 128 where it fits, else 64. */
void attn_bwd_wg_refine_tile(AttnDesc *d, const char *asked);
int  attn_bwd_wg_plan(const AttnDesc *d, Plan *plans);
void attn_bwd_wg_build(const AttnDesc *d, KernelSet *ks, Buf *module);
#endif
