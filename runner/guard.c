#include "guard.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int guard_alloc(Device *d, DevPtr *p, size_t bytes, char *err, size_t errlen) {
    DevPtr base = 0;
    *p = 0;
    if (dev_alloc(d, &base, bytes + 2 * (size_t)GUARD_BYTES, err, errlen)) return 1;
    if (guard_arm(d, base + GUARD_BYTES, bytes, err, errlen)) {
        dev_free(d, base, NULL, 0);   /* keeps the fill's message */
        return 1;
    }
    *p = base + GUARD_BYTES;
    return 0;
}

int guard_arm(Device *d, DevPtr p, size_t bytes, char *err, size_t errlen) {
    return dev_fill_u8(d, p - GUARD_BYTES, GUARD_BYTE, GUARD_BYTES, err, errlen) ||
           dev_fill_u8(d, p + bytes, GUARD_BYTE, GUARD_BYTES, err, errlen);
}

/* One guard, downloaded from zone; where says which ("before" or "after") and
 * origin is the offset of zone's first byte from the buffer's start or end. */
static int check_zone(Device *d, DevPtr zone, const char *where, long origin, const char *name, char *err,
                      size_t errlen) {
    uint8_t g[GUARD_BYTES];
    if (dev_download(d, g, zone, sizeof g, err, errlen)) return 1;
    int first = -1, changed = 0;
    for (int i = 0; i < GUARD_BYTES; i++)
        if (g[i] != GUARD_BYTE) changed++, first = first < 0 ? i : first;
    if (!changed) return 0;
    snprintf(err, errlen, "canary %s %s overwritten at byte %+ld (0x%02x where 0x%02x was written; %d of its %d bytes "
             "changed)", where, name, origin + first, g[first], GUARD_BYTE, changed, GUARD_BYTES);
    return 1;
}

int guard_check(Device *d, DevPtr p, size_t bytes, const char *name, char *err, size_t errlen) {
    return check_zone(d, p - GUARD_BYTES, "before", -GUARD_BYTES, name, err, errlen) ||
           check_zone(d, p + bytes, "after", 0, name, err, errlen);
}

int guard_free(Device *d, DevPtr p, char *err, size_t errlen) {
    return p ? dev_free(d, p - GUARD_BYTES, err, errlen) : 0;
}
