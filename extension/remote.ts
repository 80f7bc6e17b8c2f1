/**
 * The editor's link to a remote sidecar (`agentkeep serve --ws` on another machine, or on this one
 * through an SSH tunnel), without VS Code: the URL rules, certificate pinning, the WebSocket
 * connection with the bearer token, keep-alive pings, reconnecting with backoff, and failing the
 * calls in flight when the connection drops. extension/sidecar.ts runs the LanguageClient over the
 * socket this hands out (the same client as for the local sidecar, only the transport differs).
 *
 * Rules (docs/remote.md):
 * - `ws://` only to a loopback address (127.0.0.0/8, ::1, localhost): a sidecar on this machine or
 *   the local end of an SSH tunnel (`ssh -N -L 7357:127.0.0.1:7357 host`). Anything else would send
 *   the token and the agent's memory in clear text.
 * - `wss://` to any host. With agentkeep.sidecar.fingerprint set, the certificate must have that
 *   SHA-256 fingerprint (a self-signed one works); the check runs after the TLS handshake and before
 *   the HTTP upgrade, so a mismatch sends nothing, not even the token. Without a fingerprint the
 *   certificate chain and host name are verified as usual.
 */
import * as https from 'node:https';
import * as net from 'node:net';
import * as tls from 'node:tls';
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';

/** An error of the remote link: a stable code, the message, and the hint that names the fix. */
export class RemoteError extends Error {
  constructor(
    /**
     * `bad_sidecar_url`, `no_sidecar_token`, `sidecar_tls`, `sidecar_unauthorized` (401), `sidecar_forbidden`
     * (403), `sidecar_unreachable`, `connection_lost`.
     */
    readonly code: string,
    message: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'RemoteError';
  }
  /** Whether trying again later can help (network trouble), as opposed to settings that must change. */
  get retryable(): boolean {
    return this.code === 'sidecar_unreachable' || this.code === 'connection_lost';
  }
}

/** Shortest token `agentkeep serve --ws` accepts (sidecar/server/ws.ts MIN_TOKEN_CHARS). */
export const MIN_REMOTE_TOKEN_CHARS = 16;

/** Setting names the messages point at. */
export const SETTING_URL = 'agentkeep.sidecar.url';
export const SETTING_FINGERPRINT = 'agentkeep.sidecar.fingerprint';
export const SET_TOKEN_COMMAND_TITLE = 'AgentKeep: Set Remote Sidecar Token';

/** Whether a URL host (brackets already removed) is loopback. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '::ffff:127.0.0.1';
}

/** A checked remote sidecar URL. */
export interface RemoteUrl {
  /** The URL as given (normalised by URL). */
  href: string;
  secure: boolean;
  /** Host name or address, IPv6 without brackets. */
  host: string;
  port: number;
}

/**
 * Check agentkeep.sidecar.url: `ws://LOOPBACK:PORT` or `wss://HOST:PORT` (no path, query or user info).
 * @throws RemoteError bad_url naming what is wrong and the allowed forms
 */
export function parseRemoteUrl(value: string): RemoteUrl {
  const forms =
    'Use wss://HOST:PORT (TLS; pin the certificate in agentkeep.sidecar.fingerprint), or ws://127.0.0.1:PORT for a sidecar on this machine or an SSH tunnel (ssh -N -L 7357:127.0.0.1:7357 HOST).';
  let u: URL;
  try {
    u = new URL(value.trim());
  } catch {
    throw new RemoteError('bad_sidecar_url', `${SETTING_URL} "${value}" is not a URL.`, forms);
  }
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:')
    throw new RemoteError(
      'bad_sidecar_url',
      `${SETTING_URL} "${value}" uses ${u.protocol}; only ws: and wss: are sidecar URLs.`,
      forms,
    );
  if (u.username || u.password)
    throw new RemoteError(
      'bad_sidecar_url',
      `${SETTING_URL} must not hold a user or password.`,
      `Remove it from the URL; the token goes in SecretStorage (${SET_TOKEN_COMMAND_TITLE}).`,
    );
  if ((u.pathname && u.pathname !== '/') || u.search || u.hash)
    throw new RemoteError(
      'bad_sidecar_url',
      `${SETTING_URL} "${value}" has a path or query; the sidecar serves only "/".`,
      forms,
    );
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const secure = u.protocol === 'wss:';
  if (!secure && !isLoopbackHost(host))
    throw new RemoteError(
      'bad_sidecar_url',
      `${SETTING_URL} "${value}" is plain ws:// to ${host}, which is not this machine: the token and the agent's memory would cross the network unencrypted.`,
      `Use wss://${u.host} (start the sidecar with --tls-cert/--tls-key and pin its fingerprint), or an SSH tunnel: ssh -N -L 7357:127.0.0.1:7357 ${host}, then ws://127.0.0.1:7357.`,
    );
  const port = u.port ? Number(u.port) : secure ? 443 : 80;
  return { href: u.href.replace(/\/$/, ''), secure, host, port };
}

