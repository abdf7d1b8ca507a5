/*
 * Shared by the addons (spawn.c, work-dir.c): a JS string argument copied
 * into a malloc'd C string, checked at the boundary.
 */
#ifndef DROVER_NAPI_STRING_H
#define DROVER_NAPI_STRING_H

#include <node_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * A copy of the JS string `v` (the caller frees it), or NULL with an error
 * thrown: a TypeError saying `what` when `v` is not a string, holds a NUL
 * byte, or its UTF-8 length is under `min_len` or over `max_len`; an Error
 * when out of memory.
 */
static inline char *drover_dup_string(napi_env env, napi_value v, const char *what, size_t min_len, size_t max_len) {
  size_t len = 0;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok || len < min_len || len > max_len) {
    napi_throw_type_error(env, NULL, what);
    return NULL;
  }
  char *s = malloc(len + 1);
  if (s == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  napi_get_value_string_utf8(env, v, s, len + 1, &len);
  if (strlen(s) != len) {
    free(s);
    napi_throw_type_error(env, NULL, what);
    return NULL;
  }
  return s;
}

#endif
