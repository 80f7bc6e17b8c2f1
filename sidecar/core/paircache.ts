/**
 * A persistent cache of "do the two sides of this pre/post pair differ?" for retention (a pair
 * whose sides do not differ does not count toward `keep`). The answer never changes once both
 * restore points exist, so it is kept in `journal/<targetKey>/.pairs.json` (post id -> same);
 * without it every create of a new CLI process compared every old pair's manifests again, and
 * create time grew with the number of restore points. A damaged or missing file only costs the
 * comparisons again.
 */
import { promises as fs, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { writeFileAtomic } from './fsutil';

/** File name of the cache inside a journal dir (a dot file: never a restore point). */
export const PAIR_CACHE_NAME = '.pairs.json';

/** The pair cache of one journal dir. */
export class PairCache {
  private loaded: Map<string, boolean> | undefined;
  private dirty = false;
  constructor(private readonly journalDir: string) {}

  private get file(): string {
    return path.join(this.journalDir, PAIR_CACHE_NAME);
  }

  private async map(): Promise<Map<string, boolean>> {
    if (this.loaded) return this.loaded;
    const m = new Map<string, boolean>();
    try {
      // (synchronously: one small file, read by every create's retention pass)
      const x = JSON.parse(readFileSync(this.file, 'utf8')) as Record<string, unknown>;
      for (const [k, v] of Object.entries(x)) if (typeof v === 'boolean') m.set(k, v);
    } catch {
      /* none yet, or damaged: compared again */
    }
    this.loaded = m;
    return m;
  }

  /** The cached answer for post `id`, if any. */
  async get(id: string): Promise<boolean | undefined> {
    return (await this.map()).get(id);
  }

  /** Remember the answer for post `id` (written by save). */
  async set(id: string, same: boolean): Promise<void> {
    (await this.map()).set(id, same);
    this.dirty = true;
  }

  /** Write the cache when it changed, keeping only the ids in `live` (restore points that still exist). */
  async save(live: Set<string>): Promise<void> {
    const m = await this.map();
    for (const k of [...m.keys()]) {
      if (!live.has(k)) {
        m.delete(k);
        this.dirty = true;
      }
    }
    if (!this.dirty) return;
    this.dirty = false;
    await fs.mkdir(this.journalDir, { recursive: true }).catch(() => undefined);
    await writeFileAtomic(this.file, JSON.stringify(Object.fromEntries(m)), { durable: false }).catch(() => undefined);
  }
}
