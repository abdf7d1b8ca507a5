/*
 * drover_spawn: start a task process with posix_spawn and watch its exit with
 * a pidfd, for the agent's process runner (src/worker/native-spawn.ts).
 *
 * Why: Node's child_process forks the agent (a ~100 MB Node process) through
 * libuv; on this machine that costs about 1.3 ms of CPU per start in the
 * agent. glibc's posix_spawn uses clone(CLONE_VM | CLONE_VFORK): no page
 * tables are copied, the agent is suspended only until the child's execve.
 * Measured numbers: see the header of src/worker/native-spawn.ts.
 *
 * Linux only (pidfd_open: kernel 5.3; addchdir_np/addclosefrom_np: glibc
 * 2.29/2.34). Elsewhere binding.gyp builds nothing and the runner keeps
 * Node's child_process.
 *
 * JS contract (one function, main thread of the process that loaded it):
 *
 *   spawn(file, argv, envp, cwd, onSpawn, onExit[, inline])
 *     file   string: a path (contains '/') or a name looked up in the PATH of
 *            `envp` (not the agent's PATH), like libuv does for Node.
 *     argv   string[] (argv[0] included), envp string[] of "NAME=value",
 *     cwd    string: the child's working directory.
 *     inline boolean, default false. false: the start runs on one of the
 *            addon's own spawner threads (posix_spawn suspends its calling
 *            thread until the child's execve), in call order (two threads:
 *            starts may finish out of order); then onSpawn is called from
 *            the event loop of the thread that loaded the addon. true: the
 *            start runs on the calling thread, which it suspends likewise,
 *            and onSpawn is called before spawn returns (for a caller with
 *            nothing else to do meanwhile: two thread hand-offs fewer;
 *            src/worker/native-spawn.ts has the numbers).
 *     onSpawn(errno, pid, stdoutFd, stderrFd), called once. errno 0: started;
 *            the fds are the read ends of two pipes (O_CLOEXEC, blocking;
 *            the caller makes them non-blocking streams and owns closing
 *            them). Else nothing was started (ENOENT, EACCES, ENOTDIR, E2BIG,
 *            ENOEXEC, EMFILE...), pid is 0, the fds -1, and onExit is never
 *            called.
 *     onExit (exitCode, signal, groupGone), called once from the event loop
 *            when the child has exited and been reaped (by this addon, for
 *            this pid only: never waitpid(-1), libuv reaps its own children).
 *            exitCode is -1 when the child died of signal number `signal`
 *            (0 otherwise). groupGone is true when, right after the reap, no
 *            member of the child's process group was left (kill(-pid, 0)
 *            failed with ESRCH): final, since an empty group cannot be
 *            joined again. The caller then need not signal the group, and
 *            must not: its id is free for the kernel to hand out again.
 *   returns undefined; throws TypeError (synchronously, nothing started) for
 *   arguments of the wrong type (an `inline` that is neither a boolean nor
 *   undefined included) or strings holding NUL.
 *
 * The child: a new session and process group (POSIX_SPAWN_SETSID, pgid = sid
 * = pid, as Node's `detached: true`), stdin /dev/null, stdout/stderr the
 * pipes, cwd = `cwd`, environment = `envp` only, every signal at its default
 * action (the agent ignores SIGPIPE; the child must not) and an empty signal
 * mask, and no other fd of the agent (closefrom(3) after the dup2s; every fd
 * this addon makes is O_CLOEXEC as well, so a concurrent spawn elsewhere in
 * the agent cannot inherit them either).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <node_api.h>
#include <uv.h>

#include "napi-string.h"

/* One watched child: lives from a successful spawn until its poll handle is closed. */
typedef struct {
  uv_poll_t poll; /* first member: the handle pointer is the struct pointer */
  napi_env env;
  napi_ref on_exit;
  napi_async_context async;
  pid_t pid;
  int pidfd;
} child_t;

