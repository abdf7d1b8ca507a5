/**
 * What an operator should do about a connection the server refused at the
 * upgrade with a status no retry changes: the token (401 unknown or revoked,
 * 403 not a worker token) or the URL (404: no worker endpoint there, e.g. a
 * base URL that ends in /v1). Null for anything else (refused connections,
 * timeouts, 5xx: a server that is down or restarting), which is retried
 * quietly. The agent still retries these too (a token may be re-issued under
 * the same id only by a new one, but an operator may fix a proxy), and logs
 * them as errors so the cause is not lost among retry lines.
 */
export function refusalHint(reason: string): string | null {
  const status = /Unexpected server response: (\d{3})/.exec(reason)?.[1];
  switch (status) {
    case '401':
      return 'the server refused the token (401: unknown or revoked): give a current worker token (drover token create --name NAME --role worker)';
    case '403':
      return 'the token is not a worker token (403): agents need one made with --role worker';
    case '404':
      return "no worker endpoint at this URL (404): give the server's base URL, such as http://host:7070 (without /v1)";
    default:
      return null;
  }
}
