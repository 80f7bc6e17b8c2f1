/**
 * Test-side reading of dir manifests, independent of sidecar/machine/dir: the objects a manifest
 * names. Format 1 lists its entries in the file; format 2 names a root tree object, and every tree
 * (JSON rows, see sidecar/machine/dir/tree.ts) names its files' contents and its subdirectories' trees.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * An object from the packs (`objects/pack/*.pack`: "AKPACK01", the objects, 44-byte index records of
 * sha256 + u64 offset + u32 length, a 52-byte trailer of index offset u64, count u32, index sha256,
 * "AKPACKIX"), read here without the sidecar's code; undefined when no pack holds it.
 */
export function packedObject(stateDir: string, hash: string): Buffer | undefined {
  const dir = path.join(stateDir, 'objects', 'pack');
  for (const n of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    const buf = fs.readFileSync(path.join(dir, n));
    if (buf.length < 60 || buf.toString('latin1', buf.length - 8) !== 'AKPACKIX') continue;
    const at = Number(buf.readBigUInt64LE(buf.length - 52));
    const count = buf.readUInt32LE(buf.length - 44);
    for (let k = 0; k < count; k++) {
      const r = at + k * 44;
      if (buf.toString('hex', r, r + 32) !== hash) continue;
      const off = Number(buf.readBigUInt64LE(r + 32));
      return buf.subarray(off, off + buf.readUInt32LE(r + 40));
    }
  }
  return undefined;
}

/** Bytes of object `hash`: its file, else its length in a pack (packedObject). @throws when it is in neither */
export function objectSize(stateDir: string, hash: string): number {
  const file = path.join(stateDir, 'objects', hash.slice(0, 2), hash);
  if (fs.existsSync(file)) return fs.statSync(file).size;
  const packed = packedObject(stateDir, hash);
  if (!packed) throw new Error(`object ${hash} is neither a file nor in a pack`);
  return packed.length;
}

/** Every object a manifest names, with what it is (`path` of the entry, or `tree of <dir>`), trees included. */
export function manifestObjects(stateDir: string, manifestFile: string): Array<{ hash: string; what: string }> {
  const m = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as {
    v: number;
    tree?: string;
    entries?: Array<{ p: string; h?: string }>;
  };
  if (m.v === 1) return (m.entries ?? []).filter((e) => e.h).map((e) => ({ hash: e.h as string, what: e.p }));
  const out: Array<{ hash: string; what: string }> = [];
  const walk = (hash: string, dir: string): void => {
    out.push({ hash, what: `tree of ${dir || '/'}` });
    const file = path.join(stateDir, 'objects', hash.slice(0, 2), hash);
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : packedObject(stateDir, hash)?.toString('utf8');
    if (text === undefined) return; // the caller reports it missing
    for (const r of JSON.parse(text) as Array<[string, string, ...unknown[]]>) {
      const p = dir ? `${dir}/${r[0]}` : r[0];
      if (r[1] === 'f') out.push({ hash: r[7] as string, what: p });
      else if (r[1] === 'd') walk(r[7] as string, p);
    }
  };
  walk(m.tree as string, '');
  return out;
}

/**
 * Bytes of the distinct objects manifest `file` names that none of `others` names (what deleting it
 * alone frees within the state dir): contents and, for format 2, trees.
 */
export function bytesOnlyIn(stateDir: string, file: string, others: string[]): number {
  const elsewhere = new Set(others.flatMap((f) => manifestObjects(stateDir, f).map((o) => o.hash)));
  let n = 0;
  for (const h of new Set(manifestObjects(stateDir, file).map((o) => o.hash)))
    if (!elsewhere.has(h)) n += objectSize(stateDir, h);
  return n;
}

/** Bytes of the distinct objects the manifests `files` name (contents and, for format 2, trees). */
export function bytesOfAll(stateDir: string, files: string[]): number {
  let n = 0;
  for (const h of new Set(files.flatMap((f) => manifestObjects(stateDir, f).map((o) => o.hash))))
    n += objectSize(stateDir, h);
  return n;
}

/** Bytes of the distinct objects `files` name that none of `others` names (what deleting them all frees). */
export function bytesOnlyInAll(stateDir: string, files: string[], others: string[]): number {
  const elsewhere = new Set(others.flatMap((f) => manifestObjects(stateDir, f).map((o) => o.hash)));
  let n = 0;
  for (const h of new Set(files.flatMap((f) => manifestObjects(stateDir, f).map((o) => o.hash))))
    if (!elsewhere.has(h)) n += objectSize(stateDir, h);
  return n;
}
