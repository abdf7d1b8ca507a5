/*
 * drover_memory: give the C heap's free pages back to the kernel, for the
 * long-running commands (src/cli/memory-trim.ts decides when).
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
 */
#define _GNU_SOURCE
#include <node_api.h>
#include <stdbool.h>
#if defined(__GLIBC__)
#include <malloc.h>
#define HAVE_MALLOC_TRIM 1
#else
#define HAVE_MALLOC_TRIM 0
#endif

static napi_value js_trim(napi_env env, napi_callback_info info) {
  bool released = false;
#if HAVE_MALLOC_TRIM
  released = malloc_trim(0) == 1;
#endif
  napi_value out;
  if (napi_get_boolean(env, released, &out) != napi_ok) return NULL;
  return out;
}

NAPI_MODULE_INIT() {
  napi_value fn, supported;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, js_trim, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "trim", fn) != napi_ok ||
      napi_get_boolean(env, HAVE_MALLOC_TRIM, &supported) != napi_ok ||
      napi_set_named_property(env, exports, "supported", supported) != napi_ok) {
    napi_throw_error(env, NULL, "drover_memory: could not initialise");
    return NULL;
  }
  return exports;
}
