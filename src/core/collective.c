/* core/collective.c — the one kernel of the collective primitives (core/collective.h): it hands
 * the resolved descriptor to the runner its group's layer put in the parameters. */
#include "core/collective.h"

#include "base/status.h"

tsr_status tsri_collective_kernel(const tsri_op *op) {
  const tsri_collective_params *params = TSRI_PARAMS(op, tsri_collective_params);
  if (!params || op->params_size != sizeof *params || !params->run)
    return tsri_error(TSR_ERR_STATE, "%s: a collective node without its group's runner",
                      tsri_primitive_name(op->primitive));
  return params->run(op);
}

void tsri_register_collectives(tsri_kernel_fn *table) {
  table[TSRI_PRIM_ALL_SUM] = tsri_collective_kernel;
  table[TSRI_PRIM_ALL_GATHER] = tsri_collective_kernel;
}
