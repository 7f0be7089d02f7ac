/* tools/tessera/info.c — `tessera info`: the version, this build and every device discovery saw;
 * it reads only (no arrays, no streams, nothing on a ledger). */
#include <string.h>

#include "cli.h"

static const char info_usage[] =
    "usage: tessera info [--json]\n"
    "\n"
    "Prints the library version, what this build has, every device with its memory,\n"
    "compute units, compute capability, L2 size and features, and the CUDA kernel sources\n"
    "embedded in the library with their SHA-256.\n"
    "\n"
    "  --json   one JSON object on stdout instead of text\n"
    "  --help   this text\n";

static void print_device_text(const tsr_device_info *info) {
  char name[32], memory[32], l2[32];
  cli_device_name(info->device, name);
  printf("%-9s %s\n", name, info->name);
  printf("          %s %d, memory %s, L2 %s", info->device.type == TSR_CPU ? "cores" : "SMs",
         info->compute_units, cli_format_bytes(info->memory_bytes, memory),
         cli_format_bytes(info->l2_bytes, l2));
  if (info->device.type == TSR_GPU)
    printf(", compute capability %d.%d", info->cc_major, info->cc_minor);
  printf("\n          features: %s\n", info->features[0] ? info->features : "(none detected)");
}

static cJSON *device_json(const tsr_device_info *info) {
  char name[32];
  cJSON *obj = cJSON_CreateObject();
  cJSON_AddStringToObject(obj, "device", cli_device_name(info->device, name));
  cJSON_AddStringToObject(obj, "type", info->device.type == TSR_CPU ? "cpu" : "gpu");
  cJSON_AddNumberToObject(obj, "index", info->device.index);
  cJSON_AddStringToObject(obj, "name", info->name);
  cJSON_AddNumberToObject(obj, "memory_bytes", (double)info->memory_bytes);
  cJSON_AddNumberToObject(obj, "compute_units", info->compute_units);
  cJSON_AddNumberToObject(obj, "cc_major", info->cc_major);
  cJSON_AddNumberToObject(obj, "cc_minor", info->cc_minor);
  cJSON_AddNumberToObject(obj, "l2_bytes", (double)info->l2_bytes);
  cJSON_AddStringToObject(obj, "features", info->features);
  return obj;
}

/* The embedded kernel sources (every build has them, CPU-only included). */
static void print_kernel_sources_text(void) {
  printf("kernel sources: %zu embedded\n", tsr_kernel_source_count());
  for (size_t i = 0; i < tsr_kernel_source_count(); i++) {
    const char *name = tsr_kernel_source_name(i);
    size_t bytes = 0;
    tsr_kernel_source(name, &bytes);
    printf("  %s  %s (%zu bytes)\n", tsr_kernel_source_sha256(name), name, bytes);
  }
}

static cJSON *kernel_sources_json(void) {
  cJSON *list = cJSON_CreateArray();
  for (size_t i = 0; i < tsr_kernel_source_count(); i++) {
    const char *name = tsr_kernel_source_name(i);
    size_t bytes = 0;
    tsr_kernel_source(name, &bytes);
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddStringToObject(obj, "name", name);
    cJSON_AddStringToObject(obj, "sha256", tsr_kernel_source_sha256(name));
    cJSON_AddNumberToObject(obj, "bytes", (double)bytes);
    cJSON_AddItemToArray(list, obj);
  }
  return list;
}

/* Every device, CPU first; returns how many were written (at most `max`). */
static int collect_devices(tsr_device_info *out, int max) {
  int n = 0;
  tsr_device cpu = {TSR_CPU, 0};
  if (n < max && tsr_device_info_get(cpu, &out[n]) == TSR_OK) n++;
  int gpus = tsr_device_count(TSR_GPU);
  for (int i = 0; i < gpus && n < max; i++) {
    tsr_device gpu = {TSR_GPU, i};
    if (tsr_device_info_get(gpu, &out[n]) == TSR_OK) n++;
  }
  return n;
}

static int print_info_text(const tsr_device_info *devices, int count) {
  tsr_build_info build;
  tsr_build_info_get(&build);
  char default_name[32];
  printf("tessera %s\n", tsr_version());
  printf("build: %s, %s", build.build_type, build.compiler);
  if (build.cuda)
    printf(", CUDA toolkit %d.%d", build.cuda_toolkit_version / 1000,
           build.cuda_toolkit_version % 1000 / 10);
  else
    printf(", CPU only (no CUDA toolkit)");
  if (build.sanitizers[0]) printf(", sanitizers %s", build.sanitizers);
  printf("\n");
  printf("devices: %d CPU, %d GPU%s; default %s (discovery passes: %llu)\n",
         tsr_device_count(TSR_CPU), tsr_device_count(TSR_GPU),
         tsr_device_count(TSR_GPU) == 1 ? "" : "s",
         cli_device_name(tsr_default_device(), default_name),
         (unsigned long long)tsr_device_discovery_probes());
  for (int i = 0; i < count; i++)
    print_device_text(&devices[i]);
  print_kernel_sources_text();
  return CLI_EXIT_OK;
}

static int print_info_json(const tsr_device_info *devices, int count) {
  tsr_build_info build;
  tsr_build_info_get(&build);
  char default_name[32];
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "version", tsr_version());
  cJSON *build_obj = cJSON_AddObjectToObject(root, "build");
  cJSON_AddStringToObject(build_obj, "type", build.build_type);
  cJSON_AddStringToObject(build_obj, "compiler", build.compiler);
  cJSON_AddStringToObject(build_obj, "sanitizers", build.sanitizers);
  cJSON_AddBoolToObject(build_obj, "cuda", build.cuda);
  cJSON_AddNumberToObject(build_obj, "cuda_toolkit_version", build.cuda_toolkit_version);
  cJSON_AddStringToObject(root, "default_device",
                          cli_device_name(tsr_default_device(), default_name));
  cJSON_AddNumberToObject(root, "discovery_probes", (double)tsr_device_discovery_probes());
  cJSON_AddNumberToObject(root, "cpu_count", tsr_device_count(TSR_CPU));
  cJSON_AddNumberToObject(root, "gpu_count", tsr_device_count(TSR_GPU));
  cJSON *list = cJSON_AddArrayToObject(root, "devices");
  for (int i = 0; i < count; i++)
    cJSON_AddItemToArray(list, device_json(&devices[i]));
  cJSON_AddItemToObject(root, "kernel_sources", kernel_sources_json());
  return cli_print_json(root) ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

int cli_info(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(info_usage, stdout);
      return CLI_EXIT_OK;
    }
    if (strcmp(argv[i], "--json") == 0)
      json = true;
    else
      return cli_usage_error("info", "unknown argument '%s'", argv[i]);
  }
  enum { MAX_DEVICES = 1 + 16 };
  tsr_device_info devices[MAX_DEVICES];
  int count = collect_devices(devices, MAX_DEVICES);
  return json ? print_info_json(devices, count) : print_info_text(devices, count);
}
