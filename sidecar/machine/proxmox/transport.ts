/**
 * Our HTTPS transport for the Proxmox VE API, plugged into npm `proxmox-api` as its `ApiRequestable`
 * (the library's request hook: `proxmoxApi(transport)` builds the typed path proxy on top of it).
 *
 * Why our own and not the library's ProxmoxEngine:
 * - ProxmoxEngine retries every request once after a network error or timeout, POST and DELETE
 *   included, which can start a second snapshot, rollback or delete worker on the host. The retry is
 *   inside ProxmoxEngine.doRequest and cannot be switched off through its `fetch` option, so we replace
 *   the whole engine. Here a mutating call (POST/PUT/DELETE) is sent exactly once; a failure after the
 *   request was sent (connection dropped, timeout, HTTP 595-599) is reported as ambiguous
 *   (`PveError.ambiguous`), and the backend reconciles by listing snapshots and tasks. Only GETs are
 *   retried (once, after a network error).
 * - TLS: Proxmox ships a self-signed certificate. We verify it per connection, never for the process:
 *   a pinned SHA-256 fingerprint (colon-hex as the Proxmox UI shows it) is compared with the peer's
 *   certificate before any byte of the request (and so the token) is written, or a CA file is used
 *   as the only trust anchor. NODE_TLS_REJECT_UNAUTHORIZED is never touched.
 * - Errors carry the HTTP status, the reason phrase (Proxmox puts the error text there) and the
 *   `errors` map of a 400, instead of the library's message strings.
 * - Secrets (token secret, password, ticket, CSRF token) are redacted from every error message and log line.
 *
 * Wire format as pve-http-server: GET/DELETE parameters in the query string, POST/PUT as
 * application/x-www-form-urlencoded, booleans as 1/0; replies `{"data": ...}`.
 */
import * as https from 'node:https';
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import * as tls from 'node:tls';
import type { ApiRequestable } from 'proxmox-api' with { 'resolution-mode': 'import' };
import { AgentKeepError, type ErrorKind } from '../../core/errors';

/** Credentials: an API token (preferred) or a user + password for a ticket. */
export type PveAuth =
  | { kind: 'token'; /** USER@REALM!TOKENID */ tokenId: string; secret: string }
  | { kind: 'ticket'; /** USER@REALM */ username: string; password: string };

/** How to reach and trust one Proxmox VE API endpoint. */
export interface PveConnectionOptions {
  host: string;
  /** Default 8006. */
  port?: number;
  auth: PveAuth;
  /** SHA-256 fingerprint of the node certificate, colon-hex (`AB:CD:...`, case and separators free). */
  fingerprint?: string;
  /** PEM of the CA that signed the node certificate (e.g. /etc/pve/pve-root-ca.pem). */
  ca?: string | Buffer;
  /** Per-request timeout in ms (default 30000; pveproxy's own proxy hop times out at 30 s). */
  timeoutMs?: number;
  /** Receives one redacted line per request (`GET /api2/json/... -> 200 (3 ms)`). */
  log?: (line: string) => void;
}

/** An error from the Proxmox API or the way to it; an AgentKeepError with the wire details. */
export class PveError extends AgentKeepError {
  constructor(
    kind: ErrorKind,
    message: string,
    hint: string | undefined,
    /** HTTP status (0: no response). */
    readonly status: number,
    /** The reason phrase (Proxmox's error text), or the network error. */
    readonly reason: string,
    /**
     * True when a mutating request may have reached the server and been acted on (connection dropped
     * after sending, timeout, 595-599): the caller must find out what happened before trying again.
     */
    readonly ambiguous: boolean,
    /** Parameter errors of a 400 (`{snapname: "invalid format - ..."}`). */
    readonly errors?: Record<string, string>,
  ) {
    super(kind, message, hint);
  }
}

/** Normalise a fingerprint to upper-case colon-hex (`AB:CD:…`). @throws AgentKeepError AuthFailed when it is not 32 bytes of hex. */
export function normalizeFingerprint(fp: string): string {
  const hex = fp
    .replace(/^sha256[:=]?/i, '')
    .replace(/[\s:-]/g, '')
    .toUpperCase();
  if (!/^[0-9A-F]{64}$/.test(hex)) {
    throw new AgentKeepError(
      'AuthFailed',
      'The Proxmox certificate fingerprint is not a SHA-256 fingerprint (64 hex digits).',
      'Copy it from the Proxmox UI (Datacenter > node > System > Certificates > pve-ssl.pem > View Certificate, "Fingerprint"), e.g. AB:CD:...:EF, into AGENTKEEP_PVE_FINGERPRINT.',
    );
  }
  return hex.match(/../g)!.join(':');
}

const MUTATING = new Set(['POST', 'PUT', 'DELETE']);

