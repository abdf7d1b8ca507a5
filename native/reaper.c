/*
 * The native reaper: the same program as src/worker/reaper.ts, in C, so that
 * the helper process each agent keeps costs about 1 MB of memory instead of a
 * second Node.js process (about 40 MB RSS measured here). Built by `npm
 * install` with the native spawner (binding.gyp target drover_reaper); when
 * it is missing the agent runs reaper.ts instead (reaper-client.ts).
 *
 * Contract (the one reaper.ts states; the tests run both against it):
 * - Started as `drover_reaper --grace-ms N` with a pipe on stdin that only the
 *   agent holds. One line per change: `add <pgid> <taskId>`, `del <pgid>`,
 *   `deadline <pgid> <termInMs> <killInMs>`. Any other line is reported on
 *   stderr and ignored.
 * - SIGINT, SIGTERM and SIGHUP are ignored (a Ctrl-C to the terminal's group
 *   must not kill the reaper while the agent drains).
 * - `deadline`: unless a newer deadline for that group arrives first, the group
 *   gets SIGTERM after termInMs and SIGKILL after killInMs; it stays registered.
 * - At EOF (or a read error): nothing registered, exit at once; otherwise
 *   SIGTERM to each registered group, SIGKILL `graceMs` later to those still
 *   alive, then exit.
 * - A group is signalled only while some member of it carries that task's
 *   DROVER_TASK_ID in its environment (/proc/PID/environ), so a reused pgid
 *   is never touched (process-group.ts taskMembers).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* REAPER_MAX_GRACE_MS in reaper.ts. */
#define MAX_GRACE_MS 2000
/* A line longer than this is refused (a task id is 26 characters). */
#define MAX_LINE 4096
#define MAX_TASK_ID 255
/* termInMs / killInMs: at most 12 digits, as reaper.ts's isMs. */
#define MAX_MS_DIGITS 12

typedef struct {
  long pgid;
  char task_id[MAX_TASK_ID + 1];
  /* Monotonic ms of the pending SIGTERM / SIGKILL; -1: none. */
  int64_t term_at;
  int64_t kill_at;
} group_t;

static group_t *groups = NULL;
static size_t n_groups = 0, cap_groups = 0;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(const char *fmt, ...) {
  char buf[MAX_LINE + 256];
  int n = snprintf(buf, sizeof buf, "drover reaper[%d]: ", (int)getpid());
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  size_t len = (size_t)n + (m < 0 ? 0 : ((size_t)m < sizeof buf - (size_t)n - 1 ? (size_t)m : sizeof buf - (size_t)n - 2));
  buf[len++] = '\n';
  /* stderr gone with the agent: nobody to tell (SIGPIPE is ignored). */
  ssize_t w = write(2, buf, len);
  (void)w;
}

static group_t *find(long pgid) {
  for (size_t i = 0; i < n_groups; i++)
    if (groups[i].pgid == pgid) return &groups[i];
  return NULL;
}

static void add_group(long pgid, const char *task_id) {
  group_t *g = find(pgid);
  if (!g) {
    if (n_groups == cap_groups) {
      size_t cap = cap_groups ? cap_groups * 2 : 16;
      group_t *p = realloc(groups, cap * sizeof *p);
      if (!p) {
        say("out of memory: group %ld not registered", pgid);
        return;
      }
      groups = p;
      cap_groups = cap;
    }
    g = &groups[n_groups++];
    g->pgid = pgid;
    g->term_at = g->kill_at = -1;
  }
  /* Like reaper.ts's Map.set: a second add of a pgid replaces its task id and keeps its deadline. */
  snprintf(g->task_id, sizeof g->task_id, "%s", task_id);
}

static void del_group(long pgid) {
  for (size_t i = 0; i < n_groups; i++) {
    if (groups[i].pgid != pgid) continue;
    groups[i] = groups[n_groups - 1];
    n_groups--;
    return;
  }
}

