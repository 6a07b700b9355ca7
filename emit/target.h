/* What an emitted module asks of its target: every instruction's mnemonic is
 * decoded (isa.def) and checked against the arch, and the PTX ISA version
 * the module needs is derived from them, so no generator states it by hand. */
#ifndef PTXGEN_TARGET_H
#define PTXGEN_TARGET_H
#include <stddef.h>
#include "arch.h"

/* Scans PTX body text (instructions one per line). Returns 0 with the
 * version as "M.m" in version (the arch's lowest, or later when an
 * instruction needs it), or -1 with the first instruction the target lacks
 * (or that the ISA table does not know) named in err. */
int emit_target_check(const char *body, const ArchInfo *a, char version[16], char *err, size_t errlen);
#endif
