/**
 * The token for `drover login` when neither `--token` nor DROVER_TOKEN gives
 * one: asked for on a terminal (input not echoed), or the first line of
 * stdin when it is a pipe or file (`echo $T | drover login URL`).
 */
import { UsageError } from './usage-error.js';

const NO_TOKEN = 'no token: pass --token T, set DROVER_TOKEN, or type it when asked (drover token create prints one)';

export async function readToken(prompt: string, input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stderr): Promise<string> {
  const line = input.isTTY ? await askHidden(prompt, input, output) : await firstLine(input);
  const token = line.trim();
  if (!token) throw new UsageError(NO_TOKEN);
  return token;
}

async function firstLine(input: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of input) {
    text += chunk.toString();
    const nl = text.indexOf('\n');
    if (nl >= 0) return text.slice(0, nl);
    if (text.length > 64 * 1024) break;
  }
  return text;
}

/** Reads a line in raw mode without echoing it; Ctrl-C aborts with exit 130. */
function askHidden(prompt: string, input: NodeJS.ReadStream, output: NodeJS.WriteStream): Promise<string> {
  output.write(prompt);
  return new Promise((resolve) => {
    let text = '';
    input.setRawMode(true);
    input.resume();
    input.setEncoding('utf8');
    const done = (value: string) => {
      input.setRawMode(false);
      input.pause();
      input.off('data', onData);
      output.write('\n');
      resolve(value);
    };
    const onData = (s: string) => {
      for (const ch of s) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return done(text);
        if (ch === '\u0003') {
          output.write('\n');
          process.exit(130);
        }
        if (ch === '\u007f' || ch === '\b') text = text.slice(0, -1);
        else if (ch >= ' ') text += ch;
      }
    };
    input.on('data', onData);
  });
}