/**
 * A SHA-256 fingerprint in the form Node and most UIs print it (`AB:CD:…`, 32 pairs, upper case), from
 * that form, lower case, or plain hex (as `openssl x509 -noout -fingerprint -sha256` or `sha256sum`
 * print it, with or without a `sha256 Fingerprint=` prefix).
 * @throws RemoteError bad_url for anything else
 */
export function normaliseFingerprint(value: string): string {
  const hex = value
    .trim()
    .replace(/^sha-?256\s*fingerprint\s*=\s*/i, '')
    .replace(/[:\s]/g, '')
    .toUpperCase();
  if (!/^[0-9A-F]{64}$/.test(hex))
    throw new RemoteError(
      'bad_sidecar_url',
      `${SETTING_FINGERPRINT} "${value}" is not a SHA-256 fingerprint.`,
      'Copy the line "TLS certificate SHA-256 fingerprint AB:CD:…" that agentkeep serve --ws prints at start (32 colon-separated hex pairs).',
    );
  return hex.match(/../g)!.join(':');
}

/** How to reach a remote sidecar. */
export interface RemoteOptions {
  /** agentkeep.sidecar.url */
  url: string;
  /** agentkeep.sidecar.fingerprint (empty: verify the chain as usual) */
  fingerprint?: string;
  /** The bearer token (from SecretStorage). */
  token: string | undefined;
  /** Give up on one connection attempt after this long (ms, default 10000). */
  connectTimeoutMs?: number;
  /** Ping interval (ms, default 15000); no pong within the next interval drops the connection. */
  pingMs?: number;
}

function describeNetError(e: NodeJS.ErrnoException, where: string): RemoteError {
  const hint = `Start it there (agentkeep serve --ws … --token-file …), check the SSH tunnel if you use one, or correct ${SETTING_URL}.`;
  const what =
    e.code === 'ECONNREFUSED'
      ? 'connection refused (nothing listens there)'
      : e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN'
        ? 'host name not found'
        : e.code === 'ETIMEDOUT'
          ? 'timed out'
          : e.code === 'ECONNRESET'
            ? 'connection reset'
            : e.message;
  return new RemoteError('sidecar_unreachable', `Cannot reach the remote sidecar at ${where}: ${what}.`, hint);
}

/**
 * Open a TLS socket and check the pinned fingerprint before handing it on (the https.Agent hook of
 * `ws`): the HTTP upgrade with the token is written only to a socket that passed. With no pin, Node's
 * chain and host name verification apply.
 */
