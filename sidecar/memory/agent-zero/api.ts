/**
 * Client for Agent Zero's memory dashboard API, the only way AgentKeep changes Agent Zero memory
 * (never by writing index.pkl). Source: agent0ai/agent-zero @ 2d95cd9f:
 * - `POST /api/plugins/_memory/memory_dashboard` (plugins/_memory/api/memory_dashboard.py), JSON body
 *   `{action, ...}`: `delete {memory_subdir, memory_id}`, `update {memory_subdir, original, edited:
 *   {content_full, metadata}}` (delete + re-add under metadata.id, re-embeds). Older versions serve the
 *   same handler at `POST /memory_dashboard` (python/api/memory_dashboard.py); used on a 404.
 * - CSRF (helpers/api.py `csrf_protect`): `GET /api/csrf_token` (older `/csrf_token`) with an
 *   `Origin` header returns `{ok, token, runtime_id}` and sets the Flask `session` cookie; later
 *   requests send the cookie and `X-CSRF-Token: <token>`.
 * - Auth (helpers/api.py `requires_auth`): only when AUTH_LOGIN is set in Agent Zero's .env;
 *   `POST /login` (form username, password) sets `session["authentication"]`; an unauthenticated API
 *   call is redirected (302) to /login.
 * Uses Node's built-in fetch (undici).
 */
import { AgentKeepError } from '../../core/errors';
import { parseApiUrl } from '../http';

/** Credentials for an Agent Zero instance with login enabled (its AUTH_LOGIN / AUTH_PASSWORD). */
export interface A0Credentials {
  user: string;
  password: string;
}

/** A dashboard-formatted memory (memory_dashboard.py `_format_memory_for_dashboard`). */
export interface A0DashboardMemory {
  id: string;
  area: string;
  timestamp: string;
  content_full: string;
  knowledge_source: boolean;
  source_file: string;
  file_type: string;
  consolidation_action: string;
  tags: unknown[];
  metadata: Record<string, unknown>;
}

/** Per-request timeout in ms. */
const TIMEOUT_MS = 30_000;

/** One authenticated session against one Agent Zero base URL. */
export class AgentZeroApi {
  private cookies = new Map<string, string>();
  private csrf?: string;
  private legacy = false;
  private readonly origin: string;

  /**
   * @param baseUrl e.g. http://127.0.0.1:50001 (the Agent Zero web UI)
   * @param creds login, when Agent Zero has AUTH_LOGIN set
   * @throws AgentKeepError BadStore for a URL that does not parse or is not http(s)
   */
  constructor(
    readonly baseUrl: string,
    private readonly creds?: A0Credentials,
  ) {
    const u = parseApiUrl(baseUrl, 'Agent Zero URL', {
      unparsable:
        'Give the web UI address, e.g. agent-zero:/abs/root?url=http://127.0.0.1:50001 or AGENTKEEP_A0_URL=http://127.0.0.1:50001.',
      scheme: 'Give the web UI address, e.g. http://127.0.0.1:50001.',
    });
    this.origin = u.origin;
  }

  private url(p: string): string {
    return this.origin + p;
  }

