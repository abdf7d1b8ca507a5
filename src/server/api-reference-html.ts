/**
 * The API reference page (`GET /docs/api`): static HTML rendered from the
 * server's own OpenAPI document, so it never drifts from the routes. Contract:
 * - No script and no inline style (the CSP is `script-src 'self'; style-src
 *   'self'`): the look comes from one stylesheet, `/docs/api.css`.
 * - No favicon request (an empty data: icon; img-src allows data:): /favicon.ico is not a public route.
 * - Every text from the document is HTML-escaped (escapeHtml); anchors are
 *   derived from method + path with a closed alphabet.
 * - One section per tag (in the document's order of first use), one entry per
 *   operation: method and path, summary, parameters, request body fields,
 *   and every response status with its description and, for success answers,
 *   the fields of its body.
 * Pure: the document in, the page out.
 */

type Json = Record<string, any>;

export function escapeHtml(s: unknown): string {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const MAX_DEPTH = 6;

function anchor(method: string, path: string): string {
  return `${method}-${path}`.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
}

/** A schema's type in a few words: `string`, `integer ≥ 0`, `array of object`, `string | null`. */
export function typeText(s: Json | undefined): string {
  if (!s || typeof s !== 'object') return 'any';
  if (s.$ref) return String(s.$ref).split('/').pop() ?? 'object';
  for (const key of ['anyOf', 'oneOf'] as const) {
    const alts = s[key] as Json[] | undefined;
    if (!Array.isArray(alts)) continue;
    if (alts.every((x) => x.const !== undefined)) return `one of ${alts.map((x) => JSON.stringify(x.const)).join(', ')}`;
    return alts.map((x) => typeText(x)).join(' | ');
  }
  if (Array.isArray(s.enum)) return `one of ${s.enum.map((v: unknown) => JSON.stringify(v)).join(', ')}`;
  if (s.const !== undefined) return JSON.stringify(s.const);
  let t = Array.isArray(s.type) ? s.type.join(' | ') : (s.type ?? (s.properties ? 'object' : 'any'));
  if (t === 'array') t = `array of ${typeText(s.items)}`;
  if (s.nullable) t += ' | null';
  return t;
}

function constraints(s: Json): string[] {
  const out: string[] = [];
  if (s.minimum !== undefined) out.push(`≥ ${s.minimum}`);
  if (s.maximum !== undefined) out.push(`≤ ${s.maximum}`);
  if (s.minLength !== undefined) out.push(`length ≥ ${s.minLength}`);
  if (s.maxLength !== undefined) out.push(`length ≤ ${s.maxLength}`);
  if (s.minItems !== undefined) out.push(`items ≥ ${s.minItems}`);
  if (s.maxItems !== undefined) out.push(`items ≤ ${s.maxItems}`);
  if (s.pattern !== undefined) out.push(`pattern ${s.pattern}`);
  if (s.format !== undefined) out.push(`format ${s.format}`);
  if (s.default !== undefined) out.push(`default ${JSON.stringify(s.default)}`);
  return out;
}

/** An object's fields as a nested list (arrays of objects list their items' fields). */
function fields(s: Json | undefined, depth = 0): string {
  if (!s || depth > MAX_DEPTH) return '';
  const target = s.type === 'array' && s.items?.properties ? s.items : s;
  const props = target.properties as Json | undefined;
  if (!props || Object.keys(props).length === 0) return '';
  const required = new Set<string>(Array.isArray(target.required) ? target.required : []);
  const items = Object.entries(props).map(([name, p]: [string, Json]) => {
    const cons = constraints(p);
    return (
      `<li><code class="field">${escapeHtml(name)}</code>${required.has(name) ? ' <span class="required">required</span>' : ''} ` +
      `<span class="type">${escapeHtml(typeText(p))}</span>` +
      (cons.length ? ` <span class="constraints">${escapeHtml(cons.join(', '))}</span>` : '') +
      (p.description ? `<div class="description">${escapeHtml(p.description)}</div>` : '') +
      fields(p, depth + 1) +
      `</li>`
    );
  });
  return `<ul class="fields">${items.join('')}</ul>`;
}

function parameters(params: Json[] | undefined): string {
  if (!params?.length) return '';
  const rows = params.map(
    (p) =>
      `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${escapeHtml(p.in)}</td><td>${p.required ? 'yes' : 'no'}</td>` +
      `<td>${escapeHtml(typeText(p.schema))}${constraints(p.schema ?? {}).length ? ` <span class="constraints">${escapeHtml(constraints(p.schema).join(', '))}</span>` : ''}</td>` +
      `<td>${escapeHtml(p.description ?? p.schema?.description ?? '')}</td></tr>`,
  );
  return `<h4>Parameters</h4><table><thead><tr><th>name</th><th>in</th><th>required</th><th>type</th><th>description</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function firstSchema(content: Json | undefined): Json | undefined {
  if (!content) return undefined;
  const first = Object.values(content)[0] as Json | undefined;
  return first?.schema;
}

function responses(rs: Json | undefined): string {
  if (!rs) return '';
  const rows = Object.entries(rs)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, r]: [string, Json]) => {
      const ok = status.startsWith('2');
      const body = ok ? fields(firstSchema(r.content)) : '';
      // @fastify/swagger's placeholder for a response declared without a description.
      const description = !r.description || r.description === 'Default Response' ? (ok ? 'Success' : '') : r.description;
      return `<li><span class="status s${escapeHtml(status[0])}">${escapeHtml(status)}</span> ${escapeHtml(description)}${body}</li>`;
    });
  return `<h4>Responses</h4><ul class="responses">${rows.join('')}</ul>`;
}

export function renderApiReference(doc: Json): string {
  const ops: { tag: string; method: string; path: string; op: Json }[] = [];
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Json)) {
    for (const method of METHODS) {
      const op = (item as Json)[method] as Json | undefined;
      if (op) ops.push({ tag: (op.tags?.[0] as string | undefined) ?? 'other', method, path, op });
    }
  }
  const tags = [...new Set(ops.map((o) => o.tag))];
  const nav = tags
    .map((t) => `<li><a href="#tag-${escapeHtml(anchor('tag', t))}">${escapeHtml(t)}</a><ul>${ops.filter((o) => o.tag === t).map((o) => `<li><a href="#${anchor(o.method, o.path)}"><span class="method ${o.method}">${o.method.toUpperCase()}</span> ${escapeHtml(o.path)}</a></li>`).join('')}</ul></li>`)
    .join('');
  const sections = tags
    .map((t) => {
      const entries = ops
        .filter((o) => o.tag === t)
        .map(({ method, path, op }) => {
          const body = op.requestBody ? `<h4>Request body${op.requestBody.required ? '' : ' (optional)'}</h4>${fields(firstSchema(op.requestBody.content)) || `<p>${escapeHtml(typeText(firstSchema(op.requestBody.content)))}</p>`}` : '';
          return (
            `<article id="${anchor(method, path)}"><h3><span class="method ${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h3>` +
            (op.summary ? `<p class="summary">${escapeHtml(op.summary)}</p>` : '') +
            (op.description ? `<p>${escapeHtml(op.description)}</p>` : '') +
            (op.security && op.security.length === 0 ? '<p class="public">No token needed.</p>' : '') +
            parameters(op.parameters) +
            body +
            responses(op.responses) +
            `</article>`
          );
        })
        .join('');
      return `<section id="tag-${escapeHtml(anchor('tag', t))}"><h2>${escapeHtml(t)}</h2>${entries}</section>`;
    })
    .join('');
  const info = (doc.info ?? {}) as Json;
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeHtml(info.title ?? 'API')} reference</title><link rel="stylesheet" href="/docs/api.css"><link rel="icon" href="data:,"></head><body>` +
    `<header><h1>${escapeHtml(info.title ?? 'API')} <small>version ${escapeHtml(info.version ?? '')}</small></h1>` +
    `<p>${escapeHtml(info.description ?? '')}</p>` +
    `<p>Every call but the public ones takes <code>Authorization: Bearer TOKEN</code>. Errors are <code>{"error": {"code", "message", "field"?, "reason"?}}</code>. ` +
    `Durations are integer milliseconds or strings such as <code>30s</code>; times are ISO 8601. The same document as JSON: <a href="/openapi.json">/openapi.json</a>.</p></header>` +
    `<nav><ul>${nav}</ul></nav><main>${sections}</main></body></html>\n`
  );
}

/** The page's one stylesheet (served at /docs/api.css). */
export const API_REFERENCE_CSS = `
body { font: 15px/1.5 system-ui, sans-serif; margin: 0; display: grid; grid-template-columns: 19rem 1fr; color: #1d2330; }
header { grid-column: 1 / 3; padding: 1rem 2rem; background: #f3f5f9; border-bottom: 1px solid #dde2ea; }
header small { font-weight: normal; color: #5b6577; font-size: 0.6em; }
nav { padding: 1rem; border-right: 1px solid #dde2ea; font-size: 13px; position: sticky; top: 0; align-self: start; max-height: 100vh; overflow: auto; }
nav ul { list-style: none; padding-left: 0.6rem; margin: 0.2rem 0; }
nav a { text-decoration: none; color: inherit; }
main { padding: 0 2rem 4rem; min-width: 0; }
article { border-top: 1px solid #e6e9ef; padding: 0.5rem 0 1rem; }
h3 code { font-size: 1rem; }
.method { display: inline-block; min-width: 3.6rem; font: bold 12px/1.6 ui-monospace, monospace; text-align: center; border-radius: 3px; color: #fff; background: #5b6577; }
.method.get { background: #2f6fb5; } .method.post { background: #2e8b57; } .method.delete { background: #b54040; } .method.put, .method.patch { background: #a0722a; }
.status { font: bold 13px ui-monospace, monospace; padding: 0 0.3rem; border-radius: 3px; background: #e6e9ef; }
.status.s2 { background: #d7efdf; } .status.s4 { background: #f6e2c8; } .status.s5 { background: #f3d3d3; }
.fields { list-style: none; padding-left: 1rem; border-left: 2px solid #e6e9ef; }
.field { font-weight: bold; } .type { color: #2f6fb5; font-family: ui-monospace, monospace; font-size: 13px; }
.constraints, .required { color: #5b6577; font-size: 12px; } .required { color: #b54040; }
.description { color: #3d4556; font-size: 13px; }
table { border-collapse: collapse; font-size: 13px; } td, th { border: 1px solid #dde2ea; padding: 0.2rem 0.5rem; text-align: left; vertical-align: top; }
.responses { list-style: none; padding-left: 0; } .responses > li { margin: 0.3rem 0; }
.public { color: #2e8b57; }
code { font-family: ui-monospace, monospace; }
`;
