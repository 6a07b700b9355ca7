#include "tilecfg.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int *field(void *tile, const TileKey *k) { return (int *)((char *)tile + k->offset); }

static const TileKey *find_key(const TileKey *keys, int nkeys, const char *name, size_t len) {
    for (int i = 0; i < nkeys; i++)
        if (strlen(keys[i].key) == len && !strncmp(keys[i].key, name, len)) return &keys[i];
    return NULL;
}

static void allowed_text(const TileKey *k, char *s, size_t n) {
    size_t used = 0;
    s[0] = 0;
    for (int i = 0; i < k->nallowed && used < n; i++)
        used += (size_t)snprintf(s + used, n - used, "%s%d", i ? "|" : "", k->allowed[i]);
}

static int set_value(const TileKey *k, void *tile, const char *val, char *err, size_t errlen) {
    char *end;
    long v = strtol(val, &end, 10);
    char allowed[96];
    allowed_text(k, allowed, sizeof allowed);
    if (end == val || *end) {
        snprintf(err, errlen, "tile key '%s': '%s' is not an integer (allowed: %s)", k->key, val, allowed);
        return 1;
    }
    for (int i = 0; i < k->nallowed; i++)
        if (k->allowed[i] == v) { *field(tile, k) = (int)v; return 0; }
    snprintf(err, errlen, "tile key '%s': value %ld is not allowed (allowed: %s)", k->key, v, allowed);
    return 1;
}

int tile_parse(const TileKey *keys, int nkeys, const char *spec, void *tile, char *err, size_t errlen) {
    if (!spec) return 0;
    char buf[512];
    if (strlen(spec) >= sizeof buf) { snprintf(err, errlen, "--tile string too long"); return 1; }
    strcpy(buf, spec);
    size_t n = strlen(buf);
    if (n && (buf[0] == ',' || buf[n - 1] == ',' || strstr(buf, ",,"))) {   /* strtok would skip the empty setting */
        snprintf(err, errlen, "tile '%s' has an empty setting (a ',' too many)", spec);
        return 1;
    }
    const TileKey *set[64];   /* the keys so far: one given twice would silently take the last value */
    int nset = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok || !eq[1]) {
            snprintf(err, errlen, "tile setting '%s' is not of the form key=value", tok);
            return 1;
        }
        const TileKey *k = find_key(keys, nkeys, tok, (size_t)(eq - tok));
        if (!k) {
            Buf names = {0};
            for (int i = 0; i < nkeys; i++) buf_printf(&names, "%s%s", i ? ", " : "", keys[i].key);
            snprintf(err, errlen, "unknown tile key '%.*s' (keys: %s)", (int)(eq - tok), tok, names.s ? names.s : "none");
            buf_free(&names);
            return 1;
        }
        for (int i = 0; i < nset; i++)
            if (set[i] == k) {
                snprintf(err, errlen, "tile key '%s' is given twice (the second would silently override the first)", k->key);
                return 1;
            }
        if (nset < 64) set[nset++] = k;
        if (set_value(k, tile, eq + 1, err, errlen)) return 1;
    }
    return 0;
}

void tile_describe(const TileKey *keys, int nkeys, const void *tile, Buf *out) {
    for (int i = 0; i < nkeys; i++)
        buf_printf(out, "%s%s=%d", i ? "," : "", keys[i].key, *field((void *)tile, &keys[i]));
}

void tile_list(const TileKey *keys, int nkeys, Buf *out) {
    for (int i = 0; i < nkeys; i++) {
        char allowed[96];
        allowed_text(&keys[i], allowed, sizeof allowed);
        buf_printf(out, "    %-8s %-16s %s\n", keys[i].key, allowed, keys[i].help);
    }
}
