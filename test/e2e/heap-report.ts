/**
 * Test preload (`node --import <this file>`, through NODE_OPTIONS): on SIGUSR2
 * the process writes its V8 heap space sizes as JSON to
 * `<env DROVER_HEAP_REPORT_DIR>/<pid>.json` (via a rename, so a reader never
 * sees half a file).
 */
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import v8 from 'node:v8';

const dir = process.env.DROVER_HEAP_REPORT_DIR;
if (dir) {
  process.on('SIGUSR2', () => {
    const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size]));
    const path = join(dir, `${process.pid}.json`);
    writeFileSync(`${path}.tmp`, JSON.stringify({ argv: process.argv.slice(2), spaces }));
    renameSync(`${path}.tmp`, path);
  });
}
