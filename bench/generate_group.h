/* bench/generate_group.h — `bench/generate --group mpi|nccl` under `mpirun -np N`: the same
 * synthetic GLM-4-9B-shaped checkpoint (rank 0 writes it to /dev/shm, or --dir; the folder's name
 * reaches the others through the group), loaded tensor-parallel over the N ranks
 * (tsr_model_options.group; with --device gpu each rank on its own GPU: --group nccl), and per
 * decode step of one token at context 128: the step's time and the time of its collectives replayed
 * alone. Every step of the split model makes 2 x layers all-sums of [1, hidden] float32 (after each
 * o_proj and down_proj) and one all-gather of the logits [1, vocab / N]; the replay builds that
 * chain with the same lazy ops on the same group and evaluates it, right after each step, so share
 * = replay / step is the part of a token's time the collectives cost when the ranks arrive together
 * (the wait for a slower rank inside a real step is not in it). Everything runs in this process (no
 * child per configuration: MPI ranks cannot fork new ones): the OpenBLAS and thread settings are
 * the environment's (`mpirun -x TSR_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 ...`), and the roof is
 * not measured. `-np 1` is the baseline through the same code (its collectives are a group of one).
 * Rank 0 prints. */
#ifndef TSR_BENCH_GENERATE_GROUP_H
#define TSR_BENCH_GENERATE_GROUP_H

enum { NAME_BYTES = 1024 };

/* Where this rank's model and collectives live: the CPU, or with --device gpu the rank's own GPU
   (rank modulo the GPUs of this machine: one process per GPU, as nccl groups expect). */
static tsr_device rank_device(const options *o, tsr_group *g) {
  if (!o->gpu) return (tsr_device){TSR_CPU, 0};
  if (tsr_group_device(g).type == TSR_GPU) return tsr_group_device(g);
  int gpus = tsr_device_count(TSR_GPU);
  if (gpus < 1) die("--device gpu: no usable GPU", TSR_ERR_DEVICE);
  return (tsr_device){TSR_GPU, tsr_group_rank(g) % gpus};
}

/* Rank 0's folder name on every rank: its bytes summed with the others' zeros, on the rank's
   device (an nccl group sums device memory only). */
static void share_name(tsr_group *g, tsr_device d, char *name) {
  int32_t mine[NAME_BYTES] = {0}, all[NAME_BYTES];
  for (int i = 0; tsr_group_rank(g) == 0 && i < NAME_BYTES && name[i]; i++)
    mine[i] = (unsigned char)name[i];
  int64_t shape[1] = {NAME_BYTES};
  tsr_array *bytes = NULL, *summed = NULL;
  tsr_status st = tsr_array_from_data_on(&bytes, mine, TSR_INT32, shape, 1, d);
  if (st == TSR_OK) st = tsr_all_sum(&summed, bytes, g, tsr_default_stream(d));
  if (st == TSR_OK) st = tsr_array_read(summed, all, sizeof all);
  tsr_array_release(bytes);
  tsr_array_release(summed);
  if (st != TSR_OK) die("sharing the folder name", st);
  for (int i = 0; i < NAME_BYTES; i++)
    name[i] = (char)all[i];
  name[NAME_BYTES - 1] = '\0';
}

/* Rank 0 makes the folder and writes the checkpoint while the others wait at the name. */
static void write_for_group(tsr_group *g, const options *o, tsr_device d, char *dir) {
  if (tsr_group_rank(g) == 0) {
    spec_list l = glm_specs(o->layers, o->seed);
    snprintf(dir, NAME_BYTES, "%s/tessera-bench-generate-XXXXXX", o->parent);
    if (!mkdtemp(dir)) die("mkdtemp in the --dir folder", TSR_ERR_IO);
    for (int s = 0; s < l.shards; s++)
      write_shard(dir, &l, s);
    write_index_and_config(dir, &l, o->layers);
    free(l.items);
  }
  share_name(g, d, dir);
}

/* The collectives of one decode step, alone: seconds to evaluate them. */
static double replay_collectives(tsr_group *g, tsr_device d, int64_t layers, int64_t vocab) {
  int64_t hidden_shape[2] = {1, 4096}, vocab_shape[2] = {1, vocab / tsr_group_size(g)};
  tsr_array *x = NULL, *rows = NULL, *gathered = NULL;
  tsr_stream *s = tsr_default_stream(d);
  tsr_status st = tsr_zeros(&x, hidden_shape, 2, TSR_FLOAT32, s);
  if (st == TSR_OK) st = tsr_zeros(&rows, vocab_shape, 2, TSR_FLOAT32, s);
  if (st == TSR_OK) st = tsr_eval((tsr_array *[]){x, rows}, 2);
  double t0 = now_s();
  for (int64_t i = 0; st == TSR_OK && i < 2 * layers; i++) {
    tsr_array *summed = NULL;
    st = tsr_all_sum(&summed, x, g, s);
    tsr_array_release(x);
    x = summed;
  }
  if (st == TSR_OK) st = tsr_all_gather(&gathered, rows, g, s);
  if (st == TSR_OK) st = tsr_eval((tsr_array *[]){x, gathered}, 2);
  double t = now_s() - t0;
  if (st != TSR_OK) die("collectives replay", st);
  tsr_array_release(x);
  tsr_array_release(rows);
  tsr_array_release(gathered);
  return t;
}

