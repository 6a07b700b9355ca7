/* Bit layouts of the tensor-core operand descriptors, as pure decoders:
 * the 64-bit shared-memory matrix descriptor of tcgen05.mma (sm_100a) and of
 * wgmma.mma_async (sm_90a), the 32-bit tcgen05 instruction descriptor, and
 * the address of one operand element under a descriptor's canonical layout.
 * Nothing here touches simulator state: the tcgen05 and wgmma units decode
 * with these and fetch bytes themselves. Field positions follow the PTX ISA
 * ("Matrix Descriptors", "Instruction descriptor"); unit tests pin them to
 * words NVIDIA's own kernels use (shared/oracle/README.md). */
#ifndef PTXGEN_SIM_DESC_H
#define PTXGEN_SIM_DESC_H
#include <stddef.h>
#include <stdint.h>

/* Shared-memory layouts (swizzling modes) a descriptor can name. */
typedef enum {
    SL_INTERLEAVE,      /* no swizzle: 8 x 16-byte core matrices */
    SL_SW32,            /* 32-byte swizzle */
    SL_SW64,            /* 64-byte swizzle */
    SL_SW128,           /* 128-byte swizzle */
    SL_SW128_BASE32B    /* 128-byte swizzle with 32-byte atomicity (tcgen05 only) */
} SimSmemLayout;

typedef struct {
    uint32_t start;        /* byte address in the shared window (field << 4) */
    uint32_t lbo, sbo;     /* leading / stride dimension byte offsets (field << 4) */
    int base_offset;       /* 3-bit matrix base offset */
    int lbo_mode;          /* tcgen05: leading-dimension stride mode bit */
    int version;           /* tcgen05: bits 46-47 (must be 1 on sm_100); wgmma: 0 */
    SimSmemLayout layout;
} SimSmemDesc;

/* Decode; a reserved layout value or (tcgen05) a version other than 1 is an
 * error whose message names the field and its value. */
int sim_umma_sdesc_decode(uint64_t desc, SimSmemDesc *out, char *err, size_t errlen);
int sim_wgmma_sdesc_decode(uint64_t desc, SimSmemDesc *out, char *err, size_t errlen);
/* Bytes a layout's swizzle atom spans along the contiguous dimension (16 for
 * SL_INTERLEAVE, 32/64/128 for the swizzles); the start address must be
 * aligned so that the swizzle pattern repeats (checked by sim_sdesc_check). */
int sim_sdesc_atom_bytes(SimSmemLayout l);
/* Checks alignment and the sizes a layout needs; 0 or -1 with a message.
 * A swizzled layout's start address may sit anywhere inside a 128-byte row
 * (K-steps add 32 bytes to the start), but its row phase inside the pattern
 * ((start >> 7) modulo the pattern's rows) must equal base_offset, as the ISA
 * asks; the sm_103a absolute-LBO mode (lbo_mode 1) is refused. */
int sim_sdesc_check(const SimSmemDesc *d, char *err, size_t errlen);
/* Checks that an operand of elem_bytes (2: f16/bf16, 4: tf32) may use d's
 * layout in the given majorness: SL_SW128_BASE32B only for MN-major 4-byte
 * operands, and MN-major 4-byte operands only with it. */
int sim_sdesc_check_operand(const SimSmemDesc *d, int k_major, int elem_bytes, char *err, size_t errlen);
/* The address a swizzling layout maps the absolute shared address addr to:
 * bits [4:6] ^= [7:9] (128B), [4:5] ^= [7:8] (64B), [4] ^= [7] (32B),
 * [5:6] ^= [7:8] (128B with 32-byte atoms); SL_INTERLEAVE leaves it alone.
 * The same XOR a TMA copy with the matching swizzle applies. */
uint32_t sim_sdesc_swizzle(SimSmemLayout l, uint32_t addr);

/* Byte address in the shared window of element (mn, k) of an MMA operand
 * tile described by d: mn indexes M (operand A) or N (operand B), k indexes K.
 * k_major: 1 when K is the contiguous dimension in memory, 0 for MN-major.
 * elem_bytes: 2 (f16/bf16) or 4 (tf32). The swizzle is applied to the
 * absolute address bits, as the hardware does (base_offset does not enter:
 * under the ISA's rule it restates the start's row phase, which
 * sim_sdesc_check verifies). One MMA reads 32 bytes of K
 * (16 f16 or 8 tf32); a swizzled K-major layout holds them inside one row of
 * its atom, so there k * elem_bytes must stay below the atom width.
 * SIM_SDESC_BAD_ADDR for what no layout defines: elem_bytes other than 2 or 4,
 * negative indices, K beyond a swizzled K-major row, K-major SL_SW128_BASE32B,
 * or an address past 32 bits. */
