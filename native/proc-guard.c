/*
 * drover_guard: makes the calling process non-dumpable (prctl
 * PR_SET_DUMPABLE 0), as ssh-agent and gpg-agent do.
 *
 * Why: tasks run as the agent's OS user, and /proc/<pid>/environ, /mem and
 * /fd of a process are readable by any other process of the same user
 * while it is dumpable, so a task could read the agent's DROVER_TOKEN from
 * /proc/$PPID/environ. A non-dumpable process's /proc files belong to root
 * and it cannot be ptrace-attached by its user; the flag is not inherited
 * across execve, so the tasks themselves are unaffected. Root (or
 * CAP_SYS_PTRACE) still reads everything: only a separate OS user for tasks
 * keeps secrets from a task that runs as root.
 */
#include <node_api.h>
#include <sys/prctl.h>

/* nondumpable(): true if the process is now non-dumpable. */
static napi_value js_nondumpable(napi_env env, napi_callback_info info) {
  napi_value out;
  int ok = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0;
  napi_get_boolean(env, ok, &out);
  return out;
}

/* dumpable(): the process's current flag (PR_GET_DUMPABLE: 0, 1 or 2), for tests and logs. */
static napi_value js_dumpable(napi_env env, napi_callback_info info) {
  napi_value out;
  napi_create_int32(env, prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), &out);
  return out;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "nondumpable", NAPI_AUTO_LENGTH, js_nondumpable, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "nondumpable", fn) != napi_ok ||
      napi_create_function(env, "dumpable", NAPI_AUTO_LENGTH, js_dumpable, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "dumpable", fn) != napi_ok) {
    napi_throw_error(env, NULL, "drover_guard: could not initialise");
    return NULL;
  }
  return exports;
}
