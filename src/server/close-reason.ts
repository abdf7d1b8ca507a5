/** RFC 6455 allows a WebSocket close reason of at most 123 bytes of UTF-8. */
export const MAX_CLOSE_REASON_BYTES = 123;

/**
 * `reason` cut to fit a close frame, on a character boundary. A reason often
 * quotes what a peer sent (a field, an unknown key): cut by characters only,
 * multi-byte ones made it longer than 123 bytes, and `ws` throws on that
 * instead of closing the socket.
 */
export function closeReason(reason: string): string {
  let out = reason.length > MAX_CLOSE_REASON_BYTES ? reason.slice(0, MAX_CLOSE_REASON_BYTES) : reason;
  while (Buffer.byteLength(out) > MAX_CLOSE_REASON_BYTES) out = out.slice(0, -1);
  // A cut between the halves of a surrogate pair leaves half a character: drop it.
  return out.replace(/[\ud800-\udbff]$/, '');
}
