# The native spawner (native/spawn.c) and the native reaper (native/reaper.c,
# an executable), built by `npm install` (package.json "install"). Linux only:
# elsewhere there are no targets and the agent uses Node's child_process and
# the reaper in JavaScript (src/worker/native-spawn.ts and
# src/worker/reaper-client.ts explain the choices).
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