/* Does /proc/PID/environ hold the entry `marker` exactly (NUL-separated)? */
static int environ_has(const char *pid, const char *marker) {
  char path[300];
  snprintf(path, sizeof path, "/proc/%s/environ", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t mlen = strlen(marker);
  /* Compare entry by entry while streaming: `pos` is the offset in the current entry, `ok` whether it still matches. */
  char buf[8192];
  size_t pos = 0;
  int ok = 1, found = 0;
  ssize_t r;
  while (!found && (r = read(fd, buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < r; i++) {
      char c = buf[i];
      if (c == '\0') {
        if (ok && pos == mlen) {
          found = 1;
          break;
        }
        pos = 0;
        ok = 1;
        continue;
      }
      if (ok && (pos >= mlen || marker[pos] != c)) ok = 0;
      pos++;
    }
  }
  /* A last entry without its NUL. */
  if (!found && ok && pos == mlen && mlen > 0) found = 1;
  close(fd);
  return found;
}

/* The process group of /proc/PID/stat (field 5; the name in field 2 may hold spaces and parentheses). */
static long stat_pgid(const char *pid) {
  char path[300], buf[1024];
  snprintf(path, sizeof path, "/proc/%s/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t r = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (r <= 0) return -1;
  buf[r] = '\0';
  char *p = strrchr(buf, ')');
  if (!p) return -1;
  char state;
  long ppid, pgrp;
  if (sscanf(p + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) return -1;
  return pgrp;
}

/* How many processes of group `pgid` prove they run `task_id`. */
static int task_members(long pgid, const char *task_id) {
  DIR *d = opendir("/proc");
  if (!d) return 0;
  char marker[MAX_TASK_ID + 32];
  snprintf(marker, sizeof marker, "DROVER_TASK_ID=%s", task_id);
  int found = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *n = e->d_name;
    if (!isdigit((unsigned char)n[0])) continue;
    int digits = 1;
    for (const char *c = n; *c; c++) digits &= isdigit((unsigned char)*c) != 0;
    if (!digits || stat_pgid(n) != pgid) continue;
    if (environ_has(n, marker)) found++;
  }
  closedir(d);
  return found;
}

/* reaper.ts signalTaskGroup: signals the group only if it still runs the task; returns the members found. */
static int signal_task_group(long pgid, const char *task_id, int sig) {
  int members = task_members(pgid, task_id);
  if (members > 0 && kill((pid_t)-pgid, sig) != 0 && errno != ESRCH) say("could not signal process group %ld: %s", pgid, strerror(errno));
  return members;
}

static int group_alive(long pgid) {
  return kill((pid_t)-pgid, 0) == 0 || errno != ESRCH;
}

/* `^\d{1,max}$` as a number, or -1. */
static int64_t parse_digits(const char *s, int max) {
  size_t len = strlen(s);
  if (len == 0 || (int)len > max) return -1;
  int64_t v = 0;
  for (const char *c = s; *c; c++) {
    if (!isdigit((unsigned char)*c)) return -1;
    v = v * 10 + (*c - '0');
  }
  return v;
}

static void handle_line(char *line) {
  /* Trimmed like reaper.ts (String.prototype.trim), then split on single spaces. */
  char *start = line, *end = line + strlen(line);
  while (start < end && isspace((unsigned char)*start)) start++;
  while (end > start && isspace((unsigned char)end[-1])) *--end = '\0';
  if (start == end) return;
  char copy[MAX_LINE + 1];
  snprintf(copy, sizeof copy, "%s", start);
  char *parts[5];
  int n = 0;
  char *p = start;
  for (;;) {
    if (n == 5) break;
    parts[n++] = p;
    char *sp = strchr(p, ' ');
    if (!sp) break;
    *sp = '\0';
    p = sp + 1;
  }
  int shape = (n == 3 && strcmp(parts[0], "add") == 0 && parts[2][0] != '\0') || (n == 2 && strcmp(parts[0], "del") == 0) ||
              (n == 4 && strcmp(parts[0], "deadline") == 0 && parse_digits(parts[2], MAX_MS_DIGITS) >= 0 &&
               parse_digits(parts[3], MAX_MS_DIGITS) >= 0 && parse_digits(parts[2], MAX_MS_DIGITS) <= parse_digits(parts[3], MAX_MS_DIGITS));
  if (!shape) {
    say("expected \"add <pgid> <taskId>\", \"del <pgid>\" or \"deadline <pgid> <termInMs> <killInMs>\", got \"%s\"", copy);
    return;
  }
  /* pgid: digits, a safe integer (here: a pid_t), above 1. */
  int64_t pgid = parse_digits(parts[1], 10);
  if (pgid <= 1 || pgid > 0x7fffffff) {
    say("bad pgid in \"%s\"", copy);
    return;
  }
  if (strcmp(parts[0], "add") == 0) {
    if (strlen(parts[2]) > MAX_TASK_ID) {
      say("task id longer than %d characters in \"%s\"", MAX_TASK_ID, copy);
      return;
    }
    add_group((long)pgid, parts[2]);
  } else if (strcmp(parts[0], "del") == 0) {
    del_group((long)pgid);
  } else {
    group_t *g = find((long)pgid);
    if (!g) return;
    int64_t t = now_ms();
    g->term_at = t + parse_digits(parts[2], MAX_MS_DIGITS);
    g->kill_at = t + parse_digits(parts[3], MAX_MS_DIGITS);
  }
}

/* Fires the deadlines that are due; returns ms until the next one, or -1. */
static int run_deadlines(void) {
  int64_t t = now_ms(), next = -1;
  for (size_t i = 0; i < n_groups; i++) {
    group_t *g = &groups[i];
    if (g->term_at >= 0 && g->term_at <= t) {
      g->term_at = -1;
      if (signal_task_group(g->pgid, g->task_id, SIGTERM) > 0)
        say("the agent did not renew its deadline: SIGTERM to process group %ld (task %s)", g->pgid, g->task_id);
    }
    if (g->kill_at >= 0 && g->kill_at <= t) {
      g->kill_at = -1;
      if (signal_task_group(g->pgid, g->task_id, SIGKILL) > 0)
        say("the agent did not renew its deadline: SIGKILL to process group %ld (task %s)", g->pgid, g->task_id);
    }
    if (g->term_at >= 0 && (next < 0 || g->term_at < next)) next = g->term_at;
    if (g->kill_at >= 0 && (next < 0 || g->kill_at < next)) next = g->kill_at;
  }
  if (next < 0) return -1;
  int64_t wait = next - now_ms();
  return wait < 0 ? 0 : (wait > 3600000 ? 3600000 : (int)wait);
}

/* At EOF: SIGTERM to every registered group that still runs its task, SIGKILL after the grace to those alive. */
static void reap_all(int grace_ms) {
  char *termed = calloc(n_groups ? n_groups : 1, 1);
  int any = 0;
  for (size_t i = 0; i < n_groups; i++) {
    if (signal_task_group(groups[i].pgid, groups[i].task_id, SIGTERM) > 0) {
      if (termed) termed[i] = 1;
      any = 1;
      say("the agent is gone: SIGTERM to process group %ld (task %s)", groups[i].pgid, groups[i].task_id);
    }
  }
  if (!any || !termed) {
    free(termed);
    return;
  }
  int64_t deadline = now_ms() + grace_ms;
  int delay = 5;
  for (;;) {
    int alive = 0;
    for (size_t i = 0; i < n_groups; i++) alive |= termed[i] && group_alive(groups[i].pgid);
    int64_t left = deadline - now_ms();
    if (!alive || left <= 0) break;
    struct timespec ts = {0, (long)(delay < left ? delay : left) * 1000000L};
    nanosleep(&ts, NULL);
    delay = delay * 2 > 50 ? 50 : delay * 2;
  }
  for (size_t i = 0; i < n_groups; i++) {
    if (!termed[i] || !group_alive(groups[i].pgid)) continue;
    if (signal_task_group(groups[i].pgid, groups[i].task_id, SIGKILL) > 0)
      say("SIGKILL to process group %ld (task %s) after %d ms", groups[i].pgid, groups[i].task_id, grace_ms);
  }
  free(termed);
}

int main(int argc, char **argv) {
  int grace_ms = MAX_GRACE_MS;
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], "--grace-ms") != 0) continue;
    int64_t g = parse_digits(argv[i + 1], 12);
    grace_ms = g < 0 ? MAX_GRACE_MS : (g > MAX_GRACE_MS ? MAX_GRACE_MS : (int)g);
  }
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);

  char buf[MAX_LINE + 1];
  size_t len = 0;
  int discarding = 0; /* inside a line longer than MAX_LINE */
  for (;;) {
    struct pollfd pfd = {0, POLLIN, 0};
    int timeout = run_deadlines();
    int pr = poll(&pfd, 1, timeout);
    if (pr < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (pr == 0) continue;
    ssize_t r = read(0, buf + len, sizeof buf - 1 - len);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r <= 0) break; /* EOF, or a read error: as good as EOF */
    len += (size_t)r;
    size_t from = 0;
    for (size_t i = 0; i < len; i++) {
      if (buf[i] != '\n') continue;
      buf[i] = '\0';
      if (!discarding) handle_line(buf + from);
      discarding = 0;
      from = i + 1;
    }
    memmove(buf, buf + from, len - from);
    len -= from;
    if (len == sizeof buf - 1) {
      if (!discarding) say("a line longer than %d bytes; ignored", MAX_LINE);
      discarding = 1;
      len = 0;
    }
  }
  /* A last line without its newline (readline's 'line' at close). */
  if (len > 0 && !discarding) {
    buf[len] = '\0';
    handle_line(buf);
  }
  if (n_groups == 0) return 0;
  reap_all(grace_ms);
  return 0;
}
