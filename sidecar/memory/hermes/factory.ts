/**
 * The `hermes` store kind: `hermes:/abs/path/to/.hermes` (a Hermes home, HERMES_HOME; no options),
 * and where Hermes homes are found in a target's local root.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { isDirectory, localStorePath } from '../files';
import type { StoreFactory } from '../types';
import { HermesStore } from './index';

/** Parsed `hermes:` store: the absolute home directory. */
export interface HermesStoreOptions {
  home: string;
}

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
  forms: ['hermes:/abs/path/to/.hermes'],
  example: 'hermes:/home/me/.hermes',
  parse: (rest, spec) => ({ home: localStorePath(rest, spec, 'Use hermes:/abs/path/to/.hermes (an absolute path).') }),
  create: (p) => new HermesStore(p.options.home, p.spec),
  detect: detectHermes,
};
