/** Test helpers: real damage to real SQLite files (what a bad disk or a torn copy leaves). */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';

/**
 * Overwrite pages `from`..`to` (0-based, inclusive) of a SQLite file with a fixed garbage pattern:
 * a damaged middle (the header page and the last pages stay intact).
 */
export async function damagePages(file: string, from: number, to: number): Promise<void> {
  const buf = await fs.readFile(file);
  const pageSize = buf.readUInt16BE(16) === 1 ? 65536 : buf.readUInt16BE(16);
  assert.ok(buf.length >= (to + 2) * pageSize, `${file} has more than ${to + 1} pages`);
  for (let p = from; p <= to; p++) for (let i = 0; i < pageSize; i++) buf[p * pageSize + i] = (i * 37 + p) & 0xff;
  await fs.writeFile(file, buf);
}
