/**
 * Broken stores are reported as broken, never as empty or clean, and never written (issue 13 #5):
 * Hermes MEMORY.md that is a directory, a dangling symlink or not valid UTF-8, a state.db with a
 * damaged middle; Agent Zero index.pkl / index.faiss / embedding.json missing or damaged; mem0
 * history.db and Qdrant storage.sqlite damaged. Real files (copies of the fixtures, real SQLite read
 * through node-sqlite3-wasm, real damaged bytes), through the real CLI bundle where a user would
 * meet them.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Database } from 'node-sqlite3-wasm';
import { firstInvalidUtf8 } from '../../sidecar/memory/broken';
import { buildSidecar, cliRunner } from './helpers/sidecar';
import { copyFixture, hashTree } from './helpers/hermes-db';
import { FIXTURES } from './helpers/paths';

const HERMES = path.join(FIXTURES, 'memory', 'hermes');

/**
 * Overwrite pages `from`..`to` (0-based, inclusive) of a SQLite file with a fixed garbage pattern:
 * a damaged middle (the header page and the last pages stay intact).
 */
async function damagePages(file: string, from: number, to: number): Promise<void> {
  const buf = await fs.readFile(file);
  const pageSize = buf.readUInt16BE(16) === 1 ? 65536 : buf.readUInt16BE(16);
  assert.ok(buf.length >= (to + 2) * pageSize, `${file} has more than ${to + 1} pages`);
  for (let p = from; p <= to; p++) for (let i = 0; i < pageSize; i++) buf[p * pageSize + i] = (i * 37 + p) & 0xff;
  await fs.writeFile(file, buf);
}

/** What node-sqlite3-wasm's PRAGMA integrity_check says about a database: "ok", or the damage it found. */
function integrity(file: string): string {
  const db = new Database(file, { readOnly: true, fileMustExist: true });
  try {
    return String((db.get('PRAGMA integrity_check') as { integrity_check: unknown }).integrity_check);
  } catch (e) {
    return (e as Error).message;
  } finally {
    db.close();
  }
}

