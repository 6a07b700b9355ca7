/* The manifest: a kernel set's launch ABI as JSON (KERNELS.md "Manifest"). */
#ifndef PTXGEN_MANIFEST_H
#define PTXGEN_MANIFEST_H
#include "kernel.h"

/* constants_json: a JSON object of generation-time constants (d, dtype, tile ...). */
void manifest_write(const KernelSet *s, const char *constants_json, Buf *out);
#endif
