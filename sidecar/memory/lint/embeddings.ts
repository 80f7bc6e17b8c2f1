/**
 * The optional embeddings endpoint of the memory lint: an OpenAI-compatible `POST {url}/embeddings`
 * (OpenAI's /v1/embeddings shape, `{model, input: [texts]}` → `{data: [{embedding, index}]}`; a local
 * Ollama serves the same at `http://127.0.0.1:11434/v1`), asked for the entries that have no vector of
 * their store's own (run.ts). Off unless configured (memory.lint `embeddings`, `agentkeep memory lint
 * --embeddings-url URL --embeddings-model NAME`, or env AGENTKEEP_EMBEDDINGS_URL /
 * AGENTKEEP_EMBEDDINGS_MODEL; the key only from env AGENTKEEP_EMBEDDINGS_KEY, sent as a Bearer token).
 * Plain http only to this machine (loopback): the entries' texts are sent to the endpoint.
 * Bounded: batches of `batch` texts, a timeout per request and a deadline for all, at most
 * `maxEntries` entries per lint (a lint note says how many were left out). A failing endpoint
 * (refused, an HTTP error, a timeout, an answer of the wrong shape or dimension) is one `store`
 * warning naming the URL and the fix, and the lint runs on without its vectors: never a failed lint.
 */
import type { LintFinding } from '../../protocol';
import { AgentKeepError } from '../../core/errors';
import type { LintEntry, LintStore } from './model';
import { formatBytes } from '../../protocol/format';

/** Where the vectors come from. */
export interface EmbeddingsEndpoint {
  /** Base URL, e.g. http://127.0.0.1:11434/v1 (the request goes to `<url>/embeddings`; a URL ending in /embeddings is used as it is). */
  url: string;
  /** The model name the server knows, e.g. `nomic-embed-text`, `text-embedding-3-small`; also LintEntry.embedding.model. */
  model: string;
  /** Sent as `Authorization: Bearer <key>` (env AGENTKEEP_EMBEDDINGS_KEY only; never in params or messages). */
  key?: string;
}

/** Bounds of one lint's use of the endpoint. */
export interface EmbeddingsLimits {
  /** Texts per request (default 64). */
  batch: number;
  /** Entries embedded per lint at most (default 2,000); the others are left out with a lint note. */
  maxEntries: number;
  /** Time for one request, ms (default 15,000). */
  timeoutMs: number;
  /** Time for all requests of one lint, ms (default 60,000). */
  deadlineMs: number;
  /** Characters of an entry sent (default 8,000; longer entries are cut, which changes only their vector). */
  maxChars: number;
}

/** The bounds used unless a caller (a test) passes others: see EmbeddingsLimits for each field and unit. */
export const DEFAULT_EMBEDDINGS_LIMITS: EmbeddingsLimits = {
  batch: 64,
  maxEntries: 2000,
  timeoutMs: 15_000,
  deadlineMs: 60_000,
  maxChars: 8000,
};

/**
 * Whether a URL's host is this machine: `localhost`, 127.0.0.0/8, ::1 (the WHATWG URL parser has
 * already made 0x7f.1 and the like dotted decimal). Not `*.localhost`: Node resolves those through
 * DNS (dns.lookup('evil.localhost') asks the resolver), so they may be another machine.
 */
function isLoopback(u: URL): boolean {
  const h = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || /^127(\.\d{1,3}){3}$/.test(h) || h === '::1';
}

/** The "any address" hosts (a server's listen address, e.g. OLLAMA_HOST=0.0.0.0), not a place to connect to. */
function isAnyAddress(u: URL): boolean {
  const h = u.hostname.replace(/^\[|\]$/g, '');
  return h === '0.0.0.0' || h === '::';
}

/**
 * Check an embeddings base URL: it parses, is https (or http to this machine: the texts of the
 * entries are sent there), and carries no user or password (the key goes in AGENTKEEP_EMBEDDINGS_KEY).
 * @returns the URL of the request, `<url>/embeddings`
 * @throws AgentKeepError InvalidParams naming the URL and the fix
 */
