/**
 * The `hermes` store kind: `hermes:/abs/path/to/.hermes` (a Hermes home, HERMES_HOME), one named
 * profile of it, `hermes:/abs/path/to/.hermes?profile=work` (the same store as
 * `hermes:/abs/path/to/.hermes/profiles/work`: what `hermes -p work` uses; `profile=default` is the
 * home itself), or a home on another machine over SSH, `hermes:ssh://user@host[:port]/abs/path/to/.hermes`
 * (options `?identity=/abs/key`, `&known_hosts=/abs/file`, `&profile=NAME`; see
 * sidecar/memory/transport/ssh.ts), and where Hermes homes are found in a target's local root.
 * Profiles as Hermes resolves them: NousResearch/hermes-agent hermes_constants.py @ 00067189
 * (`named_profile_home`: `<root>/profiles/<name>`, a name not starting with "."; `profiles/.deleted/<name>`
 * is the tombstone of a deleted profile) and hermes_cli/profiles.py (`_PROFILE_ID_RE`
 * `^[a-z0-9][a-z0-9_-]{0,63}$`, the root profile is "default").
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from '../../core/errors';
import {
  checkStoreOptions,
  isDirectory,
  isRemotePlace,
  localStorePath,
  splitStoreOptions,
  storePlace,
  transportOf,
  type StorePlace,
} from '../files';
import type { GuestAgentPlace } from '../transport/guestLocation';
import { isSshLocation, SSH_OPTIONS, type SshLocation } from '../transport/location';
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

/** Hermes' profile id rule (hermes_cli/profiles.py _PROFILE_ID_RE). */
export const PROFILE_ID_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/**
 * The home of profile `name` of Hermes root `home` (`default`: the root itself), on a POSIX path.
 * @throws AgentKeepError BadStore for a name Hermes would not accept
 */
export function profileHome(home: string, name: string, spec: string): string {
  if (name === 'default') return home;
  if (!PROFILE_ID_RE.test(name))
    throw new AgentKeepError(
      'BadStore',
      `Profile "${name}" in "${spec}" is not a Hermes profile name (lower-case letters, digits, "_" and "-", ` +
        'starting with a letter or digit, at most 64 characters).',
      'Use the name `hermes profile list` shows, e.g. hermes:/home/me/.hermes?profile=work.',
    );
  return path.posix.join(home, 'profiles', name);
}

/**
 * The named profiles of a Hermes root that Hermes would use: `profiles/<name>` directories whose name does
 * not start with "." and that have no tombstone in `profiles/.deleted/` (a profile being deleted). Sorted.
 */
async function profileDirs(root: string): Promise<string[]> {
  const dir = path.join(root, 'profiles');
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  const gone = new Set(await fs.readdir(path.join(dir, '.deleted')).catch(() => [] as string[]));
  return names
    .filter((n) => !n.startsWith('.') && !gone.has(n))
    .sort()
    .map((n) => path.join(dir, n));
}

/**
 * Hermes homes in a local directory tree: the tree itself when it is a Hermes home (memories/, or
 * config.yaml and SOUL.md) and its named profiles, `<root>/.hermes` and its named profiles
 * (profileDirs: `profiles/<name>`, not ".…" and not tombstoned); each only when HermesStore.check
 * passes, each its own store (own memories/, state.db, pending/). Store strings, in that order.
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
  const candidates = rootLooksHermes ? [localRoot, ...(await profileDirs(localRoot))] : [];
  const dot = path.join(localRoot, '.hermes');
  if (await isDirectory(dot)) candidates.push(dot, ...(await profileDirs(dot)));
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
    'hermes:/abs/path/to/.hermes?profile=NAME',
    `${SSH_FORM}[?identity=/abs/key][&profile=NAME]`,
    'hermes:qga:/abs/qga.sock:/abs/path/to/.hermes[?profile=NAME]',
    'hermes:pve-agent://HOST[:PORT]/NODE/VMID/abs/path/to/.hermes[?profile=NAME]',
  ],
  example: 'hermes:/home/me/.hermes',
  parse: (rest, spec) => {
    const hint = 'Use hermes:/abs/path/to/.hermes (an absolute path).';
    const { path: p, params } = splitStoreOptions(rest);
    const ssh = isSshLocation(rest);
    const remote = isRemotePlace(rest);
    const example = ssh
      ? 'hermes:ssh://root@10.0.0.5/root/.hermes?identity=/home/me/.ssh/id_ed25519'
      : remote
        ? 'hermes:pve-agent://pve.lan/pve1/101/root/.hermes?profile=work'
        : 'hermes:/home/me/.hermes?profile=work';
    checkStoreOptions('hermes', params, spec, ssh ? [...SSH_OPTIONS, 'profile'] : ['profile'], example);
    const place: StorePlace = remote
      ? storePlace(p, params, spec, hint, SSH_FORM)
      : { path: localStorePath(p, spec, hint) };
    const profile = params.get('profile');
    const home = profile ? profileHome(place.path, profile, spec) : place.path;
    return { home, ...(place.ssh ? { ssh: place.ssh } : {}), ...(place.guest ? { guest: place.guest } : {}) };
  },
  create: (p) => new HermesStore(p.options.home, p.spec, transportOf(p.options)),
  detect: detectHermes,
};
