/* The JIT result cache (jit_cache.h). */
#include "jit_cache.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- SHA-256 (FIPS 180-4) ---- */
static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
    0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
    0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
    0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

typedef struct { uint32_t h[8]; uint64_t bytes; uint8_t blk[64]; size_t n; } Sha;

static uint32_t ror(uint32_t x, int r) { return x >> r | x << (32 - r); }

static void sha_block(Sha *s, const uint8_t *p) {
    uint32_t w[64], a[8];
    for (int i = 0; i < 16; i++) w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ w[i - 15] >> 3;
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ w[i - 2] >> 10;
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(a, s->h, sizeof a);
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = a[7] + (ror(a[4], 6) ^ ror(a[4], 11) ^ ror(a[4], 25)) + ((a[4] & a[5]) ^ (~a[4] & a[6])) + K256[i] + w[i];
        uint32_t t2 = (ror(a[0], 2) ^ ror(a[0], 13) ^ ror(a[0], 22)) + ((a[0] & a[1]) ^ (a[0] & a[2]) ^ (a[1] & a[2]));
        memmove(a + 1, a, 7 * sizeof *a);
        a[4] += t1, a[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++) s->h[i] += a[i];
}

static void sha_init(Sha *s) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->bytes = 0, s->n = 0;
}

static void sha_add(Sha *s, const void *data, size_t len) {
    const uint8_t *p = data;
    s->bytes += len;
    while (len) {
        size_t take = 64 - s->n < len ? 64 - s->n : len;
        memcpy(s->blk + s->n, p, take);
        s->n += take, p += take, len -= take;
        if (s->n == 64) sha_block(s, s->blk), s->n = 0;
    }
}

static void sha_end(Sha *s, uint8_t out[32]) {
    uint64_t bits = s->bytes * 8;
    uint8_t pad = 0x80, zero = 0, len[8];
    sha_add(s, &pad, 1);
    while (s->n != 56) sha_add(s, &zero, 1);
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha_add(s, len, 8);
    for (int i = 0; i < 8; i++)
        out[4 * i] = (uint8_t)(s->h[i] >> 24), out[4 * i + 1] = (uint8_t)(s->h[i] >> 16), out[4 * i + 2] = (uint8_t)(s->h[i] >> 8),
        out[4 * i + 3] = (uint8_t)s->h[i];
}

void sha256(const void *data, size_t len, uint8_t out[32]) {
    Sha s;
    sha_init(&s);
    sha_add(&s, data, len);
    sha_end(&s, out);
}

/* ---- the cache ---- */
#define MAGIC "PTXGENJ1"
enum { HEADER = 8 + 8 + 32 };

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

void jit_cache_key(const char *const *parts, int nparts, uint8_t key[32]) {
    Sha s;
    sha_init(&s);
    for (int i = 0; i < nparts; i++) {
        uint64_t n = strlen(parts[i]);
        sha_add(&s, &n, sizeof n);
        sha_add(&s, parts[i], n);
    }
    sha_end(&s, key);
}

static void entry_path(const JitCache *c, const uint8_t key[32], char *path, size_t len) {
    char hex[65];
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", key[i]);
    snprintf(path, len, "%s/%s.cubin", c->dir, hex);
}

int jit_cache_get(const JitCache *c, const uint8_t key[32], void **data, size_t *len, int *corrupt) {
    char path[1200];
    *data = NULL, *len = 0, *corrupt = 0;
    if (!c->on) return 0;
    entry_path(c, key, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    uint8_t head[HEADER], sum[32];
    uint64_t n = 0;
    long size = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    int ok = size >= HEADER && !fseek(f, 0, SEEK_SET) && fread(head, 1, HEADER, f) == HEADER && !memcmp(head, MAGIC, 8);
    if (ok) memcpy(&n, head + 8, 8), ok = n == (uint64_t)size - HEADER && n > 0;
    uint8_t *buf = ok ? malloc((size_t)n) : NULL;
    ok = ok && buf && fread(buf, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    if (ok) sha256(buf, (size_t)n, sum), ok = !memcmp(sum, head + 16, 32);
    if (!ok) {
        free(buf);
        *corrupt = 1;
        remove(path);   /* rebuilt by the caller; a concurrent writer's rename replaces it anyway */
        return 0;
    }
    *data = buf, *len = (size_t)n;
    return 1;
}

int jit_cache_put(const JitCache *c, const uint8_t key[32], const void *data, size_t len) {
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
    sha256(data, len, head + 16);
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
