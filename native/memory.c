/*
 * drover_memory: the C heap of the long-running commands. trim() gives its
 * free pages back to the kernel (src/cli/memory-trim.ts decides when);
 * arenaMax() and exec() bound the number of malloc arenas
 * (src/cli/malloc-arenas.ts decides how).
 *
 * Why: glibc's malloc keeps memory that was freed inside its arenas (the
 * main heap and one arena per thread that allocated: libuv's pool, V8's
 * platform workers); it returns only a free block at the very top of an
 * arena, past M_TRIM_THRESHOLD. What SQLite, the WebSocket frames and V8's
 * off-heap buffers free in the middle of an arena stays in the process's RSS
 * after the load that needed it is gone. malloc_trim(0) walks every arena
 * and madvise(MADV_DONTNEED)s each free page-sized run (glibc >= 2.8), so the
 * pages leave RSS and come back, zeroed, only if malloc hands them out again.
 *
 * Measured (npm run bench -- --sections=memory method, a server after 100,000
 * noop tasks, with gdb calling malloc_trim(0) in it): RssAnon 63.0 -> 57.0 MB;
 * in an agent with 10 tasks running 20.2 -> 16.6 MB.
 *
 * JS contract (main thread, synchronous):
 *   trim() -> boolean   true when malloc_trim released memory, false when
 *                       there was none to release or the C library is not
 *                       glibc (musl has no malloc_trim; nothing is done).
 *   supported: boolean  whether trim() can release anything at all here.
 *   arenaMax(n) -> boolean
 *                       mallopt(M_ARENA_MAX, n) for 1 <= n <= 64: threads
 *                       that have no arena yet share at most n; false when
 *                       glibc refused or the C library is not glibc. A
 *                       TypeError for any other n.
 *   exec(file, argv, envp)
 *                       execve(2): this process becomes `file` (an absolute
 *                       path) with those arguments and environment, keeping
 *                       its pid and its standard input, output and error
 *                       (Node marks the descriptors it inherited
 *                       close-on-exec at start, uv_disable_stdio_inheritance;
 *                       0-2 are unmarked for the call and marked again if it
 *                       fails). Returns only on failure, by throwing an
 *                       Error naming errno; a TypeError when an argument is
 *                       not a string (array of strings) without NUL bytes or
 *                       `file` is not absolute.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "napi-string.h"
#if defined(__GLIBC__)
#include <malloc.h>
#define HAVE_GLIBC_MALLOC 1
#else
#define HAVE_GLIBC_MALLOC 0
#endif

/* `b` as a JS boolean; NULL (exception pending) if N-API fails. */
static napi_value js_boolean(napi_env env, bool b) {
  napi_value out;
  return napi_get_boolean(env, b, &out) == napi_ok ? out : NULL;
}

static napi_value js_trim(napi_env env, napi_callback_info info) {
  bool released = false;
#if HAVE_GLIBC_MALLOC
  released = malloc_trim(0) == 1;
#endif
  return js_boolean(env, released);
}

static napi_value js_arena_max(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value a[1];
  int32_t n = 0;
  napi_valuetype t;
  if (napi_get_cb_info(env, info, &argc, a, NULL, NULL) != napi_ok || argc < 1 || napi_typeof(env, a[0], &t) != napi_ok ||
      t != napi_number || napi_get_value_int32(env, a[0], &n) != napi_ok || n < 1 || n > 64) {
    napi_throw_type_error(env, NULL, "n must be an integer from 1 to 64");
    return NULL;
  }
  bool set = false;
#if HAVE_GLIBC_MALLOC
  set = mallopt(M_ARENA_MAX, n) == 1;
#endif
  return js_boolean(env, set);
}

static napi_value js_exec(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value a[3];
  if (napi_get_cb_info(env, info, &argc, a, NULL, NULL) != napi_ok || argc < 3) {
    napi_throw_type_error(env, NULL, "exec(file, argv, envp) takes three arguments");
    return NULL;
  }
  char *file = drover_dup_string(env, a[0], "file must be an absolute path without NUL bytes", 2, 4096);
  if (file == NULL) return NULL;
  if (file[0] != '/') {
    free(file);
    napi_throw_type_error(env, NULL, "file must be an absolute path without NUL bytes");
    return NULL;
  }
  char **argv = drover_dup_vec(env, a[1], "argv must be an array of strings without NUL bytes");
  char **envp = argv == NULL ? NULL : drover_dup_vec(env, a[2], "envp must be an array of strings without NUL bytes");
  if (envp != NULL) {
    int fd_flags[3];
    for (int fd = 0; fd < 3; fd++) {
      fd_flags[fd] = fcntl(fd, F_GETFD);
      if (fd_flags[fd] > 0 && (fd_flags[fd] & FD_CLOEXEC)) fcntl(fd, F_SETFD, fd_flags[fd] & ~FD_CLOEXEC);
    }
    execve(file, argv, envp);
    int saved = errno;
    for (int fd = 0; fd < 3; fd++)
      if (fd_flags[fd] > 0 && (fd_flags[fd] & FD_CLOEXEC)) fcntl(fd, F_SETFD, fd_flags[fd]);
    errno = saved;
    char msg[128];
    snprintf(msg, sizeof msg, "execve failed: %s", strerror(errno));
    napi_throw_error(env, NULL, msg);
  }
  free(file);
  drover_free_vec(argv);
  drover_free_vec(envp);
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_value fn, supported;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, js_trim, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "trim", fn) != napi_ok ||
      napi_create_function(env, "arenaMax", NAPI_AUTO_LENGTH, js_arena_max, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "arenaMax", fn) != napi_ok ||
      napi_create_function(env, "exec", NAPI_AUTO_LENGTH, js_exec, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "exec", fn) != napi_ok ||
      napi_get_boolean(env, HAVE_GLIBC_MALLOC, &supported) != napi_ok ||
      napi_set_named_property(env, exports, "supported", supported) != napi_ok) {
    napi_throw_error(env, NULL, "drover_memory: could not initialise");
    return NULL;
  }
  return exports;
}
