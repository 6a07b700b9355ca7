/* A launch record (*.launch.json, docs/launch_record.md): what a fake CUDA
 * runtime saw when a program launched a kernel - the entry, grid, block,
 * cluster, dynamic shared memory, every parameter's raw bytes, the tensor
 * maps the program encoded - and the GEMM the program meant to compute.
 * Parsing checks the record against itself (hex lengths, alignments,
 * overlaps, tensor-map tags naming encodes, matrix descriptions against the
 * tensor maps over them); record_run.h checks it against the PTX. */
#ifndef PTXGEN_LAUNCH_RECORD_H
#define PTXGEN_LAUNCH_RECORD_H
#include <stddef.h>
#include <stdint.h>
#include "device.h"

/* One matrix of the problem: rows x cols elements of dtype (a
 * CUtensorMapDataType, 6 f16 or 7 f32) at a recorded device address;
 * element (r, c) sits at r * cols + c (row-major) or r + c * rows. */
typedef struct {
    char name;              /* 'A', 'B', 'C', 'D' */
    int dtype, elem_bytes;
    int rows, cols, col_major;
    uint64_t addr;
    int in_place;           /* D only: D is C's buffer (no address of its own) */
} RecMatrix;

/* D = alpha * A * B^T + beta * C: A is MxK, B NxK, C and D MxN. */
typedef struct {
    int M, N, K;
    double alpha, beta;
    RecMatrix a, b, c, d;
} RecGemm;

typedef struct { int id; DevTmapDesc desc; } RecEncode;
typedef struct { int index, size, align, offset; } RecParam;
typedef struct { size_t offset; int encode; } RecTag;   /* a 'TMAP' tag in the param bytes and its encode (index into encodes) */

typedef struct {
    char *entry;
    unsigned grid[3], block[3], cluster[3], dyn_smem;
    uint8_t *params;        /* the param space as recorded; gaps (host padding) are zero */
    size_t param_bytes;     /* end of the last parameter */
    RecParam *param;
    int nparams;
    RecEncode *encodes;
    int nencodes;
    RecTag *tags;
    int ntags;
    RecGemm gemm;
} LaunchRecord;

/* Parses a record's text; name prefixes messages (the file name). Uses the
 * last of its launches. 0, or -1 with a message naming the field
 * ("launches[0].params[3].hex") and its line:column. */
int  launch_record_parse(const char *text, const char *name, LaunchRecord *r, char *err, size_t errlen);
int  launch_record_load(const char *path, LaunchRecord *r, char *err, size_t errlen);   /* reads and parses a file */
void launch_record_free(LaunchRecord *r);
size_t rec_matrix_bytes(const RecMatrix *m);
#endif
