/* What the wgmma MLA kernels (mla_fwd_wg*.c, mla_bwd_wg*.c) share: the producer warpgroup that loads
 * the head block's tiles once by TMA and gathers each step's top-k rows into a ring of slots, the
 * consumer warpgroups' identity, and the TMA maps over [s_q, h_q, cols] tensors. Internal to them. */
#ifndef PTXGEN_MLA_WG_H
#define PTXGEN_MLA_WG_H
#include "mla_emit.h"
#include "attn_wg.h"

/* One [64 heads][cols] tile the producer's thread 0 loads by TMA before the loop. */
typedef struct { const char *map; int off, cols; } MlaWgTile;

/* The producer's work: the once-loaded tiles (all on bar_in, whose expected bytes are theirs), and the
 * ring of `stages` slots of bn gathered rows (slot i at kv_off + i kv_stride; bias and kv rows per slot
 * at bias_off / rows_off, rows_off -1: not kept), with full / empty barriers 8 bytes apart per slot. */
typedef struct {
    int ntiles;
    MlaWgTile tiles[2];
    int bn, stages, kv_off, kv_stride, bias_off, rows_off;
    Reg bar_in, full0, empty0;
    Reg it;                    /* passes over the ring (the kernel's register) */
    int prefetch;              /* 1: a step's indices are read under the last step's copies; 0: under the wait for
                                  the slot (no registers held across the loop) */
    const MlaCta *cta;         /* the token and head block (mla_cta_token) */
} MlaWgFeed;

/* Thread 0 loads the tiles (the ring's fields unused); *state: a b64 register for mbarrier states, *zero_reg:
 * one holding 0. */
void mla_wg_load_tiles(Kctx *k, const MlaWgFeed *f, Reg *state, Reg *zero_reg);
/* Thread 0 loads the tiles; the warpgroup's 128 threads gather the token's steps into the ring, each
 * waiting for its own copies, fencing them for the async proxy and arriving on the slot's full barrier. */
void mla_wg_producer(Kctx *k, const MlaWgFeed *f);
/* Once the mbarriers are initialised (barrier 0 of the CTA): warps 0-3 run producer(ctx), warps 4-11 consumer(ctx). */
void mla_wg_roles(Kctx *k, WgRole producer, WgRole consumer, void *ctx);
/* Consumer warpgroup c (warps 4 .. 11: 0 or 1) and its warp's first row (16 w, w the warp in the group). */
void mla_wg_consumer_id(Kctx *k, Reg *c, Reg *warp_row0);

/* 0, or 1 with err naming the dims the wgmma kernel `kernel` is built for (d_qk 576, d_v 512). */
int mla_wg_check_dims(const AttnDesc *d, const char *kernel, char *err, size_t errlen);

/* The parameter `param`: tensor [s_q, h_q, cols] as the 4-D map (cols, h_q, s_q, 1), one copy 64 columns of
 * bm heads of a token, 128B swizzle; strides: the byte expressions of h, s and the (unit) batch. */
void mla_wg_head_map(KernelSpec *ks, const char *param, const char *tensor, const char *dt, const char *cols, int bm,
                     const char *const strides[3]);
#endif
