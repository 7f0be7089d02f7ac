/* base/half.c — the public face of base/half.h. */
#include "base/half.h"

#include "tessera/base.h"

uint16_t tsr_f32_to_f16(float x) {
  return tsri_f32_to_f16(x);
}
float tsr_f16_to_f32(uint16_t h) {
  return tsri_f16_to_f32(h);
}
uint16_t tsr_f32_to_bf16(float x) {
  return tsri_f32_to_bf16(x);
}
float tsr_bf16_to_f32(uint16_t b) {
  return tsri_bf16_to_f32(b);
}