#define CHECK(call)                                   \
  do {                                                \
    if ((call) != napi_ok) return NULL;               \
  } while (0)

static int pidfd_open_(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

/* A JS string as a malloc'd C string; NULL (TypeError thrown) if not a string or it holds a NUL. */
static char *dup_string(napi_env env, napi_value v, const char *what) { return drover_dup_string(env, v, what, 0, SIZE_MAX); }

/* Moves fd above 2 (so the child's dup2 onto 0..2 never meets its own source); -1 on error. */
static int above_stdio(int fd) {
  if (fd > 2) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  int saved = errno;
  close(fd);
  errno = saved;
  return moved;
}

/* Errors after which execvp(3) goes on with the next PATH entry. */
static int try_next_dir(int err) {
  return err == ENOENT || err == ENOTDIR || err == EACCES || err == ELOOP || err == ENAMETOOLONG || err == ESTALE ||
         err == ENODEV || err == ETIMEDOUT;
}

/*
 * posix_spawn of `file`, searching the PATH of `envp` when `file` has no '/'
 * (execvp's rules: an empty entry is the child's cwd; EACCES from some entry
 * is reported only if no later entry works, else ENOENT). A candidate that
 * does not exist, or is not a regular file, is skipped with a stat instead of
 * a clone. Returns 0 or an errno.
 */
static int spawn_lookup(pid_t *pid, const char *file, const char *cwd, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *attr, char **argv, char **envp) {
  if (file[0] == '\0') return ENOENT;
  if (strchr(file, '/') != NULL) return posix_spawn(pid, file, fa, attr, argv, envp);
  const char *path = NULL;
  for (char **e = envp; *e != NULL && path == NULL; e++)
    if (strncmp(*e, "PATH=", 5) == 0) path = *e + 5; /* the first, as getenv(3) in the child would find */
  if (path == NULL) path = "/usr/bin:/bin"; /* glibc's confstr(_CS_PATH) */
  size_t flen = strlen(file), clen = strlen(cwd);
  char *buf = malloc(clen + strlen(path) + flen + 3);
  if (buf == NULL) return ENOMEM;
  int seen_eacces = 0, err = ENOENT;
  for (const char *p = path;; p++) {
    const char *end = strchrnul(p, ':');
    size_t dlen = (size_t)(end - p);
    char *w = buf;
    if (dlen == 0 || p[0] != '/') { /* relative to the child's cwd */
      memcpy(w, cwd, clen);
      w += clen;
      *w++ = '/';
    }
    memcpy(w, p, dlen);
    w += dlen;
    *w++ = '/';
    memcpy(w, file, flen + 1);
    struct stat st;
    if (stat(buf, &st) != 0) err = errno;
    else if (!S_ISREG(st.st_mode)) err = EACCES;
    else err = posix_spawn(pid, buf, fa, attr, argv, envp);
    if (err == 0) break;
    if (err == EACCES) seen_eacces = 1;
    if (!try_next_dir(err)) break;
    if (*end == '\0') {
      err = seen_eacces ? EACCES : ENOENT;
      break;
    }
    p = end;
  }
  free(buf);
  return err;
}

static void on_closed(uv_handle_t *h) {
  child_t *c = (child_t *)h;
  close(c->pidfd);
  free(c);
}

/* The pidfd is readable: the child has exited. Reap it (this pid only) and tell JS. */
static void on_pidfd(uv_poll_t *h, int status, int events) {
  (void)status;
  (void)events;
  child_t *c = (child_t *)h;
  siginfo_t info;
  memset(&info, 0, sizeof info);
  if (waitid(P_PID, (id_t)c->pid, &info, WEXITED | WNOHANG) != 0) {
    if (errno == EINTR) return; /* poll fires again */
    info.si_pid = c->pid;       /* ECHILD: someone else reaped it; report an unknown end as signal 0 */
    info.si_code = CLD_KILLED;
    info.si_status = 0;
  } else if (info.si_pid == 0) {
    return; /* not exited yet (spurious wake-up) */
  }
  uv_poll_stop(&c->poll);
  int code = info.si_code == CLD_EXITED ? info.si_status : -1;
  int sig = info.si_code == CLD_EXITED ? 0 : info.si_status;
  /* Asked here, at the reap, rather than by a later process.kill in JS: a task that left nothing running (the
   * usual end) then costs no signal call and no ESRCH exception (measured: see process-runner.ts reapGroup). */
  bool group_gone = kill(-c->pid, 0) != 0 && errno == ESRCH;

  napi_env env = c->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) == napi_ok) {
    napi_value fn, recv, args[3], result;
    if (napi_get_reference_value(env, c->on_exit, &fn) == napi_ok && fn != NULL && napi_get_global(env, &recv) /* make_callback wants an object */ == napi_ok &&
        napi_create_int32(env, code, &args[0]) == napi_ok && napi_create_int32(env, sig, &args[1]) == napi_ok && napi_get_boolean(env, group_gone, &args[2]) == napi_ok) {
      /* make_callback (not call_function): runs the nextTick and microtask queues afterwards, as for any I/O callback. */
      if (napi_make_callback(env, c->async, recv, fn, 3, args, &result) == napi_pending_exception) {
        napi_value exc;
        napi_get_and_clear_last_exception(env, &exc);
        napi_fatal_exception(env, exc);
      }
    }
    napi_close_handle_scope(env, scope);
  }
  napi_delete_reference(env, c->on_exit);
  napi_async_destroy(env, c->async);
  uv_close((uv_handle_t *)&c->poll, on_closed);
}

