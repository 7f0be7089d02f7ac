/* core/collective.c — the one kernel of the collective primitives (core/collective.h): it hands
 * the resolved descriptor to the runner its group's layer put in the parameters. */
#include "core/collective.h"

#include "base/status.h"
#include "core/array.h"

tsr_status tsri_collective_kernel(const tsri_op *op) {
  const tsri_collective_params *params = TSRI_PARAMS(op, tsri_collective_params);
  if (!params || op->params_size != sizeof *params || !params->run)
    return tsri_error(TSR_ERR_STATE, "%s: a collective node without its group's runner",
                      tsri_primitive_name(op->primitive));
  return params->run(op);
}

static bool is_collective(const tsr_array *a) {
  return a->primitive == TSRI_PRIM_ALL_SUM || a->primitive == TSRI_PRIM_ALL_GATHER;
}

void tsri_collective_refuse(const tsr_array *node) {
  if (!is_collective(node)) return;
  const tsri_collective_params *params = node->params;
  if (!params || node->params_size != sizeof *params || !params->refuse || node->ninputs < 1)
    return;
  for (int i = 0; i < node->ninputs; i++)
    if (is_collective(node->inputs[i]) && atomic_load(&node->inputs[i]->state) == TSRI_NODE_FAILED)
      return;
  const tsr_array *in = node->inputs[0];
  params->refuse(params->group_serial, node->primitive, (uint64_t)in->size, in->dtype);
}

void tsri_register_collectives(tsri_kernel_fn *table) {
  table[TSRI_PRIM_ALL_SUM] = tsri_collective_kernel;
  table[TSRI_PRIM_ALL_GATHER] = tsri_collective_kernel;
}
