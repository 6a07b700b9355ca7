/* Tiles that `ptxgen tune` measured best, kept in a small text file so the
 * library builds with them afterwards (tuned.h). One entry per line:
 *   arch=sm_90a kernel=attn_fwd family=mma.sync dtype=bf16 d=128 causal=0 class=s<=4k tile=bm=128,bn=64,warps=4 tflops=361.1 shape=...
 * '#' starts a comment line. The key of a part runs to its first '=' (a tile's value holds more). */
#include "tuned.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "buf.h"

const char *tuned_path(char *buf, size_t len) {
    const char *env = getenv("PTXGEN_TUNED"), *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (env && !strcmp(env, "0")) return NULL;
    int n = env && *env ? snprintf(buf, len, "%s", env)
            : xdg && *xdg ? snprintf(buf, len, "%s/ptxgen/tuned.txt", xdg)
            : home && *home ? snprintf(buf, len, "%s/.config/ptxgen/tuned.txt", home)
            : -1;
    return n < 0 || n >= (int)len ? NULL : buf;
}

/* part `key` of a line (value up to the next space) into out; 1 if present */
static int part(const char *line, const char *key, char *out, size_t len) {
    size_t kl = strlen(key);
    for (const char *p = line; *p;) {
        while (*p == ' ') p++;
        const char *end = p;
        while (*end && *end != ' ' && *end != '\n') end++;
        if ((size_t)(end - p) > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            snprintf(out, len, "%.*s", (int)(end - p - (long)kl - 1), p + kl + 1);
            return 1;
        }
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* the key's head dims: "d", or "d/dv" where d_v differs */
static void key_dims(const TunedKey *k, char *out, size_t len) {
    if (k->dv && k->dv != k->d) snprintf(out, len, "%d/%d", k->d, k->dv);
    else snprintf(out, len, "%d", k->d);
}

static void key_line(const TunedKey *k, Buf *b) {
    char dims[32];
    key_dims(k, dims, sizeof dims);
    buf_printf(b, "arch=%s kernel=%s family=%s dtype=%s d=%s causal=%d class=%s", k->arch, k->kernel, k->family, k->dtype,
               dims, k->causal, k->cls);
}

static int matches(const char *line, const TunedKey *k) {
    static const char *const keys[] = {"arch", "kernel", "family", "dtype", "d", "causal", "class"};
    char want[7][64], got[64];
    snprintf(want[0], 64, "%s", k->arch), snprintf(want[1], 64, "%s", k->kernel), snprintf(want[2], 64, "%s", k->family);
    snprintf(want[3], 64, "%s", k->dtype), key_dims(k, want[4], 64), snprintf(want[5], 64, "%d", k->causal);
    snprintf(want[6], 64, "%s", k->cls);
    for (int i = 0; i < 7; i++)
        if (!part(line, keys[i], got, sizeof got) || strcmp(got, want[i])) return 0;
    return 1;
}

int tuned_lookup(const TunedKey *k, char *tile, size_t tilelen, char *note, size_t notelen) {
    char path[1024];
    if (!k->cls || !*k->cls || !tuned_path(path, sizeof path)) return 0;
    char *text = buf_read_file(path, NULL);
    if (!text) return 0;
    int found = 0;
    for (char *line = strtok(text, "\n"); line && !found; line = strtok(NULL, "\n")) {
        char tflops[32] = "?", shape[128] = "?";
        if (line[0] == '#' || !matches(line, k) || !part(line, "tile", tile, tilelen)) continue;
        part(line, "tflops", tflops, sizeof tflops), part(line, "shape", shape, sizeof shape);
        snprintf(note, notelen, "tile %s from %s (tune measured %s TFLOP/s at %s)", tile, path, tflops, shape);
        found = 1;
    }
    free(text);
    return found;
}

static int mkdirs(char *path) {
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            int bad = mkdir(path, 0755) && errno != EEXIST;
            *p = '/';
            if (bad) return -1;
        }
    return 0;
}

int tuned_store(const TunedKey *k, const char *tile, double tflops, const char *shape, char *path, size_t pathlen) {
    if (!tuned_path(path, pathlen)) return -1;
    char *text = buf_read_file(path, NULL), tmp[1100];
    Buf b = {0};
    if (text)   /* every other line kept; this key's replaced */
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
            if (line[0] == '#' || !matches(line, k)) buf_printf(&b, "%s\n", line);
    free(text);
    if (!b.len) buf_puts(&b, "# ptxgen tune's best tiles; the library builds with them for a matching request and shape class\n");
    key_line(k, &b);
    buf_printf(&b, " tile=%s tflops=%.1f shape=%s\n", tile, tflops, shape);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path);
    int fd = mkdirs(dir) ? -1 : mkstemp(tmp);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    int bad = !f || fputs(b.s, f) < 0;
    if (f) bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) bad = 1, remove(tmp);   /* atomic: readers see the old file or the new one */
    buf_free(&b);
    return bad ? -1 : 0;
}

void tuned_shape_class(int mla, long long s_max, long long h_q, char *out, size_t len) {
    if (mla) snprintf(out, len, "h<=%lld", h_q <= 16 ? 16LL : h_q <= 32 ? 32LL : h_q <= 64 ? 64LL : h_q <= 128 ? 128LL : 1LL << 30);
    else snprintf(out, len, "s<=%s", s_max <= 1024 ? "1k" : s_max <= 4096 ? "4k" : s_max <= 16384 ? "16k" : "inf");
}