/* One spawn request: parsed on the main thread, started on a spawner thread, reported on the main thread. */
typedef struct req_s {
  struct req_s *next;
  napi_ref on_spawn, on_exit;
  char *file, *cwd, **argv, **envp;
  int rc; /* 0 or the errno of the failed start */
  pid_t pid;
  int out, err, pidfd; /* read ends and the pidfd once started */
} req_t;

static void free_req(napi_env env, req_t *r) {
  if (r->on_spawn) napi_delete_reference(env, r->on_spawn);
  if (r->on_exit) napi_delete_reference(env, r->on_exit);
  free(r->file);
  free(r->cwd);
  drover_free_vec(r->argv);
  drover_free_vec(r->envp);
  free(r);
}

static void kill_and_reap(pid_t pid) {
  /* It has not been reaped, so pid is still ours; SIGKILL makes the wait short. */
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
}

/*
 * Spawner thread (or the caller's, inline): pipes, posix_spawn, pidfd. No
 * N-API calls here. Off the main thread by default because the calling
 * thread is suspended until the child's execve (CLONE_VFORK): 0.6 ms on
 * average here when the machine is busy (2 ms in the agent's profile),
 * during which the agent's event loop would stand still (inline is for a
 * caller whose loop has nothing else to do). Not on libuv's threadpool
 * either: spawns held its 4 threads and the work dirs' fs calls queued
 * behind them (measured, 1,000 attempts through the runner at 8 in flight:
 * 435-459/s with the default pool, 652-765/s with UV_THREADPOOL_SIZE=8).
 */