export function embeddingsRequestUrl(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new AgentKeepError(
      'InvalidParams',
      `Embeddings URL "${url}" does not parse.`,
      'Give the base URL of an OpenAI-compatible API, e.g. --embeddings-url http://127.0.0.1:11434/v1 (Ollama).',
    );
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new AgentKeepError(
      'InvalidParams',
      `Embeddings URL "${url}" is not http(s).`,
      'Give the base URL of an OpenAI-compatible API, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1.',
    );
  if (u.username || u.password)
    throw new AgentKeepError(
      'InvalidParams',
      `Embeddings URL "${u.protocol}//…@${u.host}${u.pathname}" carries a user or password.`,
      'Leave them out of the URL and put the API key in AGENTKEEP_EMBEDDINGS_KEY (sent as a Bearer token).',
    );
  if (u.protocol === 'http:' && isAnyAddress(u))
    throw new AgentKeepError(
      'InvalidParams',
      `Embeddings URL ${url} names ${u.hostname}, the address a server listens on (all interfaces; e.g. OLLAMA_HOST=0.0.0.0), not one to connect to.`,
      `Give this machine's loopback address: http://127.0.0.1${u.port ? `:${u.port}` : ''}${u.pathname}.`,
    );
  if (u.protocol === 'http:' && !isLoopback(u))
    throw new AgentKeepError(
      'InvalidParams',
      `Embeddings URL ${url} is plain http to another machine (${u.hostname}): the texts of the memory entries would cross the network unencrypted.`,
      `Use https, or an endpoint on this machine: e.g. forward the server here (ssh -L 11434:127.0.0.1:11434 ${u.hostname}) and give http://127.0.0.1:11434${u.pathname}.`,
    );
  const base = u.pathname.replace(/\/+$/, '');
  if (!/\/embeddings$/.test(base)) u.pathname = `${base}/embeddings`;
  u.hash = '';
  return u;
}

/**
 * The endpoint configured for this lint: `p` (memory.lint `embeddings`, the CLI flags) wins over env
 * AGENTKEEP_EMBEDDINGS_URL / AGENTKEEP_EMBEDDINGS_MODEL; the key comes from AGENTKEEP_EMBEDDINGS_KEY.
 * @returns undefined when no URL is configured (the default: off)
 * @throws AgentKeepError InvalidParams for a URL without a model, a model without a URL (given in
 *   params), or a URL embeddingsRequestUrl refuses
 */
export function configuredEndpoint(
  p: { url?: string; model?: string } | undefined,
  env: NodeJS.ProcessEnv = process.env,
): EmbeddingsEndpoint | undefined {
  const url = p?.url || env.AGENTKEEP_EMBEDDINGS_URL || undefined;
  const model = p?.model || env.AGENTKEEP_EMBEDDINGS_MODEL || undefined;
  if (!url) {
    if (p?.model)
      throw new AgentKeepError(
        'InvalidParams',
        `An embeddings model ("${p.model}") was given without an embeddings URL.`,
        'Give both: --embeddings-url http://127.0.0.1:11434/v1 --embeddings-model nomic-embed-text (or AGENTKEEP_EMBEDDINGS_URL and AGENTKEEP_EMBEDDINGS_MODEL).',
      );
    return undefined;
  }
  embeddingsRequestUrl(url);
  if (!model)
    throw new AgentKeepError(
      'InvalidParams',
      `The embeddings URL ${url} was given without a model.`,
      'Name the model the server serves: --embeddings-model nomic-embed-text (or AGENTKEEP_EMBEDDINGS_MODEL).',
    );
  const key = env.AGENTKEEP_EMBEDDINGS_KEY || undefined;
  return { url, model, ...(key ? { key } : {}) };
}