function pinnedAgent(u: RemoteUrl, pin: string | undefined, fail: (e: RemoteError) => void): https.Agent {
  class PinnedAgent extends https.Agent {
    override createConnection(_o: https.RequestOptions, done?: (err: Error | null, s: Duplex) => void): undefined {
      const cb = done as ((err: Error | null, s?: Duplex) => void) | undefined;
      const sock = tls.connect({
        host: u.host,
        port: u.port,
        servername: net.isIP(u.host) ? undefined : u.host,
        ALPNProtocols: ['http/1.1'],
        // a pin replaces chain verification for this connection (checked below, before any byte is written)
        rejectUnauthorized: !pin,
      });
      const onError = (e: NodeJS.ErrnoException): void => {
        const code = e.code ?? '';
        if (/CERT|SELF_SIGNED|UNABLE_TO|ERR_TLS|HOSTNAME/.test(code)) {
          void peerFingerprint(u).then((fp) => {
            const err = new RemoteError(
              'sidecar_tls',
              `TLS: the certificate of ${u.href} is not trusted (${code}); nothing was sent.${fp ? ` It has SHA-256 fingerprint ${fp}.` : ''}`,
              `If that is your sidecar's certificate (agentkeep serve --ws prints its fingerprint at start), pin it: set ${SETTING_FINGERPRINT} to ${fp || 'that fingerprint'}.`,
            );
            fail(err);
            cb?.(err);
          });
        } else cb?.(e);
      };
      sock.once('error', onError);
      sock.once('secureConnect', () => {
        sock.removeListener('error', onError);
        if (pin) {
          const got = sock.getPeerCertificate()?.fingerprint256?.toUpperCase() ?? '(none)';
          if (got !== pin) {
            sock.destroy();
            const err = new RemoteError(
              'sidecar_tls',
              `TLS: the certificate of ${u.href} has SHA-256 fingerprint ${got}, not the pinned ${pin}; nothing was sent.`,
              `If the sidecar got a new certificate (compare with the fingerprint agentkeep serve --ws printed at start), set ${SETTING_FINGERPRINT} to ${got}; otherwise something is intercepting the connection.`,
            );
            fail(err);
            cb?.(err);
            return;
          }
        }
        cb?.(null, sock);
      });
      return undefined;
    }
  }
  return new PinnedAgent({ keepAlive: false });
}

/** The SHA-256 fingerprint the server presents (a TLS handshake that sends nothing), or '' on failure. */
function peerFingerprint(u: RemoteUrl): Promise<string> {
  return new Promise((resolve) => {
    const s = tls.connect({
      host: u.host,
      port: u.port,
      servername: net.isIP(u.host) ? undefined : u.host,
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
 * Open one WebSocket to the remote sidecar: URL rules, the pin, `Authorization: Bearer <token>`.
 * Resolves with the open socket (pinging every `pingMs`; a missed pong terminates it).
 * @throws RemoteError bad_url, no_token, tls (pin mismatch or untrusted certificate: the fingerprint
 *   seen and the setting to change), auth_failed (401), forbidden (403), unreachable (refused, DNS,
 *   timeout)
 */
export function connectRemote(opts: RemoteOptions): Promise<WebSocket> {
  let u: RemoteUrl;
  let pin: string | undefined;
  try {
    u = parseRemoteUrl(opts.url);
    pin = opts.fingerprint?.trim() ? normaliseFingerprint(opts.fingerprint) : undefined;
  } catch (e) {
    return Promise.reject(e);
  }
  if (pin && !u.secure)
    return Promise.reject(
      new RemoteError(
        'bad_sidecar_url',
        `${SETTING_FINGERPRINT} is set, but ${SETTING_URL} is ws:// (no TLS, so no certificate to pin).`,
        `Use wss:// for a sidecar started with --tls-cert, or clear ${SETTING_FINGERPRINT}.`,
      ),
    );
  if (!opts.token)
    return Promise.reject(
      new RemoteError(
        'no_sidecar_token',
        `No token for the remote sidecar at ${u.href}.`,
        `Run "${SET_TOKEN_COMMAND_TITLE}" and paste the content of the sidecar's --token-file (kept in SecretStorage, never in settings).`,
      ),
    );
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (err: RemoteError | undefined, ws?: WebSocket): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        socket.removeAllListeners();
        socket.on('error', () => undefined);
        socket.terminate();
        reject(err);
      } else resolve(ws!);
    };
    const socket = new WebSocket(u.href, {
      headers: { Authorization: `Bearer ${opts.token}` },
      handshakeTimeout: opts.connectTimeoutMs ?? 10_000,
      perMessageDeflate: false,
      maxPayload: 64 * 1024 * 1024,
      ...(u.secure ? { agent: pinnedAgent(u, pin, (e) => finish(e)) } : {}),
    });
    const timer = setTimeout(
      () =>
        finish(
          new RemoteError(
            'sidecar_unreachable',
            `Cannot reach the remote sidecar at ${u.href}: no answer within ${Math.round((opts.connectTimeoutMs ?? 10_000) / 1000)} s.`,
            `Check that it runs and that the address (or the SSH tunnel) is right.`,
          ),
        ),
      (opts.connectTimeoutMs ?? 10_000) + 1000,
    );
    socket.on('unexpected-response', (_req, res) => {
      const status = res.statusCode ?? 0;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c.slice(0, 500)));
      res.on('end', () => {
        const said = body.trim() ? ` (${body.trim().replace(/^agentkeep: /, '')})` : '';
        finish(
          status === 401
            ? new RemoteError(
                'sidecar_unauthorized',
                `The remote sidecar at ${u.href} refused the token (HTTP 401).`,
                `Run "${SET_TOKEN_COMMAND_TITLE}" with the content of the sidecar's --token-file.`,
              )
            : status === 403
              ? new RemoteError(
                  'sidecar_forbidden',
                  `The remote sidecar at ${u.href} refused the connection (HTTP 403)${said}.`,
                  "Check the sidecar's log.",
                )
              : new RemoteError(
                  'sidecar_unreachable',
                  `${u.href} answered HTTP ${status}, not a WebSocket upgrade${said}.`,
                  `Is ${SETTING_URL} the address of agentkeep serve --ws?`,
                ),
        );
      });
    });
    socket.once('open', () => {
      keepAlive(socket, opts.pingMs ?? 15_000);
      finish(undefined, socket);
    });
    socket.once('error', (e: NodeJS.ErrnoException) => {
      if (e instanceof RemoteError) return finish(e);
      finish(describeNetError(e, u.href));
    });
  });
}

