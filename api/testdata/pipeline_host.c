/* A host application in C99 that uses Kiln through kiln.h alone: it loads a
 * model, creates a session whose pass pipeline loads the given plugin files,
 * runs the model once on raw float32 input, writes the raw float32 output,
 * and prints what the pipeline did and how many nodes ran on the host. The plugin example test
 * (plugins/examples/silu_fusion/test/example_test.sh) builds it against an
 * installed Kiln and compares its output with `kiln run`'s, byte for byte.
 *
 * Usage: pipeline_host MODEL IN.f32 OUT.f32 DIMxDIM... [--passes LIST]
 *                      [--disable-pass LIST] [--plugin FILE]...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

#define MAX_PLUGINS 8
#define MAX_RANK 8

static int fail(kiln_status_t* status, const char* what) {
  fprintf(stderr, "pipeline_host: %s: %s\n", what, kiln_status_message(status));
  kiln_status_free(status);
  return 1;
}

static void on_message(void* user_data, kiln_message_level_t level, const char* message) {
  (void)user_data;
  fprintf(stderr, "pipeline_host: kiln says (%d): %s\n", (int)level, message);
}

static int read_file(const char* path, void* data, size_t size) {
  FILE* f = fopen(path, "rb");
  size_t n = 0;
  if (!f) return 0;
  n = fread(data, 1, size, f);
  fclose(f);
  return n == size;
}

static int write_file(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  size_t n = 0;
  if (!f) return 0;
  n = fwrite(data, 1, size, f);
  return fclose(f) == 0 && n == size;
}

static void print_passes(const kiln_session_t* session) {
  size_t i, k;
  for (i = 0; i < kiln_session_pass_count(session); ++i) {
    kiln_pass_record_t r;
    kiln_status_t* s;
    memset(&r, 0, sizeof r);
    r.struct_size = (uint32_t)sizeof r;
    s = kiln_session_pass_record(session, i, &r);
    if (s) {
      fail(s, "pass record");
      return;
    }
    printf("pass %s committed=%u", r.name, r.committed);
    for (k = 0; k < r.statistic_count; ++k) {
      const char* name = NULL;
      int64_t value = 0;
      s = kiln_session_pass_statistic(session, i, k, &name, &value);
      if (s) {
        fail(s, "pass statistic");
        return;
      }
      printf(" %s=%lld", name, (long long)value);
    }
    printf("\n");
  }
}

int main(int argc, char** argv) {
  const char* plugins[MAX_PLUGINS];
  size_t plugin_count = 0;
  int64_t shape[MAX_RANK];
  size_t rank = 0;
  const char* passes = NULL;
  const char* disabled = NULL;
  char* dims = NULL;
  char* tok = NULL;
  int i;
  kiln_model_t* model = NULL;
  kiln_session_t* session = NULL;
  kiln_tensor_t* input = NULL;
  kiln_tensor_t* output = NULL;
  kiln_session_options_t options;
  kiln_status_t* s = NULL;
  const kiln_tensor_t* inputs[1];
  int rc = 1;

  if (argc < 5) {
    fprintf(stderr, "usage: pipeline_host MODEL IN.f32 OUT.f32 DIMxDIM... [--passes L] [--disable-pass L] "
                    "[--plugin FILE]...\n");
    return 2;
  }
  for (i = 5; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--plugin") == 0 && plugin_count < MAX_PLUGINS) plugins[plugin_count++] = argv[i + 1];
    else if (strcmp(argv[i], "--passes") == 0) passes = argv[i + 1];
    else if (strcmp(argv[i], "--disable-pass") == 0) disabled = argv[i + 1];
    else {
      fprintf(stderr, "pipeline_host: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  dims = argv[4];
  for (tok = strtok(dims, "x"); tok && rank < MAX_RANK; tok = strtok(NULL, "x")) shape[rank++] = atoll(tok);

  s = kiln_model_load(argv[1], &model);
  if (s) return fail(s, "kiln_model_load");
  memset(&options, 0, sizeof options);
  options.struct_size = (uint32_t)sizeof options;
  options.backend = KILN_BACKEND_DEFAULT;
  options.passes = passes;
  options.disabled_passes = disabled;
  options.plugin_files = plugins;
  options.plugin_file_count = plugin_count;
  options.ignore_plugin_path = 1;
  options.log = on_message;
  s = kiln_session_create(model, &options, &session);
  if (s) {
    rc = fail(s, "kiln_session_create");
    goto done;
  }
  printf("backend %s\n", kiln_session_backend(session) == KILN_BACKEND_VULKAN ? "vulkan" : "reference");
  printf("nodes %lu\n", (unsigned long)kiln_session_node_count(session));
  print_passes(session);

  s = kiln_tensor_create(KILN_DTYPE_FLOAT32, shape, rank, &input);
  if (s) {
    rc = fail(s, "kiln_tensor_create");
    goto done;
  }
  if (!read_file(argv[2], kiln_tensor_data(input), kiln_tensor_byte_size(input))) {
    fprintf(stderr, "pipeline_host: cannot read %lu bytes from %s\n", (unsigned long)kiln_tensor_byte_size(input),
            argv[2]);
    goto done;
  }
  inputs[0] = input;
  s = kiln_session_run(session, inputs, 1, &output, 1);
  if (s) {
    rc = fail(s, "kiln_session_run");
    goto done;
  }
  {
    kiln_run_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = (uint32_t)sizeof stats;
    s = kiln_session_last_run_stats(session, &stats);
    if (s) {
      rc = fail(s, "kiln_session_last_run_stats");
      goto done;
    }
    /* Nodes run on the host with transfers: what the pipeline can spare. */
    printf("dispatches %u fallbacks %u\n", stats.dispatches, stats.fallbacks);
  }
  if (kiln_tensor_dtype(output) != KILN_DTYPE_FLOAT32 ||
      !write_file(argv[3], kiln_tensor_data(output), kiln_tensor_byte_size(output))) {
    fprintf(stderr, "pipeline_host: cannot write the float32 output to %s\n", argv[3]);
    goto done;
  }
  rc = 0;
done:
  kiln_tensor_destroy(output);
  kiln_tensor_destroy(input);
  kiln_session_destroy(session);
  kiln_model_release(model);
  return rc;
}
