/* Runs a launch record's kernel on the sim and judges it against the float64
 * GEMM reference (docs/launch_record.md). The record's matrices become sim
 * heap buffers placed AT their recorded addresses, so the pointers inside the
 * recorded parameter bytes are used as they are; each 'TMAP' tag is replaced
 * by the sim's encoding of the tensor map the program encoded there. */
#ifndef PTXGEN_RECORD_RUN_H
#define PTXGEN_RECORD_RUN_H
#include <stddef.h>
#include <stdint.h>
#include "launch_record.h"
#include "sim.h"

typedef struct {
    int exact;              /* integer inputs whose every partial sum is exact: any difference is wrong */
    long total, wrong;      /* output elements; those beyond the tolerance (exact: any difference) */
    long unwritten;         /* elements still holding the poison written before the run */
    long first_bad;         /* index (row-major m * N + n) of the first wrong or unwritten element, or -1 */
    double got, want;       /* its values */
    double max_abs, rel_l2; /* over the written elements */
    int pass;
    uint8_t *out;           /* the output matrix's bytes as the kernel left them (malloc'd), out_bytes long */
    size_t out_bytes;
} RecResult;

/* Exit-code style results: 0 the kernel ran (judged in res: see res->pass),
 * 1 the sim stopped it (the sim's message in err), 2 the record does not fit
 * the PTX (entry, parameter layout, tensor maps, buffers; message in err).
 * sim: a Sim the caller set up (max_steps, strict); its notes and counters
 * stay for the caller; its heap is emptied again before returning. Inputs:
 * fresh random values from seed (rr_describe_inputs says which). */
int  record_run(Sim *sim, const SimModule *m, const LaunchRecord *r, uint64_t seed, RecResult *res, char *err, size_t errlen);
void rec_result_free(RecResult *res);
/* One line saying what the inputs are for this record's problem. */
void rr_describe_inputs(const LaunchRecord *r, char *out, size_t cap);
/* 1 when the problem is judged exactly (its output type is f16: the inputs are integers). */
int  rr_exact(const RecGemm *g);
#endif