static void do_spawn(req_t *r) {
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  int fa_ok = 0, attr_ok = 0, rc = 0;

  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 || (out[1] = above_stdio(out[1])) < 0 ||
      (err[1] = above_stdio(err[1])) < 0) {
    rc = errno;
    goto fail;
  }
  if ((rc = posix_spawn_file_actions_init(&fa)) != 0) goto fail;
  fa_ok = 1;
  if ((rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) != 0 ||
      (rc = posix_spawn_file_actions_adddup2(&fa, out[1], 1)) != 0 ||
      (rc = posix_spawn_file_actions_adddup2(&fa, err[1], 2)) != 0 ||
      (rc = posix_spawn_file_actions_addchdir_np(&fa, r->cwd)) != 0 ||
      (rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3)) != 0)
    goto fail;
  if ((rc = posix_spawnattr_init(&attr)) != 0) goto fail;
  attr_ok = 1;
  sigset_t all, none;
  /* Every bit, not sigfillset: that leaves out glibc's internal signals (32, 33), which posix_spawn then sets
   * to SIG_IGN in the child, and an ignored signal stays ignored across execve. Node's children have them at
   * SIG_DFL; so do ours. (Setting them in the child only affects the child: it shares memory, not handlers.) */
  memset(&all, 0xff, sizeof all);
  sigemptyset(&none);
  if ((rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)) != 0 ||
      (rc = posix_spawnattr_setsigdefault(&attr, &all)) != 0 || (rc = posix_spawnattr_setsigmask(&attr, &none)) != 0)
    goto fail;

  if ((rc = spawn_lookup(&r->pid, r->file, r->cwd, &fa, &attr, r->argv, r->envp)) != 0) goto fail;
  if ((r->pidfd = pidfd_open_(r->pid)) < 0) {
    rc = errno; /* cannot watch it (EMFILE...): do not leave it running unwatched */
    kill_and_reap(r->pid);
    goto fail;
  }
  close(out[1]);
  close(err[1]);
  r->out = out[0];
  r->err = err[0];
  goto done;

fail:
  for (int i = 0; i < 2; i++) {
    if (out[i] >= 0) close(out[i]);
    if (err[i] >= 0) close(err[i]);
  }
  r->rc = rc;
done:
  if (fa_ok) posix_spawn_file_actions_destroy(&fa);
  if (attr_ok) posix_spawnattr_destroy(&attr);
}

/* Main thread: start watching the pidfd, then onSpawn(errno, pid, stdoutFd, stderrFd). */
static void spawned(napi_env env, napi_async_context ctx, req_t *r) {
  if (r->rc == 0) {
    child_t *c = calloc(1, sizeof *c);
    uv_loop_t *loop;
    napi_value name;
    int ok = c != NULL && napi_get_uv_event_loop(env, (struct uv_loop_s **)&loop) == napi_ok && uv_poll_init(loop, &c->poll, r->pidfd) == 0;
    if (!ok) {
      free(c);
      close(r->pidfd);
    } else {
      c->env = env;
      c->pid = r->pid;
      c->pidfd = r->pidfd;
      c->on_exit = r->on_exit;
      r->on_exit = NULL; /* the child owns it now */
      if (napi_create_string_utf8(env, "drover.spawn", NAPI_AUTO_LENGTH, &name) != napi_ok ||
          napi_async_init(env, NULL, name, &c->async) != napi_ok || uv_poll_start(&c->poll, UV_READABLE, on_pidfd) != 0) {
        napi_delete_reference(env, c->on_exit);
        uv_close((uv_handle_t *)&c->poll, on_closed); /* closes the pidfd */
        ok = 0;
      }
    }
    if (!ok) {
      kill_and_reap(r->pid);
      close(r->out);
      close(r->err);
      r->rc = ENOMEM;
    }
  }
  napi_value fn, recv, args[4];
  if (napi_get_reference_value(env, r->on_spawn, &fn) == napi_ok && napi_get_global(env, &recv) == napi_ok &&
      napi_create_int32(env, r->rc, &args[0]) == napi_ok && napi_create_int32(env, r->rc ? 0 : r->pid, &args[1]) == napi_ok &&
      napi_create_int32(env, r->rc ? -1 : r->out, &args[2]) == napi_ok && napi_create_int32(env, r->rc ? -1 : r->err, &args[3]) == napi_ok) {
    /* make_callback: the nextTick and microtask queues run afterwards, as for any I/O callback. */
    if (napi_make_callback(env, ctx, recv, fn, 4, args, NULL) == napi_pending_exception) {
      napi_value exc;
      napi_get_and_clear_last_exception(env, &exc);
      napi_fatal_exception(env, exc);
    }
  }
  free_req(env, r);
}

