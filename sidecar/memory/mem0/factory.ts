/**
 * The `mem0` store kind: `mem0:/abs/dir[?qdrant=/abs/path][&collection=name]` (mem0's directory,
 * $MEM0_DIR or ~/.mem0, holding history.db; `qdrant` = the local Qdrant storage when it is not
 * `<dir>/qdrant`), or a directory on another machine, `mem0:ssh://user@host[:port]/abs/dir` (the
 * same options, paths on that machine), and where mem0 directories are found in a target's local root.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from '../../core/errors';
import { checkStoreOptions, splitStoreOptions, storePlace, transportOf } from '../files';
import type { GuestAgentPlace } from '../transport/guestLocation';
import { SSH_OPTIONS, type SshLocation } from '../transport/location';
import type { StoreFactory } from '../types';
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
    `${SSH_FORM}[?qdrant=/abs/path]`,
    'mem0:qga:/abs/qga.sock:/abs/dir',
    'mem0:pve-agent://HOST[:PORT]/NODE/VMID/abs/dir',
  ],
  example: EXAMPLE,
  parse: (rest, spec) => {
    const { path: p, params } = splitStoreOptions(rest);
    const place = storePlace(p, params, spec, `Use an absolute path, e.g. ${EXAMPLE}.`, SSH_FORM);
    const dir = place.path;
    const own = ['qdrant', 'collection'];
    checkStoreOptions('mem0', params, spec, place.ssh ? [...own, ...SSH_OPTIONS] : own, EXAMPLE);
    const qdrant = params.get('qdrant') || undefined;
    if (qdrant && !path.isAbsolute(qdrant))
      throw new AgentKeepError(
        'BadStore',
        `Qdrant path "${qdrant}" in "${spec}" is not absolute.`,
        `Use e.g. ${EXAMPLE}.`,
      );
    return {
      dir,
      qdrant: qdrant && path.posix.resolve(qdrant),
      collection: params.get('collection') || undefined,
      ...(place.ssh ? { ssh: place.ssh } : {}),
      ...(place.guest ? { guest: place.guest } : {}),
    };
  },
  create: (p) => {
    const opts = { qdrant: p.options.qdrant, collection: p.options.collection };
    return new Mem0Store(p.options.dir, p.spec, opts, transportOf(p.options));
  },
  detect: detectMem0,
};
