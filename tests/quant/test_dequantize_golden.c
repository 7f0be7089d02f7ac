/* tests/quant/test_dequantize_golden.c — tsr_dequantize (and tsr_dequantize_nvfp4_scaled)
 * against mlx-cpu 0.32.4, exactly: every dequantize case of tests/data/quant/manifest.json, every
 * element's bits (any NaN equals any NaN), on every row — a dequantize of given codes is defined
 * even where the codes came from NaN/Inf input. Where MLX ignored the requested dtype (nvfp4 with
 * a global scale returns float32), MLX's float32 rounded to the requested dtype is the answer
 * (docs/quant-rules.md). Also: transposed (non-contiguous) inputs give the same bits (the scalar
 * decoder; contiguous rows take the SIMD one), and the same again with TSR_CPU_ISA=avx2 and
 * scalar in child processes. */
#include <math.h>

#include "child.h"
#include "golden.h"

typedef struct {
  int cases, elements, mismatches;
} tally;

static float value_of(const void *data, tsr_dtype dtype, int64_t i) {
  if (dtype == TSR_FLOAT32) return ((const float *)data)[i];
  uint16_t h = ((const uint16_t *)data)[i];
  return dtype == TSR_FLOAT16 ? tsr_f16_to_f32(h) : tsr_bf16_to_f32(h);
}

static uint32_t bits_of(const void *data, tsr_dtype dtype, int64_t i) {
  if (dtype != TSR_FLOAT32) return ((const uint16_t *)data)[i];
  uint32_t b;
  memcpy(&b, (const float *)data + i, sizeof b);
  return b;
}

/* MLX's float32 output rounded to `dtype`, as bits. */
static uint32_t rounded_bits(float v, tsr_dtype dtype) {
  if (dtype == TSR_FLOAT16) return tsr_f32_to_f16(v);
  if (dtype == TSR_BFLOAT16) return tsr_f32_to_bf16(v);
  uint32_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

static tsr_array *dequantize_case(const cJSON *c, tsr_array *w_q, tsr_array *scales,
                                  tsr_array *biases, tsr_dtype dtype) {
  tsr_array *out = NULL;
  float g = 0.0f;
  if (golden_global_scale(c, &g))
    CHECK_OK(tsr_dequantize_nvfp4_scaled(&out, w_q, scales, g, dtype, NULL));
  else
    CHECK_OK(tsr_dequantize(&out, w_q, scales, biases, golden_int(c, "group_size"),
                            golden_int(c, "bits"), golden_mode(golden_string(c, "mode")), dtype,
                            NULL));
  return out;
}

static void run_case(const cJSON *c, tally *t) {
  const char *id = golden_string(c, "id");
  tsr_array *w_q = golden_array(c, "w_q"), *scales = golden_array(c, "scales");
  tsr_array *biases = golden_array(c, "biases"), *want = golden_array(c, "out");
  tsr_dtype mlx_dtype = golden_dtype(golden_string(c, "out_dtype"));
  const char *requested_name = golden_string(c, "requested_dtype");
  tsr_dtype dtype = requested_name ? golden_dtype(requested_name) : mlx_dtype;
  tsr_array *got = dequantize_case(c, w_q, scales, biases, dtype);
  CHECK_EQ_INT(tsr_array_dtype(got), dtype);
  CHECK_EQ_INT(tsr_array_size(got), tsr_array_size(want));
  void *got_data = golden_read(got, NULL), *want_data = golden_read(want, NULL);
  int64_t n = tsr_array_size(want);
  for (int64_t i = 0; i < n; i++) {
    float mlx = value_of(want_data, mlx_dtype, i), ours = value_of(got_data, dtype, i);
    uint32_t want_bits = rounded_bits(mlx, dtype), got_bits = bits_of(got_data, dtype, i);
    bool equal = isnan(mlx) ? isnan(ours) : want_bits == got_bits;
    if (!equal && t->mismatches++ < 40)
      fprintf(stderr, "mismatch: %s element %lld: got %a (0x%x), MLX %a (0x%x)\n", id, (long long)i,
              (double)ours, got_bits, (double)mlx, want_bits);
    t->elements += equal;
  }
  /* The same through strided views of every input. */
  tsr_array *sw = golden_strided_copy(w_q), *ss = golden_strided_copy(scales);
  tsr_array *sb = biases ? golden_strided_copy(biases) : NULL;
  tsr_array *strided = dequantize_case(c, sw, ss, sb, dtype);
  void *strided_data = golden_read(strided, NULL);
  if (memcmp(strided_data, got_data, (size_t)n * tsr_dtype_size(dtype)) != 0)
    CHECK_FAIL_("%s: strided inputs give other bits than contiguous ones", id);
  t->cases++;
  free(strided_data);
  free(got_data);
  free(want_data);
  tsr_array *all[] = {w_q, scales, biases, want, got, sw, ss, sb, strided};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
}

int main(int argc, char **argv) {
  cJSON *root = golden_manifest();
  tally t = {0, 0, 0};
  const cJSON *c = NULL;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "cases")) {
    if (strcmp(golden_string(c, "kind"), "dequantize") == 0) run_case(c, &t);
  }
  printf("dequantize golden: %d cases, %d elements exact\n", t.cases, t.elements);
  CHECK_EQ_INT(t.mismatches, 0);
  CHECK_EQ_INT(t.cases, 254);
  cJSON_Delete(root);
  if (!test_is_child(argc, argv)) { /* the other instruction sets' row decoders, bit for bit */
    test_run_child("TSR_CPU_ISA", "avx2");
    test_run_child("TSR_CPU_ISA", "scalar");
  }
  tsr_memory_clear_cache((tsr_device){TSR_CPU, 0});
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