/*
 * The spawner threads and their queues, one set per loaded instance (main
 * thread or a worker thread). Requests go in `todo` (FIFO); a thread takes
 * one, runs do_spawn, puts it on `done` and wakes the loop with `async`,
 * whose callback reports every done request. `async` keeps the loop alive
 * only while requests are outstanding, as a pending fs call would.
 */
#define SPAWN_THREADS 2

typedef struct {
  napi_env env;
  napi_async_context ctx;
  uv_async_t async;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  req_t *todo_head, *todo_tail, *done;
  unsigned outstanding; /* main thread only */
  int stopping, threads_started;
  pthread_t threads[SPAWN_THREADS];
} state_t;

static void *spawner_main(void *arg) {
  state_t *st = arg;
  pthread_mutex_lock(&st->mu);
  for (;;) {
    while (st->todo_head == NULL && !st->stopping) pthread_cond_wait(&st->cv, &st->mu);
    if (st->todo_head == NULL) break; /* stopping, and nothing left */
    req_t *r = st->todo_head;
    st->todo_head = r->next;
    if (st->todo_head == NULL) st->todo_tail = NULL;
    pthread_mutex_unlock(&st->mu);
    do_spawn(r);
    pthread_mutex_lock(&st->mu);
    r->next = st->done;
    st->done = r;
    uv_async_send(&st->async);
  }
  pthread_mutex_unlock(&st->mu);
  return NULL;
}

static void on_done(uv_async_t *a) {
  state_t *st = a->data;
  pthread_mutex_lock(&st->mu);
  req_t *list = st->done;
  st->done = NULL;
  pthread_mutex_unlock(&st->mu);
  /* `done` is LIFO; report in the order the threads finished. */
  req_t *rev = NULL;
  while (list != NULL) {
    req_t *n = list->next;
    list->next = rev;
    rev = list;
    list = n;
  }
  napi_handle_scope scope;
  if (napi_open_handle_scope(st->env, &scope) != napi_ok) return;
  while (rev != NULL) {
    req_t *n = rev->next;
    if (--st->outstanding == 0) uv_unref((uv_handle_t *)&st->async);
    spawned(st->env, st->ctx, rev);
    rev = n;
  }
  napi_close_handle_scope(st->env, scope);
}

/* Environment teardown: let the threads finish what they hold, then stop them. Requests still queued are dropped. */
static void on_teardown(void *arg) {
  state_t *st = arg;
  pthread_mutex_lock(&st->mu);
  st->stopping = 1;
  pthread_cond_broadcast(&st->cv);
  pthread_mutex_unlock(&st->mu);
  for (int i = 0; i < st->threads_started; i++) pthread_join(st->threads[i], NULL);
  uv_close((uv_handle_t *)&st->async, NULL); /* st itself is leaked: the close callback may run after the env is gone */
}

