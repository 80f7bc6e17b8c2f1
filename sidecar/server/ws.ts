/**
 * `agentkeep serve --ws HOST:PORT --token-file FILE [--tls-cert FILE --tls-key FILE]`: the same LSP +
 * agentkeep/* connection over WebSocket, one connection per socket (docs/remote.md).
 * - Requires `Authorization: Bearer <token>`; connections without it or with a wrong token get HTTP
 *   401 before the upgrade.
 * - Binds 127.0.0.1 by default; a non-loopback address is refused without TLS (the token and every
 *   memory entry would cross the network in clear text). With TLS (node:https, a PEM cert and key)
 *   it prints the certificate's SHA-256 fingerprint for the client to pin.
 * - Refuses browser origins: a request with an `Origin` header (only browsers send one) gets HTTP 403
 *   unless that origin is allowed (`--allow-origin`). A web page the developer visits can open a
 *   WebSocket to 127.0.0.1 (WebSockets are not bound by the same-origin policy), so without this a
 *   page could drive the sidecar whenever it gets hold of the token, or probe it; the editor's and
 *   the CLI's Node clients send no Origin.
 */
import { timingSafeEqual, createHash, X509Certificate } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  createConnection,
  createProtocolConnection,
  ProposedFeatures,
  type Message,
  type RequestMessage,
  type WatchDog,
} from 'vscode-languageserver';
import { WebSocketServer, type WebSocket } from 'ws';
// vscode-languageserver's Node entry installs vscode-jsonrpc's Node runtime layer (timers, message
// buffers, encodings) that the connection needs; the CLI loads this module alone for `serve --ws`.
import 'vscode-languageserver/node';
import { AgentKeepError } from '../core/errors';
import type { CoreOptions } from '../core/service';
import { resolveStateDir } from '../core/state';
import { ConnectionHub, serveConnection, type CoreFactory } from './session';
import { JsonRpcGate } from './jsonrpc';
import { WebSocketFrameReader, WebSocketMessageWriter } from './wsTransport';

/** A parsed `HOST:PORT`. */
export interface HostPort {
  host: string;
  port: number;
}

/**
 * Parse `HOST:PORT`, `[v6]:PORT` or `PORT` (host 127.0.0.1). PORT 0 picks a free port.
 * @throws AgentKeepError InvalidParams naming the expected form
 */
export function parseHostPort(s: string): HostPort {
  const m =
    /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(s) ?? (/^(\d{1,5})$/.test(s) ? [s, undefined, '127.0.0.1', s] : null);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) {
    throw new AgentKeepError(
      'InvalidParams',
      `Bad --ws address "${s}".`,
      'Use HOST:PORT, e.g. --ws 127.0.0.1:7357 (port 0 picks a free port).',
    );
  }
  return { host: m[1] ?? (m[2] || '127.0.0.1'), port };
}

/** Whether a host name/address is loopback. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::ffff:127.0.0.1';
}

/** Shortest bearer token accepted: a guessable token on a listening socket is no protection. */
export const MIN_TOKEN_CHARS = 16;

/**
 * Read the bearer token: the trimmed content of `file`, at least MIN_TOKEN_CHARS characters.
 * @throws AgentKeepError FileError when the file is missing, unreadable, empty, too short, or readable by
 *   group/others (hint: chmod 600).
 */
