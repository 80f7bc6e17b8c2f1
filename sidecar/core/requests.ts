/**
 * Restore requests of an agent (MCP restore_request, issue 15 item 5): one JSON file per request in
 * `<stateDir>/requests/<id>.json` (RestoreRequest of the protocol). A request never restores by
 * itself: request.approve (a person, through the CLI or a client) runs the normal restore. The one
 * exception is an agent whose settings allow scope-agent restores (allowAgentRestores, off by
 * default): request.create then restores at once and records `decidedBy: "auto"`.
 * Status changes hold `<stateDir>/locks/requests.lock`, so one request is never approved twice.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { ParamsOf, ResultOf, RestoreRequest } from '../protocol';
import type { CoreContext } from './context';
import { AgentKeepError, asAgentKeepError } from './errors';
import { readJsonIfExists, writeJsonAtomic } from './fsutil';
import { withLock } from './lock';
import { restoreRestorePoint } from './restore';
import { resolveTarget } from './target';

const ID = /^req_\d{8}_\d{6}_[0-9a-f]{4}$/;

function requestsDir(ctx: CoreContext): string {
  return path.join(ctx.stateDir, 'requests');
}

function requestFile(ctx: CoreContext, id: string): string {
  if (!ID.test(id))
    throw new AgentKeepError(
      'InvalidParams',
      `"${id}" is not a restore request id (req_YYYYMMDD_HHMMSS_xxxx).`,
      'See agentkeep request list.',
    );
  return path.join(requestsDir(ctx), `${id}.json`);
}

function newId(now = new Date()): string {
  const s = now.toISOString().replace(/[-:]/g, '').replace('T', '_').slice(0, 15);
  return `req_${s}_${randomBytes(2).toString('hex')}`;
}

async function lock<T>(ctx: CoreContext, fn: () => Promise<T>): Promise<T> {
  await fs.mkdir(ctx.layout.locksDir, { recursive: true, mode: 0o700 });
  return withLock(
    path.join(ctx.layout.locksDir, 'requests.lock'),
    { op: 'restore request', what: 'Restore requests', timeoutMs: 10_000 },
    fn,
  );
}

async function read(ctx: CoreContext, id: string): Promise<RestoreRequest> {
  const r = await readJsonIfExists<RestoreRequest>(requestFile(ctx, id));
  if (!r) throw new AgentKeepError('InvalidParams', `No restore request ${id}.`, 'See agentkeep request list.');
  return r;
}

/** Run an approved request's restore and record the outcome (approved with its undo point, or failed). */
async function runRestore(ctx: CoreContext, r: RestoreRequest, by: string): Promise<ResultOf<'requestApprove'>> {
  const decidedAt = new Date().toISOString();
  try {
    const res = await restoreRestorePoint(ctx, {
      target: r.target,
      id: r.restorePoint,
      scope: r.scope,
      ...(r.stores?.length ? { stores: r.stores } : {}),
    });
    // an approved request always restores with its undo point (noUndoPoint is never passed here)
    const undo = res.undo;
    if (!undo) throw new AgentKeepError('Internal', `The restore of request ${r.id} made no undo point.`);
    const done: RestoreRequest = { ...r, status: 'approved', decidedAt, decidedBy: by, undo: undo.id };
    await writeJsonAtomic(requestFile(ctx, r.id), done, { pretty: true });
    return { request: done, restore: { undo: undo.id, changes: res.changes } };
  } catch (e) {
    const failed: RestoreRequest = {
      ...r,
      status: 'failed',
      decidedAt,
      decidedBy: by,
      note: asAgentKeepError(e).oneLine(),
    };
    await writeJsonAtomic(requestFile(ctx, r.id), failed, { pretty: true });
    throw e;
  }
}

/**
 * request.create: store the agent's request (checked first: the target parses and the restore point
 * exists). With allowAgentRestores and scope agent, the restore runs at once (decidedBy "auto").
 * @throws BadTarget, RestorePointNotFound, InvalidParams
 */
export async function createRequest(
  ctx: CoreContext,
  p: ParamsOf<'requestCreate'>,
): Promise<ResultOf<'requestCreate'>> {
  const t = await ctx.open(p.target, { mustExist: false });
  await t.journal.get(p.restorePoint);
  const r: RestoreRequest = {
    id: newId(),
    createdAt: new Date().toISOString(),
    target: t.target.spec,
    ...(p.stores?.length ? { stores: p.stores } : {}),
    restorePoint: p.restorePoint,
    scope: p.scope,
    reason: p.reason.trim(),
    ...(p.agent ? { agent: p.agent } : {}),
    ...(p.session ? { session: p.session } : {}),
    status: 'pending',
  };
  await fs.mkdir(requestsDir(ctx), { recursive: true, mode: 0o700 });
  await writeJsonAtomic(requestFile(ctx, r.id), r, { pretty: true });
  ctx.changed(r.target, 'restorePoints');
  if (p.allowAgentRestores && p.scope === 'agent') {
    return (await lock(ctx, () => runRestore(ctx, r, 'auto'))).request;
  }
  return r;
}

/** request.list: newest first, optionally one target's or one status's. */
export async function listRequests(ctx: CoreContext, p: ParamsOf<'requestList'>): Promise<ResultOf<'requestList'>> {
  const names = await fs.readdir(requestsDir(ctx)).catch(() => [] as string[]);
  const want = p.target ? (await resolveTarget(p.target)).spec : undefined;
  const out: RestoreRequest[] = [];
  for (const n of names
    .filter((x) => x.endsWith('.json'))
    .sort()
    .reverse()) {
    const r = await readJsonIfExists<RestoreRequest>(path.join(requestsDir(ctx), n)).catch(() => undefined);
    if (!r || (want && r.target !== want) || (p.status && r.status !== p.status)) continue;
    out.push(r);
  }
  return out;
}

function notPending(r: RestoreRequest): AgentKeepError {
  return new AgentKeepError(
    'InvalidParams',
    `Restore request ${r.id} is ${r.status}${r.decidedAt ? ` (since ${r.decidedAt})` : ''}, not pending.`,
    'Only pending requests can be approved or denied: see agentkeep request list.',
  );
}

/** request.approve: run the restore of a pending request. @throws InvalidParams (not pending), the restore's errors */
export async function approveRequest(
  ctx: CoreContext,
  p: ParamsOf<'requestApprove'>,
): Promise<ResultOf<'requestApprove'>> {
  return lock(ctx, async () => {
    const r = await read(ctx, p.id);
    if (r.status !== 'pending') throw notPending(r);
    return runRestore(ctx, r, 'person');
  });
}

/** request.deny: mark a pending request denied (nothing is restored). @throws InvalidParams (not pending) */
export async function denyRequest(ctx: CoreContext, p: ParamsOf<'requestDeny'>): Promise<ResultOf<'requestDeny'>> {
  return lock(ctx, async () => {
    const r = await read(ctx, p.id);
    if (r.status !== 'pending') throw notPending(r);
    const denied: RestoreRequest = {
      ...r,
      status: 'denied',
      decidedAt: new Date().toISOString(),
      decidedBy: 'person',
      ...(p.note ? { note: p.note } : {}),
    };
    await writeJsonAtomic(requestFile(ctx, r.id), denied, { pretty: true });
    ctx.changed(r.target, 'restorePoints');
    return denied;
  });
}
