/* What the tcgen05 mla_fwd's plan and emitter share. */
#ifndef PTXGEN_MLA_FWD_TC_H
#define PTXGEN_MLA_FWD_TC_H
#include "mla_tc.h"

/* warps 0-3 compute (thread r: slot r of a step, then d_v row r of each O^T tile), warp 4 issues the MMAs,
 * warp 5 gathers (TMA tile::gather4) */
#define MFT_THREADS 192
#define MFT_ISSUER 128
#define MFT_PRODUCER 160
#define MFT_MAX_HB 32
#define MFT_O_TILES (MLA_D_V / 128)   /* O^T in M=128 row tiles of d_v */
/* mbarriers: the step's rows landed (the 32 gathering lanes), S^T done (commit), P^T in (128 compute threads),
 * the step's O^T products done (commit) */
enum { MFT_KV_FULL, MFT_S, MFT_P, MFT_DONE, MFT_NBARS };
#endif
