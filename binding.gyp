# The native spawner (native/spawn.c), built by `npm install` (package.json
# "install"). Linux only: elsewhere there is no target and the agent uses
# Node's child_process (src/worker/native-spawn.ts explains the choice).
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
    }
  ]
}