/** Why a request failed, in words (the server's answer or the network's). */
function reasonOf(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer within ${timeoutMs / 1000} s`;
  const code = e?.cause?.code;
  if (code === 'ECONNREFUSED') return 'the connection was refused (no server listens there)';
  if (code === 'ENOTFOUND') return 'the host name does not resolve';
  if (code && /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|UNABLE_TO_GET_ISSUER/.test(code))
    return (
      `its TLS certificate is not trusted (${code}: ${(e?.cause?.message ?? '').replace(/[.\s]+$/, '')}); for a ` +
      'certificate of your own CA or a self-signed one, give its PEM file in NODE_EXTRA_CA_CERTS=/path/to/ca.pem ' +
      '(the environment of the process that lints: this CLI, or the sidecar)'
    );
  if ((e?.cause?.message ?? e?.message) === 'bad port')
    return 'its port is one that fetch never connects to (the WHATWG list of blocked ports); serve the API on another port';
  return (e?.cause?.message ?? e?.message ?? String(err)).replace(/[.\s]+$/, '');
}

/**
 * Bytes an answer for `n` texts may have: n vectors of up to MAX_DIM floats, each at most 32
 * characters as JSON ("-0.012345678901234567," and the like), plus 1 MiB for the rest; at least 4 MiB.
 * For the default batch of 64 that is 1 MiB + 64 × 8192 × 32 B = 17 MiB.
 */
export function maxAnswerBytes(n: number): number {
  return Math.max(4 << 20, (1 << 20) + n * MAX_DIM * 32);
}

/** The largest dimension an embedding answer is read for (OpenAI text-embedding-3-large: 3072; some models 4096). */
const MAX_DIM = 8192;

/** An answer over maxAnswerBytes (its message says so). */
class AnswerTooBig extends Error {}

/**
 * The body of `res` as UTF-8 text, read as it streams, stopping (and cancelling the rest) once it is
 * over `max` bytes. @throws AnswerTooBig; what the stream throws (a timeout, a reset)
 */
async function readCapped(res: Response, max: number): Promise<string> {
  const declared = Number(res.headers.get('content-length'));
  const tooBig = (): AnswerTooBig =>
    new AnswerTooBig(
      `the answer is over ${formatBytes(max)}, more than this batch's vectors (up to ${MAX_DIM} dimensions) take as JSON, ` +
        'so it was not read: not an embeddings answer',
    );
  if (Number.isFinite(declared) && declared > max) {
    await res.body?.cancel().catch(() => undefined);
    throw tooBig();
  }
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      throw tooBig();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Ask the endpoint for the vectors of `texts` (one request).
 * @returns one Float32Array per text, in order
 * @throws Error whose message says what was wrong: an HTTP status (with the start of the body), a
 *   redirect (not followed: its Location is named), an answer over maxAnswerBytes, no answer in time, an answer that is not `{data: [{embedding: number[], index}]}` with one vector
 *   per text, vectors of differing dimension (or not `dim` when given)
 */
export async function requestEmbeddings(
  ep: EmbeddingsEndpoint,
  texts: string[],
  opts: { timeoutMs: number; signal?: AbortSignal; dim?: number; fetch?: typeof fetch },
): Promise<Float32Array[]> {
  const doFetch = opts.fetch ?? fetch;
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
  let res: Response;
  let body: string;
  try {
    res = await doFetch(embeddingsRequestUrl(ep.url), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...(ep.key ? { authorization: `Bearer ${ep.key}` } : {}),
      },
      body: JSON.stringify({ model: ep.model, input: texts }),
      redirect: 'manual', // never follow a redirect to another host (or to plain http): said below
      signal,
    });
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel().catch(() => undefined);
      const to = res.headers.get('location');
      throw new Error(
        `HTTP ${res.status}: the endpoint redirects${to ? ` to ${to}` : ''}, and redirects are not followed ` +
          '(the texts would go where the redirect says); give the URL it redirects to, if that is the API',
      );
    }
    body = await readCapped(res, maxAnswerBytes(texts.length));
  } catch (err) {
    if (err instanceof AnswerTooBig) throw err;
    throw new Error(reasonOf(err, opts.timeoutMs));
  }
  if (!res.ok) {
    const snippet = body.replace(/\s+/g, ' ').trim().slice(0, 200);
    throw new Error(`HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}${snippet ? `: ${snippet}` : ''}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new Error('the answer is not JSON');
  }
  const data = (json as { data?: unknown })?.data;
  if (!Array.isArray(data))
    throw new Error('the answer has no "data" list (expected the OpenAI shape {data: [{embedding, index}]})');
  if (data.length !== texts.length)
    throw new Error(`the answer holds ${data.length} vectors for ${texts.length} texts`);
  const out: Array<Float32Array | undefined> = new Array<Float32Array | undefined>(texts.length);
  let dim = opts.dim;
  for (let i = 0; i < data.length; i++) {
    const item = data[i] as { embedding?: unknown; index?: unknown } | undefined;
    const at = typeof item?.index === 'number' ? item.index : i;
    const v = item?.embedding;
    if (!Number.isInteger(at) || at < 0 || at >= texts.length || out[at])
      throw new Error(`the answer's vector indexes are not 0..${texts.length - 1} (index ${String(item?.index)})`);
    if (!Array.isArray(v) || !v.length || !v.every((x) => typeof x === 'number' && Number.isFinite(x)))
      throw new Error(
        typeof v === 'string'
          ? 'the answer holds base64 vectors, not lists of numbers (encoding_format "float" is needed)'
          : `vector ${at} of the answer is not a list of numbers`,
      );
    if (dim === undefined) dim = v.length;
    else if (v.length !== dim)
      throw new Error(`the answer's vectors have different dimensions (${dim} and ${v.length}): not one model's`);
    out[at] = Float32Array.from(v as number[]);
  }
  return out as Float32Array[];
}

