/* model/graph.c — the scratch list and its sticky-status op wrappers (model/graph.h). */
#include "model/graph.h"

#include <stdlib.h>

void graph_begin(glm_graph *g, tsr_stream *stream) {
  *g = (glm_graph){NULL, 0, 0, TSR_OK, stream, NULL, NULL};
}

tsr_status graph_end(glm_graph *g) {
  for (size_t i = 0; i < g->n; i++)
    tsr_array_release(g->items[i]);
  free(g->items);
  tsr_status st = g->status;
  *g = (glm_graph){NULL, 0, 0, TSR_OK, g->stream, g->observe, g->observe_ctx};
  return st;
}

tsr_array *graph_collect(glm_graph *g, tsr_array *keep) {
  if (!graph_ok(g)) return NULL;
  if (g->n == 0) return graph_keep(g, TSR_OK, tsr_array_retain(keep));
  tsr_array_retain(keep); /* the list's one reference from now on */
  for (size_t i = 0; i < g->n; i++)
    tsr_array_release(g->items[i]);
  g->items[0] = keep;
  g->n = 1;
  return keep;
}

bool graph_ok(const glm_graph *g) {
  return g->status == TSR_OK;
}

void graph_fail(glm_graph *g, tsr_status st) {
  if (g->status == TSR_OK) g->status = st;
}

void graph_observe(glm_graph *g, const tsr_array *weight, tsr_array *x) {
  if (!graph_ok(g) || !g->observe) return;
  tsr_status st = g->observe(g->observe_ctx, weight, x);
  if (st != TSR_OK) graph_fail(g, st);
}

tsr_array *graph_keep(glm_graph *g, tsr_status st, tsr_array *made) {
  if (st != TSR_OK) {
    graph_fail(g, st);
    return NULL;
  }
  if (g->n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 64;
    tsr_array **grown = realloc(g->items, cap * sizeof *grown);
    if (!grown) {
      tsr_array_release(made);
      graph_fail(g, tsr_error_set(TSR_ERR_NOMEM, "forward: out of memory for the graph list"));
      return NULL;
    }
    g->items = grown;
    g->cap = cap;
  }
  g->items[g->n++] = made;
  return made;
}

/* Each wrapper: nothing when the builder already failed, else the op and its result kept. */
#define GRAPH_GUARD(g) \
  if (!graph_ok(g)) return NULL

tsr_array *g_add(glm_graph *g, tsr_array *a, tsr_array *b) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_add(&out, a, b, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_mul(glm_graph *g, tsr_array *a, tsr_array *b) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_multiply(&out, a, b, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_silu(glm_graph *g, tsr_array *x) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_silu(&out, x, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_sigmoid(glm_graph *g, tsr_array *x) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_sigmoid(&out, x, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_astype(glm_graph *g, tsr_array *x, tsr_dtype dtype) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_astype(&out, x, dtype, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_reshape(glm_graph *g, tsr_array *x, const int64_t *shape, int ndim) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_reshape(&out, x, shape, ndim, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_transpose(glm_graph *g, tsr_array *x, const int *axes, int naxes) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_transpose(&out, x, axes, naxes, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_matmul(glm_graph *g, tsr_array *a, tsr_array *b) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_matmul(&out, a, b, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_rms_norm(glm_graph *g, tsr_array *x, tsr_array *weight, float eps) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_rms_norm(&out, x, weight, eps, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_rope(glm_graph *g, tsr_array *x, int dims, bool traditional, float base,
                  int64_t offset) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_rope(&out, x, dims, traditional, base, offset, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_sdpa(glm_graph *g, tsr_array *q, tsr_array *k, tsr_array *v, float scale) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_sdpa(&out, q, k, v, scale, true, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_rope_dynamic(glm_graph *g, tsr_array *x, int dims, bool traditional, float base,
                          tsr_array *offset) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_rope_dynamic(&out, x, dims, traditional, base, offset, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_sdpa_dynamic(glm_graph *g, tsr_array *q, tsr_array *k, tsr_array *v, float scale,
                          tsr_array *length) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_sdpa_dynamic(&out, q, k, v, scale, length, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_take(glm_graph *g, tsr_array *a, tsr_array *indices, int axis) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_take(&out, a, indices, axis, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_sum(glm_graph *g, tsr_array *a, int axis) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_sum(&out, a, &axis, 1, false, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_slice(glm_graph *g, tsr_array *a, const int64_t *start, const int64_t *stop,
                   int naxes) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_slice(&out, a, start, stop, NULL, naxes, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_from_data(glm_graph *g, const void *data, tsr_dtype dtype, const int64_t *shape,
                       int ndim, tsr_device device) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_array_from_data_on(&out, data, dtype, shape, ndim, device);
  return graph_keep(g, made_st, out);
}

tsr_array *g_zeros(glm_graph *g, const int64_t *shape, int ndim) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_zeros(&out, shape, ndim, TSR_FLOAT32, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_all_sum(glm_graph *g, tsr_array *x, tsr_group *group) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_all_sum(&out, x, group, g->stream);
  return graph_keep(g, made_st, out);
}

tsr_array *g_all_gather(glm_graph *g, tsr_array *x, tsr_group *group) {
  GRAPH_GUARD(g);
  tsr_array *out = NULL;
  tsr_status made_st = tsr_all_gather(&out, x, group, g->stream);
  return graph_keep(g, made_st, out);
}
