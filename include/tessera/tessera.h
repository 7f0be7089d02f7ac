/* tessera/tessera.h — the whole public API of libtessera.
 *
 * tessera runs weight-quantized language models: lazy arrays evaluated on CPU (and CUDA)
 * streams, MLX's quantized formats, collectives, and a backing ledger that can hold a process to
 * a memory cap. Link with -ltessera (pkg-config tessera). The areas:
 *   base.h    status codes, errors, dtypes, float16/bfloat16
 *   array.h   devices, streams, arrays, evaluation
 *   step.h    an evaluation recorded once and replayed (a decode step)
 *   ops.h     op constructors
 *   memory.h  the backing ledger and the calibration SPI
 *   spi.h     the execution SPI (running outside code serialized with evaluation)
 *   device.h  cached device discovery
 *   kernels.h the CUDA kernel sources the library embeds, with their SHA-256
 *   quant.h   quantized formats: quantize, dequantize, quantized matmul, gathered (MoE)
 *   io.h      .npy files in and out
 *   safetensors.h  checkpoint tensors: safetensors files and sharded folders
 *   tokenizer.h    tokenizer.json: byte-level BPE encode and decode
 *   dist.h    groups of ranks (local, MPI, NCCL) and their sealed all-sum / all-gather
 *   model.h   the GLM runner: load, prefill and decode, sample, chat
 */
#ifndef TESSERA_TESSERA_H
#define TESSERA_TESSERA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera/base.h"
#include "tessera/array.h"
#include "tessera/step.h"
#include "tessera/ops.h"
#include "tessera/memory.h"
#include "tessera/spi.h"
#include "tessera/device.h"
#include "tessera/kernels.h"
#include "tessera/quant.h"
#include "tessera/io.h"
#include "tessera/safetensors.h"
#include "tessera/tokenizer.h"
#include "tessera/dist.h"
#include "tessera/model.h"
#include "tessera/convert.h"
#include "tessera/calibrate.h"

#endif /* TESSERA_TESSERA_H */
