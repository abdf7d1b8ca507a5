/**
 * Links to a DAG's page. A name is unique per owner; the page names the owner
 * in `?owner=` only when it is not the signed-in user (an admin looking at
 * someone else's DAG), so a user's own links stay short.
 */
const enc = encodeURIComponent;

export function dagPath(name: string, owner: string, me: string): string {
  return owner === me ? `/dags/${enc(name)}` : `/dags/${enc(name)}?owner=${enc(owner)}`;
}

export const dagRunPath = (id: string): string => `/dag-runs/${id}`;