#define SIM_SDESC_BAD_ADDR 0xFFFFFFFFu
uint32_t sim_sdesc_elem_addr(const SimSmemDesc *d, int k_major, int elem_bytes, int mn, int k);

/* tcgen05 instruction descriptor, kind::f16 or kind::tf32. */
enum { UMMA_KIND_F16, UMMA_KIND_TF32 };
enum { UMMA_T_F16, UMMA_T_BF16, UMMA_T_TF32, UMMA_T_F32 };   /* element types after decoding */
typedef struct {
    int m, n;                  /* the MMA shape (cta_group::2: M over the pair) */
    int a_type, b_type, d_type;   /* UMMA_T_* */
    int a_mn_major, b_mn_major;   /* 1: MN-major (transposed) operand */
    int negate_a, negate_b;
    int sparse, saturate;
    int max_shift;             /* .ws only; 0 otherwise */
} SimInstrDesc;
/* Decodes and validates against the kind (UMMA_KIND_*) and cta_group (1 or
 * 2): legal M and N for each, the types the kind allows, zero reserved bits
 * (6, 23, 29) and no saturate (integer kinds only); an error names the field. */
int sim_umma_idesc_decode(uint32_t idesc, int kind, int cta_group, int ws, SimInstrDesc *out, char *err, size_t errlen);

/* tcgen05.ld / tcgen05.st data movement shapes. */
enum { TM_32X32B, TM_16X64B, TM_16X128B, TM_16X256B, TM_16X32BX2, TM_SHAPES };
/* For shape s with repeat count num (.x1 ... .x128), thread t (0-31) of the
 * warp and its register r: the TMEM lane offset (0-31, added to the warp's
 * lane-quarter base and the address's lane) and column offset (added to the
 * address's column; for 16x32bx2 the second half adds imm_half_off columns).
 * sim_tmem_shape_regs: the number of 32-bit registers per thread, or -1 when
 * num is not allowed for the shape (a power of two; up to x128 for 32x32b,
 * 16x64b and 16x32bx2, x64 for 16x128b, x32 for 16x256b). sim_tmem_shape_map
 * sets lane and col to -1 for a thread, register or shape out of range. */
int sim_tmem_shape_regs(int shape, int num);
void sim_tmem_shape_map(int shape, int num, int thread, int reg, int imm_half_off, int *lane, int *col);

/* tcgen05.cp shapes with their multicast, after the PTX ISA ("tcgen05.cp",
 * "Data Movement Shape") and CUTLASS's SM100_UTCCP_* copy traits: the source
 * is a K-major matrix of `rows` rows of `words` 32-bit words (128 or 256
 * bits) in the descriptor's canonical layout (8-row x 16-byte core
 * matrices: SBO between 8-row groups, LBO between 16-byte columns); each row
 * lands in `copies` TMEM lanes at consecutive columns from the address's.
 *   128x256b, 128x128b: row r -> lane r.
 *   4x256b:             row r -> lane 32r (the first lane of each quarter).
 *   64x128b.warpx2::02_13: row r -> lanes r and r + 64 (warps 0/2, 1/3).
 *   64x128b.warpx2::01_23: row r -> lanes 64(r/32) + r%32 and that + 32
 *                       (rows 0-31 to warps 0/1, rows 32-63 to warps 2/3).
 *   32x128b.warpx4:     row r -> lanes r, r + 32, r + 64, r + 96. */
enum { CP_128X256B, CP_4X256B, CP_128X128B, CP_64X128B_02_13, CP_64X128B_01_23, CP_32X128B_X4, CP_SHAPES };
/* rows, words per row and copies of a shape; -1 for a shape out of range */
int sim_tmem_cp_dims(int cp, int *rows, int *words, int *copies);
/* The lane offset (added to the address's lane) of copy `copy` of source row `row`; -1 out of range. */
int sim_tmem_cp_lane(int cp, int row, int copy);

/* wgmma accumulator fragment: thread t (0-127) of the warpgroup, element
 * index reg (0 .. n/2-1) of an m64nN accumulator -> (row, col) of D. An f32
 * accumulator has one element per register; a packed f16 accumulator holds
 * elements 2j (low half) and 2j+1 (high half) in its register j. */
void sim_wgmma_d_map(int n, int thread, int reg, int *row, int *col);
/* wgmma A from registers (RS): thread t of the warpgroup, 32-bit register r
 * (0-3) and half h (0 low, 1 high) of a m64k16 f16/bf16 A tile -> (row, k).
 * Both map functions set -1, -1 for arguments out of range. */
void sim_wgmma_a_map(int thread, int reg, int half, int *row, int *k);
#endif