export async function readTokenFile(file: string): Promise<string> {
  let st: import('node:fs').Stats;
  try {
    st = await fs.stat(file);
  } catch {
    throw new AgentKeepError(
      'FileError',
      `Token file ${file} does not exist.`,
      `Create it with a random secret: umask 077 && openssl rand -hex 32 > ${file}`,
    );
  }
  if (process.platform !== 'win32' && (st.mode & 0o077) !== 0) {
    throw new AgentKeepError(
      'FileError',
      `Token file ${file} is readable by other users (mode ${(st.mode & 0o777).toString(8)}).`,
      `Restrict it: chmod 600 ${file}`,
    );
  }
  let token: string;
  try {
    token = (await fs.readFile(file, 'utf8')).trim();
  } catch (e) {
    throw new AgentKeepError(
      'FileError',
      `Cannot read token file ${file}: ${(e as Error).message}.`,
      'Check its owner and permissions.',
    );
  }
  if (!token) {
    throw new AgentKeepError(
      'FileError',
      `Token file ${file} is empty.`,
      `Write a random secret into it: openssl rand -hex 32 > ${file}`,
    );
  }
  if (token.length < MIN_TOKEN_CHARS) {
    throw new AgentKeepError(
      'FileError',
      `The token in ${file} is too short (${token.length} characters; at least ${MIN_TOKEN_CHARS} needed).`,
      `Write a random secret into it: openssl rand -hex 32 > ${file}`,
    );
  }
  return token;
}

/** Constant-time comparison of the request's bearer token with the expected one. */
export function tokenMatches(header: string | undefined, expected: string): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? '');
  if (!m) return false;
  // hash both so timingSafeEqual gets equal lengths and length is not leaked
  const a = createHash('sha256').update(m[1].trim()).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** PEM certificate and key of `serve --ws --tls-cert FILE --tls-key FILE`, checked to belong together. */
export interface TlsFiles {
  cert: string;
  key: string;
  /** SHA-256 fingerprint of the certificate, colon-separated upper-case hex (what clients pin). */
  fingerprint: string;
}

/** Where `tlsPairHint` puts a new pair when the files given exist (docs/remote.md uses the same place). */
export const TLS_DIR = '~/.config/agentkeep/tls';

/** The openssl command that makes a self-signed pair for `serve --ws --tls-cert CERT --tls-key KEY`. */
export function tlsOpensslCommand(cert: string, key: string): string {
  return (
    'openssl req -x509 -newkey rsa:2048 -nodes -days 825 -subj /CN=agentkeep ' +
    `-addext "subjectAltName=DNS:$(hostname),IP:<address>" -keyout ${key} -out ${cert}`
  );
}

/**
 * "Make a pair: [mkdir -p DIR &&] openssl req -x509 … -keyout KEY -out CERT": into the files given
 * when neither exists; else into new files in TLS_DIR (cert.pem and key.pem, or cert-2.pem and
 * key-2.pem … when those exist), so the command never overwrites a file that is there (a token file,
 * a key of something else given by mistake, an earlier pair). `mkdir -p` comes first when the
 * directory is missing (openssl does not make it).
 */
export function tlsPairHint(certFile: string, keyFile: string): string {
  const fresh = !existsSync(certFile) && !existsSync(keyFile) && path.resolve(certFile) !== path.resolve(keyFile);
  const home = (p: string): string => p.replace(/^~(?=\/)/, os.homedir());
  let n = 1;
  const name = (base: string): string => `${TLS_DIR}/${base}${n > 1 ? `-${n}` : ''}.pem`;
  while (!fresh && (existsSync(home(name('cert'))) || existsSync(home(name('key'))))) n++;
  const [cert, key] = fresh ? [certFile, keyFile] : [name('cert'), name('key')];
  const dirs = [...new Set([path.dirname(cert), path.dirname(key)])].filter((d) => !existsSync(home(d)));
  const mkdir = dirs.length ? `mkdir -p ${dirs.join(' ')} && ` : '';
  const openssl = `${mkdir}${tlsOpensslCommand(cert, key)}`;
  return fresh
    ? `Make a pair: ${openssl}`
    : `Make a new pair in new files (not over the ones given): ${openssl}, then pass --tls-cert ${cert} --tls-key ${key}.`;
}

/**
 * Read and check the TLS certificate and key (PEM files; the cert may hold a chain, leaf first).
 * @throws AgentKeepError FileError when a file is missing or unreadable, is not PEM, or the key does
 *   not match the certificate, each naming the file and how to make a pair with openssl
 */
