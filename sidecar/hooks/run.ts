/**
 * The full part of the agent hooks (bundled as out/hook-full.js, loaded by ./entry.ts only for a call
 * that needs it): restore points around a risky tool call, paired by the call, and the record of a
 * memory tool call. Everything is time-boxed (the budget is below the hook timeout `hook install`
 * sets) and fails open: a restore point that cannot be taken (target busy, disk full, hypervisor
 * unreachable, over budget) lets the call through with one line on stderr and a warning that
 * agent.status and `restore-point list` show; only an agent set to fail closed gets its pre call
 * blocked instead (Hermes' block JSON on stdout; Agent Zero's extension raises it to the agent).
 *
 * Pending pairs live in `<stateDir>/hooks/pending/<pair key>.json` (./call.ts pairKeys: under the tool
 * call id's key and the input's key, see PendingPair): written by
 * the pre call, consumed by the post call.
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ParamsOf, RestorePoint } from '../protocol';
import { escapeControls } from '../protocol/format';
import { Core } from '../core/core';
import type { CoreOptions } from '../core/service';
import { call as callCore } from '../core/dispatch';
import { asAgentKeepError } from '../core/errors';
import { writeJsonAtomic } from '../core/fsutil';
import { recordHookWarning } from '../core/hookWarnings';
import { resolveHookAgent, type HookAgent } from './agents';
import { pairKeys, type HookAgentKind, type HookCall } from './call';
import { hookStateDir, type HookArgs, type HookIO } from './entry';
import type { Verdict } from './verdict';

type Acting = Exclude<Verdict, { action: 'none' }>;

/** What the pre call leaves for its post call. */
interface Pending {
  kind: 'restore-point' | 'memory';
  time: string;
  /** The pre's tool call id, when it had one (a post with another id is another call) */
  toolCallId?: string;
  /** The files this record was written to (its id's and its input's key) */
  files?: string[];
  /** restore-point: the pre restore point and its target */
  pre?: string;
  target?: string;
  /** memory: the memory file and its content before the call */
  file?: string;
  before?: string;
}

/** Pending pairs older than this are stale (the agent died between pre and post) and removed. */
const PENDING_MAX_AGE_MS = 24 * 3600 * 1000;

const AGENT_LABEL: Record<HookAgentKind, string> = { hermes: 'Hermes', 'agent-zero': 'Agent Zero' };

/** First line of a command or path, at most 80 chars (labels). */
function short(s: string): string {
  const l = s.split('\n')[0].trim();
  return l.length > 80 ? `${l.slice(0, 77)}…` : l;
}

/** The reason text every front end shows: "by the agent hermes in session sess_1 (terminal): pip install requests". */
export function reasonText(agent: string, call: HookCall, detail: string): string {
  return `by the agent ${agent} in session ${call.session || '(none)'} (${call.tool}): ${short(detail)}`;
}

/**
 * The Hermes home of an agent: its first hermes: store, else HERMES_HOME, else ~/.hermes (HOME of
 * `env`: a handed-off call's is the hook's, ./handoffServer.ts).
 */
function hermesHome(a: HookAgent, env: NodeJS.ProcessEnv): string {
  const s = a.stores.find((x) => x.startsWith('hermes:'));
  return s ? s.slice('hermes:'.length) : env.HERMES_HOME || path.join(env.HOME || os.homedir(), '.hermes');
}

/** Reject after `ms` with a message naming the budget. */
function overBudget(ms: number, what: string): { promise: Promise<never>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} took longer than the hook's budget of ${Math.round(ms / 1000)} s`)),
      ms,
    );
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

/**
 * Act on one call (see the module comment). Never throws for a failed restore point: it warns (or
 * blocks, fail-closed pre calls only).
 * @param budgetMs how long it may take in all (restore point creation is aborted before that)
 * @param coreOptions more options for the Cores it makes (a server running a handed-off call,
 *   ./handoffServer.ts: its change journal and its last snapshots)
 * @param opts.afterHandoff a server took this call and did not answer (killed, say): a pre whose
 *   pending record (same tool call id) already names a pre restore point reuses it instead of making a second
 */
