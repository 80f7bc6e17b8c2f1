/**
 * Client for mem0's own REST server, the only way AgentKeep changes mem0 memory (never by writing
 * history.db or the vector store: mem0 re-embeds the text and writes history.db itself). Source:
 * mem0ai/mem0 server/main.py (FastAPI; @ d85fcda0 and later, endpoints unchanged) and server/auth.py
 * (@ 05ad7701):
 * - `GET /memories/{id}` -> Memory.get: `{id, memory, hash, metadata, created_at, updated_at, user_id?,
 *   agent_id?, run_id?}`, or `null` for an unknown id (newer servers: 404 "not found");
 * - `PUT /memories/{id}` body `{text, metadata?, expiration_date?}` (MemoryUpdate) -> Memory.update
 *   (older servers pass the whole body to Memory.update as `data`; AgentKeep re-reads and checks);
 * - `DELETE /memories/{id}` -> `{"message": "Memory deleted successfully"}`;
 * - `POST /memories` body `{messages: [{role, content}], user_id|agent_id|run_id (one required),
 *   metadata?, infer?}` -> `{results: [{id, memory, event: "ADD"|...}]}`; `infer: false` stores the
 *   text as given instead of letting the LLM extract facts; 202 `{queued: true, pending_id}` when the
 *   embedder failed and the write waits in the server's queue;
 * - auth (newer servers): `X-API-Key: <key>` (a per-user key or ADMIN_API_KEY) or a Bearer JWT; 401
 *   "Authentication required" without one; AUTH_DISABLED=true servers need none.
 * Uses Node's built-in fetch.
 */
import { AgentKeepError } from '../../core/errors';
import { parseApiUrl } from '../http';

/** A memory as mem0's REST server returns it (Memory.get / _serialize_memory). */
export interface Mem0ApiMemory {
  id: string;
  memory: string;
  hash?: string;
  metadata?: Record<string, unknown> | null;
  created_at?: string | null;
  updated_at?: string | null;
  user_id?: string | null;
  agent_id?: string | null;
  run_id?: string | null;
}

/** Who a memory belongs to in mem0 (POST /memories needs at least one). */
export interface Mem0Scope {
  user_id?: string;
  agent_id?: string;
  run_id?: string;
}

/** Per-request timeout in ms. */
const TIMEOUT_MS = 30_000;

/** The hint for every refusal: where the URL and key come from. */
const WHERE =
  'The URL is the store option ?api=http://HOST:PORT or AGENTKEEP_MEM0_URL; the key AGENTKEEP_MEM0_API_KEY (sent as X-API-Key).';

/** One mem0 REST server. */
export class Mem0Api {
  private readonly origin: string;

