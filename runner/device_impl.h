/* What a device backend provides: one table of operations, and objects whose
 * first member is the generic header below so device.c can dispatch. */
#ifndef PTXGEN_DEVICE_IMPL_H
#define PTXGEN_DEVICE_IMPL_H
#include "device.h"

typedef struct DevOps {
    const char *name;
    void (*close)(Device *d);
    int (*info)(Device *d, DevInfo *info, char *err, size_t errlen);
    int (*load_ptx)(Device *d, const char *ptx, const char *dump_name, DevModule **out, char *err, size_t errlen);
    const char *(*last_load)(const Device *d);   /* NULL: no assembler (the sim) */
    void (*unload)(DevModule *m);
    int (*get_func)(DevModule *m, const char *entry, DevFunc **out, char *err, size_t errlen);
    int (*func_attrs)(DevFunc *f, DevFuncAttrs *a, char *err, size_t errlen);
    int (*set_dyn_smem)(DevFunc *f, int dyn_smem, char *err, size_t errlen);
    int (*alloc)(Device *d, DevPtr *p, size_t bytes, char *err, size_t errlen);
    int (*free)(Device *d, DevPtr p, char *err, size_t errlen);
    int (*upload)(Device *d, DevPtr dst, const void *src, size_t bytes, char *err, size_t errlen);
    int (*download)(Device *d, void *dst, DevPtr src, size_t bytes, char *err, size_t errlen);
    int (*fill_u8)(Device *d, DevPtr dst, uint8_t v, size_t bytes, char *err, size_t errlen);
    int (*copy)(Device *d, DevPtr dst, DevPtr src, size_t bytes, char *err, size_t errlen);   /* on the stream */
    int (*launch)(DevFunc *f, const unsigned grid[3], const unsigned block[3], const DevLaunchHow *how,
                  unsigned dyn_smem, void **args, char *err, size_t errlen);
    int (*sync)(Device *d, char *err, size_t errlen);
    int (*event_new)(Device *d, DevEvent **e, char *err, size_t errlen);
    void (*event_free)(DevEvent *e);
    int (*event_record)(DevEvent *e, char *err, size_t errlen);
    int (*event_ms)(DevEvent *start, DevEvent *stop, float *ms, char *err, size_t errlen);
    int (*stats)(Device *d, FILE *out, char *err, size_t errlen);
    int (*stats_get)(Device *d, DevStats *out);   /* NULL: no counters (cuda) */
    int (*tmap_encode)(Device *d, const DevTmapDesc *desc, uint8_t out[DEV_TMAP_BYTES], char *err, size_t errlen);
    /* sim only (NULL elsewhere): notes become errors; the notes so far */
    void (*set_strict)(Device *d, int on);
    int (*notes)(Device *d, FILE *out);
} DevOps;

struct Device { const DevOps *ops; void *stream; /* CUstream of launches, fills and events (NULL: the default) */ };
struct DevModule { Device *dev; };
struct DevFunc { Device *dev; };
struct DevEvent { Device *dev; };

/* Writes a message into err (if any) and returns -1: every backend's failure path. */
int dev_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

int cuda_open(Device **out, int ordinal, char *err, size_t errlen);
int sim_open(Device **out, char *err, size_t errlen);
#endif
