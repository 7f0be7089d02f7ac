/* model/graph.h — a scratch list for building a forward pass out of tessera ops without a cleanup
 * ladder per op. Every array an op returns is kept on the list; the first failure is sticky (later
 * calls return NULL and do nothing), so a forward reads as a sequence of ops and checks the status
 * once. graph_end releases everything on the list; what must outlive it is retained first.
 * Not thread-safe: one builder per thread. */
#ifndef TSR_MODEL_GRAPH_H
#define TSR_MODEL_GRAPH_H

#include <tessera/tessera.h>

/* Sees the input x of each linear layer, identified by its weight array, as the forward builds
 * it (calibration); a failure fails the builder. */
typedef tsr_status (*glm_linear_observer)(void *ctx, const tsr_array *weight, tsr_array *x);

typedef struct {
  tsr_array **items;
  size_t n, cap;
  tsr_status status;
  tsr_stream *stream;
  glm_linear_observer observe; /* NULL: none */
  void *observe_ctx;
} glm_graph;

void graph_begin(glm_graph *g, tsr_stream *stream);
/* Releases every array on the list; returns the sticky status. */
tsr_status graph_end(glm_graph *g);
/* Releases every array on the list except `keep` (which stays on it): the graph itself holds what
 * its nodes still need, so a layer's intermediates go when the layer's output is built and their
 * buffers are freed as soon as evaluation has consumed them. Returns keep (NULL on failure). */
tsr_array *graph_collect(glm_graph *g, tsr_array *keep);
/* Records the status of an op that produced `made`; keeps it on the list; returns it (NULL on
 * failure). Call the op first and pass its status and result after: as two arguments of one
 * call, the result could be read before the op has written it. */
tsr_array *graph_keep(glm_graph *g, tsr_status st, tsr_array *made);
/* Fails the builder with `st` (whose message the caller has set) unless it already failed. */
void graph_fail(glm_graph *g, tsr_status st);
bool graph_ok(const glm_graph *g);
/* Hands x, the input of the linear whose weight is `weight`, to the observer when there is one. */
void graph_observe(glm_graph *g, const tsr_array *weight, tsr_array *x);

/* The ops a forward uses, each NULL when the builder has failed (inputs NULL are tolerated then).
 */
tsr_array *g_add(glm_graph *g, tsr_array *a, tsr_array *b);
tsr_array *g_mul(glm_graph *g, tsr_array *a, tsr_array *b);
tsr_array *g_silu(glm_graph *g, tsr_array *x);
tsr_array *g_sigmoid(glm_graph *g, tsr_array *x);
tsr_array *g_astype(glm_graph *g, tsr_array *x, tsr_dtype dtype);
tsr_array *g_reshape(glm_graph *g, tsr_array *x, const int64_t *shape, int ndim);
tsr_array *g_transpose(glm_graph *g, tsr_array *x, const int *axes, int naxes);
tsr_array *g_matmul(glm_graph *g, tsr_array *a, tsr_array *b);
tsr_array *g_rms_norm(glm_graph *g, tsr_array *x, tsr_array *weight, float eps);
tsr_array *g_rope(glm_graph *g, tsr_array *x, int dims, bool traditional, float base,
                  int64_t offset);
tsr_array *g_sdpa(glm_graph *g, tsr_array *q, tsr_array *k, tsr_array *v, float scale);
/* rope and causal sdpa with the offset / key count read from a one-element device array. */
tsr_array *g_rope_dynamic(glm_graph *g, tsr_array *x, int dims, bool traditional, float base,
                          tsr_array *offset);
tsr_array *g_sdpa_dynamic(glm_graph *g, tsr_array *q, tsr_array *k, tsr_array *v, float scale,
                          tsr_array *length);
tsr_array *g_take(glm_graph *g, tsr_array *a, tsr_array *indices, int axis);
tsr_array *g_sum(glm_graph *g, tsr_array *a, int axis);
/* a[start:stop] on the first naxes axes (step 1). */
tsr_array *g_slice(glm_graph *g, tsr_array *a, const int64_t *start, const int64_t *stop,
                   int naxes);
tsr_array *g_from_data(glm_graph *g, const void *data, tsr_dtype dtype, const int64_t *shape,
                       int ndim, tsr_device device);
tsr_array *g_zeros(glm_graph *g, const int64_t *shape, int ndim);
/* The lazy collectives of tessera/dist.h on the builder's stream. */
tsr_array *g_all_sum(glm_graph *g, tsr_array *x, tsr_group *group);
tsr_array *g_all_gather(glm_graph *g, tsr_array *x, tsr_group *group);

#endif
