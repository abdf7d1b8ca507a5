/**
 * The id of the token the CLI is sending, so `token revoke` can refuse to
 * saw off the branch it sits on. The server says which token authenticated
 * the call in GET /v1/me's `tokenId`; a server that does not send it yet is
 * matched by the id's documented derivation instead (the first 16 hex digits
 * of the secret's sha256: src/server/auth.ts tokenIdOf).
 */
import { createHash } from 'node:crypto';
import type { Me } from '../client/client.js';

export async function tokenInUseId(client: { me(): Promise<Me> }, secret: string | null): Promise<string | null> {
  if (!secret) return null;
  const me = await client.me();
  if (typeof me.tokenId === 'string' && me.tokenId) return me.tokenId;
  return createHash('sha256').update(secret, 'utf8').digest('hex').slice(0, 16);
}
