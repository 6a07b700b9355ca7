/* TMA tensor maps on the sim: the sim's own 128-byte encoding of what
 * cuTensorMapEncodeTiled is given (the real format is opaque), its decoder,
 * and the walk over one box that a bulk tensor copy moves. Pure functions:
 * the TMA unit executes copies with them and keeps the async bookkeeping.
 * Semantics from the PTX ISA ("Tensors": tiled mode, traversal stride,
 * out-of-bound access, .tile::gather4, swizzling modes) and the CUDA driver
 * API's cuTensorMapEncodeTiled contract (cuda.h, CUDA 13). */
#ifndef PTXGEN_SIM_TMAP_H
#define PTXGEN_SIM_TMAP_H
#include <stddef.h>
#include <stdint.h>

enum { TMAP_MAX_RANK = 5, TMAP_BYTES = 128 };
/* Swizzle modes, numbered as CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B.
 * The 128B sub-modes with 32B/64B atoms (4..6) are refused by encode. */
enum { TMAP_SW_NONE, TMAP_SW_32B, TMAP_SW_64B, TMAP_SW_128B };
/* Interleave modes, numbered as CUtensorMapInterleave. */
enum { TMAP_IL_NONE, TMAP_IL_16B, TMAP_IL_32B };

typedef struct {
    int dtype;                         /* CUtensorMapDataType 0..12 (6 f16, 7 f32, 9 bf16) */
    int elem_bytes;                    /* derived from dtype */
    int rank;                          /* 1..5 */
    uint64_t gaddr;                    /* global address of element 0 */
    uint64_t dim[TMAP_MAX_RANK];       /* elements per dimension, innermost first */
    uint64_t stride[TMAP_MAX_RANK];    /* bytes between consecutive indices of dim i; stride[0] = elem_bytes */
    uint32_t box[TMAP_MAX_RANK];       /* box extent per dimension, in elements */
    uint32_t estride[TMAP_MAX_RANK];   /* element strides (traversal step), as given to encode */
    int interleave, swizzle, l2promo, oobfill;
} SimTmap;

/* Validates like cuTensorMapEncodeTiled (rank, alignment of gaddr and strides,
 * box sizes <= 256, inner box bytes vs swizzle span, ...) and writes the sim's
 * 128-byte encoding. globalStrides as the driver takes them: rank-1 byte
 * strides for dims 1.. (stride[0] is implied; NULL allowed for rank 1).
 * An error names the driver's argument and its value. */
int sim_tmap_encode(int dtype, int rank, uint64_t gaddr, const uint64_t *dim, const uint64_t *gstrides_bytes,
                    const uint32_t *box, const uint32_t *estride, int interleave, int swizzle, int l2promo,
                    int oobfill, uint8_t out[TMAP_BYTES], char *err, size_t errlen);
/* Reads an encoding back; a blob the sim did not write (NVIDIA's 'TMAP'
 * placeholder tag, zeros, other bytes, a corrupted or altered encoding) is an
 * error, and the decoded fields are validated again as encode does. */
int sim_tmap_decode(const uint8_t in[TMAP_BYTES], SimTmap *t, char *err, size_t errlen);

/* One box of a tile-mode copy starting at coordinates coord[0..rank-1]
 * (signed: negative and too-large coordinates are out of bounds). The visitor
 * is called once per element in shared-memory order with the global address of
 * the element (or in_bounds = 0 and gaddr 0: the element is filled on a load,
 * with zero or OOB-NaN per oobfill, and skipped on a store) and its byte offset
 * in the box's shared-memory image BEFORE swizzling. Returns the visitor's
 * first non-zero return, or 0; -1 without a visit for NULL arguments.
 *
 * Traversal strides: along dimension i >= 1 the box spans box[i] elements
 * from coord[i] and moves every estride[i]-th, i.e. ceil(box[i] / estride[i])
 * of them (coordinates coord[i] + k * estride[i]). estride[0] is ignored
 * without interleave (driver: "TMA doesn't support the stride for dimension
 * zero"); with interleave it steps dimension 0 the same way. The image packs
 * the moved elements row-major, innermost dimension contiguous. */
typedef int (*SimTmapVisit)(void *ctx, int in_bounds, uint64_t gaddr, uint32_t box_off);
int sim_tmap_box_walk(const SimTmap *t, const int32_t *coord, SimTmapVisit fn, void *ctx);
/* The box's shared-memory image size in bytes (the tile copy's tx-count). */
uint32_t sim_tmap_box_bytes(const SimTmap *t);

/* tile::gather4 (sm_100a): the ISA allows it on 2-D maps only, without
 * interleave, with a bounding box of one row (box[1] == 1); the four boxes
 * start at (col, rows[j]). Returns 0 when t qualifies, else -1 with the
 * reason in err. */
int sim_tmap_gather4_check(const SimTmap *t, char *err, size_t errlen);
/* The image is 4 rows of box[0] elements, row j from rows[j], each row
 * checked for bounds on its own. Returns the visitor's first non-zero
 * return, or 0; -1 without a visit when sim_tmap_gather4_check refuses t. */
int sim_tmap_gather4_walk(const SimTmap *t, int32_t col, const int32_t rows[4], SimTmapVisit fn, void *ctx);
/* The gather4 image size in bytes: 4 * box[0] * elem_bytes. */
uint32_t sim_tmap_gather4_bytes(const SimTmap *t);

/* The swizzled shared-memory address for an absolute address addr under mode
 * (TMAP_SW_*): the hardware XORs address bits, so this needs the absolute
 * address, not the offset in the box. 128B: bits [4:6] ^= bits [7:9]; 64B:
 * bits [4:5] ^= bits [7:8]; 32B: bit 4 ^= bit 7 (CuTe Swizzle<3,4,3>,
 * <2,4,3>, <1,4,3>): a 16-byte chunk moves within its 128/64/32-byte span,
 * and the pattern repeats every 1024/512/256 bytes. Other modes: addr. */
uint32_t sim_tmap_swizzle(int swizzle, uint32_t addr);
#endif