export async function readTlsFiles(certFile: string, keyFile: string): Promise<TlsFiles> {
  const make = tlsPairHint(certFile, keyFile);
  const read = async (file: string, what: string): Promise<string> => {
    try {
      return await fs.readFile(file, 'utf8');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      throw new AgentKeepError(
        'FileError',
        code === 'ENOENT'
          ? `TLS ${what} file ${file} does not exist.`
          : `Cannot read TLS ${what} file ${file}: ${(e as Error).message}.`,
        code === 'ENOENT' ? make : 'Check its owner and permissions.',
      );
    }
  };
  const cert = await read(certFile, 'certificate');
  const key = await read(keyFile, 'key');
  let fingerprint: string;
  try {
    fingerprint = new X509Certificate(cert).fingerprint256;
  } catch {
    throw new AgentKeepError('FileError', `${certFile} is not a PEM certificate (-----BEGIN CERTIFICATE-----).`, make);
  }
  try {
    tls.createSecureContext({ cert, key });
  } catch (e) {
    const mismatch = /key values mismatch/i.test((e as Error).message);
    throw new AgentKeepError(
      'FileError',
      mismatch
        ? `The key ${keyFile} does not belong to the certificate ${certFile}.`
        : `${keyFile} is not a usable PEM private key (${(e as Error).message}).`,
      mismatch ? 'Pass the key the certificate was made with, or make a new pair. ' + make : make,
    );
  }
  return { cert, key, fingerprint };
}