/**
 * Encode parameters as pve-http-server expects: booleans as 1/0, arrays as repeated keys,
 * null/undefined dropped (the same rules as proxmox-api's engine).
 */
export function encodeParams(params: Record<string, unknown> | undefined): URLSearchParams {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params ?? {})) {
    if (v === null || v === undefined) continue;
    if (Array.isArray(v)) for (const e of v) q.append(k, String(e));
    else q.set(k, v === true ? '1' : v === false ? '0' : String(v));
  }
  return q;
}

/** The HTTPS transport; one per endpoint (keeps TLS connections alive between calls). */
export class PveTransport implements ApiRequestable {
  private readonly port: number;
  private readonly pin?: string;
  /** GETs: kept-alive connections. */
  private readonly agent: https.Agent;
  /**
   * POST/PUT/DELETE: a fresh connection each, so a mutation never goes out on a kept-alive socket the
   * server is closing at that moment (that race looks like "dropped after sending" and would need reconciling).
   */
  private readonly freshAgent: https.Agent;
  private ticket?: { ticket: string; csrf: string };
  private readonly secrets: string[] = [];
  /** Requests sent (for the benchmark). */
  requests = 0;

  constructor(private readonly opts: PveConnectionOptions) {
    this.port = opts.port ?? 8006;
    this.pin = opts.fingerprint ? normalizeFingerprint(opts.fingerprint) : undefined;
    if (opts.auth.kind === 'token') this.secrets.push(opts.auth.secret);
    else this.secrets.push(opts.auth.password);
    const connect = this.connect.bind(this);
    // Agents whose connections are verified (pin or CA) before http writes the request on them.
    // (http's Agent#createSocket accepts the socket through the callback when createConnection returns undefined.)
    class VerifiedAgent extends https.Agent {
      override createConnection(o: https.RequestOptions, cb?: (err: Error | null, s: Duplex) => void): undefined {
        connect(o as tls.ConnectionOptions, (err, s) => cb?.(err, s as Duplex));
        return undefined;
      }
    }
    this.agent = new VerifiedAgent({ keepAlive: true, maxSockets: 4, timeout: 15_000 }); // idle kept-alive sockets close after 15 s
    this.freshAgent = new VerifiedAgent({ keepAlive: false });
  }

  /** Close idle connections. */
  close(): void {
    this.agent.destroy();
    this.freshAgent.destroy();
  }

  /** `text` with every secret replaced by `***`. */
  redact(text: string): string {
    let s = text;
    for (const x of [...this.secrets, this.ticket?.ticket, this.ticket?.csrf])
      if (x && x.length >= 4) s = s.split(x).join('***');
    return s.replace(/(PVEAPIToken=[^=\s]+=)\S+/g, '$1***').replace(/(PVEAuthCookie=)[^;\s]+/g, '$1***');
  }

  private connect(o: tls.ConnectionOptions, cb: (err: Error | null, s?: tls.TLSSocket) => void): void {
    const where = `${this.opts.host}:${this.port}`;
    const pinned = this.pin;
    const sock = tls.connect({
      host: this.opts.host,
      port: this.port,
      servername: net.isIP(this.opts.host) ? undefined : this.opts.host,
      ALPNProtocols: ['http/1.1'],
      ...(this.opts.ca ? { ca: this.opts.ca } : {}),
      // A pin replaces chain verification for this one connection (the fingerprint is checked below,
      // before the socket is handed to http); with a CA or neither, the chain is verified as usual.
      rejectUnauthorized: !pinned,
      timeout: o.timeout,
    });
    let settled = false;
    const done = (err: Error | null): void => {
      if (settled) return;
      settled = true;
      sock.removeListener('error', onError);
      if (err) {
        sock.destroy();
        cb(err);
      } else cb(null, sock);
    };
    const onError = (e: Error): void => {
      const err = this.tlsError(e, where);
      if (!(err instanceof PveError) || settled) return done(err);
      // Show the fingerprint the server presented (a second connection that only reads the certificate).
      void this.peerFingerprint().then((fp) =>
        done(
          fp
            ? new PveError(
                err.kind,
                err.message,
                err.hint?.replace(
                  '(node > System > Certificates)',
                  `(node > System > Certificates); the server presented ${fp}, compare before pinning it`,
                ),
                0,
                err.reason,
                false,
              )
            : err,
        ),
      );
    };
    sock.once('error', onError);
    sock.once('secureConnect', () => {
      if (!pinned) return done(null);
      const cert = sock.getPeerCertificate();
      const got = cert?.fingerprint256?.toUpperCase();
      if (got !== pinned) {
        return done(
          new PveError(
            'AuthFailed',
            `TLS: the certificate of ${where} has SHA-256 fingerprint ${got ?? '(none)'}, not the pinned ${pinned}; nothing was sent.`,
            'If the node certificate was renewed, check the new fingerprint in the Proxmox UI (node > System > Certificates) and update AGENTKEEP_PVE_FINGERPRINT; otherwise something is intercepting the connection.',
            0,
            'fingerprint mismatch',
            false,
          ),
        );
      }
      done(null);
    });
  }