export async function runHook(
  call: HookCall,
  verdict: Acting,
  args: HookArgs,
  io: HookIO,
  budgetMs: number,
  env: NodeJS.ProcessEnv = process.env,
  coreOptions: Pick<CoreOptions, 'changeJournal' | 'lastSnapshots'> = {},
  opts: { afterHandoff?: boolean } = {},
): Promise<void> {
  const stateDir = hookStateDir(args, env);
  const agent = await resolveHookAgent(stateDir, args);
  const pendingDir = path.join(stateDir, 'hooks', 'pending');
  const pendingFile = new PendingPair(pendingDir, args.kind, call);
  const started = Date.now();
  const left = (): number => Math.max(500, budgetMs - (Date.now() - started));

  if (verdict.action === 'memory') {
    await memoryCall(call, verdict, agent, args, io, env, pendingFile, stateDir, coreOptions);
    return;
  }

  const reason: NonNullable<RestorePoint['reason']> = {
    origin: 'hook',
    agent: agent.name,
    ...(call.session ? { session: call.session } : {}),
    tool: call.tool,
    ...(call.toolCallId ? { toolCallId: call.toolCallId } : {}),
    ...(verdict.what === 'command'
      ? { command: verdict.detail, class: verdict.class, risk: verdict.why }
      : { path: verdict.detail }),
    text: reasonText(agent.name, call, verdict.detail),
  };
  let pending: Pending | undefined;
  if (call.event === 'pre' && opts.afterHandoff && call.toolCallId) {
    const made = await pendingFile.read();
    if (made?.kind === 'restore-point' && made.pre && made.toolCallId === call.toolCallId) {
      io.err(
        `agentkeep: restore point ${made.pre} before ${call.tool}: ${escapeControls(short(verdict.detail))} (made by the running sidecar, which did not answer)`,
      );
      return;
    }
  }
  if (call.event === 'post') {
    pending = await pendingFile.read();
    // no pre restore point (it failed, or the pre hook did not run): nothing to pair with
    if (!pending?.pre) return;
  }
  const abort = new AbortController();
  const core = new Core({
    ...coreOptions,
    stateDir,
    lockTimeoutMs: Math.min(5000, Math.floor(budgetMs / 3)),
    signal: abort.signal,
  });
  const params: ParamsOf<'restorePointCreate'> = {
    target: agent.target,
    ...(agent.stores.length ? { stores: agent.stores } : {}),
    kind: call.event,
    label: `${AGENT_LABEL[args.kind]} ${call.event === 'pre' ? 'before' : 'after'}: ${short(verdict.detail)}`,
    reason,
    ...(pending?.pre ? { pairOf: pending.pre } : {}),
  };
  const budget = overBudget(Math.max(500, left() - 1000), 'the restore point');
  try {
    const rp = await Promise.race([callCore(core, 'restorePointCreate', params), budget.promise]);
    if (call.event === 'pre') {
      await pendingFile.write({
        kind: 'restore-point',
        time: new Date().toISOString(),
        pre: rp.id,
        target: agent.target,
      } satisfies Pending);
      io.err(`agentkeep: restore point ${rp.id} before ${call.tool}: ${escapeControls(short(verdict.detail))}`);
    } else {
      await pendingFile.remove(pending);
      io.err(`agentkeep: restore point ${rp.id} after ${call.tool} (pair of ${pending!.pre})`);
    }
  } catch (e) {
    abort.abort();
    const why = asAgentKeepError(e).oneLine().replace(/\s+/g, ' ');
    const block = call.event === 'pre' && agent.failClosed;
    await recordHookWarning(stateDir, {
      time: new Date().toISOString(),
      target: agent.target,
      agent: agent.name,
      tool: call.tool,
      ...(call.session ? { session: call.session } : {}),
      ...(call.toolCallId ? { toolCallId: call.toolCallId } : {}),
      phase: call.event,
      blocked: block,
      message: `No ${call.event} restore point for ${call.tool} ${short(verdict.detail)}: ${why}`,
    }).catch(() => undefined);
    if (call.event === 'post') await pendingFile.remove(pending).catch(() => undefined);
    if (block) {
      const msg =
        `AgentKeep could not take a restore point before this ${call.tool} call (${why}), and agent ${agent.name} is set to fail closed, ` +
        `so the call was blocked and nothing ran. Fix the cause and try again, or let calls through without a restore point: ` +
        `agentkeep hook settings --agent ${agent.name} --fail-open.`;
      io.out(JSON.stringify({ decision: 'block', reason: msg }));
      io.err(`agentkeep: blocked ${call.tool} (fail-closed): no restore point: ${why}`);
    } else {
      io.err(
        `agentkeep: warning: no ${call.event} restore point for ${call.tool} (${why}); the call goes ahead. agentkeep restore-point list shows this warning.`,
      );
    }
  } finally {
    budget.cancel();
  }
  await sweepPending(pendingDir);
}