/* Decode steps at the session's context, each followed by its collectives' replay; rank 0 prints
 * the row. */
static void decode_with_share(bench *b, tsr_session *s, tsr_group *g, tsr_device d) {
  int steps = b->o->steps;
  double step_s[MAX_STEPS], replay_s[MAX_STEPS];
  size_t context = tsr_session_length(s);
  for (int i = 0; i < WARM_STEPS; i++)
    decode_step(b, s);
  for (int i = 0; i < steps; i++) {
    step_s[i] = decode_step(b, s);
    replay_s[i] = replay_collectives(g, d, b->o->layers, b->vocab);
  }
  double step = median(step_s, steps), replay = median(replay_s, steps);
  if (tsr_group_rank(g) == 0)
    printf("| %d | %d | %zu (+%d) | %.2f (best %.2f) | %.1f | %.2f | %.3f |\n", tsr_group_size(g),
           pool_threads(), context, WARM_STEPS + steps, 1.0 / step, 1.0 / step_s[0], step * 1e3,
           replay * 1e3, replay / step);
}

static tsr_model *load_split(tsr_group *g, tsr_device d, const char *dir, double *load_s) {
  tsr_model_options opt = tsr_model_default_options();
  opt.device = d;
  opt.group = g;
  tsr_model *m = NULL;
  double t0 = now_s();
  tsr_status st = tsr_model_load(&m, dir, &opt);
  *load_s = now_s() - t0;
  if (st != TSR_OK) die("model_load (split)", st);
  return m;
}

static void print_group_header(tsr_group *g, const options *o, tsr_model *m, double load_s) {
  if (tsr_group_rank(g) != 0) return;
  printf(
      "## generate --group %s: GLM-4-9B-shaped glm4, %lld layers, affine 4-bit g64, over %d "
      "ranks, each on %s\n\nrank 0 holds %.2f GB of weights, loaded in %.2f s; "
      "OPENBLAS_NUM_THREADS=%s\n\n",
      o->group, (long long)o->layers, tsr_group_size(g), o->gpu ? "its own GPU" : "the CPU",
      (double)tsr_model_weight_bytes(m) * 1e-9, load_s,
      getenv("OPENBLAS_NUM_THREADS") ? getenv("OPENBLAS_NUM_THREADS") : "(unset)");
  printf(
      "| ranks | threads a rank | context | decode tok/s (median) | ms/token | collectives "
      "ms/token | collectives share |\n| --- | --- | --- | --- | --- | --- | --- |\n");
}

static int run_group(const options *o) {
  tsr_group *g = NULL;
  tsr_status st = tsr_group_init(&g, o->group);
  if (st != TSR_OK) die("group_init", st);
  tsr_group_set_timeout(g, 0); /* rank 0 writes gigabytes while the others wait */
  char dir[NAME_BYTES] = {0};
  tsr_device d = rank_device(o, g);
  write_for_group(g, o, d, dir);
  double load_s = 0;
  bench b = {.o = o, .token_state = o->seed ^ 0x70c3e5u}; /* the same tokens on every rank */
  b.model = load_split(g, d, dir, &load_s);
  b.vocab = tsr_model_vocab_size(b.model);
  b.logits = checked_malloc((size_t)b.vocab * sizeof *b.logits);
  print_group_header(g, o, b.model, load_s);
  tsr_session *s = new_session(&b, SHORT_CONTEXT);
  int32_t *prompt = checked_malloc(SHORT_CONTEXT * sizeof *prompt);
  random_tokens(&b, prompt, SHORT_CONTEXT);
  if ((st = tsr_session_append(s, prompt, SHORT_CONTEXT)) != TSR_OK) die("prefill", st);
  decode_with_share(&b, s, g, d);
  tsr_session_free(s);
  free(prompt);
  free(b.logits);
  tsr_model_free(b.model);
  share_name(g, d, dir); /* every rank is done with the folder */
  if (tsr_group_rank(g) == 0) remove_folder(dir);
  tsr_group_free(g);
  tsr_shutdown();
  return 0;
}

#endif
