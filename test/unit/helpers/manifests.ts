/**
 * Test-side reading of dir manifests, independent of sidecar/machine/dir: the objects a manifest
 * names. Format 1 lists its entries in the file; format 2 names a root tree object, and every tree
 * (JSON rows, see sidecar/machine/dir/tree.ts) names its files' contents and its subdirectories' trees.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

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
    if (!fs.existsSync(file)) return; // the caller reports it missing
    for (const r of JSON.parse(fs.readFileSync(file, 'utf8')) as Array<[string, string, ...unknown[]]>) {
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
    if (!elsewhere.has(h)) n += fs.statSync(path.join(stateDir, 'objects', h.slice(0, 2), h)).size;
  return n;
}

/** Bytes of the distinct objects the manifests `files` name (contents and, for format 2, trees). */
export function bytesOfAll(stateDir: string, files: string[]): number {
  let n = 0;
  for (const h of new Set(files.flatMap((f) => manifestObjects(stateDir, f).map((o) => o.hash))))
    n += fs.statSync(path.join(stateDir, 'objects', h.slice(0, 2), h)).size;
  return n;
}

/** Bytes of the distinct objects `files` name that none of `others` names (what deleting them all frees). */
export function bytesOnlyInAll(stateDir: string, files: string[], others: string[]): number {
  const elsewhere = new Set(others.flatMap((f) => manifestObjects(stateDir, f).map((o) => o.hash)));
  let n = 0;
  for (const h of new Set(files.flatMap((f) => manifestObjects(stateDir, f).map((o) => o.hash))))
    if (!elsewhere.has(h)) n += fs.statSync(path.join(stateDir, 'objects', h.slice(0, 2), h)).size;
  return n;
}