static napi_value js_spawn(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value a[7];
  state_t *st;
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, (void **)&st));
  napi_valuetype t4, t5;
  if (argc < 6 || napi_typeof(env, a[4], &t4) != napi_ok || napi_typeof(env, a[5], &t5) != napi_ok || t4 != napi_function ||
      t5 != napi_function) {
    napi_throw_type_error(env, NULL, "spawn(file, argv, envp, cwd, onSpawn, onExit): onSpawn and onExit must be functions");
    return NULL;
  }
  bool run_inline = false;
  napi_valuetype t6 = napi_undefined;
  if (argc >= 7 && (napi_typeof(env, a[6], &t6) != napi_ok || (t6 != napi_undefined && (t6 != napi_boolean || napi_get_value_bool(env, a[6], &run_inline) != napi_ok)))) {
    napi_throw_type_error(env, NULL, "spawn(..., inline): inline must be a boolean");
    return NULL;
  }
  req_t *r = calloc(1, sizeof *r);
  if (r == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  r->out = r->err = r->pidfd = -1;
  if ((r->file = dup_string(env, a[0], "file must be a string without NUL bytes")) == NULL ||
      (r->argv = drover_dup_vec(env, a[1], "argv must be an array of strings without NUL bytes")) == NULL ||
      (r->envp = drover_dup_vec(env, a[2], "envp must be an array of strings without NUL bytes")) == NULL ||
      (r->cwd = dup_string(env, a[3], "cwd must be a string without NUL bytes")) == NULL) {
    free_req(env, r);
    return NULL;
  }
  if (napi_create_reference(env, a[4], 1, &r->on_spawn) != napi_ok || napi_create_reference(env, a[5], 1, &r->on_exit) != napi_ok) {
    free_req(env, r);
    napi_throw_error(env, NULL, "could not queue the spawn");
    return NULL;
  }
  if (run_inline) {
    /* posix_spawn blocks every signal of the calling thread around its clone, as on the spawner threads. */
    do_spawn(r);
    spawned(env, st->ctx, r);
    return NULL;
  }
  pthread_mutex_lock(&st->mu);
  /* Threads start with the first spawn, so merely loading the addon costs nothing. They start (and stay) with
   * every signal blocked: the agent's signals (SIGCHLD, SIGTERM...) go to its own threads, never interrupt a
   * spawn. (The child's mask is set explicitly: POSIX_SPAWN_SETSIGMASK.) */
  if (st->threads_started < SPAWN_THREADS) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    while (st->threads_started < SPAWN_THREADS && pthread_create(&st->threads[st->threads_started], NULL, spawner_main, st) == 0)
      st->threads_started++;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  if (st->threads_started == 0) {
    pthread_mutex_unlock(&st->mu);
    free_req(env, r);
    napi_throw_error(env, NULL, "could not start a spawner thread");
    return NULL;
  }
  if (st->todo_tail) st->todo_tail->next = r;
  else st->todo_head = r;
  st->todo_tail = r;
  pthread_cond_signal(&st->cv);
  pthread_mutex_unlock(&st->mu);
  if (st->outstanding++ == 0) uv_ref((uv_handle_t *)&st->async);
  return NULL;
}

NAPI_MODULE_INIT() {
  /* Refuse to load where exits cannot be watched (kernel < 5.3): the runner falls back to child_process. */
  int fd = pidfd_open_(getpid());
  if (fd < 0) {
    napi_throw_error(env, NULL, errno == ENOSYS ? "pidfd_open is not supported by this kernel" : strerror(errno));
    return NULL;
  }
  close(fd);
  state_t *st = calloc(1, sizeof *st);
  uv_loop_t *loop;
  napi_value name, fn;
  if (st == NULL || napi_get_uv_event_loop(env, (struct uv_loop_s **)&loop) != napi_ok) {
    napi_throw_error(env, NULL, "drover_spawn: could not initialise");
    return NULL;
  }
  st->env = env;
  pthread_mutex_init(&st->mu, NULL);
  pthread_cond_init(&st->cv, NULL);
  if (uv_async_init(loop, &st->async, on_done) != 0) {
    napi_throw_error(env, NULL, "drover_spawn: could not initialise");
    return NULL;
  }
  st->async.data = st;
  uv_unref((uv_handle_t *)&st->async);
  CHECK(napi_create_string_utf8(env, "drover.spawn", NAPI_AUTO_LENGTH, &name));
  CHECK(napi_async_init(env, NULL, name, &st->ctx));
  CHECK(napi_add_env_cleanup_hook(env, on_teardown, st));
  CHECK(napi_create_function(env, "spawn", NAPI_AUTO_LENGTH, js_spawn, st, &fn));
  CHECK(napi_set_named_property(env, exports, "spawn", fn));
  return exports;
}
