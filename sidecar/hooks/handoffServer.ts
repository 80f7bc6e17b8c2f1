/**
 * The hook's hand-off, server side (./handoff.ts has the protocol): a long-running sidecar
 * (`agentkeep mcp`, `agentkeep serve`) listens on `<stateDir>/hooks/handoff/<pid>.sock` and runs each
 * hook call handed to it with the same code the hook runs (./entry.ts hookMain, ./run.ts runHook),
 * its Cores with the change journal on and the server's last snapshots, so the hook's restore point
 * lstats only what changed instead of walking the whole tree. The call's own state dir is always the
 * server's (the socket's folder is in it); its time box is the request's budget.
 * AGENTKEEP_HOOK_HANDOFF=0 in the server's environment: it does not listen.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { hookMain, type HookFull, type HookIO } from './entry';
import { pidAlive } from '../core/pid';
import { ensureStateDir, StateLayout } from '../core/state';
import {
  handoffDir,
  handoffOffByEnv,
  MAX_SOCKET_PATH_BYTES,
  privateDir,
  socketPathFits,
  stateDirIdentity,
  type HandoffAnswer,
  type HandoffRequest,
} from './handoff';
import { runHook } from './run';

/** A request larger than this is refused (the connection closed: the hook does it itself). */
const MAX_REQUEST_BYTES = 64 * 1024 * 1024;
/** How long a connection may take to send its request (ms). */
const REQUEST_TIMEOUT_MS = 5000;

/** A listening hand-off socket. */
export interface HandoffServer {
  /** The socket's path */
  path: string;
  /** Stop listening and remove the socket, wait for the calls in flight to answer, drop other connections */
  close(): Promise<void>;
}

/** A call the server does not take (its hook does the work itself): the refusal's `why`. */
class Refusal extends Error {}

/**
 * Listen for hook calls of `stateDir` (see the module comment). Never throws: when it cannot listen
 * (a read-only state dir, say) it says why through `log` and returns undefined, and the hooks do their
 * work themselves as before; a socket path too long for a Unix socket address (MAX_SOCKET_PATH_BYTES)
 * is checked before anything is made, and noted only with AGENTKEEP_DEBUG set.
 * @param stateDir the server's absolute state dir
 * @param lastSnapshots the server's Core's map (CoreOptions.lastSnapshots), shared by the calls' Cores
 * @param log one line per problem (stderr)
 */
export async function listenHookHandoff(
  stateDir: string,
  lastSnapshots: Map<string, string>,
  log: (m: string) => void,
): Promise<HandoffServer | undefined> {
  if (handoffOffByEnv()) return undefined;
  const dir = handoffDir(stateDir);
  const sock = path.join(dir, `${process.pid}.sock`);
  if (!socketPathFits(sock)) {
    if (process.env.AGENTKEEP_DEBUG)
      log(
        `agentkeep: hook hand-off off: the socket path ${sock} is longer than a Unix socket address holds (${MAX_SOCKET_PATH_BYTES} bytes); hooks do their work themselves`,
      );
    return undefined;
  }
  try {
    // the state dir's own checks (ours, 0700, writable), as every command makes them
    await ensureStateDir(new StateLayout(stateDir));
  } catch (e) {
    log(`agentkeep: hook hand-off off: ${(e as Error).message}`);
    return undefined;
  }
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!fs.lstatSync(dir).isDirectory()) throw new Error('it is not a folder');
    fs.chmodSync(dir, 0o700);
    if (!privateDir(dir)) throw new Error('it is not a folder of this user only');
    for (const n of fs.readdirSync(dir))
      if (/^\d+\.sock$/.test(n) && (Number(n.slice(0, -5)) === process.pid || !pidAlive(Number(n.slice(0, -5)))))
        fs.rmSync(path.join(dir, n), { force: true });
  } catch (e) {
    log(`agentkeep: hook hand-off off: cannot prepare ${dir}: ${(e as Error).message}`);
    return undefined;
  }
  const inFlight = new Set<Promise<void>>();
  const open = new Set<net.Socket>();
  const server = net.createServer((c) => {
    open.add(c);
    c.on('close', () => open.delete(c));
    // the request comes at once (the hook writes it on connect): a connection that sends none is dropped
    c.setTimeout(REQUEST_TIMEOUT_MS, () => c.destroy());
    c.on('error', () => undefined);
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (d: Buffer): void => {
      size += d.length;
      if (size > MAX_REQUEST_BYTES) return void c.destroy();
      chunks.push(d);
      if (!d.includes(0x0a)) return;
      c.off('data', onData);
      c.setTimeout(0);
      open.delete(c); // it gets its answer (close waits for it), then ends
      const p = answer(Buffer.concat(chunks).toString('utf8'), stateDir, lastSnapshots, () =>
        c.write(`${JSON.stringify({ v: 1, accepted: true })}\n`),
      ).then(
        (a) => void c.end(`${JSON.stringify(a)}\n`),
        (e) =>
          void (e instanceof Refusal
            ? c.end(`${JSON.stringify({ v: 1, accepted: false, why: e.message })}\n`)
            : c.destroy()),
      );
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    };
    c.on('data', onData);
  });
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', (e) => {
      log(`agentkeep: hook hand-off off: cannot listen on ${sock}: ${e.message}`);
      resolve(false);
    });
    server.listen(sock, () => resolve(true));
  });
  if (!listening) return undefined;
  server.on('error', () => undefined);
  try {
    fs.chmodSync(sock, 0o600);
  } catch (e) {
    server.close();
    fs.rmSync(sock, { force: true });
    log(`agentkeep: hook hand-off off: cannot make ${sock} private: ${(e as Error).message}`);
    return undefined;
  }
  const unlink = (): void => fs.rmSync(sock, { force: true });
  process.once('exit', unlink);
  server.unref();
  return {
    path: sock,
    close: async () => {
      server.close();
      unlink();
      await Promise.allSettled([...inFlight]);
      for (const c of open) c.destroy();
      process.off('exit', unlink);
    },
  };
}