  private tlsError(e: Error, where: string): Error {
    const code = (e as NodeJS.ErrnoException).code ?? '';
    if (/CERT|SELF_SIGNED|UNABLE_TO|ERR_TLS/.test(code)) {
      return new PveError(
        'AuthFailed',
        `TLS: the certificate of ${where} is not trusted (${code}: ${e.message}); nothing was sent.`,
        'Pin it: set AGENTKEEP_PVE_FINGERPRINT to the fingerprint shown in the Proxmox UI (node > System > Certificates), or set AGENTKEEP_PVE_CA to the CA file (/etc/pve/pve-root-ca.pem).',
        0,
        code,
        false,
      );
    }
    return e;
  }

  /** The SHA-256 fingerprint the server presents (a connection that only reads the certificate, sends nothing), or '' on failure. */
  private peerFingerprint(): Promise<string> {
    return new Promise((resolve) => {
      const s = tls.connect({
        host: this.opts.host,
        port: this.port,
        servername: net.isIP(this.opts.host) ? undefined : this.opts.host,
        rejectUnauthorized: false,
        timeout: 5000,
      });
      const end = (fp: string): void => {
        s.destroy();
        resolve(fp);
      };
      s.once('secureConnect', () => end(s.getPeerCertificate()?.fingerprint256 ?? ''));
      s.once('error', () => end(''));
      s.once('timeout', () => end(''));
    });
  }

  /**
   * ApiRequestable: one API call. `path` starts with /api2/json. Returns `data` of the reply.
   * @throws PveError (kinds: AuthFailed for 401/403 and TLS, GuestLocked for "... is locked (...)",
   *   TargetNotFound for a missing guest or node, Hypervisor for everything else)
   */
  async doRequest(
    method: string,
    path: string,
    _pathTemplate: string,
    params?: Record<string, unknown>,
  ): Promise<unknown> {
    method = method.toUpperCase();
    if (this.opts.auth.kind === 'ticket' && !this.ticket) await this.login();
    try {
      return await this.send(method, path, params);
    } catch (e) {
      // An expired ticket: the server refused before acting, so logging in again and resending is safe (once).
      if (e instanceof PveError && e.status === 401 && this.opts.auth.kind === 'ticket') {
        this.ticket = undefined;
        await this.login();
        return this.send(method, path, params);
      }
      throw e;
    }
  }

  /** POST /access/ticket with user + password; keeps ticket and CSRFPreventionToken. @throws PveError AuthFailed */
  async login(): Promise<void> {
    const a = this.opts.auth;
    if (a.kind !== 'ticket') return;
    try {
      const d = (await this.raw(
        'POST',
        '/api2/json/access/ticket',
        encodeParams({ username: a.username, password: a.password }),
        false,
        true,
      )) as { ticket: string; CSRFPreventionToken: string };
      this.ticket = { ticket: d.ticket, csrf: d.CSRFPreventionToken };
    } catch (e) {
      if (e instanceof PveError && e.status === 401) {
        throw new PveError(
          'AuthFailed',
          `Proxmox login as ${a.username} failed (${e.reason}).`,
          'Check AGENTKEEP_PVE_USER (USER@REALM, e.g. agentkeep@pve) and AGENTKEEP_PVE_PASSWORD, or use an API token (AGENTKEEP_PVE_TOKEN).',
          401,
          e.reason,
          false,
        );
      }
      throw e;
    }
  }

  private async send(method: string, path: string, params?: Record<string, unknown>): Promise<unknown> {
    const q = encodeParams(params);
    try {
      return await this.raw(method, path, q, MUTATING.has(method));
    } catch (e) {
      // GETs change nothing: one retry after a network error or a 595-599 from pveproxy's proxy hop.
      if (
        method === 'GET' &&
        e instanceof PveError &&
        e.kind === 'Hypervisor' &&
        (e.status === 0 || (e.status >= 595 && e.status <= 599))
      ) {
        return this.raw(method, path, q, false);
      }
      throw e;
    }
  }