  /**
   * @param baseUrl e.g. http://127.0.0.1:8888 (mem0's REST server; a path prefix is kept)
   * @param apiKey sent as X-API-Key (mem0 server/auth.py), when the server has auth on
   * @throws AgentKeepError BadStore for a URL that does not parse or is not http(s)
   */
  constructor(
    readonly baseUrl: string,
    private readonly apiKey?: string,
  ) {
    const u = parseApiUrl(baseUrl, 'mem0 API URL', {
      unparsable: "Give mem0's REST server address, e.g. mem0:/home/me/.mem0?api=http://127.0.0.1:8888.",
      scheme: "Give mem0's REST server address, e.g. http://127.0.0.1:8888.",
    });
    this.origin = `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
  }

  private async request(method: string, p: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (this.apiKey) headers['X-API-Key'] = this.apiKey;
    let res: Response;
    try {
      res = await fetch(this.origin + p, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: 'manual',
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new AgentKeepError(
        'Internal',
        `Cannot reach mem0 at ${this.origin}: ${cause?.code ?? cause?.message ?? (e as Error).message}.`,
        `Start mem0's REST server (mem0ai/mem0 server/) or fix the URL. ${WHERE} Nothing was changed.`,
      );
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (res.status === 401 || res.status === 403) {
      throw new AgentKeepError(
        'AuthFailed',
        `mem0 at ${this.origin} refused ${method} ${p} (HTTP ${res.status}${detailOf(json) ? `: ${detailOf(json)}` : ''}).`,
        this.apiKey
          ? `Check AGENTKEEP_MEM0_API_KEY: an API key of that server (dashboard API keys) or its ADMIN_API_KEY. Nothing was changed.`
          : `This mem0 server needs a key: set AGENTKEEP_MEM0_API_KEY to an API key of it (or its ADMIN_API_KEY). Nothing was changed.`,
      );
    }
    return { status: res.status, json };
  }

  private refused(what: string, status: number, json: unknown): AgentKeepError {
    return new AgentKeepError(
      'Internal',
      `mem0 at ${this.origin} refused ${what} (HTTP ${status}${detailOf(json) ? `: ${detailOf(json)}` : ''}).`,
      `Check the mem0 server log. ${WHERE}`,
    );
  }

  /**
   * The memory `id` as the server has it now, or undefined when it has none (null or 404).
   * @throws AuthFailed, Internal (unreachable, other refusals)
   */
  async get(id: string): Promise<Mem0ApiMemory | undefined> {
    const { status, json } = await this.request('GET', `/memories/${encodeURIComponent(id)}`);
    if (status === 404 || (status < 300 && (json === null || json === undefined))) return undefined;
    if (status >= 300 || !isMemory(json)) throw this.refused(`GET /memories/${id}`, status, json);
    return json;
  }

  /** PUT /memories/{id} {text}. @throws as get */
  async update(id: string, text: string): Promise<void> {
    const { status, json } = await this.request('PUT', `/memories/${encodeURIComponent(id)}`, { text });
    if (status === 404) throw notFound(id);
    if (status >= 300) throw this.refused(`PUT /memories/${id}`, status, json);
  }

  /** DELETE /memories/{id}. @throws as get */
  async delete(id: string): Promise<void> {
    const { status, json } = await this.request('DELETE', `/memories/${encodeURIComponent(id)}`);
    if (status === 404) throw notFound(id);
    if (status >= 300) throw this.refused(`DELETE /memories/${id}`, status, json);
  }

  /**
   * POST /memories with the text as one user message and `infer: false` (stored as given).
   * @returns the results mem0 reports ({id, memory, event})
   * @throws Conflict when the server queued the write (HTTP 202: not stored yet), as get otherwise
   */
  async add(
    text: string,
    scope: Mem0Scope,
    metadata?: Record<string, unknown>,
  ): Promise<Array<{ id: string; memory?: string; event?: string }>> {
    const body = {
      messages: [{ role: 'user', content: text }],
      ...scope,
      infer: false,
      ...(metadata ? { metadata } : {}),
    };
    const { status, json } = await this.request('POST', '/memories', body);
    const o = json && typeof json === 'object' ? (json as Record<string, unknown>) : {};
    if (status === 202 || o.queued === true)
      throw new AgentKeepError(
        'Conflict',
        `mem0 at ${this.origin} queued the memory instead of storing it (its embedder failed: ${String(o.reason ?? o.code ?? 'no reason given')}; pending id ${String(o.pending_id ?? '?')}): it is not in memory yet.`,
        'See GET /memories/pending on that server; mem0 stores it when its embedder works again. Do not add it twice.',
      );
    if (status >= 300) throw this.refused('POST /memories', status, json);
    const results = Array.isArray(o.results) ? o.results : Array.isArray(json) ? (json as unknown[]) : [];
    return results
      .filter(
        (r): r is Record<string, unknown> =>
          !!r && typeof r === 'object' && typeof (r as { id?: unknown }).id === 'string',
      )
      .map((r) => ({
        id: r.id as string,
        ...(typeof r.memory === 'string' ? { memory: r.memory } : {}),
        ...(typeof r.event === 'string' ? { event: r.event } : {}),
      }));
  }
}

function detailOf(json: unknown): string | undefined {
  if (!json || typeof json !== 'object') return undefined;
  const d = (json as Record<string, unknown>).detail;
  return typeof d === 'string' ? d.slice(0, 300) : d !== undefined ? JSON.stringify(d).slice(0, 300) : undefined;
}

function isMemory(v: unknown): v is Mem0ApiMemory {
  return !!v && typeof v === 'object' && typeof (v as Mem0ApiMemory).id === 'string';
}

function notFound(id: string): AgentKeepError {
  return new AgentKeepError(
    'EntryNotFound',
    `mem0 has no memory ${id} (any more).`,
    'List the store again; the agent or mem0 may have deleted it.',
  );
}
