/* The TMA unit: to be written (bulk tensor copies, bulk groups). */
#include "sim.h"

int sim_tma(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    (void)c, (void)w, (void)in, (void)exec;
    return 0;
}
