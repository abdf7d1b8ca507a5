/*
 * Shared by the addons (spawn.c, work-dir.c, memory.c): a JS string
 * argument, or an array of them, copied into malloc'd C strings, checked at
 * the boundary.
 */
#ifndef DROVER_NAPI_STRING_H
#define DROVER_NAPI_STRING_H

#include <node_api.h>
#include <stdbool.h>
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

static inline void drover_free_vec(char **v) {
  if (v == NULL) return;
  for (char **p = v; *p != NULL; p++) free(*p);
  free(v);
}

/*
 * The JS array of strings `arr` as a NULL-terminated malloc'd vector (free it
 * with drover_free_vec), or NULL with an error thrown: a TypeError saying
 * `what` when `arr` is not an array or an element is not a string or holds a
 * NUL byte.
 */
static inline char **drover_dup_vec(napi_env env, napi_value arr, const char *what) {
  bool is_array = false;
  uint32_t n = 0;
  if (napi_is_array(env, arr, &is_array) != napi_ok || !is_array || napi_get_array_length(env, arr, &n) != napi_ok) {
    napi_throw_type_error(env, NULL, what);
    return NULL;
  }
  char **v = calloc((size_t)n + 1, sizeof(char *));
  if (v == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  for (uint32_t i = 0; i < n; i++) {
    napi_value e;
    if (napi_get_element(env, arr, i, &e) != napi_ok || (v[i] = drover_dup_string(env, e, what, 0, SIZE_MAX)) == NULL) {
      drover_free_vec(v);
      return NULL;
    }
  }
  return v;
}

#endif
