/**
 * The hook's hand-off, client side (loaded by the hook's fast path, ./entry.ts: node built-ins and the import-free ../core/pid.ts and
 * ../core/envWarn.ts only).
 * A shell hook is a new process per tool call, so its restore point walks the whole `dir:` target;
 * a long-running sidecar of the same state dir (`agentkeep mcp`, `agentkeep serve`) keeps the change
 * journal (docs/dir-backend.md) and listens on `<stateDir>/hooks/handoff/<pid>.sock` (a Unix socket,
 * folder 0700, socket 0600; ./handoffServer.ts). The hook asks only when that folder is this user's
 * and private (as the state dir must be). Before it loads the rest of the sidecar, the hook
 * hands the call to such a server and prints its answer; when there is none, or it cannot be
 * reached, or it does not answer in time, the hook does the work itself as before.
 *
 * Wire protocol (version 1), one request per connection, lines of JSON:
 *   request  {"v":1,"argv":["hook","run","hermes",…],"stdin":"<the agent's JSON>",
 *             "env":{"HERMES_HOME":…,"HOME":…},"budgetMs":19000,"acceptBy":<epoch ms>,
 *             "state":{"path":"/abs/state","dev":"2049","ino":"1234"}}
 *   accept   {"v":1,"accepted":true}        (at once: from here on the server owns the call)
 *   refusal  {"v":1,"accepted":false,"why":"…"}  (instead: e.g. the server's state dir is another one)
 *   answer   {"v":1,"out":["<stdout line>",…],"err":["<stderr line>",…]}
 * `state` is the identity of the hook's state dir (device and inode numbers as decimal strings, from
 * stat): a server whose own state dir is gone or is another folder (moved, replaced, a socket linked
 * in from elsewhere) refuses the call. The hook connects only to an entry that is a socket of this
 * user (lstat: no symbolic links) and whose path fits a Unix socket address (MAX_SOCKET_PATH_BYTES).
 * A server that reads the request after `acceptBy` closes the connection without running it; a hook
 * that has no accept within ACCEPT_TIMEOUT_MS does the work itself with (nearly) its whole budget.
 * The server runs the same hook code (./entry.ts hookMain, ./run.ts runHook) with its own state dir
 * and time box (`budgetMs`, below the hook's), so the answer is exactly what the hook would print.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { envSwitch } from '../core/envWarn';
import { pidAlive } from '../core/pid';

/** A hook call handed to a server. */
export interface HandoffRequest {
  v: 1;
  /** The hook's argv (`hook run KIND …`) */
  argv: string[];
  /** The agent's JSON, as the hook read it from stdin */
  stdin: string;
  /** The variables of the hook's environment the hook code reads (HERMES_HOME, HOME) */
  env: Record<string, string>;
  /** The identity of the hook's state dir (see StateDirIdentity): the server refuses a call of another one */
  state: StateDirIdentity;
  /** How long the server may take (ms); it answers before that */
  budgetMs: number;
  /** Epoch ms: a server that reads the request later drops it unrun (the hook no longer waits for it) */
  acceptBy: number;
}

/** Which folder a state dir is: its absolute path, and its device and inode numbers (decimal strings, stat). */
export interface StateDirIdentity {
  path: string;
  dev: string;
  ino: string;
}

/** The identity of the folder `stateDir` names now, or undefined when it is not a folder (gone). Never throws. */
export function stateDirIdentity(stateDir: string): StateDirIdentity | undefined {
  try {
    const st = fs.statSync(stateDir, { bigint: true });
    if (!st.isDirectory()) return undefined;
    return { path: path.resolve(stateDir), dev: String(st.dev), ino: String(st.ino) };
  } catch {
    return undefined;
  }
}

/**
 * The longest path (bytes, UTF-8) a Unix socket address holds: sun_path is 108 bytes on Linux, 104 on
 * macOS, with the closing NUL. A longer path would be cut short by the system (a socket elsewhere).
 */
export const MAX_SOCKET_PATH_BYTES = process.platform === 'darwin' ? 103 : 107;

/** Whether `sock` fits a Unix socket address (MAX_SOCKET_PATH_BYTES). */
export function socketPathFits(sock: string): boolean {
  return Buffer.byteLength(sock, 'utf8') <= MAX_SOCKET_PATH_BYTES;
}

/** Whether `file` is a socket of this user itself (lstat: a symbolic link is not). */
function ownSocket(file: string): boolean {
  try {
    const st = fs.lstatSync(file);
    const uid = typeof process.getuid === 'function' ? process.getuid() : st.uid;
    return st.isSocket() && st.uid === uid;
  } catch {
    return false;
  }
}

/** The server's answer: the lines the hook prints. */
export interface HandoffAnswer {
  v: 1;
  out: string[];
  err: string[];
}

/** The folder of the hand-off sockets of a state dir. */
export function handoffDir(stateDir: string): string {
  return path.join(stateDir, 'hooks', 'handoff');
}

/**
 * How long the server may take to accept a call, from the connect (ms): a server that is stuck (its
 * event loop busy) does not hold the hook up; the request says the server must not start it later
 * (`acceptBy`, 300 ms earlier, so an accept always reaches the hook in time).
 */