describe('broken stores: Hermes (real files, real CLI)', function () {
  this.timeout(60000);
  let tmp: string;
  let home: string;
  let store: string;
  const { ak, json } = cliRunner(() => path.join(tmp, 'state'));
  const mem = (): string => path.join(home, 'memories', 'MEMORY.md');
  const errOf = (r: { stdout: string; stderr: string }): { code: string; message: string; hint?: string } => JSON.parse(r.stdout || r.stderr).error;

  before(() => buildSidecar());
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-broken-'));
    home = path.join(tmp, 'hermes');
    await copyFixture(HERMES, home);
    store = `hermes:${home}`;
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('MEMORY.md that is a directory: broken (path and fix) in list, lint and show; add refused; USER.md still works', async () => {
    await fs.rm(mem());
    await fs.mkdir(mem());
    await fs.writeFile(path.join(mem(), 'stray.txt'), 'not an entry');
    const files = (await json('memory', 'list', '--store', store)).stores;
    const m = files.find((f: any) => f.kind === 'hermes-memory');
    assert.deepEqual(m.entries, []);
    assert.equal(m.usage, undefined, 'no "0/2200 chars": the usage is unknown');
    assert.equal(m.broken.code, 'file_error');
    assert.ok(m.broken.message.includes(mem()), m.broken.message);
    assert.match(m.broken.message, /is a directory, not a file/);
    assert.match(m.broken.hint, /mv .*MEMORY\.md .*MEMORY\.md\.dir/);
    const text = (await ak('memory', 'list', '--store', store)).stdout;
    assert.match(text, /MEMORY\.md \(hermes-memory\): BROKEN \(entries unknown; writes refused\)/);
    assert.doesNotMatch(text, /MEMORY\.md \(hermes-memory\): 0 entries/);
    assert.match(text, /\n {2}fix: Move it away/);

    const before = await hashTree(home);
    const add = await ak('memory', 'add', '--store', store, '--text', 'A new fact.', '--json');
    assert.equal(add.code, 1, add.stdout + add.stderr);
    assert.equal(errOf(add).code, 'file_error');
    assert.match(errOf(add).message, /is a directory, not a file/);
    assert.deepEqual(await hashTree(home), before, 'nothing written');
    assert.deepEqual(await fs.readdir(path.join(home, 'memories')).then((n) => n.filter((x) => x.includes('ak-tmp'))), [], 'no temp file left');

    const lint = (await json('memory', 'lint', '--store', store)).findings;
    const broken = lint.find((f: any) => f.kind === 'store' && f.severity === 'error');
    assert.ok(broken, JSON.stringify(lint));
    assert.match(broken.message, /MEMORY\.md is broken, so its entries could not be read or checked \(the file is not empty\)/);
    assert.deepEqual(broken.evidence, [mem()]);
    assert.match(broken.suggestion, /mv /);
    assert.equal(lint.filter((f: any) => f.message.includes('is a directory')).length, 1, 'said once, not again as a warning');

    // the other file of the home is not affected: shown and editable
    const user = files.find((f: any) => f.kind === 'hermes-user');
    assert.ok(user.entries.length > 0 && !user.broken);
    const shown = await json('memory', 'show', '--store', store, '--entry', user.entries[0].id);
    assert.equal(shown.entry.text, user.entries[0].text);
    await json('memory', 'add', '--store', store, '--file', 'user', '--text', 'Works on weekends.');
    assert.match(await fs.readFile(path.join(home, 'memories', 'USER.md'), 'utf8'), /\n§\nWorks on weekends\.$/);
  });

  it('MEMORY.md that is a dangling symlink: broken, and add does not replace the link', async () => {
    await fs.rm(mem());
    await fs.symlink(path.join(tmp, 'gone', 'MEMORY.md'), mem());
    const m = (await json('memory', 'list', '--store', store)).stores.find((f: any) => f.kind === 'hermes-memory');
    assert.match(m.broken.message, /is a symbolic link to .*gone\/MEMORY\.md, which does not exist/);
    const add = await ak('memory', 'add', '--store', store, '--text', 'A new fact.', '--json');
    assert.equal(add.code, 1);
    assert.ok((await fs.lstat(mem())).isSymbolicLink(), 'the link is still a link');
  });

  it('MEMORY.md with invalid UTF-8: broken with the byte offset of the first bad sequence; add and edit refused, the bytes never rewritten', async () => {
    const good = Buffer.from('Staging listens on port 2222.\n§\nUses pnpm, not npm.\n§\nCaf', 'utf8');
    const raw = Buffer.concat([good, Buffer.from([0xe9]), Buffer.from(' au lait every morning (Latin-1 byte).', 'utf8')]);
    await fs.writeFile(mem(), raw);
    // what Hermes' reader does with it: Python's strict utf-8 decoder fails at the same offset
    const py = execFileSync('python3', ['-c', 'import sys\ntry:\n  open(sys.argv[1], encoding="utf-8").read()\nexcept UnicodeDecodeError as e:\n  print(e.start)', mem()]).toString().trim();
    assert.equal(py, String(good.length));

    const m = (await json('memory', 'list', '--store', store)).stores.find((f: any) => f.kind === 'hermes-memory');
    assert.deepEqual(m.entries, [], 'no entries decoded with U+FFFD');
    assert.match(m.broken.message, new RegExp(`is not valid UTF-8: the first bad byte sequence is at byte offset ${good.length} \\(line 5, bytes e9 20 61 75\\)`));
    assert.match(m.broken.message, /Hermes reads this file as strict UTF-8/);
    assert.match(m.broken.hint, /iconv -f UTF-8 -t UTF-8 /);
    assert.doesNotMatch(JSON.stringify(m), /\uFFFD/);

    for (const args of [
      ['memory', 'add', '--store', store, '--text', 'One more fact.'],
      ['memory', 'add', '--store', store, '--file', 'memory', '--text', 'Another fact.'],
    ]) {
      const r = await ak(...args, '--json');
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.match(errOf(r).message, /not valid UTF-8/);
      assert.equal(errOf(r).code, 'file_error');
    }
    assert.deepEqual(await fs.readFile(mem()), raw, 'byte-identical: no U+FFFD written back');
    assert.deepEqual((await fs.readdir(path.join(home, 'memories'))).filter((n) => n.startsWith('MEMORY.md.bak')), [], 'no drift backup either');

    const lint = (await json('memory', 'lint', '--store', store)).findings;
    assert.ok(lint.some((f: any) => f.kind === 'store' && f.severity === 'error' && /MEMORY\.md is broken.*not valid UTF-8/.test(f.message)), JSON.stringify(lint));
    assert.ok(!lint.some((f: any) => f.kind === 'drift'), 'the bad bytes are not reported as a drift of U+FFFD text');
  });

  it('state.db with a damaged middle: lint keeps every finding that does not need provenance and names what did not run; show says why', async () => {
    const intact = (await json('memory', 'lint', '--store', store)).findings;
    const db = path.join(home, 'state.db');
    await damagePages(db, 3, 7);
    assert.match(integrity(db), /error code 11|malformed/, 'the copy is really damaged for SQLite (11 = SQLITE_CORRUPT)');
    const damaged = (await json('memory', 'lint', '--store', store)).findings;

    const needsHistory = (f: any): boolean => f.kind === 'untraceable' || f.kind === 'age';
    assert.ok(intact.filter(needsHistory).length >= 2, 'the intact store has findings that need state.db');
    const historyError = damaged.filter((f: any) => f.kind === 'store' && f.severity === 'error');
    assert.equal(historyError.length, 1, JSON.stringify(damaged));
    const h = historyError[0];
    assert.ok(h.message.includes(db), h.message);
    assert.match(h.message, /state\.db is damaged: database disk image is malformed/);
    assert.match(h.message, /Provenance is unavailable for \d+ entries/);
    assert.match(h.message, /did not run for them: untraceable .*; age of MEMORY\.md and USER\.md entries/);
    assert.match(h.suggestion, /sqlite3 .*state\.db "\.recover" \| sqlite3 .*state\.db\.recovered/);
    assert.match(h.suggestion, /restore-point restore <id> --scope agent/);
    // everything that does not depend on provenance is still there, unchanged
    assert.deepEqual(damaged.filter((f: any) => f !== h), intact.filter((f: any) => !needsHistory(f)));
    assert.equal(damaged.filter(needsHistory).length, 0, 'no entry is called untraceable on a history that could not be read');

    const id = (await json('memory', 'list', '--store', store)).stores[0].entries[0].id;
    const shown = await ak('memory', 'show', '--store', store, '--entry', id, '--json');
    assert.equal(shown.code, 0, shown.stdout + shown.stderr);
    const s = JSON.parse(shown.stdout);
    assert.deepEqual(s.provenance.traces, []);
    assert.equal(s.provenance.unavailable.code, 'file_error');
    assert.ok(s.provenance.unavailable.message.includes(db));
    assert.match(s.provenance.unavailable.hint, /\.recover/);
    assert.match(s.provenance.note, /Provenance unavailable: .*Which session wrote this entry is unknown \(not "edited by hand"\)/);
    assert.ok(s.file.warnings.some((w: string) => w.includes(db) && /Fix: .*\.recover/.test(w)), JSON.stringify(s.file.warnings));
    const text = (await ak('memory', 'show', '--store', store, '--entry', id)).stdout;
    assert.match(text, /warning: Provenance unavailable: SQLite database .*state\.db is damaged/);
    assert.doesNotMatch(text, /probably edited by hand/);

    // what needs the history and cannot do without it fails with the file and the fix, never "internal"
    const rp = await json('restore-point', 'create', '--target', `dir:${home}`, '--store', store, '--label', 'before');
    const diff = await ak('memory', 'diff', '--target', `dir:${home}`, '--store', store, '--from', rp.id, '--json');
    assert.equal(diff.code, 1, diff.stdout + diff.stderr);
    assert.equal(errOf(diff).code, 'file_error');
    assert.ok(errOf(diff).message.includes(db));
    assert.match(errOf(diff).hint ?? '', /\.recover/);
  });
});