/** The memory tool: keep the file's content before the call (pre), record before/after (post). */
async function memoryCall(
  call: HookCall,
  v: Extract<Acting, { action: 'memory' }>,
  agent: HookAgent,
  args: HookArgs,
  io: HookIO,
  env: NodeJS.ProcessEnv,
  pendingFile: PendingPair,
  stateDir: string,
  coreOptions: Pick<CoreOptions, 'changeJournal' | 'lastSnapshots'>,
): Promise<void> {
  const home = hermesHome(agent, env);
  const file = path.join(home, 'memories', v.target === 'user' ? 'USER.md' : 'MEMORY.md');
  const read = (): Promise<string> => fs.readFile(file, 'utf8').catch(() => '');
  if (call.event === 'pre') {
    await pendingFile.write({
      kind: 'memory',
      time: new Date().toISOString(),
      file,
      before: await read(),
    } satisfies Pending);
    return;
  }
  const pending = await pendingFile.read();
  await pendingFile.remove(pending);
  if (pending?.kind !== 'memory' || pending.before === undefined) {
    io.err(
      `agentkeep: note: no pre_tool_call record for this memory call (the pre hook is not installed or did not run); its write is not logged.`,
    );
    return;
  }
  try {
    const core = new Core({ ...coreOptions, stateDir });
    await callCore(core, 'memoryRecordWrite', {
      store: `${args.kind === 'hermes' ? 'hermes' : 'hermes'}:${home}`,
      file,
      action: v.memoryAction,
      target: v.target,
      ...(v.content !== undefined ? { content: v.content } : {}),
      ...(v.oldText !== undefined ? { oldText: v.oldText } : {}),
      before: pending.before,
      after: await read(),
      agent: agent.name,
      ...(call.session ? { session: call.session } : {}),
      ...(call.toolCallId ? { toolCallId: call.toolCallId } : {}),
      tool: call.tool,
    });
  } catch (e) {
    const why = asAgentKeepError(e).oneLine();
    await recordHookWarning(stateDir, {
      time: new Date().toISOString(),
      target: agent.target,
      agent: agent.name,
      tool: call.tool,
      phase: 'memory',
      blocked: false,
      message: `The memory write was not logged: ${why}`,
    }).catch(() => undefined);
    io.err(`agentkeep: warning: the memory write was not logged (${why}).`);
  }
}

/**
 * The pending record of one call in `<stateDir>/hooks/pending/`: a pre writes it under both of its
 * keys (call.ts pairKeys), a post reads its id's key, else its input's key (accepted unless both
 * sides carry different tool call ids: two calls with the same input), and removes every file the
 * record was written to.
 */
class PendingPair {
  private readonly idFile?: string;
  private readonly inputFile: string;
  constructor(
    private readonly dir: string,
    kind: HookAgentKind,
    private readonly call: HookCall,
  ) {
    const k = pairKeys(kind, call);
    this.idFile = k.id ? path.join(dir, `${k.id}.json`) : undefined;
    this.inputFile = path.join(dir, `${k.input}.json`);
  }

  /** Write the record under both keys (each file atomically). */
  async write(rec: Pending): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const files = [...(this.idFile ? [this.idFile] : []), this.inputFile];
    const full: Pending = { ...rec, ...(this.call.toolCallId ? { toolCallId: this.call.toolCallId } : {}), files };
    for (const f of files) await writeJsonAtomic(f, full);
  }

  /** The pre's record for this post, if any. */
  async read(): Promise<Pending | undefined> {
    if (this.idFile) {
      const byId = await readPending(this.idFile);
      if (byId) return byId;
    }
    const byInput = await readPending(this.inputFile);
    if (!byInput) return undefined;
    const other = byInput.toolCallId && this.call.toolCallId && byInput.toolCallId !== this.call.toolCallId;
    return other ? undefined : byInput;
  }

  /** Remove the record's files (and this call's own keys). */
  async remove(rec?: Pending): Promise<void> {
    const files = new Set([...(rec?.files ?? []), ...(this.idFile ? [this.idFile] : [])]);
    if (!rec || !rec.toolCallId || !this.call.toolCallId || rec.toolCallId === this.call.toolCallId)
      files.add(this.inputFile);
    // only files in the pending folder (a record's `files` is data read back from disk)
    for (const f of files) if (path.dirname(f) === this.dir) await fs.rm(f, { force: true });
  }
}

async function readPending(file: string): Promise<Pending | undefined> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as Pending;
  } catch {
    return undefined;
  }
}

/** Remove pending pairs older than a day (their agent died between pre and post). */
async function sweepPending(dir: string): Promise<void> {
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  if (names.length < 50) return;
  for (const n of names) {
    const st = await fs.stat(path.join(dir, n)).catch(() => undefined);
    if (st && Date.now() - st.mtimeMs > PENDING_MAX_AGE_MS)
      await fs.rm(path.join(dir, n), { force: true }).catch(() => undefined);
  }
}
