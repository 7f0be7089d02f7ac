/* tessera/calibrate.h — activation statistics of a loaded GLM model, and a mixed-precision recipe
 * proposed from them (what `tessera calibrate` runs).
 *
 * A calibration observes the input of every linear layer the forward pass runs (attention
 * q/k/v/o, the MLP's gate/up/down or fused gate_up, the routed experts' stacked projections, the
 * shared experts, lm_head) over every token of every prompt it is given: the absolute maximum and
 * the 50th, 99th and 99.9th percentiles of |x|, and the largest backing the device's ledger held
 * when that input was evaluated. With a cap installed on the device (tsr_model_options'
 * backing_cap), a prompt that needs more is refused with TSR_ERR_CAP naming the bytes and what
 * they were for, and the ledger never passes the cap.
 *
 *   tsr_model_calibration *c = NULL;
 *   tsr_status st = tsr_model_calibration_new(&c, model);
 *   if (st == TSR_OK) st = tsr_model_calibration_run(c, ids, n_ids);   // once per prompt
 *   tsr_calibration_linear lin;
 *   for (size_t i = 0; st == TSR_OK && i < tsr_model_calibration_count(c); i++)
 *     if (tsr_model_calibration_linear(c, i, &lin) == TSR_OK)
 *       printf("%s absmax %g p99 %g\n", lin.name, lin.absmax, lin.p99);
 *   char *block = NULL;   // {"group_size": 64, "bits": 4, "mode": "affine", "<module>": {...}}
 *   if (st == TSR_OK) st = tsr_model_calibration_recipe(c, 5.0, &block);
 *   free(block);
 *   tsr_model_calibration_free(c);
 *
 * Percentiles come from a histogram with 32 linear bins per power of two, so each is within 3.2%
 * (relative) of the exact order statistic, above it and never above the absolute maximum; the
 * absolute maximum is exact. Memory on the host: a few tens of KiB per linear, whatever the number
 * of tokens.
 *
 * A model loaded with a tensor-parallel group (tsr_model_options.group), dense or MoE, calibrates
 * too: every rank calls each function, and every rank then holds the whole model's statistics
 * (the ranks' shares combined after each prompt: a routed expert's inputs are observed on the
 * rank that holds it) and, from tsr_model_calibration_recipe, the same recipe as the model loaded
 * without a group (each linear's errors summed over the ranks' shards; equal to the unsplit ones
 * within the split forward's float32 reordering, test_mpi_calibrate).
 *
 * Threads: a calibration belongs to one thread at a time, and while it lives its model must not
 * be used by other threads (the observer is installed on the model). Every call blocks. */
#ifndef TESSERA_CALIBRATE_H
#define TESSERA_CALIBRATE_H

#include "tessera/base.h"
#include "tessera/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_model_calibration tsr_model_calibration;

/* One linear layer's statistics. */
typedef struct {
  const char *name; /* module path as mlx-lm names it ("model.layers.0.self_attn.q_proj");
                       valid while the calibration lives */
  int64_t layer;    /* decoder layer index; -1 for the head */
  int64_t in_features, out_features;
  int64_t experts;            /* routed experts stacked in it (switch_mlp); 0 for a plain linear */
  uint64_t parameters;        /* weights: experts x out x in, or out x in */
  int bits;                   /* as loaded: 0 float, else the quantized bits */
  uint64_t values;            /* input values observed (rows x in_features) */
  double absmax;              /* of the input over every value observed; 0 before any */
  double p50, p99, p999;      /* percentiles of |x| */
  uint64_t peak_in_use_bytes; /* the most active + cached + pending + fixed seen on the ledger
                                 just after this input was evaluated */
  /* After tsr_model_calibration_recipe: the estimated squared output error per token of this
   * linear's weights at 4 and 8 bits (below), and the bits proposed (4, 8, or 0 when it cannot be
   * quantized at the recipe's group size and stays float). */
  double error_4bit, error_8bit;
  int proposed_bits;
  uint64_t reserved[8];
} tsr_calibration_linear;

/* A calibration of m (which must outlive it): installs an observer on m, so m's other forward
 * passes (sessions, logits) are observed too until it is freed. TSR_ERR_INVALID for NULL
 * arguments; TSR_ERR_STATE when m already has one; TSR_ERR_NOMEM. */
TSR_API tsr_status tsr_model_calibration_new(tsr_model_calibration **out, tsr_model *m);
/* Removes the observer and frees everything (NULL is a no-op). */
TSR_API void tsr_model_calibration_free(tsr_model_calibration *c);

/* Runs one prompt of n tokens through the model (one forward pass over all of them, a fresh KV
 * cache; lm_head's input is observed for every position, and its product, n x vocab logits that
 * nothing needs, is not computed) and adds what every linear saw. TSR_ERR_INVALID for no tokens or
 * one outside the vocabulary; TSR_ERR_CAP or TSR_ERR_NOMEM when the device refuses memory (the
 * message names the bytes and what they were for); the statistics of a failed prompt are partial.
 */
TSR_API tsr_status tsr_model_calibration_run(tsr_model_calibration *c, const int32_t *tokens,
                                             size_t n);
/* Prompts and tokens run so far. */
TSR_API size_t tsr_model_calibration_prompts(const tsr_model_calibration *c);
TSR_API uint64_t tsr_model_calibration_tokens(const tsr_model_calibration *c);

/* The linears, in forward order (layer by layer, q k v o then the MLP's, the head last). */
TSR_API size_t tsr_model_calibration_count(const tsr_model_calibration *c);
/* Copies linear i's statistics. TSR_ERR_INVALID for i out of range. */
TSR_API tsr_status tsr_model_calibration_linear(const tsr_model_calibration *c, size_t i,
                                                tsr_calibration_linear *out);

/* The lowest and highest bits per weight a recipe can have: every linear at affine 4-bit, or at
 * 8-bit, group 64, counting a 16-bit scale and a 16-bit bias per group (4.5 and 8.5). */
#define TSR_RECIPE_MIN_BITS_PER_WEIGHT 4.5
#define TSR_RECIPE_MAX_BITS_PER_WEIGHT 8.5

/* Proposes which linears to quantize at 8 bits and which at 4 (affine, group 64) so that the
 * bits per weight over the calibrated linears stay within `bits_per_weight`, and writes the
 * result as the `quantization` block of an mlx-lm config.json (the global group_size, bits and
 * mode, then one entry per linear at 8 bits keyed by its module path) into *json (free() it).
 *
 * Sensitivity: for each linear, the weights W (dequantized when the checkpoint is quantized) are
 * quantized to 4 and to 8 bits and back, and the error of each is sum_ij m_j (W_ij - Q(W)_ij)^2,
 * m_j the mean square of input channel j over the calibration tokens: the expected squared error
 * of the linear's output per token when the input channels are uncorrelated. Linears are promoted
 * to 8 bits in order of error removed per bit spent (error_4bit - error_8bit over 4 x parameters)
 * while the budget allows. Computed on the model's device (a weight at a time in float32) under
 * the same cap. Run it on a float checkpoint: on one already at 4 bits the 4-bit error is ~0.
 *
 * TSR_ERR_INVALID for a budget outside [TSR_RECIPE_MIN_BITS_PER_WEIGHT,
 * TSR_RECIPE_MAX_BITS_PER_WEIGHT] or before any prompt ran; TSR_ERR_CAP, TSR_ERR_NOMEM. */
TSR_API tsr_status tsr_model_calibration_recipe(tsr_model_calibration *c, double bits_per_weight,
                                                char **json);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_CALIBRATE_H */