export const ACCEPT_TIMEOUT_MS = 1000;

/**
 * Whether AGENTKEEP_HOOK_HANDOFF turns the hand-off off (0, false, off, no; 1, true, on, yes or unset:
 * on). Any other value warns once on stderr and the hand-off stays on.
 */
export function handoffOffByEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  return !envSwitch(env, 'AGENTKEEP_HOOK_HANDOFF', true, 'the hook hand-off');
}

/** Whether `dir` is a real folder of this user that nobody else may enter (a server's socket in it is ours). */
export function privateDir(dir: string): boolean {
  try {
    const st = fs.lstatSync(dir);
    const uid = typeof process.getuid === 'function' ? process.getuid() : st.uid;
    return st.isDirectory() && st.uid === uid && (st.mode & 0o077) === 0;
  } catch {
    return false;
  }
}

/** One request to one socket: the answer, or why not (`accepted`: the server took the call). */
function ask(
  sock: string,
  req: HandoffRequest,
  waitMs: number,
): Promise<{ answer: HandoffAnswer } | { why: string; accepted: boolean }> {
  return new Promise((resolve) => {
    let accepted = false;
    let settled = false;
    let buf = '';
    const c = net.createConnection(sock);
    const finish = (r: { answer: HandoffAnswer } | { why: string; accepted: boolean }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(acceptTimer);
      clearTimeout(answerTimer);
      c.destroy();
      resolve(r);
    };
    const acceptTimer = setTimeout(
      () => finish({ why: `not accepted within ${ACCEPT_TIMEOUT_MS} ms`, accepted }),
      ACCEPT_TIMEOUT_MS,
    );
    const answerTimer = setTimeout(() => finish({ why: `no answer within ${waitMs} ms`, accepted }), waitMs);
    c.on('connect', () => c.write(`${JSON.stringify(req)}\n`));
    c.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let m: Partial<HandoffAnswer> & { accepted?: boolean };
        try {
          m = JSON.parse(line) as typeof m;
        } catch {
          return finish({ why: 'an answer that is not JSON', accepted });
        }
        if (m?.v !== 1) return finish({ why: 'an answer of another version', accepted });
        if (!accepted) {
          if (m.accepted !== true) {
            const because = typeof (m as { why?: unknown }).why === 'string' ? `: ${(m as { why: string }).why}` : '';
            return finish({ why: `the server did not accept the call${because}`, accepted });
          }
          accepted = true;
          clearTimeout(acceptTimer);
        } else if (Array.isArray(m.out) && Array.isArray(m.err)) return finish({ answer: m as HandoffAnswer });
        else return finish({ why: 'an answer without out and err', accepted });
      }
    });
    c.on('error', (e: NodeJS.ErrnoException) => finish({ why: e.code ?? e.message, accepted }));
    c.on('close', () => finish({ why: 'the server closed the connection without an answer', accepted }));
  });
}

/**
 * Hand the call to a running server of `stateDir`, if there is one (see the module comment).
 * Sockets of processes that are gone are removed; an entry that is not a socket of this user (a symbolic
 * link, say) or whose path is too long for a socket address is skipped. Never throws.
 * @param waitMs how long to wait for an answer in all (below the hook's budget)
 * @returns the answer, or undefined with the reasons (for AGENTKEEP_DEBUG) when the hook must do it itself
 *   (`accepted`: a server took the call and did not answer: it may have made the pre restore point)
 */
export async function handOff(
  stateDir: string,
  req: Omit<HandoffRequest, 'v' | 'acceptBy' | 'state'>,
  waitMs: number,
): Promise<{ answer?: HandoffAnswer; why: string[]; accepted?: boolean }> {
  const dir = handoffDir(stateDir);
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => /^\d+\.sock$/.test(n));
  } catch {
    return { why: ['no server'] };
  }
  if (names.length && !privateDir(dir)) return { why: [`${dir} is not a folder of this user's only`] };
  const state = stateDirIdentity(stateDir);
  if (!state) return { why: [`${stateDir} is not a folder`] };
  const why: string[] = [];
  const deadline = Date.now() + waitMs;
  for (const n of names) {
    const sock = path.join(dir, n);
    const pid = Number(n.slice(0, -'.sock'.length));
    if (!pidAlive(pid)) {
      fs.rmSync(sock, { force: true });
      why.push(`${n}: its process is gone (removed)`);
      continue;
    }
    if (!socketPathFits(sock)) {
      why.push(`${n}: its path is longer than a socket address holds (${MAX_SOCKET_PATH_BYTES} bytes)`);
      continue;
    }
    if (!ownSocket(sock)) {
      why.push(`${n}: not a socket of this user (skipped)`);
      continue;
    }
    const left = deadline - Date.now();
    if (left <= 0) break;
    const r = await ask(sock, { v: 1, ...req, state, acceptBy: Date.now() + ACCEPT_TIMEOUT_MS - 300 }, left);
    if ('answer' in r) return { answer: r.answer, why };
    why.push(`${n}: ${r.why}`);
    // the server took the call: another one (or the hook itself) would only wait for its lock
    if (r.accepted) return { why, accepted: true };
  }
  return { why: why.length ? why : ['no server'] };
}
