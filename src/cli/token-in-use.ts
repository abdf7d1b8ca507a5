/**
 * The id of the token the CLI is sending, so `token revoke` can refuse to
 * saw off the branch it sits on: GET /v1/me names the token that
 * authenticated the call (`tokenId`).
 */
import type { Me } from '../client/client.js';

export async function tokenInUseId(client: { me(): Promise<Me> }, secret: string | null): Promise<string | null> {
  if (!secret) return null;
  return (await client.me()).tokenId;
}
