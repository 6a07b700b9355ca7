/* TMA tensor maps on the sim: the sim's own 128-byte encoding of what
 * cuTensorMapEncodeTiled is given (the real format is opaque), its decoder,
 * and the walk over one box that a bulk tensor copy moves. Pure functions:
 * the TMA unit executes copies with them and keeps the async bookkeeping.
 * Semantics from the PTX ISA ("Tensor copy", "Tensor-map") and the CUDA
 * driver API's cuTensorMapEncodeTiled contract. */
#ifndef PTXGEN_SIM_TMAP_H
#define PTXGEN_SIM_TMAP_H
#include <stddef.h>
#include <stdint.h>

enum { TMAP_MAX_RANK = 5, TMAP_BYTES = 128 };
/* Swizzle modes, numbered as CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B. */
enum { TMAP_SW_NONE, TMAP_SW_32B, TMAP_SW_64B, TMAP_SW_128B };

typedef struct {
    int dtype;                         /* CUtensorMapDataType value (6 = f16, 7 = f32? see encode) */
    int elem_bytes;                    /* derived from dtype */
    int rank;                          /* 1..5 */
    uint64_t gaddr;                    /* global address of element 0 */
    uint64_t dim[TMAP_MAX_RANK];       /* elements per dimension, innermost first */
    uint64_t stride[TMAP_MAX_RANK];    /* bytes between consecutive indices of dim i; stride[0] = elem_bytes */
    uint32_t box[TMAP_MAX_RANK];       /* box extent per dimension, in elements */
    uint32_t estride[TMAP_MAX_RANK];   /* element strides (traversal step) */
    int interleave, swizzle, l2promo, oobfill;
} SimTmap;

/* Validates like cuTensorMapEncodeTiled (rank, alignment of gaddr and strides,
 * box sizes <= 256, inner box bytes vs swizzle span, ...) and writes the sim's
 * 128-byte encoding. globalStrides as the driver takes them: rank-1 byte
 * strides for dims 1.. (stride[0] is implied). */
int sim_tmap_encode(int dtype, int rank, uint64_t gaddr, const uint64_t *dim, const uint64_t *gstrides_bytes,
                    const uint32_t *box, const uint32_t *estride, int interleave, int swizzle, int l2promo,
                    int oobfill, uint8_t out[TMAP_BYTES], char *err, size_t errlen);
/* Reads an encoding back; a blob the sim did not write is an error. */
int sim_tmap_decode(const uint8_t in[TMAP_BYTES], SimTmap *t, char *err, size_t errlen);

/* One box of a tile-mode copy starting at coordinates coord[0..rank-1]
 * (signed: negative and too-large coordinates are out of bounds). The visitor
 * is called once per element in shared-memory order with the global address of
 * the element (or in_bounds = 0: the element is filled with zero on a load and
 * skipped on a store) and its byte offset in the box's shared-memory image
 * BEFORE swizzling. Returns the visitor's first non-zero return, or 0. */
typedef int (*SimTmapVisit)(void *ctx, int in_bounds, uint64_t gaddr, uint32_t box_off);
int sim_tmap_box_walk(const SimTmap *t, const int32_t *coord, SimTmapVisit fn, void *ctx);
/* The box's shared-memory image size in bytes. */
uint32_t sim_tmap_box_bytes(const SimTmap *t);
/* tile::gather4 (sm_100a): 2-D map; coord[0] the column, rows[0..3] the four
 * row coordinates; the image is 4 rows of box[0] elements. */
int sim_tmap_gather4_walk(const SimTmap *t, int32_t col, const int32_t rows[4], SimTmapVisit fn, void *ctx);
/* The swizzled shared-memory address for an absolute address addr under mode
 * (TMAP_SW_*): the hardware XORs address bits, so this needs the absolute
 * address, not the offset in the box. */
uint32_t sim_tmap_swizzle(int swizzle, uint32_t addr);
#endif
