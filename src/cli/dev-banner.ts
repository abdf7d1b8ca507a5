/**
 * What `drover dev` prints on stdout once it runs: short, for a person. Where
 * everything is, the dashboard's one-time link (its own line, `Dashboard: URL`),
 * how to use the CLI from here and from elsewhere, and how to get an admin
 * token back. Pure: every fact is passed in.
 *
 * The token advice is what the code does: a restart of `drover dev` checks the
 * token in credentials.json (dev.ts ensureToken) and, when the server no
 * longer accepts it as an admin token (revoked, deleted, unreadable file),
 * makes a new `dev-admin` token and rewrites the file; and any admin token can
 * make another with `drover token create --name NAME --role admin`.
 */
import { plural } from './plural.js';

export interface DevBannerFacts {
  url: string;
  pid: number;
  dir: string;
  workers: number;
  slots: number;
  credentialsPath: string;
  /** The CLI run from the current directory finds credentialsPath. */
  cliFindsCredentials: boolean;
  token: string;
  dashboardLink: string;
  /** How to call the CLI here: `drover` when it is on PATH, else `npx drover`. */
  cli: string;
  verbose: boolean;
}

export function devBanner(f: DevBannerFacts): string {
  const workers = f.workers === 0 ? 'no local workers' : `${plural(f.workers, 'local worker')} × ${plural(f.slots, 'slot')}`;
  const lines = [
    `Drover dev is running (pid ${f.pid}): API and dashboard at ${f.url}`,
    `  ${workers}; data in ${f.dir} (SQLite)`,
    `Dashboard: ${f.dashboardLink}`,
    `  a one-time sign-in link, valid 10 minutes; later, sign in at ${f.url}/sign-in with the admin token`,
    f.cliFindsCredentials
      ? `CLI: here and below, ${f.cli} is signed in as admin (${f.credentialsPath}), e.g.`
      : `CLI: the admin token is in ${f.credentialsPath}; ${/\/\.drover\/?$/.test(f.dir) ? `${f.cli} finds it from ${dirOfDir(f.dir)} and below` : 'set it up with the Elsewhere line below'}, then e.g.`,
    `  ${f.cli} submit --wait -- echo hello`,
    `  ${f.cli} ls`,
    // `npx drover` works only inside the checkout: elsewhere the command must be installed.
    `Elsewhere: drover login ${f.url} --token ${f.token}`,
    `  or: export DROVER_URL=${f.url} DROVER_TOKEN=${f.token}`,
    ...(f.cli === 'drover' ? [] : ['  (a drover command for any directory: npm link --ignore-scripts in the Drover checkout)']),
    `Another admin token: ${f.cli} token create --name NAME --role admin. If the token in credentials.json`,
    `  is revoked, restart drover dev: it replaces a token the server no longer accepts.`,
    `API reference: ${f.url}/docs/api. Below: warnings and errors${f.verbose ? ', and a line per task end' : ' (--verbose: a line per task end too)'}. Ctrl-C stops everything.`,
  ];
  return lines.join('\n') + '\n';
}

/** The directory that holds the data directory (where a `.drover` dir is found from). */
function dirOfDir(dir: string): string {
  const i = dir.replace(/\/+$/, '').lastIndexOf('/');
  return i > 0 ? dir.slice(0, i) : '/';
}