/** Ping every `ms`; when the previous ping got no pong, terminate (a dead peer is noticed within 2*ms). */
function keepAlive(ws: WebSocket, ms: number): void {
  let alive = true;
  ws.on('pong', () => (alive = true));
  const t = setInterval(() => {
    if (!alive) {
      ws.terminate();
      return;
    }
    alive = false;
    try {
      ws.ping();
    } catch {
      /* closing */
    }
  }, ms);
  t.unref?.();
  ws.once('close', () => clearInterval(t));
}

/**
 * Delay before reconnect attempt `attempt` (1, 2, …): 1 s, 2 s, 4 s, 8 s, 16 s, then 30 s, each
 * shortened by up to 20 % at random so that many windows do not knock in step.
 */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(30_000, 1000 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (1 - 0.2 * random()));
}

/** What the link is doing, for the status bar. */
export type LinkState =
  | { kind: 'idle' }
  | { kind: 'connecting'; url: string }
  | { kind: 'connected'; url: string }
  /** Lost or never reached; retried after `retryInMs` (attempt counts from 1). */
  | { kind: 'reconnecting'; url: string; attempt: number; retryInMs: number; error: RemoteError }
  /** A settings or token problem: not retried until the settings or the token change. */
  | { kind: 'failed'; url: string; error: RemoteError };

/**
 * One remote sidecar: connects on demand, hands each new socket to `onSocket` (which runs the JSON-RPC
 * client over it and resolves once it is initialised), notices a drop, fails what was in flight
 * (`guard`), and reconnects with backoff. While it waits to reconnect, or after a settings problem,
 * `connect()` fails at once with the last error (a caller never hangs, and the backoff holds however
 * often the views ask); `connect({ now: true })` tries again immediately (the Reconnect command).
 */
export class RemoteLink {
  private socket: WebSocket | undefined;
  private connecting: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private attempt = 0;
  private closed = false;
  private readonly lostListeners = new Set<(e: RemoteError) => void>();
  private stateValue: LinkState = { kind: 'idle' };

  constructor(
    private readonly opts: () => Promise<RemoteOptions>,
    private readonly onSocket: (ws: WebSocket) => Promise<void>,
    private readonly onState: (s: LinkState) => void = () => undefined,
    private readonly backoff: (attempt: number) => number = backoffMs,
  ) {}

  get state(): LinkState {
    return this.stateValue;
  }

  /** Whether a socket is open and its session started. */
  get connected(): boolean {
    return this.stateValue.kind === 'connected';
  }

  private set(s: LinkState): void {
    this.stateValue = s;
    this.onState(s);
  }

