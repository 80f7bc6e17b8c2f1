/**
 * The `hermes` store kind: `hermes:/abs/path/to/.hermes` (a Hermes home, HERMES_HOME; no options),
 * or a home on another machine over SSH, `hermes:ssh://user@host[:port]/abs/path/to/.hermes`
 * (options `?identity=/abs/key`, `&known_hosts=/abs/file`; see sidecar/memory/transport/ssh.ts), and
 * where Hermes homes are found in a target's local root.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import {
  checkStoreOptions,
  isDirectory,
  isRemotePlace,
  localStorePath,
  splitStoreOptions,
  storePlace,
  transportOf,
} from '../files';
import type { GuestAgentPlace } from '../transport/guestLocation';
import { SSH_OPTIONS, type SshLocation } from '../transport/location';
import type { StoreFactory } from '../types';
import { HermesStore } from './index';

/** Parsed `hermes:` store: the absolute home directory, and how to reach its machine when not this one. */
export interface HermesStoreOptions {
  home: string;
  ssh?: SshLocation;
  /** A home inside a VM reached through its QEMU guest agent. */
  guest?: GuestAgentPlace;
}

const SSH_FORM = 'hermes:ssh://user@host[:port]/abs/path/to/.hermes';

/**
 * Hermes homes in a local directory tree: the tree itself when it is a Hermes home (memories/, or
 * config.yaml and SOUL.md), `<root>/.hermes`, and every `<root>/.hermes/profiles/<name>`; each only
 * when HermesStore.check passes. Store strings, in that order.
 */
async function detectHermes(localRoot: string): Promise<string[]> {
  const exists = (p: string): Promise<boolean> =>
    fs.lstat(p).then(
      () => true,
      () => false,
    );
  const rootLooksHermes =
    (await isDirectory(path.join(localRoot, 'memories'))) ||
    ((await exists(path.join(localRoot, 'config.yaml'))) && (await exists(path.join(localRoot, 'SOUL.md'))));
  const candidates = rootLooksHermes ? [localRoot] : [];
  const dot = path.join(localRoot, '.hermes');
  if (await isDirectory(dot)) {
    candidates.push(dot);
    const names = await fs.readdir(path.join(dot, 'profiles')).catch(() => [] as string[]);
    for (const n of names.sort()) candidates.push(path.join(dot, 'profiles', n));
  }
  const out: string[] = [];
  for (const c of candidates)
    if (
      await new HermesStore(c).check().then(
        () => true,
        () => false,
      )
    )
      out.push(`hermes:${c}`);
  return out;
}

export const hermesStore: StoreFactory<HermesStoreOptions> = {
  kind: 'hermes',
  kindName: 'Hermes',
  forms: [
    'hermes:/abs/path/to/.hermes',
    `${SSH_FORM}[?identity=/abs/key]`,
    'hermes:qga:/abs/qga.sock:/abs/path/to/.hermes',
    'hermes:pve-agent://HOST[:PORT]/NODE/VMID/abs/path/to/.hermes',
  ],
  example: 'hermes:/home/me/.hermes',
  parse: (rest, spec) => {
    const hint = 'Use hermes:/abs/path/to/.hermes (an absolute path).';
    if (!isRemotePlace(rest)) return { home: localStorePath(rest, spec, hint) };
    const { path: p, params } = splitStoreOptions(rest);
    const place = storePlace(p, params, spec, hint, SSH_FORM);
    const example = place.guest
      ? 'hermes:pve-agent://pve.lan/pve1/101/root/.hermes'
      : 'hermes:ssh://root@10.0.0.5/root/.hermes?identity=/home/me/.ssh/id_ed25519';
    checkStoreOptions('hermes', params, spec, place.guest ? [] : SSH_OPTIONS, example);
    return {
      home: place.path,
      ...(place.ssh ? { ssh: place.ssh } : {}),
      ...(place.guest ? { guest: place.guest } : {}),
    };
  },
  create: (p) => new HermesStore(p.options.home, p.spec, transportOf(p.options)),
  detect: detectHermes,
};
