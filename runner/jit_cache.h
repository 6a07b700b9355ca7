/* The on-disk cache of what the driver's JIT made of a PTX module (a cubin),
 * so a process loads a kernel set it has seen before without compiling it
 * again. An entry's key is the SHA-256 of everything the result depends on
 * (the PTX, the GPU's arch, the driver version, the JIT options); its file
 * holds a header (magic, payload length, the payload's hash) then the
 * payload, is written to a private temporary file and renamed into place
 * (atomic, so concurrent writers never expose half an entry), and is checked
 * on every read: a truncated or corrupt entry is removed and reported as a
 * miss, so the caller rebuilds it.
 *
 * Environment: PTXGEN_CACHE=0 turns the cache off; PTXGEN_CACHE_DIR picks
 * the directory (default $XDG_CACHE_HOME/ptxgen, else $HOME/.cache/ptxgen;
 * created 0700). */
#ifndef PTXGEN_JIT_CACHE_H
#define PTXGEN_JIT_CACHE_H
#include <stddef.h>
#include <stdint.h>

/* 128 bits of data's hash under seed; not cryptographic (jit_cache.c says why that is enough) */
void hash128(const void *data, size_t len, uint64_t seed, uint8_t out[16]);

typedef struct {
    int on;
    char dir[1024];
} JitCache;

/* From the environment; on = 0 (with why) when turned off or no directory can be made. */
void jit_cache_open(JitCache *c, char *why, size_t whylen);
/* The key of a result: hash128 over the parts (at most 8; ("ab","c") != ("a","bc")). */
void jit_cache_key(const char *const *parts, int nparts, uint8_t key[16]);
/* 1 and *data (malloc'd), *len on a hit; 0 on a miss (a corrupt or truncated entry is removed first,
 * and *corrupt set). */
int  jit_cache_get(const JitCache *c, const uint8_t key[16], void **data, size_t *len, int *corrupt);
/* 0 when stored (or the cache is off); -1 with errno otherwise (the caller goes on without it). */
int  jit_cache_put(const JitCache *c, const uint8_t key[16], const void *data, size_t len);
#endif