  /**
   * Connect unless connected (concurrent callers share one attempt).
   * @param o.now try now even while waiting to reconnect or after a settings problem
   * @throws RemoteError the attempt's error, or while waiting the last one (with when the next try is)
   */
  connect(o: { now?: boolean } = {}): Promise<void> {
    if (this.closed) return Promise.reject(new RemoteError('connection_lost', 'The remote sidecar link is closed.'));
    if (this.connecting) return this.connecting;
    if (this.socket && this.connected) return Promise.resolve();
    const s = this.stateValue;
    if (!o.now && (s.kind === 'reconnecting' || s.kind === 'failed')) {
      const next =
        s.kind === 'reconnecting'
          ? ` Reconnecting: try ${s.attempt + 1} in ${Math.max(1, Math.round(s.retryInMs / 1000))} s (or run "AgentKeep: Reconnect to Remote Sidecar").`
          : '';
      return Promise.reject(new RemoteError(s.error.code, `${s.error.message}${next}`, s.error.hint));
    }
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.connecting = this.attemptOnce().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async attemptOnce(): Promise<void> {
    const o = await this.opts();
    this.set({ kind: 'connecting', url: o.url });
    let ws: WebSocket;
    try {
      ws = await connectRemote(o);
      if (this.closed) {
        ws.terminate();
        throw new RemoteError('connection_lost', 'The remote sidecar link is closed.');
      }
      ws.once('close', (code, reason) => this.dropped(ws, o.url, code, reason.toString()));
      this.socket = ws;
      await this.onSocket(ws);
    } catch (e) {
      const err =
        e instanceof RemoteError
          ? e
          : new RemoteError(
              'sidecar_unreachable',
              `The remote sidecar at ${o.url} did not start a session: ${e instanceof Error ? e.message : String(e)}.`,
              'Check that the sidecar on the other side runs the same AgentKeep version.',
            );
      if (this.socket) {
        const s = this.socket;
        this.socket = undefined;
        s.removeAllListeners('close');
        s.terminate();
      }
      this.failed(o.url, err);
      throw err;
    }
    this.attempt = 0;
    this.set({ kind: 'connected', url: o.url });
  }

  private failed(url: string, err: RemoteError): void {
    if (this.closed) return;
    if (!err.retryable) {
      this.set({ kind: 'failed', url, error: err });
      return;
    }
    this.attempt++;
    const retryInMs = this.backoff(this.attempt);
    this.set({ kind: 'reconnecting', url, attempt: this.attempt, retryInMs, error: err });
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.connect({ now: true }).catch(() => undefined); // the next failure schedules the next try
    }, retryInMs);
  }

  private dropped(ws: WebSocket, url: string, code: number, reason: string): void {
    if (this.socket !== ws) return;
    this.socket = undefined;
    const err = new RemoteError(
      'connection_lost',
      `Lost the connection to the remote sidecar at ${url}${code && code !== 1006 ? ` (WebSocket close ${code}${reason ? `: ${reason}` : ''})` : ''}.`,
      'AgentKeep reconnects by itself (see the status bar); whatever was being done there may have finished: refresh the Agent view once it is back.',
    );
    for (const l of [...this.lostListeners]) l(err);
    this.failed(url, err);
  }

  /**
   * `work`, or a RemoteError connection_lost as soon as the connection drops while it runs (the
   * JSON-RPC answer can no longer come).
   */
  guard<T>(work: Promise<T>, what: string): Promise<T> {
    if (!this.socket)
      return Promise.reject(new RemoteError('connection_lost', `Not connected to the remote sidecar (${what}).`));
    return new Promise<T>((resolve, reject) => {
      const onLost = (e: RemoteError): void =>
        reject(new RemoteError(e.code, `${e.message.replace(/\.$/, '')} while waiting for ${what}.`, e.hint));
      this.lostListeners.add(onLost);
      work.then(resolve, reject).finally(() => this.lostListeners.delete(onLost));
    });
  }

  /** Close the socket and stop reconnecting. */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const s = this.socket;
    this.socket = undefined;
    if (s) {
      s.removeAllListeners('close');
      s.close(1000, 'editor closed the link');
      setTimeout(() => s.terminate(), 1000).unref?.();
    }
    this.set({ kind: 'idle' });
  }
}