function refuse(socket: Duplex, status: number, text: string): void {
  const body = `${text}\n`;
  socket.write(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\n` +
      (status === 401 ? 'WWW-Authenticate: Bearer realm="agentkeep"\r\n' : '') +
      'Content-Type: text/plain\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  socket.destroy();
}

/** A running WebSocket server. */
export interface WsServer {
  /** The address actually bound (port resolved when 0 was asked). */
  address: HostPort;
  /** `ws://…` or `wss://…` of the bound address. */
  url: string;
  close(): Promise<void>;
}

/** Options of serveWs besides the core. */
export interface WsOptions {
  /** Where to bind. A non-loopback host needs `tls`. */
  listen: HostPort;
  /** The expected bearer token. */
  token: string;
  /** Certificate and key (readTlsFiles): serve wss:// instead of ws://. */
  tls?: TlsFiles;
  /** Origins (`https://host:port`, exactly as browsers send them) allowed to connect; none by default. */
  allowOrigins?: readonly string[];
}

/**
 * Whether a request's `Origin` header is acceptable: absent (a non-browser client: the extension, the
 * CLI, curl), or one of `allowed`. Browsers always send Origin on a WebSocket handshake.
 */
export function originAllowed(origin: string | undefined, allowed: readonly string[] = []): boolean {
  return origin === undefined || allowed.includes(origin);
}

/**
 * Start the WebSocket server.
 * @param makeCore creates the one core shared by all connections
 * @param base core options (state dir, lock timeout)
 * @param opts where to bind, the token, TLS, allowed origins
 * @param log diagnostics (stderr)
 * @throws AgentKeepError InvalidParams for a non-loopback address without TLS (naming --tls-cert and the
 *   SSH tunnel), or when the address cannot be bound
 */
export async function serveWs(
  makeCore: CoreFactory,
  base: CoreOptions,
  opts: WsOptions,
  log: (m: string) => void,
): Promise<WsServer> {
  const { listen, token } = opts;
  if (!isLoopback(listen.host) && !opts.tls) {
    throw new AgentKeepError(
      'InvalidParams',
      `Refusing to listen on ${listen.host} without TLS: the bearer token and every memory entry would cross the network in clear text.`,
      `Add --tls-cert FILE --tls-key FILE (serve wss://, the client pins the printed fingerprint), or listen on 127.0.0.1 and reach it through an SSH tunnel: ssh -N -L 7357:127.0.0.1:${listen.port || 7357} <this host> (docs/remote.md).`,
    );
  }
  const hub = new ConnectionHub();
  const core = makeCore(hub.coreOptions(base));
  const stateDir = resolveStateDir(base.stateDir);
  const onRequest = (_req: http.IncomingMessage, res: http.ServerResponse): void => {
    res.writeHead(426, { 'Content-Type': 'text/plain', Upgrade: 'websocket' });
    res.end('agentkeep: WebSocket only (JSON-RPC, one message per text frame)\n');
  };
  const server = opts.tls
    ? https.createServer({ cert: opts.tls.cert, key: opts.tls.key, minVersion: 'TLSv1.2' }, onRequest)
    : http.createServer(onRequest);
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });

  server.on('upgrade', (req, socket, head) => {
    const origin = req.headers.origin;
    if (!originAllowed(origin, opts.allowOrigins)) {
      // before the token check: a web page learns nothing, not even whether its token was right
      log(`agentkeep: refused a connection from ${req.socket.remoteAddress ?? '?'}: browser origin ${origin}`);
      refuse(
        socket,
        403,
        `agentkeep: browser origin ${origin} refused: a web page must not drive the sidecar (start serve with --allow-origin ${origin} only if you mean it)`,
      );
      return;
    }
    if (!tokenMatches(req.headers.authorization, token)) {
      log(
        `agentkeep: refused a connection from ${req.socket.remoteAddress ?? '?'}: ${req.headers.authorization ? 'wrong' : 'no'} bearer token`,
      );
      refuse(
        socket,
        401,
        'agentkeep: missing or wrong bearer token (send Authorization: Bearer <token from the token file>)',
      );
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => attach(ws));
  });

  const attach = (ws: WebSocket): void => {
    // A remote client's processId means nothing here; drop it so the server never watches a foreign pid.
    // The gate answers frames that are not JSON-RPC requests and batches (./jsonrpc.ts).
    const gate = new JsonRpcGate(new WebSocketFrameReader(ws), new WebSocketMessageWriter(ws), (m: Message) => {
      const r = m as RequestMessage;
      if (r.method === 'initialize' && r.params && typeof r.params === 'object')
        (r.params as { processId?: unknown }).processId = null;
      return m;
    });
    const { reader, writer } = gate;
    let shutdown = false;
    const watchDog: WatchDog = {
      initialize: () => undefined,
      get shutdownReceived() {
        return shutdown;
      },
      set shutdownReceived(v: boolean) {
        shutdown = v;
      },
      exit: () => ws.close(1000, 'exit'),
    };
    const connection = createConnection(
      (logger) => createProtocolConnection(reader, writer, logger),
      watchDog,
      ProposedFeatures.all,
    );
    hub.add(connection);
    ws.on('close', () => {
      hub.delete(connection);
      connection.dispose();
    });
    serveConnection(connection, core, log, { stateDir });
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        new AgentKeepError(
          'InvalidParams',
          `Cannot listen on ${listen.host}:${listen.port}: ${e.message}.`,
          e.code === 'EADDRINUSE' ? 'Pick another port, or 0 for a free one.' : 'Check the host address.',
        ),
      ),
    );
    server.listen(listen.port, listen.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const address = { host: listen.host, port: addr.port };
  const shown = address.host.includes(':') ? `[${address.host}]` : address.host;
  const url = `${opts.tls ? 'wss' : 'ws'}://${shown}:${address.port}`;
  if (opts.tls)
    log(
      `agentkeep: TLS certificate SHA-256 fingerprint ${opts.tls.fingerprint} (pin it in the editor's agentkeep.sidecar.fingerprint)`,
    );
  log(`agentkeep: listening on ${url}`);
  return {
    address,
    url,
    close: async () => {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
