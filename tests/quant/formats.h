/* tests/quant/formats.h — every quantized format the ops accept (mode, bits, group size): the
 * table the geometry and GPU tests walk. */
#ifndef TSR_TESTS_QUANT_FORMATS_H
#define TSR_TESTS_QUANT_FORMATS_H

#include <tessera/tessera.h>

static const struct {
  tsr_quant_mode mode;
  int bits, group_size;
} FORMATS[] = {
    {TSR_QUANT_AFFINE, 2, 32}, {TSR_QUANT_AFFINE, 2, 64}, {TSR_QUANT_AFFINE, 2, 128},
    {TSR_QUANT_AFFINE, 3, 32}, {TSR_QUANT_AFFINE, 3, 64}, {TSR_QUANT_AFFINE, 3, 128},
    {TSR_QUANT_AFFINE, 4, 32}, {TSR_QUANT_AFFINE, 4, 64}, {TSR_QUANT_AFFINE, 4, 128},
    {TSR_QUANT_AFFINE, 5, 32}, {TSR_QUANT_AFFINE, 5, 64}, {TSR_QUANT_AFFINE, 5, 128},
    {TSR_QUANT_AFFINE, 6, 32}, {TSR_QUANT_AFFINE, 6, 64}, {TSR_QUANT_AFFINE, 6, 128},
    {TSR_QUANT_AFFINE, 8, 32}, {TSR_QUANT_AFFINE, 8, 64}, {TSR_QUANT_AFFINE, 8, 128},
    {TSR_QUANT_MXFP4, 4, 32},  {TSR_QUANT_MXFP8, 8, 32},  {TSR_QUANT_NVFP4, 4, 16},
};
#define FORMAT_COUNT ((int)(sizeof FORMATS / sizeof FORMATS[0]))

#endif
