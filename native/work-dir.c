/*
 * drover_workdir: the agent's work-directory calls, many of them in one job
 * on libuv's threadpool (src/worker/work-dir-batch.ts groups them).
 *
 * Why: every attempt made five filesystem calls through Node's fs, each its
 * own threadpool job (mkdtemp, mkdir `out`, open of the outputs file, two
 * rmdir). On this 2-core VM a job costs the agent's main thread about 90 us
 * (queueing it, waking a pool thread, the completion and its promise), far
 * more than the call itself. Measured (4,000 `/bin/true` through one agent
 * with 8 slots, /proc CPU ticks): the agent spent 760 us of CPU per attempt
 * with its work dirs on ext4 and 500 us on tmpfs (where work-dir.ts makes the
 * calls synchronously, ~9 us each), and the whole run went 780 -> 960 tasks/s.
 * Grouped, the makings and removals of many attempts share one job.
 *
 * JS contract (main thread of the process that loaded it):
 *
 *   batch(removals, flags, prefix, count)
 *       -> Promise<{ removed: boolean[], dirs: string[], errno: number }>
 *   throws TypeError synchronously (nothing done) for arguments of the wrong
 *   type or strings holding NUL; the promise never rejects otherwise.
 *
 *   First, for each directory of `removals` (at most 256), with the same
 *   index of `flags` (a combination of SCRIPT 1 and OUTPUT 2), the removal of
 *   an attempt that left nothing else behind: unlink <dir>/.drover-script
 *   (SCRIPT), unlink <dir>/drover-output.env (OUTPUT), rmdir <dir>/out and
 *   <dir>, stopping at the first failure. removed[i] is true when all of it
 *   succeeded; false means something is left (a file in `out`, a link in
 *   place of the outputs file, the directory already gone...) and the caller
 *   removes the rest recursively. unlink and rmdir never follow a symbolic
 *   link: they act on the link itself.
 *
 *   Then up to `count` (0..64) times: mkdtemp(prefix + "XXXXXX") (mode 0700,
 *   a name no one else has), then mkdir(<dir>/out, 0777 & ~umask). Stops at
 *   the first failure: errno is its error number (0 when all were made), dirs
 *   the directories made before it, in order. A directory whose `out` could
 *   not be made is removed again. `prefix` is unused when count is 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <node_api.h>

#include "napi-string.h"

#define MAKE_MAX 64
#define REMOVE_MAX 256
#define FLAG_SCRIPT 1
#define FLAG_OUTPUT 2
/* The names work-dir.ts gives them. */
#define OUT_DIR "/out"
#define OUTPUT_FILE "/drover-output.env"
#define SCRIPT_FILE "/.drover-script"

#define CHECK(call)                     \
  do {                                  \
    if ((call) != napi_ok) return NULL; \
  } while (0)

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  char *rm_dirs[REMOVE_MAX];
  int rm_flags[REMOVE_MAX];
  bool removed[REMOVE_MAX];
  uint32_t rm_count;
  char *prefix;
  int count;
  char *dirs[MAKE_MAX];
  int made;
  int err;
} job_t;

static void free_job(napi_env env, job_t *j) {
  if (j->work) napi_delete_async_work(env, j->work);
  for (uint32_t i = 0; i < j->rm_count; i++) free(j->rm_dirs[i]);
  free(j->prefix);
  for (int i = 0; i < j->made; i++) free(j->dirs[i]);
  free(j);
}

/* A copy of a JS string, or NULL with a TypeError thrown (not a string, empty, too long for a path, or it holds NUL). */
static char *dup_path(napi_env env, napi_value v, const char *what) { return drover_dup_string(env, v, what, 1, PATH_MAX - 1); }

/* `a` + `b` in a new string, or NULL. */
static char *join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = malloc(la + lb + 1);
  if (s == NULL) return NULL;
  memcpy(s, a, la);
  memcpy(s + la, b, lb + 1);
  return s;
}

/* Unlinks or rmdirs `dir` + `name`; false when that failed. */
static bool remove_in(const char *dir, const char *name, bool is_dir) {
  char *p = join(dir, name);
  bool ok = p != NULL && (is_dir ? rmdir(p) : unlink(p)) == 0;
  free(p);
  return ok;
}

static bool remove_one(const char *dir, int flags) {
  return ((flags & FLAG_SCRIPT) == 0 || remove_in(dir, SCRIPT_FILE, false)) &&
         ((flags & FLAG_OUTPUT) == 0 || remove_in(dir, OUTPUT_FILE, false)) && remove_in(dir, OUT_DIR, true) && rmdir(dir) == 0;
}

/* Threadpool: the removals, then the makings. No N-API calls here. */
static void execute(napi_env env, void *data) {
  job_t *j = data;
  for (uint32_t i = 0; i < j->rm_count; i++) j->removed[i] = remove_one(j->rm_dirs[i], j->rm_flags[i]);
  for (int i = 0; i < j->count; i++) {
    char *dir = join(j->prefix, "XXXXXX");
    if (dir == NULL) {
      j->err = ENOMEM;
      return;
    }
    if (mkdtemp(dir) == NULL) {
      j->err = errno;
      free(dir);
      return;
    }
    char *out = join(dir, OUT_DIR);
    if (out == NULL || mkdir(out, 0777) != 0) {
      j->err = out == NULL ? ENOMEM : errno;
      free(out);
      rmdir(dir);
      free(dir);
      return;
    }
    free(out);
    j->dirs[j->made++] = dir;
  }
}

