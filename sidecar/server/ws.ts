/**
 * `agentkeep serve --ws HOST:PORT --token-file FILE`: the same LSP + agentkeep/* connection over
 * WebSocket, one connection per socket. Requires `Authorization: Bearer <token>`; connections
 * without it or with a wrong token get HTTP 401 before the upgrade. Binds 127.0.0.1 by default.
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as http from 'node:http';
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
      'Use HOST:PORT, e.g. --ws 127.0.0.1:7420 (port 0 picks a free port).',
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

function refuse(socket: Duplex, status: number, text: string): void {
  const body = `${text}\n`;
  socket.write(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\n` +
      'WWW-Authenticate: Bearer realm="agentkeep"\r\nContent-Type: text/plain\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  socket.destroy();
}

/** A running WebSocket server. */
export interface WsServer {
  /** The address actually bound (port resolved when 0 was asked). */
  address: HostPort;
  close(): Promise<void>;
}

/**
 * Start the WebSocket server.
 * @param makeCore creates the one core shared by all connections
 * @param base core options (state dir, lock timeout)
 * @param listen where to bind
 * @param token the expected bearer token
 * @param log diagnostics (stderr)
 */
export async function serveWs(
  makeCore: CoreFactory,
  base: CoreOptions,
  listen: HostPort,
  token: string,
  log: (m: string) => void,
): Promise<WsServer> {
  const hub = new ConnectionHub();
  const core = makeCore(hub.coreOptions(base));
  const stateDir = resolveStateDir(base.stateDir);
  const server = http.createServer((_req, res) => {
    res.writeHead(426, { 'Content-Type': 'text/plain', Upgrade: 'websocket' });
    res.end('agentkeep: WebSocket only (JSON-RPC, one message per text frame)\n');
  });
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });

  server.on('upgrade', (req, socket, head) => {
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
  if (!isLoopback(listen.host)) {
    log(
      `agentkeep: warning: listening on non-loopback ${listen.host}; reach it through an SSH tunnel or a TLS proxy, never plain over a network`,
    );
  }
  const shown = address.host.includes(':') ? `[${address.host}]` : address.host;
  log(`agentkeep: listening on ws://${shown}:${address.port}`);
  return {
    address,
    close: async () => {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