/**
 * Run one handed-off call: the lines the hook prints.
 * @param accept tells the hook the server took the call (before it runs)
 * @throws for a request that is not one of version 1, or that came after its `acceptBy` (the hook no
 *   longer waits for it: it is not run); Refusal (answered as a refusal) when the request's state dir
 *   is not the server's (moved, replaced, or another one's socket) or the server's is gone
 */
async function answer(
  line: string,
  stateDir: string,
  lastSnapshots: Map<string, string>,
  accept: () => void,
): Promise<HandoffAnswer> {
  const req = JSON.parse(line) as HandoffRequest;
  if (req?.v !== 1 || !Array.isArray(req.argv) || typeof req.stdin !== 'string')
    throw new Error('not a hand-off request of version 1');
  if (!(Date.now() <= req.acceptBy)) throw new Error('the hook no longer waits for this call');
  const own = stateDirIdentity(stateDir);
  if (!own) throw new Refusal(`the server's state dir ${stateDir} is gone`);
  if (!req.state || req.state.dev !== own.dev || req.state.ino !== own.ino)
    throw new Refusal(
      `the server's state dir ${stateDir} is not the hook's ${typeof req.state?.path === 'string' ? req.state.path : '(unnamed)'}`,
    );
  accept();
  const out: string[] = [];
  const err: string[] = [];
  const io: HookIO = {
    readStdin: async () => req.stdin,
    out: (s) => out.push(s),
    err: (s) => err.push(s),
  };
  const budget = Number.isFinite(req.budgetMs) && req.budgetMs > 0 ? req.budgetMs : 10_000;
  const env: NodeJS.ProcessEnv = { ...process.env, AGENTKEEP_HOOK_BUDGET_MS: String(budget) };
  delete env.HERMES_HOME;
  if (typeof req.env?.HERMES_HOME === 'string') env.HERMES_HOME = req.env.HERMES_HOME;
  // ~/.hermes is the hook's (./run.ts hermesHome)
  if (typeof req.env?.HOME === 'string') env.HOME = req.env.HOME;
  const full: HookFull = {
    runHook: (call, verdict, args, hio, budgetMs) =>
      runHook(call, verdict, args, hio, budgetMs, env, { changeJournal: true, lastSnapshots }),
  };
  await hookMain([...req.argv.map(String), '--state-dir', stateDir], io, () => full, env, { handoff: false });
  return { v: 1, out, err };
}
