# The native spawner (native/spawn.c), the native reaper (native/reaper.c,
# an executable), the heap trimmer and malloc arena limit (native/memory.c) and the work-directory
# calls (native/work-dir.c), the /proc guard of the long-running commands (native/proc-guard.c), built by `npm install`
# (package.json "install"). Linux only:
# elsewhere there are no targets and the agent uses Node's child_process and
# the reaper in JavaScript (src/worker/native-spawn.ts and
# src/worker/reaper-client.ts explain the choices; without the work-directory
# addon the agent makes the same calls through Node's fs,
# src/worker/work-dir-native.ts; without the memory addon the
# long-running commands leave freed C heap to glibc, src/cli/memory-trim.ts, and
# keep glibc's default arenas, src/cli/malloc-arenas.ts).
{
  "targets": [
    {
      "target_name": "drover_spawn",
      "conditions": [
        ["OS=='linux'", {
          "sources": ["native/spawn.c"],
          "cflags": ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
        }, {
          "type": "none"
        }]
      ]
    },
    {
      "target_name": "drover_memory",
      "conditions": [
        ["OS=='linux'", {
          "sources": ["native/memory.c"],
          "cflags": ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
        }, {
          "type": "none"
        }]
      ]
    },
    {
      "target_name": "drover_workdir",
      "conditions": [
        ["OS=='linux'", {
          "sources": ["native/work-dir.c"],
          "cflags": ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
        }, {
          "type": "none"
        }]
      ]
    },
    {
      "target_name": "drover_guard",
      "conditions": [
        ["OS=='linux'", {
          "sources": ["native/proc-guard.c"],
          "cflags": ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
        }, {
          "type": "none"
        }]
      ]
    },
    {
      "target_name": "drover_reaper",
      "conditions": [
        ["OS=='linux'", {
          "type": "executable",
          "sources": ["native/reaper.c"],
          "cflags": ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
        }, {
          "type": "none"
        }]
      ]
    }
  ]
}