static napi_value result(napi_env env, job_t *j) {
  napi_value obj, arr, v;
  CHECK(napi_create_object(env, &obj));
  CHECK(napi_create_array_with_length(env, j->rm_count, &arr));
  for (uint32_t i = 0; i < j->rm_count; i++) {
    CHECK(napi_get_boolean(env, j->removed[i], &v));
    CHECK(napi_set_element(env, arr, i, v));
  }
  CHECK(napi_set_named_property(env, obj, "removed", arr));
  CHECK(napi_create_array_with_length(env, (size_t)j->made, &arr));
  for (int i = 0; i < j->made; i++) {
    CHECK(napi_create_string_utf8(env, j->dirs[i], NAPI_AUTO_LENGTH, &v));
    CHECK(napi_set_element(env, arr, (uint32_t)i, v));
  }
  CHECK(napi_set_named_property(env, obj, "dirs", arr));
  CHECK(napi_create_int32(env, j->err, &v));
  CHECK(napi_set_named_property(env, obj, "errno", v));
  return obj;
}

/* Main thread: resolve with the result, or reject when the engine could not build it (out of memory). */
static void complete(napi_env env, napi_status status, void *data) {
  job_t *j = data;
  napi_value v = status == napi_ok ? result(env, j) : NULL;
  if (v != NULL) {
    napi_resolve_deferred(env, j->deferred, v);
  } else {
    napi_value exc, msg, err;
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) == napi_ok && pending) napi_get_and_clear_last_exception(env, &exc);
    if (napi_create_string_utf8(env, "drover_workdir: the batch could not complete", NAPI_AUTO_LENGTH, &msg) == napi_ok &&
        napi_create_error(env, NULL, msg, &err) == napi_ok)
      napi_reject_deferred(env, j->deferred, err);
  }
  free_job(env, j);
}

#define USAGE "batch(removals, flags, prefix, count): "

/* Fills j from the arguments; false with a TypeError thrown when one is wrong. */
static bool read_args(napi_env env, napi_value *a, size_t argc, job_t *j) {
  bool is_array = false;
  uint32_t n = 0, nf = 0;
  int32_t count = -1;
  if (argc < 4 || napi_is_array(env, a[0], &is_array) != napi_ok || !is_array || napi_get_array_length(env, a[0], &n) != napi_ok ||
      n > REMOVE_MAX || napi_is_array(env, a[1], &is_array) != napi_ok || !is_array ||
      napi_get_array_length(env, a[1], &nf) != napi_ok || nf != n) {
    napi_throw_type_error(env, NULL, USAGE "removals must be an array of at most 256 paths, flags an array of the same length");
    return false;
  }
  if (napi_get_value_int32(env, a[3], &count) != napi_ok || count < 0 || count > MAKE_MAX) {
    napi_throw_type_error(env, NULL, USAGE "count must be an integer from 0 to 64");
    return false;
  }
  for (uint32_t i = 0; i < n; i++) {
    napi_value v;
    int32_t f = -1;
    if (napi_get_element(env, a[1], i, &v) != napi_ok || napi_get_value_int32(env, v, &f) != napi_ok ||
        (f & ~(FLAG_SCRIPT | FLAG_OUTPUT)) != 0) {
      napi_throw_type_error(env, NULL, USAGE "each flag must be a combination of 1 and 2");
      return false;
    }
    if (napi_get_element(env, a[0], i, &v) != napi_ok ||
        (j->rm_dirs[i] = dup_path(env, v, USAGE "each removal must be a non-empty path without NUL bytes")) == NULL)
      return false;
    j->rm_flags[i] = f;
    j->rm_count = i + 1;
  }
  j->count = count;
  if (count > 0 && (j->prefix = dup_path(env, a[2], USAGE "prefix must be a non-empty path without NUL bytes")) == NULL) return false;
  return true;
}

static napi_value js_batch(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value a[4], name, promise;
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  job_t *j = calloc(1, sizeof *j);
  if (j == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  if (!read_args(env, a, argc, j)) {
    free_job(env, j);
    return NULL;
  }
  if (napi_create_string_utf8(env, "drover.workdir", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, execute, complete, j, &j->work) != napi_ok) {
    free_job(env, j);
    napi_throw_error(env, NULL, "drover_workdir: could not queue the batch");
    return NULL;
  }
  /* The promise last: once it exists, the job must settle it. */
  if (napi_create_promise(env, &j->deferred, &promise) != napi_ok || napi_queue_async_work(env, j->work) != napi_ok) {
    free_job(env, j);
    napi_throw_error(env, NULL, "drover_workdir: could not queue the batch");
    return NULL;
  }
  return promise;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "batch", NAPI_AUTO_LENGTH, js_batch, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "batch", fn) != napi_ok) {
    napi_throw_error(env, NULL, "drover_workdir: could not initialise");
    return NULL;
  }
  return exports;
}