  private raw(method: string, path: string, q: URLSearchParams, mutating: boolean, isLogin = false): Promise<unknown> {
    const body = method === 'POST' || method === 'PUT' ? q.toString() : undefined;
    const qs = body === undefined && [...q.keys()].length ? `?${q.toString()}` : '';
    const headers: Record<string, string> = { Accept: 'application/json' };
    const a = this.opts.auth;
    if (!isLogin) {
      if (a.kind === 'token') headers.Authorization = `PVEAPIToken=${a.tokenId}=${a.secret}`;
      else if (this.ticket) {
        headers.Cookie = `PVEAuthCookie=${encodeURIComponent(this.ticket.ticket)}`;
        if (method !== 'GET') headers.CSRFPreventionToken = this.ticket.csrf;
      }
    }
    if (body !== undefined) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    const shown = `${method} ${path}`;
    const started = Date.now();
    const timeoutMs = this.opts.timeoutMs ?? 30_000;
    this.requests++;
    return new Promise((resolve, reject) => {
      let sent = false;
      const fail = (err: PveError): void => {
        this.opts.log?.(this.redact(`${shown} -> ${err.status || 'error'} ${err.reason} (${Date.now() - started} ms)`));
        reject(err);
      };
      const req = https.request(
        {
          host: this.opts.host,
          port: this.port,
          method,
          path: path + qs,
          headers,
          agent: mutating || isLogin ? this.freshAgent : this.agent,
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', (e) => fail(this.netError(shown, e, sent && mutating)));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            const reason = this.redact(res.statusMessage ?? '');
            const text = Buffer.concat(chunks).toString('utf8');
            let json: { data?: unknown; errors?: Record<string, string>; message?: string } | undefined;
            if (text && /json/.test(res.headers['content-type'] ?? '')) {
              try {
                json = JSON.parse(text);
              } catch {
                json = undefined;
              }
            }
            if (status === 200) {
              this.opts.log?.(`${shown} -> 200 (${Date.now() - started} ms)`);
              resolve(json?.data ?? null);
              return;
            }
            fail(this.httpError(shown, status, reason, json?.errors, mutating));
          });
        },
      );
      req.on('finish', () => (sent = true));
      req.on('timeout', () =>
        req.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })),
      );
      req.on('error', (e) => fail(e instanceof PveError ? e : this.netError(shown, e, sent && mutating)));
      req.end(body);
    });
  }

  private netError(shown: string, e: Error, ambiguous: boolean): PveError {
    const code = (e as NodeJS.ErrnoException).code ?? '';
    const what = this.redact(`${code ? `${code}: ` : ''}${e.message}`);
    const where = `${this.opts.host}:${this.port}`;
    if (ambiguous) {
      return new PveError(
        'Hypervisor',
        `${shown} on ${where}: the connection failed after the request was sent (${what}); the host may have acted on it.`,
        'AgentKeep checks the snapshots and tasks on the host to find out what happened; it never resends.',
        0,
        what,
        true,
      );
    }
    return new PveError(
      'Hypervisor',
      `Cannot reach the Proxmox API at ${where} (${what}).`,
      `Check the host and port (default 8006) and that pveproxy runs (systemctl status pveproxy).`,
      0,
      what,
      false,
    );
  }

  private httpError(
    shown: string,
    status: number,
    reason: string,
    errors: Record<string, string> | undefined,
    mutating: boolean,
  ): PveError {
    const detail = errors
      ? ` ${Object.entries(errors)
          .map(([k, v]) => `${k}: ${String(v).trim()}`)
          .join('; ')}`
      : '';
    const msg = `${shown}: ${status} ${reason}${detail ? ` (${detail.trim()})` : ''}`;
    if (status === 401) {
      return new PveError(
        'AuthFailed',
        `Proxmox refused the credentials: ${msg}.`,
        this.opts.auth.kind === 'token'
          ? 'Check AGENTKEEP_PVE_TOKEN (USER@REALM!TOKENID=SECRET): the token may be deleted, expired or mistyped.'
          : 'Check AGENTKEEP_PVE_USER and AGENTKEEP_PVE_PASSWORD.',
        status,
        reason,
        false,
      );
    }
    if (status === 403) {
      return new PveError(
        'AuthFailed',
        `Proxmox denied the request: ${msg}.`,
        'Grant the token the privilege named above on /vms/VMID (see docs/proxmox.md: VM.Audit, VM.Snapshot, VM.Snapshot.Rollback, VM.PowerMgmt for start after rollback).',
        status,
        reason,
        false,
      );
    }
    if (status >= 595 && status <= 599) {
      return new PveError(
        'Hypervisor',
        `${msg}: pveproxy could not complete the request (node unreachable, slow or TLS between nodes).`,
        'Call the node that owns the guest directly (use its address as the target host), or retry later.',
        status,
        reason,
        mutating,
      );
    }
    if (/\bis locked\b/.test(reason)) return new PveError('GuestLocked', msg, undefined, status, reason, false, errors);
    if (/does not exist|no such (VM|CT|node)|hostname lookup/i.test(reason))
      return new PveError('TargetNotFound', msg, undefined, status, reason, false, errors);
    return new PveError(
      'Hypervisor',
      msg,
      status === 400
        ? 'This is a bug in AgentKeep or a Proxmox version it does not know; please report it with the message.'
        : undefined,
      status,
      reason,
      false,
      errors,
    );
  }
}