describe('firstInvalidUtf8 (what Python\'s strict utf-8 codec rejects)', () => {
  it('finds the first ill-formed sequence: stray continuation, overlong, surrogate, above U+10FFFF, truncated', () => {
    const at = (...b: number[]): number | undefined => firstInvalidUtf8(Uint8Array.from(b));
    assert.equal(at(0x61, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80), undefined, 'a é € 😀');
    assert.equal(at(0x61, 0x80), 1);
    assert.equal(at(0xc0, 0x80), 0);
    assert.equal(at(0x61, 0xe0, 0x80, 0x80), 1);
    assert.equal(at(0xed, 0xa0, 0x80), 0);
    assert.equal(at(0xf4, 0x90, 0x80, 0x80), 0);
    assert.equal(at(0x61, 0x62, 0xe2, 0x82), 2);
    assert.equal(at(0xff), 0);
    for (const bytes of [[0x61, 0x80], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x61, 0x62, 0xe2, 0x82]]) {
      const py = execFileSync('python3', ['-c', 'import sys\ntry:\n  bytes.fromhex(sys.argv[1]).decode("utf-8")\nexcept UnicodeDecodeError as e:\n  print(e.start)', Buffer.from(bytes).toString('hex')]).toString().trim();
      assert.equal(String(firstInvalidUtf8(Uint8Array.from(bytes))), py, Buffer.from(bytes).toString('hex'));
    }
  });
});