  private cookieHeader(): string {
    return [...this.cookies.entries()].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private async request(
    p: string,
    init: { method: string; body?: string; contentType?: string; csrf?: boolean },
  ): Promise<Response> {
    const headers: Record<string, string> = { Origin: this.origin, Accept: 'application/json' };
    if (init.contentType) headers['Content-Type'] = init.contentType;
    if (this.cookies.size) headers.Cookie = this.cookieHeader();
    if (init.csrf && this.csrf) headers['X-CSRF-Token'] = this.csrf;
    let res: Response;
    try {
      res = await fetch(this.url(p), {
        method: init.method,
        headers,
        body: init.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new AgentKeepError(
        'Internal',
        `Cannot reach Agent Zero at ${this.origin}: ${cause?.code ?? cause?.message ?? (e as Error).message}.`,
        'Start Agent Zero (its web UI must be running) or fix the URL (store option ?url= or AGENTKEEP_A0_URL). Nothing was changed.',
      );
    }
    for (const c of res.headers.getSetCookie()) {
      const m = /^([^=;\s]+)=([^;]*)/.exec(c);
      if (m) this.cookies.set(m[1], m[2]);
    }
    return res;
  }

  private authError(what: string): AgentKeepError {
    return new AgentKeepError(
      'AuthFailed',
      `Agent Zero at ${this.origin} refused ${what}: login required or wrong credentials.`,
      this.creds
        ? "Check AGENTKEEP_A0_USER / AGENTKEEP_A0_PASSWORD against AUTH_LOGIN / AUTH_PASSWORD in Agent Zero's .env. Nothing was changed."
        : 'This Agent Zero has login enabled: set AGENTKEEP_A0_USER and AGENTKEEP_A0_PASSWORD (its AUTH_LOGIN / AUTH_PASSWORD). Nothing was changed.',
    );
  }

  /** Log in (when credentials are given) and fetch a CSRF token. @throws AuthFailed, Internal */
  async connect(): Promise<void> {
    if (this.creds) {
      const body = new URLSearchParams({ username: this.creds.user, password: this.creds.password }).toString();
      const res = await this.request('/login', {
        method: 'POST',
        body,
        contentType: 'application/x-www-form-urlencoded',
      });
      await res.arrayBuffer();
      // success redirects to the index; a failed login re-renders the form (200)
      if (res.status < 300 || res.status >= 400) throw this.authError('the login');
    }
    let res = await this.request('/api/csrf_token', { method: 'GET' });
    if (res.status === 404) {
      await res.arrayBuffer();
      this.legacy = true;
      res = await this.request('/csrf_token', { method: 'GET' });
    }
    if (res.status >= 300 && res.status < 400) throw this.authError('the CSRF token request');
    const j = (await res.json().catch(() => undefined)) as { ok?: boolean; token?: string; error?: string } | undefined;
    if (!res.ok || !j?.ok || typeof j.token !== 'string') {
      throw new AgentKeepError(
        'AuthFailed',
        `Agent Zero at ${this.origin} gave no CSRF token (HTTP ${res.status}${j?.error ? `: ${j.error}` : ''}).`,
        "Add this origin to ALLOWED_ORIGINS in Agent Zero's .env, or enable its login and set AGENTKEEP_A0_USER / AGENTKEEP_A0_PASSWORD. Nothing was changed.",
      );
    }
    this.csrf = j.token;
  }

  /**
   * Call a memory_dashboard action.
   * @returns the JSON answer when `success` is true
   * @throws AuthFailed (redirect to login, 401/403), EntryNotFound (Agent Zero says the id is not
   *   found), Internal (any other refusal, with Agent Zero's error text)
   */
  async dashboard(action: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (!this.csrf) await this.connect();
    const payload = JSON.stringify({ action, ...body });
    const p = this.legacy ? '/memory_dashboard' : '/api/plugins/_memory/memory_dashboard';
    let res = await this.request(p, { method: 'POST', body: payload, contentType: 'application/json', csrf: true });
    if (res.status === 404 && !this.legacy) {
      await res.arrayBuffer();
      this.legacy = true;
      res = await this.request('/memory_dashboard', {
        method: 'POST',
        body: payload,
        contentType: 'application/json',
        csrf: true,
      });
    }
    if ((res.status >= 300 && res.status < 400) || res.status === 401 || res.status === 403) {
      const t = await res.text().catch(() => '');
      throw this.authError(`memory_dashboard ${action}${t ? ` (${t.slice(0, 200)})` : ''}`);
    }
    const text = await res.text();
    let j: Record<string, unknown> | undefined;
    try {
      j = JSON.parse(text) as Record<string, unknown>;
    } catch {
      /* not JSON */
    }
    if (!res.ok || !j) {
      throw new AgentKeepError(
        'Internal',
        `Agent Zero memory_dashboard ${action} failed (HTTP ${res.status}): ${text.slice(0, 300)}`,
        'Check the Agent Zero log; the memory was not changed by AgentKeep.',
      );
    }
    if (j.success !== true) {
      const err = String(j.error ?? 'no error text');
      if (/not found/i.test(err))
        throw new AgentKeepError(
          'EntryNotFound',
          `Agent Zero: ${err}.`,
          'List the store again; the agent may have deleted or consolidated it.',
        );
      throw new AgentKeepError(
        'Internal',
        `Agent Zero memory_dashboard ${action} refused: ${err}.`,
        'Check the Agent Zero log; nothing was changed by AgentKeep.',
      );
    }
    return j;
  }
}
