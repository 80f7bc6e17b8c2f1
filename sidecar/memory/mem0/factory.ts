/**
 * The `mem0` store kind: `mem0:/abs/dir[?qdrant=/abs/path][&collection=name]` (mem0's directory,
 * $MEM0_DIR or ~/.mem0, holding history.db; `qdrant` = the local Qdrant storage when it is not
 * `<dir>/qdrant`), `&api=http://host:port` (mem0's REST server, which enables edits; default env
 * AGENTKEEP_MEM0_URL, key env AGENTKEEP_MEM0_API_KEY, never in the store string), `&user_id=NAME`
 * (or agent_id / run_id: whom memory.add files a memory under when it names nobody), or a directory on
 * another machine, `mem0:ssh://user@host[:port]/abs/dir` (the same options, paths on that machine; the
 * API URL as reachable from the sidecar), and where mem0 directories are found in a target's local root.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from '../../core/errors';
import { checkStoreOptions, splitStoreOptions, storePlace, transportOf } from '../files';
import type { GuestAgentPlace } from '../transport/guestLocation';
import { SSH_OPTIONS, type SshLocation } from '../transport/location';
import type { StoreFactory } from '../types';
import type { Mem0Scope } from './api';
import { Mem0Store } from './index';

const EXAMPLE = 'mem0:/home/me/.mem0?qdrant=/home/me/.mem0/qdrant';

/** Parsed `mem0:` store. */
export interface Mem0StoreOptions {
  dir: string;
  qdrant?: string;
  collection?: string;
  /** How to reach the directory's machine when it is not this one (`mem0:ssh://…`). */
  ssh?: SshLocation;
  /** A directory inside a VM reached through its QEMU guest agent. */
  guest?: GuestAgentPlace;
  /** mem0's REST server URL (`?api=`). */
  api?: string;
  /** Default owner of added memories (`user_id`, `agent_id`, `run_id` options). */
  scope?: Mem0Scope;
}

const SSH_FORM = 'mem0:ssh://user@host[:port]/abs/dir';

/** Whether `file` starts with the SQLite header ("SQLite format 3\0"). */
async function isSqlite(file: string): Promise<boolean> {
  const fh = await fs.open(file, 'r').catch(() => undefined);
  if (!fh) return false;
  try {
    const buf = Buffer.alloc(16);
    const { bytesRead } = await fh.read(buf, 0, 16, 0);
    return bytesRead === 16 && buf.toString('latin1') === 'SQLite format 3\0';
  } finally {
    await fh.close();
  }
}

/**
 * mem0 directories in a local directory tree: `<root>/.mem0` (mem0's default directory in a home)
 * when its history.db is a SQLite database: the name alone is no sure sign. The Qdrant storage is
 * not guessed (mem0's default /tmp/qdrant is machine-wide): name it with ?qdrant= to capture it.
 */
async function detectMem0(localRoot: string): Promise<string[]> {
  const dir = path.join(localRoot, '.mem0');
  return (await isSqlite(path.join(dir, 'history.db'))) ? [`mem0:${dir}`] : [];
}

export const mem0Store: StoreFactory<Mem0StoreOptions> = {
  kind: 'mem0',
  kindName: 'mem0',
  forms: [
    'mem0:/abs/dir',
    'mem0:/abs/dir?qdrant=/abs/path&collection=NAME',
    'mem0:/abs/dir?api=http://HOST:PORT[&user_id=NAME]',
    `${SSH_FORM}[?qdrant=/abs/path][&api=http://HOST:PORT]`,
    'mem0:qga:/abs/qga.sock:/abs/dir',
    'mem0:pve-agent://HOST[:PORT]/NODE/VMID/abs/dir',
  ],
  example: EXAMPLE,
  parse: (rest, spec) => {
    const { path: p, params } = splitStoreOptions(rest);
    const place = storePlace(p, params, spec, `Use an absolute path, e.g. ${EXAMPLE}.`, SSH_FORM);
    const dir = place.path;
    const own = ['qdrant', 'collection', 'api', 'user_id', 'agent_id', 'run_id'];
    checkStoreOptions('mem0', params, spec, place.ssh ? [...own, ...SSH_OPTIONS] : own, EXAMPLE);
    const qdrant = params.get('qdrant') || undefined;
    if (qdrant && !path.isAbsolute(qdrant))
      throw new AgentKeepError(
        'BadStore',
        `Qdrant path "${qdrant}" in "${spec}" is not absolute.`,
        `Use e.g. ${EXAMPLE}.`,
      );
    const api = params.get('api') || undefined;
    if (api && !/^https?:\/\/[^/]/.test(api))
      throw new AgentKeepError(
        'BadStore',
        `mem0 API URL "${api}" in "${spec}" is not an http(s) URL.`,
        "Give mem0's REST server address, e.g. mem0:/home/me/.mem0?api=http://127.0.0.1:8888.",
      );
    const scope: Mem0Scope = {};
    for (const k of ['user_id', 'agent_id', 'run_id'] as const) if (params.get(k)) scope[k] = params.get(k)!;
    return {
      dir,
      qdrant: qdrant && path.posix.resolve(qdrant),
      collection: params.get('collection') || undefined,
      ...(place.ssh ? { ssh: place.ssh } : {}),
      ...(place.guest ? { guest: place.guest } : {}),
      ...(api ? { api } : {}),
      ...(Object.keys(scope).length ? { scope } : {}),
    };
  },
  create: (p) => {
    const { qdrant, collection, api, scope } = p.options;
    const opts = { qdrant, collection, ...(api ? { api } : {}), ...(scope ? { scope } : {}) };
    return new Mem0Store(p.options.dir, p.spec, opts, transportOf(p.options));
  },
  detect: detectMem0,
};
