/* The JIT result cache (jit_cache.h). */
#include "jit_cache.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a fast 128-bit hash ----
 * Two 64-bit lanes, 16 bytes a round, each folded through a 64 x 64 -> 128-bit
 * product (high ^ low), then cross-mixed; the length and a final fold close
 * it. Not cryptographic: keys and checksums guard against accidents (a
 * changed PTX, a torn or bit-flipped file), not an adversary who can write
 * the cache directory, which is private (0700). About 10x SHA-256's speed,
 * which was most of a warm load. */
static uint64_t fold(uint64_t a, uint64_t b) {
    unsigned __int128 p = (unsigned __int128)a * b;
    return (uint64_t)p ^ (uint64_t)(p >> 64);
}

static uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

enum { K1 = 0, K2, K3, K4 };
static const uint64_t KH[4] = {0x9e3779b97f4a7c15ull, 0xd6e8feb86659fd93ull, 0xa0761d6478bd642full, 0xe7037ed1a0b428dbull};

void hash128(const void *data, size_t len, uint64_t seed, uint8_t out[16]) {
    const uint8_t *p = data;
    uint64_t h1 = seed ^ KH[K1], h2 = seed + KH[K2];
    size_t n = len;
    /* the multipliers are constants, so no input or seed can zero a product */
    for (; n >= 16; p += 16, n -= 16) {
        uint64_t a = fold(rd64(p) ^ h1, KH[K3]), b = fold(rd64(p + 8) ^ h2, KH[K4]);
        h1 = (h1 << 23 | h1 >> 41) + (a ^ b);
        h2 = ((h2 ^ a) << 31 | (h2 ^ a) >> 33) + b;
    }
    uint8_t tail[16] = {0};
    memcpy(tail, p, n);
    tail[15] ^= (uint8_t)n;
    h1 = fold(h1 ^ rd64(tail) ^ (uint64_t)len, KH[K1]);
    h2 = fold(h2 ^ rd64(tail + 8), KH[K2]) ^ h1;
    for (int r = 0; r < 2; r++) {   /* two rounds: the last bytes reach every output bit */
        h1 = fold(h1 ^ h2, KH[K3]);
        h2 = fold(h2 ^ h1, KH[K4]) ^ h1;
    }
    memcpy(out, &h1, 8);
    memcpy(out + 8, &h2, 8);
}

/* ---- the cache ---- */
#define MAGIC "PTXGENJ2"
enum { HEADER = 8 + 8 + 16 };   /* magic, payload length, the payload's hash128 */

static int mkdirs(char *path) {   /* mkdir -p, 0700 for what it creates */
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            int bad = mkdir(path, 0700) && errno != EEXIST;
            *p = '/';
            if (bad) return -1;
        }
    return mkdir(path, 0700) && errno != EEXIST ? -1 : 0;
}

void jit_cache_open(JitCache *c, char *why, size_t whylen) {
    const char *off = getenv("PTXGEN_CACHE"), *dir = getenv("PTXGEN_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    *c = (JitCache){0};
    if (off && !strcmp(off, "0")) { snprintf(why, whylen, "PTXGEN_CACHE=0"); return; }
    int n = dir && *dir ? snprintf(c->dir, sizeof c->dir, "%s", dir)
            : xdg && *xdg ? snprintf(c->dir, sizeof c->dir, "%s/ptxgen", xdg)
            : home && *home ? snprintf(c->dir, sizeof c->dir, "%s/.cache/ptxgen", home)
            : -1;
    if (n < 0 || n >= (int)sizeof c->dir) { snprintf(why, whylen, "no cache directory (set PTXGEN_CACHE_DIR)"); return; }
    if (mkdirs(c->dir)) { snprintf(why, whylen, "cannot create %s: %s", c->dir, strerror(errno)); return; }
    c->on = 1;
}

void jit_cache_key(const char *const *parts, int nparts, uint8_t key[16]) {
    /* each part hashed, then the list of their hashes: ("ab", "c") and ("a", "bc") differ */
    uint8_t h[16 * 8];
    int n = nparts < 8 ? nparts : 8;
    for (int i = 0; i < n; i++) hash128(parts[i], strlen(parts[i]), (uint64_t)i, h + 16 * i);
    hash128(h, (size_t)(16 * n), (uint64_t)n, key);
}

static void entry_path(const JitCache *c, const uint8_t key[16], char *path, size_t len) {
    char hex[33];
    for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", key[i]);
    snprintf(path, len, "%s/%s.cubin", c->dir, hex);
}

int jit_cache_get(const JitCache *c, const uint8_t key[16], void **data, size_t *len, int *corrupt) {
    char path[1200];
    *data = NULL, *len = 0, *corrupt = 0;
    if (!c->on) return 0;
    entry_path(c, key, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    uint8_t head[HEADER], sum[16];
    uint64_t n = 0;
    long size = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    int ok = size >= HEADER && !fseek(f, 0, SEEK_SET) && fread(head, 1, HEADER, f) == HEADER && !memcmp(head, MAGIC, 8);
    if (ok) memcpy(&n, head + 8, 8), ok = n == (uint64_t)size - HEADER && n > 0;
    uint8_t *buf = ok ? malloc((size_t)n) : NULL;
    ok = ok && buf && fread(buf, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    if (ok) hash128(buf, (size_t)n, 0, sum), ok = !memcmp(sum, head + 16, 16);
    if (!ok) {
        free(buf);
        *corrupt = 1;
        remove(path);   /* rebuilt by the caller; a concurrent writer's rename replaces it anyway */
        return 0;
    }
    *data = buf, *len = (size_t)n;
    return 1;
}

int jit_cache_put(const JitCache *c, const uint8_t key[16], const void *data, size_t len) {
    char path[1200], tmp[1200];
    if (!c->on) return 0;
    entry_path(c, key, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", c->dir);
    int fd = mkstemp(tmp);
    if (fd < 0) return -1;
    uint8_t head[HEADER];
    uint64_t n = len;
    memcpy(head, MAGIC, 8);
    memcpy(head + 8, &n, 8);
    hash128(data, len, 0, head + 16);
    FILE *f = fdopen(fd, "wb");
    int bad = !f || fwrite(head, 1, HEADER, f) != HEADER || fwrite(data, 1, len, f) != len || fflush(f) || fsync(fd);
    if (f) bad |= fclose(f) != 0;
    else close(fd);
    if (bad || rename(tmp, path)) {   /* rename is atomic: readers see the old entry or the whole new one */
        int e = errno;
        remove(tmp);
        errno = e;
        return -1;
    }
    return 0;
}
