/**
 * Test preload (`node --import <this file>`): records the URL of every module
 * the process resolves, one per line, in the file named by env
 * DROVER_MODULE_LOG. Resolve hooks run in node's loader thread, so the file is
 * appended to from there (synchronously, so nothing is lost at exit).
 */
import { register } from 'node:module';

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
