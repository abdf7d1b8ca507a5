/**
 * Serves the dashboard (the single-page app built into `web/dist/` by
 * `npm run build:web`). The files are sent by @fastify/static
 * (reply.sendFile: ETag/Last-Modified, 304 on If-None-Match, HEAD, Range,
 * Content-Type from @fastify/send's mime table), registered with
 * `serve: false` so that it adds no route of its own: the routes below are the
 * only ones, each declaring `config.auth` like every route (auth.ts).
 *
 * Contract:
 * - Page routes (PAGE_ROUTES, the one list: a new page adds a line) answer
 *   GET/HEAD with `index.html`, `Cache-Control: no-cache` (revalidated with
 *   its ETag on every load, so a new build shows at once). They are public:
 *   the app itself asks the API who is signed in. There is no catch-all: any
 *   other path still gets the API's 401 or 404.
 * - `/assets/:file` answers a file of `web/dist/assets/` (the build's hashed
 *   names) with `Cache-Control: public, max-age=31536000, immutable` and the
 *   type of its extension. The name must be one plain file name (letters,
 *   digits, `_ - .`, not starting with a dot), checked here before the
 *   library sees it: no `/`, `\`, `..` or encoded forms reach the file system
 *   (the router decodes `%2F` into the parameter, where the pattern refuses
 *   it); symbolic links and directories are not followed or listed (404).
 * - When the build is missing, page routes answer 503 with a text saying to
 *   run `npm run build:web`; a missing asset is 404.
 * - The directory is read on every request (nothing cached in memory), so a
 *   rebuild while the server runs is served at once.
 */
import { lstat } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { packageRoot } from '../worker/package-root.js';
import { errorBody } from './error-handler.js';

/** The dashboard's pages: each answers index.html and the app's router shows the page. */
export const PAGE_ROUTES = ['/', '/sign-in', '/tasks', '/tasks/:id', '/workers', '/schedules', '/schedules/new', '/dags', '/dags/:name', '/dag-runs/:id', '/submit'] as const;

/**
 * `web/dist/` of this package, found from this module's place in it (the
 * nearest package.json above dist/src/server/ or the bundle's dist/cli/), not
 * from the working directory.
 */
export function defaultWebDist(): string {
  return join(packageRoot(import.meta.url), 'web', 'dist') + sep;
}

export const ASSET_CACHE_CONTROL = 'public, max-age=31536000, immutable';
export const PAGE_CACHE_CONTROL = 'no-cache';

/** One file name: no separators, no leading dot (so never `.` or `..`), at most 255 characters. */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$/;

export function isAssetName(name: string): boolean {
  return ASSET_NAME.test(name);
}

/**
 * What a request's route answers when its file is not there. @fastify/static
 * answers a missing file (or a directory) with reply.callNotFound(), which runs
 * the app's one not-found handler; that handler asks answerMissingFile first,
 * so a page says 503 "not built" and an asset a JSON 404 instead of "no route".
 */
type Miss = (reply: FastifyReply) => FastifyReply;
const misses = new WeakMap<FastifyRequest, Miss>();

/** For the app's not-found handler: answers with the route's Miss and returns true, or returns false for any other request. */
export function answerMissingFile(req: FastifyRequest, reply: FastifyReply): boolean {
  const miss = misses.get(req);
  if (!miss) return false;
  misses.delete(req);
  void miss(reply);
  return true;
}

/** Thrown from @fastify/send's onFile for a symbolic link, before anything is read; the route answers it as missing. */
class SymbolicLinkRefused extends Error {}

/**
 * onFile: @fastify/send stats with fs.stat, which follows links; a link to
 * anywhere (inside the build or not) is refused. (Only the last component is
 * checked: web/dist itself may be a link.) Unlike the O_NOFOLLOW open this
 * replaced, the check and @fastify/send's open are two steps; that gap matters
 * only to someone who can already write into the build directory.
 */
async function refuseSymbolicLink(path: string): Promise<void> {
  if ((await lstat(path)).isSymbolicLink()) throw new SymbolicLinkRefused(path);
}

/**
 * @fastify/send's mime table (mime 3) still says `application/javascript`;
 * RFC 9239 made `text/javascript` the one JavaScript type, which the dashboard
 * has always sent. (A 304 carries no Content-Type, so none is added there.)
 */
const JAVASCRIPT = /\.m?js$/i;
function setHeaders(reply: FastifyReply, path: string): void {
  if (JAVASCRIPT.test(path) && reply.statusCode !== 304) void reply.header('content-type', 'text/javascript; charset=utf-8');
}

const ONE_YEAR_MS = 31_536_000_000;

export async function staticRoutes(app: FastifyInstance, webDist: string): Promise<void> {
  const root = resolve(webDist);
  const assets = join(root, 'assets');
  const index = join(root, 'index.html');

  await app.register(fastifyStatic, {
    serve: false, // no routes (no wildcard): reply.sendFile only, from the routes below
    index: false, // a directory is never answered with a file in it (nor listed: `list` is off)
    dotfiles: 'ignore', // 404, though isAssetName already refuses a leading dot
    setHeaders,
  });

  const answer = (req: FastifyRequest, reply: FastifyReply, name: string, dir: string, miss: Miss, opts: { cacheControl: false } | { maxAge: number; immutable: true }) => {
    misses.set(req, miss);
    return reply.sendFile(name, dir, { ...opts, onFile: refuseSymbolicLink });
  };

  // HEAD is declared, not derived (exposeHeadRoute): the derived one would reset Content-Length to 0 for a body-less answer.
  const base = {
    method: ['GET', 'HEAD'],
    config: { auth: 'public' as const },
    schema: { hide: true },
    exposeHeadRoute: false,
    errorHandler(this: FastifyInstance, err: FastifyError, req: FastifyRequest, reply: FastifyReply) {
      if (err instanceof SymbolicLinkRefused && answerMissingFile(req, reply)) return;
      app.errorHandler.call(this, err, req, reply);
    },
  };

  const pageMissing: Miss = (reply) =>
    reply
      .code(503)
      .header('content-type', 'text/plain; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(`The dashboard is not built (no ${index}). Run \`npm run build:web\` in the Drover directory, then reload this page.\n`);
  // Cache-Control is ours (the library has no no-cache setting): its own is turned off for the page.
  const page = (req: FastifyRequest, reply: FastifyReply) => answer(req, reply.header('cache-control', PAGE_CACHE_CONTROL), 'index.html', root, pageMissing, { cacheControl: false });
  for (const url of PAGE_ROUTES) app.route({ ...base, url, handler: page });

  app.route<{ Params: { file: string } }>({
    ...base,
    url: '/assets/:file',
    handler: (req, reply) => {
      const name = req.params.file;
      const missing: Miss = (r) => r.code(404).send(errorBody('not_found', `no asset ${JSON.stringify(name.slice(0, 300))}`));
      if (!isAssetName(name)) return missing(reply);
      // Gives `public, max-age=31536000, immutable` (ASSET_CACHE_CONTROL).
      return answer(req, reply, name, assets, missing, { maxAge: ONE_YEAR_MS, immutable: true });
    },
  });
}
