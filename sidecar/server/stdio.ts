/**
 * `agentkeep serve --stdio`: the LSP server over stdin/stdout (what vscode-languageclient starts).
 * stdout is the LSP channel: everything else goes to stderr or the connection console.
 */
import { inspect } from 'node:util';
import {
  createConnection,
  ProposedFeatures,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-languageserver/node';
import type { CoreOptions } from '../core/service';
import { resolveStateDir } from '../core/state';
import { JsonRpcGate, RAW_JSON_DECODER } from './jsonrpc';
import { ConnectionHub, serveConnection, type CoreFactory } from './session';

/**
 * Start the stdio server; returns once listening (the process then lives until the client exits).
 * @param makeCore creates the core (called once)
 * @param base core options (state dir, lock timeout)
 */
export function serveStdio(makeCore: CoreFactory, base: CoreOptions): void {
  // stdout carries LSP frames only: anything printed through console goes to stderr instead.
  const toErr = (...args: unknown[]): void => {
    process.stderr.write(args.map((a) => (typeof a === 'string' ? a : inspect(a))).join(' ') + '\n');
  };
  console.log = toErr;
  console.info = toErr;
  console.debug = toErr;
  console.warn = toErr;
  console.error = toErr;
  // Content-Length framed bodies go unparsed to the gate (./jsonrpc.ts), which answers what is not a
  // JSON-RPC request (-32700, -32600) and batches, instead of vscode-jsonrpc dropping them.
  const frames = new StreamMessageReader(process.stdin, { contentTypeDecoder: RAW_JSON_DECODER });
  const gate = new JsonRpcGate(frames, new StreamMessageWriter(process.stdout));
  const connection = createConnection(ProposedFeatures.all, gate.reader, gate.writer);
  // as vscode-languageserver does for stdio streams: the client closing stdin ends the server
  const onEnd = (): never => process.exit(gate.shutdownRequested ? 0 : 1);
  process.stdin.on('end', onEnd);
  process.stdin.on('close', onEnd);
  const hub = new ConnectionHub();
  hub.add(connection);
  const core = makeCore(hub.coreOptions(base));
  const log = (m: string): void => {
    process.stderr.write(m.endsWith('\n') ? m : m + '\n');
  };
  serveConnection(connection, core, log, { stateDir: resolveStateDir(base.stateDir) });
}
