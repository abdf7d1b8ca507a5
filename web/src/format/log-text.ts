/**
 * Log bytes → text safe to show: decoded as UTF-8 (invalid bytes become
 * U+FFFD), terminal escape sequences removed, and control characters other
 * than newline and tab shown as "␛"-style symbols rather than acted on. The
 * result is only ever rendered as a React text node, never as HTML.
 */

export function decodeBase64(b64: string): Uint8Array {
  try {
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return new Uint8Array(0);
  }
}

// CSI (ESC [ … final), OSC (ESC ] … BEL or ESC \), and two-character escapes.
// eslint-disable-next-line no-control-regex
const ESCAPES = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]|\u009b[0-?]*[ -/]*[@-~]/g;
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f]/g;

export function cleanLogText(s: string): string {
  return s
    .replace(ESCAPES, '')
    .replace(/\r\n/g, '\n')
    .replace(CONTROLS, (c) => (c === '\r' ? '\n' : String.fromCharCode(0x2400 + (c === '\u007f' ? 0x21 : c.charCodeAt(0)))));
}

export function decodeChunks(parts: readonly Uint8Array[]): string {
  let len = 0;
  for (const p of parts) len += p.length;
  const all = new Uint8Array(len);
  let off = 0;
  for (const p of parts) {
    all.set(p, off);
    off += p.length;
  }
  return cleanLogText(new TextDecoder('utf-8', { fatal: false }).decode(all));
}
