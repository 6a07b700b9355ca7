/* Tile keys: each kernel family lists its keys, allowed values and help; a
 * "key=val,..." string is parsed against that list into an int struct. */
#ifndef PTXGEN_TILECFG_H
#define PTXGEN_TILECFG_H
#include <stddef.h>
#include "buf.h"

typedef struct {
    const char *key;
    size_t offset;         /* offsetof the int field in the tile struct */
    int allowed[8];
    int nallowed;
    const char *help;
} TileKey;

/* Unknown keys, malformed pairs and disallowed values: non-zero with a message. */
int  tile_parse(const TileKey *keys, int nkeys, const char *spec, void *tile, char *err, size_t errlen);
void tile_describe(const TileKey *keys, int nkeys, const void *tile, Buf *out);   /* "bm=128,bn=64,..." */
void tile_list(const TileKey *keys, int nkeys, Buf *out);                       /* for --list */
#endif
