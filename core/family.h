/* MMA instruction families: what a target is to QBE. An arch has a set of
 * them (arch.h), a generator belongs to one, and a request asks for one or
 * for auto, the arch's newest among those the kernel has a generator for. */
#ifndef PTXGEN_FAMILY_H
#define PTXGEN_FAMILY_H
#include "buf.h"

typedef enum { FAM_MMA_SYNC = 1u << 0, FAM_WGMMA = 1u << 1, FAM_TCGEN05 = 1u << 2 } Family;
#define FAM_AUTO 0u

/* The families newest first: the order auto prefers them in. */
#define NFAMILIES 3
extern const Family family_order[NFAMILIES];

const char *family_name(Family f);        /* "mma.sync", "wgmma", "tcgen05" */
const char *family_flag(Family f);        /* its --mma value: "sync", "wgmma", "tcgen05" */
/* --mma's values (and the families' own names): FAM_AUTO for NULL or "auto";
 * non-zero with a message for anything else. */
int  family_parse(const char *text, unsigned *fam, char *err, size_t errlen);
/* The families of a set, newest last: "mma.sync", "mma.sync and wgmma", "a, b and c". */
void family_list(unsigned fams, Buf *out);
/* The newest family of a set (0 if empty). */
Family family_newest(unsigned fams);
#endif
