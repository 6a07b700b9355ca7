/* Canary zones around device buffers: GUARD_BYTES on each side of a buffer,
 * filled with GUARD_BYTE, so that a kernel storing past either end of an
 * output shows after the run. On a GPU such a store faults only when it
 * leaves the allocation (rarely, for a few bytes), and on the sim it now lands
 * inside one, so neither device would report it by itself. The pattern is
 * neither the NaN poison outputs start with (0xFF bytes) nor zero: the values
 * a stray store most likely writes. */
#ifndef PTXGEN_GUARD_H
#define PTXGEN_GUARD_H
#include <stddef.h>
#include "device.h"

/* A multiple of 256: the buffer keeps the allocation's alignment (cuMemAlloc
 * and the sim both align to 256), so kernels see the same 16-byte-aligned
 * addresses as without guards. */
#define GUARD_BYTES 256
#define GUARD_BYTE 0xA5   /* bf16 0xA5A5 and fp32 0xA5A5A5A5 are small negatives, fp16 -0.0218: finite, non-zero */

/* Allocates bytes with a guard on each side, both armed; *p is the buffer
 * (GUARD_BYTES into the allocation). Free it with guard_free. */
int guard_alloc(Device *d, DevPtr *p, size_t bytes, char *err, size_t errlen);
/* Refills both guards of the buffer p of `bytes` bytes with GUARD_BYTE. */
int guard_arm(Device *d, DevPtr p, size_t bytes, char *err, size_t errlen);
/* 0 when both guards of p still hold the pattern; otherwise non-zero and one
 * line in err, e.g. "canary after dkv overwritten at byte +12 (0x3c where
 * 0xa5 was written; 16 of its 256 bytes changed)" (offsets from the buffer's
 * end, or from its start for the guard before: -256 to -1). */
int guard_check(Device *d, DevPtr p, size_t bytes, const char *name, char *err, size_t errlen);
/* Frees the allocation guard_alloc made around p (0 is ignored). */
int guard_free(Device *d, DevPtr p, char *err, size_t errlen);
#endif
