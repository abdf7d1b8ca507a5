/**
 * `drover token create|ls|revoke` (admin tokens only, enforced by the server).
 *
 * `create` prints the secret alone on stdout, so `T=$(drover token create ...)`
 * works, and the token's id on stderr with a note that the secret is shown
 * only this once (the server keeps just its hash).
 */
import { Command } from '../commander.js';
import type { Role } from '../../client/types.js';
import { connect, session } from '../context.js';
import { tokenInUseId } from '../token-in-use.js';
import { formatTable, formatTime, printJson, safeText } from '../output.js';
import { UsageError } from '../usage-error.js';

const ROLES: readonly Role[] = ['admin', 'user', 'worker'];

export function parseRole(raw: string): Role {
  if (!(ROLES as readonly string[]).includes(raw)) throw new UsageError(`invalid --role "${raw}": expected one of ${ROLES.join(', ')}`);
  return raw as Role;
}

/** A token id as `drover token ls` prints it: 16 hex digits, taken in any case. */
export function parseTokenId(raw: string): string {
  const id = raw.trim().toLowerCase();
  if (!/^[0-9a-f]{16}$/.test(id)) throw new UsageError(`invalid token id "${safeText(raw.slice(0, 60))}": expected the 16 hex digits drover token ls shows in its ID column`);
  return id;
}

export function tokenCommand(): Command {
  const token = new Command('token')
    .description('manage API tokens (admin)')
    .usage('create|ls|revoke [options]')
    .argument('[subcommand]')
    .action((sub: string | undefined) => {
      // Reached only when no subcommand matched: one error line instead of commander's help on stderr.
      if (sub === undefined) throw new UsageError('missing subcommand: drover token create|ls|revoke');
      throw new UsageError(`unknown subcommand "token ${sub}": expected create, ls or revoke`);
    });

  token
    .command('create')
    .description('create a token; prints its secret once')
    .requiredOption('--name <name>', 'what the token is for')
    .option('--role <role>', 'admin, user or worker', 'user')
    .option('--user <user>', 'the user it acts for; tasks it submits belong to this user (server default when omitted)')
    .option('--json', 'print {"token", "secret"} as JSON')
    .action(async (flags: { name: string; role: string; user?: string; json?: boolean }, cmd: Command) => {
      if (!flags.name.trim() || flags.name.length > 200) throw new UsageError(`invalid --name "${flags.name}": expected 1..200 characters`);
      const role = parseRole(flags.role);
      if (flags.user !== undefined && !flags.user.trim()) throw new UsageError('invalid --user "": expected a user name');
      const created = await connect(cmd).createToken({ name: flags.name, role, ...(flags.user !== undefined ? { user: flags.user } : {}) });
      if (flags.json) return printJson(created);
      process.stdout.write(`${created.secret}\n`);
      process.stderr.write(
        `created ${safeText(created.token.role)} token ${safeText(created.token.id)} (name ${safeText(created.token.name)}, user ${safeText(created.token.user)}); ` +
          `the secret above will not be shown again\n`,
      );
    });

  token
    .command('ls')
    .description('list tokens (never their secrets)')
    .option('--json', 'print {"tokens": [...]} as JSON')
    .action(async (flags: { json?: boolean }, cmd: Command) => {
      const tokens = await connect(cmd).listTokens();
      if (flags.json) return printJson({ tokens });
      process.stdout.write(
        formatTable(
          ['ID', 'NAME', 'USER', 'ROLE', 'CREATED', 'LAST USED', 'REVOKED'],
          tokens.map((t) => [t.id, t.name, t.user, t.role, formatTime(t.createdAt), formatTime(t.lastUsedAt), formatTime(t.revokedAt)]),
        ),
      );
    });

  token
    .command('revoke')
    .description('revoke a token; requests with it fail from now on')
    .argument('<id>', 'token id (from drover token ls)')
    .option('--force', 'revoke it even if it is the token this CLI is using (every later command with it is rejected)')
    .option('--json', 'print the revoked token as JSON')
    .action(async (rawId: string, flags: { json?: boolean; force?: boolean }, cmd: Command) => {
      const id = parseTokenId(rawId);
      const client = connect(cmd);
      if (!flags.force && id === (await tokenInUseId(client, session.connection?.token ?? null))) {
        throw new UsageError(
          `refusing to revoke ${id}: it is the token this CLI is using, so every later command with it would be rejected; ` +
            'create another admin token first (drover token create --name NAME --role admin) or pass --force',
        );
      }
      const t = await client.revokeToken(id);
      if (flags.json) return printJson(t);
      process.stdout.write(`revoked ${safeText(t.id)} (${safeText(t.name)})\n`);
    });

  return token;
}
