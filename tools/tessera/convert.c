/* tools/tessera/convert.c — `tessera convert`: a Hugging Face GLM checkpoint to the MLX layout
 * mlx-lm writes, quantized (tsr_model_convert does the work; this file parses flags). */
#include <stdlib.h>
#include <string.h>

#include "model_cli.h"

static const char convert_usage[] =
    "usage: tessera convert --hf DIR -o OUT [--mode affine|mxfp4|mxfp8|nvfp4] [--bits B]\n"
    "                       [--group-size G] [--dtype float16|bfloat16|float32]\n"
    "                       [--shard-size BYTES] [--recipe FILE]\n"
    "\n"
    "Converts a Hugging Face GLM-4 / GLM-4.5 checkpoint (bf16, fp16 or fp32, sharded or not)\n"
    "into the quantized layout mlx-lm's convert writes: linear layers and the embedding\n"
    "quantized (a layer whose input width is not a multiple of the group size stays float, as\n"
    "in mlx-lm), experts stacked into switch_mlp, the router, norms and biases float, config.json\n"
    "with the quantization block, sharded safetensors with an index, tokenizer files copied.\n"
    "One tensor at a time is converted; OUT appears only once it is whole and loads.\n"
    "\n"
    "  --hf DIR           the Hugging Face checkpoint folder\n"
    "  -o OUT             the new folder to write (must not exist)\n"
    "  --mode M           affine (default), mxfp4, mxfp8 or nvfp4\n"
    "  --bits B           bits per weight (default: affine 4, mxfp4/nvfp4 4, mxfp8 8)\n"
    "  --group-size G     weights per scale (default: affine 64, mxfp4/mxfp8 32, nvfp4 16)\n"
    "  --dtype T          cast float tensors to T before quantizing (default: config.json's\n"
    "                     torch_dtype when it names one of these, else keep each tensor's own)\n"
    "  --shard-size BYTES largest shard (default 5GiB, as mlx-lm; K/M/G suffixes)\n"
    "  --recipe FILE      a mixed quantization: a config.json `quantization` block (global\n"
    "                     group_size/bits/mode, then per-module entries such as\n"
    "                     \"model.layers.0.mlp.down_proj\": {\"bits\": 8, ...} or false for "
    "float), as\n"
    "                     `tessera calibrate --bits-budget B --recipe FILE` proposes; instead of\n"
    "                     --mode, --bits and --group-size\n"
    "  --help             this text\n";

typedef struct {
  const char *hf, *out;
  tsr_convert_options opt;
} convert_args;

static bool parse_mode(const char *text, tsr_quant_mode *mode) {
  static const char *const names[4] = {"affine", "mxfp4", "mxfp8", "nvfp4"};
  static const tsr_quant_mode modes[4] = {TSR_QUANT_AFFINE, TSR_QUANT_MXFP4, TSR_QUANT_MXFP8,
                                          TSR_QUANT_NVFP4};
  for (int i = 0; i < 4; i++)
    if (strcmp(text, names[i]) == 0) {
      *mode = modes[i];
      return true;
    }
  return false;
}

static bool parse_dtype(const char *text, tsr_dtype *dtype) {
  if (strcmp(text, "float16") == 0)
    *dtype = TSR_FLOAT16;
  else if (strcmp(text, "bfloat16") == 0)
    *dtype = TSR_BFLOAT16;
  else if (strcmp(text, "float32") == 0)
    *dtype = TSR_FLOAT32;
  else
    return false;
  return true;
}

static int parse_value(convert_args *a, const char *flag, const char *value) {
  uint64_t n = 0;
  if (strcmp(flag, "--hf") == 0)
    a->hf = value;
  else if (strcmp(flag, "-o") == 0)
    a->out = value;
  else if (strcmp(flag, "--mode") == 0) {
    if (!parse_mode(value, &a->opt.mode))
      return cli_usage_error("convert", "bad --mode '%s' (affine, mxfp4, mxfp8, nvfp4)", value);
  } else if (strcmp(flag, "--bits") == 0 || strcmp(flag, "--group-size") == 0) {
    if (!cli_parse_count(value, 4096, &n) || n == 0)
      return cli_usage_error("convert", "bad %s '%s'", flag, value);
    *(flag[2] == 'b' ? &a->opt.bits : &a->opt.group_size) = (int)n;
  } else if (strcmp(flag, "--dtype") == 0) {
    a->opt.cast = true;
    if (!parse_dtype(value, &a->opt.dtype))
      return cli_usage_error("convert", "bad --dtype '%s' (float16, bfloat16, float32)", value);
  } else if (strcmp(flag, "--recipe") == 0) {
    a->opt.recipe = value;
  } else if (strcmp(flag, "--shard-size") == 0) {
    if (!cli_parse_bytes(value, &a->opt.shard_bytes))
      return cli_usage_error("convert", "bad --shard-size '%s'", value);
  } else {
    return cli_usage_error("convert", "unknown option '%s'", flag);
  }
  return 0;
}

static int parse_args(int argc, char **argv, convert_args *a) {
  *a = (convert_args){.opt = tsr_convert_default_options()};
  a->opt.progress = true;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      fputs(convert_usage, stdout);
      return -1;
    }
    if (i + 1 >= argc)
      return cli_usage_error("convert", "unknown option or missing value: %s", argv[i]);
    int code = parse_value(a, argv[i], argv[i + 1]);
    if (code != 0) return code;
    i++;
  }
  if (!a->hf || !a->out) return cli_usage_error("convert", "--hf DIR and -o OUT are required");
  if (a->opt.recipe && (a->opt.bits || a->opt.group_size || a->opt.mode != TSR_QUANT_AFFINE))
    return cli_usage_error("convert",
                           "--recipe sets the quantization: leave out --mode, --bits and "
                           "--group-size");
  return 0;
}

int cli_convert(int argc, char **argv) {
  convert_args a;
  int parsed = parse_args(argc, argv, &a);
  if (parsed != 0) return parsed < 0 ? CLI_EXIT_OK : parsed;
  double start = cli_now_s();
  tsr_status st = tsr_model_convert(a.hf, a.out, &a.opt);
  if (st != TSR_OK) {
    int code = cli_report_failure("convert", a.hf, st);
    /* an unknown model_type or rope type is bad input too */
    return st == TSR_ERR_UNSUPPORTED ? CLI_EXIT_USAGE : code;
  }
  fprintf(stderr, "tessera convert: wrote %s in %.1f s\n", a.out, cli_now_s() - start);
  return CLI_EXIT_OK;
}