/**
 * Fill LintEntry.embedding from the endpoint for the entries of `stores` that have none (the
 * stores' own vectors stay), in store and file order, at most `limits.maxEntries`.
 * @returns lint findings (kind `store`): an info note when entries were left out by the limit, a
 *   warning when the endpoint failed (then no entry gets an endpoint vector: the lint compares them
 *   without); empty when all went well or nothing needed a vector
 */
export async function embedFromEndpoint(
  ep: EmbeddingsEndpoint,
  stores: LintStore[],
  limits: Partial<EmbeddingsLimits> = {},
  doFetch?: typeof fetch,
): Promise<LintFinding[]> {
  const lim = { ...DEFAULT_EMBEDDINGS_LIMITS, ...limits };
  const todo: Array<{ entry: LintEntry; store: string }> = [];
  for (const s of stores)
    for (const f of s.files) for (const e of f.entries) if (!e.embedding) todo.push({ entry: e, store: s.store });
  if (!todo.length) return [];
  const findings: LintFinding[] = [];
  const asked = todo.slice(0, lim.maxEntries);
  const shown = embeddingsRequestUrl(ep.url).toString();
  const storesOf = (xs: typeof todo): string[] => [...new Set(xs.map((x) => x.store))];
  if (todo.length > asked.length) {
    const left = todo.length - asked.length;
    findings.push({
      kind: 'store',
      severity: 'info',
      entries: [],
      stores: storesOf(todo.slice(asked.length)),
      message:
        `Lint note: the embeddings endpoint ${shown} was asked for the first ${asked.length} of ${todo.length} ` +
        `entries without a vector of their store's own; the other ${left} were compared by their words only ` +
        `(the limit keeps one lint bounded).`,
      evidence: [`model ${ep.model}; at most ${lim.maxEntries} entries per lint, ${lim.batch} per request`],
    });
  }
  const deadline = AbortSignal.timeout(lim.deadlineMs);
  // one request per distinct text (the same entry in SOUL.md and MEMORY.md is asked once)
  const unique = [...new Set(asked.map((x) => x.entry.text.slice(0, lim.maxChars)))];
  const vectors: Float32Array[] = [];
  try {
    let dim: number | undefined;
    for (let i = 0; i < unique.length; i += lim.batch) {
      if (deadline.aborted) throw new Error(`the lint's ${lim.deadlineMs / 1000} s for the endpoint ran out`);
      const texts = unique.slice(i, i + lim.batch);
      const got = await requestEmbeddings(ep, texts, {
        timeoutMs: lim.timeoutMs,
        signal: deadline,
        ...(dim !== undefined ? { dim } : {}),
        ...(doFetch ? { fetch: doFetch } : {}),
      });
      dim = got[0]?.length;
      vectors.push(...got);
    }
  } catch (err) {
    findings.push({
      kind: 'store',
      severity: 'warning',
      entries: [],
      stores: storesOf(asked),
      message:
        `The embeddings endpoint ${shown} failed: ${deadline.aborted ? `the lint's ${lim.deadlineMs / 1000} s for the endpoint ran out` : (err as Error).message}. The ${asked.length} ` +
        `entries without a vector of their store's own were compared by their words only.`,
      evidence: [`POST ${shown} {model: "${ep.model}", input: [${unique.length} texts]}`],
      suggestion:
        `Check that the server runs and serves model "${ep.model}" (Ollama: \`ollama serve\`, \`ollama pull ${ep.model}\`; ` +
        'its OpenAI-compatible API is http://127.0.0.1:11434/v1), and AGENTKEEP_EMBEDDINGS_KEY if it needs a key; ' +
        'or lint without it (leave out --embeddings-url, unset AGENTKEEP_EMBEDDINGS_URL).',
    });
    return findings;
  }
  const byText = new Map(unique.map((t, i) => [t, vectors[i]]));
  for (const x of asked)
    x.entry.embedding = { model: ep.model, vector: byText.get(x.entry.text.slice(0, lim.maxChars))! };
  return findings;
}
