/**
 * Test preload (`node --import <this file>`): records the URL of every module
 * the process resolves, one per line, in the file named by env
 * DROVER_MODULE_LOG: ES modules through a resolve hook (which runs in node's
 * loader thread, so the file is appended to from there, synchronously, so
 * nothing is lost at exit), CommonJS ones (the executable's bundle is
 * CommonJS, rolldown.config.js) by wrapping the CommonJS loader's `_load`,
 * which every require() and the CommonJS main module go through. Node 20 has no
 * public hook for require(); this is a test's instrument, not product code.
 */
import { appendFileSync } from 'node:fs';
import Module, { isBuiltin, register } from 'node:module';
import { pathToFileURL } from 'node:url';

register(
  'data:text/javascript,' +
    encodeURIComponent(`
import { appendFileSync } from 'node:fs';
const log = process.env.DROVER_MODULE_LOG;
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (log) appendFileSync(log, r.url + '\\n');
  return r;
}
`),
);

type Load = (request: string, parent: unknown, isMain: boolean) => unknown;
const cjs = Module as unknown as { _load: Load; _resolveFilename: (request: string, parent: unknown, isMain: boolean) => string };
const log = process.env.DROVER_MODULE_LOG;
const load = cjs._load;
cjs._load = function recordedLoad(this: unknown, request: string, parent: unknown, isMain: boolean) {
  if (log) {
    let url: string | null = null;
    try {
      const file = cjs._resolveFilename(request, parent, isMain);
      url = isBuiltin(file) ? (file.startsWith('node:') ? file : `node:${file}`) : pathToFileURL(file).href;
    } catch {
      // Not resolvable: the real load below throws the error the program sees.
    }
    if (url !== null) appendFileSync(log, url + '\n');
  }
  return load.call(this, request, parent, isMain);
};
