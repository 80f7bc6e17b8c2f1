import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { openStore, HermesStore } from '../../sidecar/memory';
import { parseEntries, usageChars, entryId } from '../../sidecar/memory/hermes';
import { AgentKeepError } from '../../sidecar/core/errors';
import { FIXTURES } from './helpers/paths';
import { copyFixture } from './helpers/hermes-db';

const FIXTURE = path.join(FIXTURES, 'memory', 'hermes');

async function expectError(p: Promise<unknown> | (() => unknown), kind: string, re?: RegExp): Promise<AgentKeepError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    assert.ok(e instanceof AgentKeepError, `expected AgentKeepError, got ${String(e)}`);
    assert.equal(e.kind, kind);
    if (re) assert.match(e.message + ' ' + (e.hint ?? ''), re);
    assert.ok(e.hint, 'error has a hint');
    return e;
  }
  assert.fail(`expected ${kind} error`);
}

describe('hermes memory store', () => {
  let tmp: string;
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-hermes-'));
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  async function home(files: Record<string, string>): Promise<string> {
    const h = path.join(tmp, 'home');
    for (const [rel, text] of Object.entries(files)) {
      await fs.mkdir(path.dirname(path.join(h, rel)), { recursive: true });
      await fs.writeFile(path.join(h, rel), text);
    }
    await fs.mkdir(h, { recursive: true });
    return h;
  }

  it('reads the fixture home: entries, ids, usage and limits', async () => {
    const h = path.join(tmp, 'hermes');
    await copyFixture(FIXTURE, h);
    const store = openStore(`hermes:${h}`);
    const files = await store.list();
    assert.deepEqual(
      files.map((f) => f.kind),
      ['hermes-memory', 'hermes-user', 'hermes-skill'],
    );
    assert.equal(files[2].readOnly?.includes('read-only'), true);
    assert.equal(files[2].entries[0].text, 'deploy-staging: Deploy the API to the staging server over SSH');
    const [mem, user] = files;
    assert.equal(mem.file, path.join(h, 'memories', 'MEMORY.md'));
    assert.equal(mem.entries.length, 4);
    assert.match(mem.entries[0].text, /^User's project is a TypeScript VS Code extension/);
    // last entry is multi-line
    assert.equal(
      mem.entries[3].text,
      'Project uses tabs, 120-char lines; run tests with `pnpm test`.\nCI is GitHub Actions (workflow ci.yml).',
    );
    const raw = await fs.readFile(mem.file, 'utf8');
    assert.equal(mem.usage!.chars, [...raw.trim()].length);
    assert.equal(mem.usage!.limit, 2200);
    assert.equal(user.entries.length, 3);
    assert.equal(user.usage!.limit, 1375);
    assert.equal(user.entries[2].text, 'Uses VS Code with Vim keybindings.');
    const expectedId = createHash('sha256').update(user.entries[0].text).digest('hex').slice(0, 12);
    assert.equal(user.entries[0].id, expectedId);
    assert.match(user.entries[0].id, /^[0-9a-f]{12}$/);
  });

  it('splits on the full delimiter only: a bare § inside an entry is content; CRLF handled', () => {
    assert.deepEqual(parseEntries('a § b\n§\nc\n§ d'), ['a § b', 'c\n§ d']);
    assert.deepEqual(parseEntries('one\r\n§\r\ntwo\r\n'), ['one', 'two']);
    assert.deepEqual(parseEntries('\uFEFFone\n§\ntwo'), ['one', 'two']);
    assert.deepEqual(parseEntries('\n§\n\n§\n  x  \n§\n'), ['x']);
    assert.deepEqual(parseEntries(''), []);
    assert.deepEqual(parseEntries('line1\nline2\n\nline3'), ['line1\nline2\n\nline3']);
  });

  it('counts usage in code points like Python len()', () => {
    assert.equal(usageChars(['ab', 'c']), 2 + 3 + 1);
    assert.equal(usageChars(['😀']), 1);
    assert.equal(entryId('x'), createHash('sha256').update('x').digest('hex').slice(0, 12));
  });

  it('missing and empty files are zero entries; custom limits; over-limit usage reported as is', async () => {
    const big = Array.from({ length: 30 }, (_, i) => `entry ${i} ${'x'.repeat(50)}`).join('\n§\n');
    const h = await home({
      'config.yaml': 'memory:\n  memory_char_limit: 500\n  user_char_limit: 300\n',
      'memories/MEMORY.md': big,
    });
    const [mem, user] = await openStore(`hermes:${h}`).list();
    assert.equal(mem.entries.length, 30);
    assert.equal(mem.usage!.limit, 500);
    assert.ok(mem.usage!.chars > mem.usage!.limit);
    assert.equal(mem.usage!.chars, big.length);
    assert.equal(user.entries.length, 0);
    assert.equal(user.usage!.chars, 0);
    assert.equal(user.usage!.limit, 300);

    await fs.writeFile(path.join(h, 'memories', 'USER.md'), '');
    const [, user2] = await openStore(`hermes:${h}`).list();
    assert.equal(user2.entries.length, 0);
  });

  it('a broken or missing config.yaml falls back to the defaults', async () => {
    const h = await home({ 'config.yaml': 'memory: [unclosed\n  : :', 'memories/USER.md': 'u' });
    const [mem, user] = await openStore(`hermes:${h}`).list();
    assert.equal(mem.usage!.limit, 2200);
    assert.equal(user.usage!.limit, 1375);
    await fs.rm(path.join(h, 'config.yaml'));
    await fs.writeFile(path.join(h, 'config.yaml'), 'memory:\n  memory_char_limit: "lots"\n');
    const [mem2] = await openStore(`hermes:${h}`).list();
    assert.equal(mem2.usage!.limit, 2200);
  });

  it('a home without memories/ and config.yaml is StoreNotFound; a missing home too', async () => {
    const h = await home({ 'README.md': 'not hermes' });
    await expectError(openStore(`hermes:${h}`).list(), 'StoreNotFound', /not a Hermes home.*HERMES_HOME/is);
    await expectError(openStore(`hermes:${path.join(tmp, 'nope')}`).check(), 'StoreNotFound', /does not exist/);
    // config.yaml alone is enough
    await fs.writeFile(path.join(h, 'config.yaml'), 'model: x\n');
    const files = await openStore(`hermes:${h}`).list();
    assert.equal(files.length, 2);
  });

  it('openStore rejects bad specs with a fix', async () => {
    await expectError(() => openStore('relative/path'), 'BadStore', /hermes:\/abs/);
    await expectError(() => openStore('hermes:relative/home'), 'BadStore', /not absolute/);
    await expectError(() => openStore('hermes:'), 'BadStore');
    await expectError(() => openStore('letta:/x'), 'BadStore', /not supported yet/);
    await expectError(() => openStore('mem0:x'), 'BadStore', /not absolute/);
    await expectError(() => openStore('foo:/x'), 'BadStore', /Unknown store kind/);
    const s = openStore('hermes:/abs/home/');
    assert.ok(s instanceof HermesStore);
    assert.equal(s.root, '/abs/home');
    assert.equal(s.spec, 'hermes:/abs/home/');
    assert.equal(s.kind, 'hermes');
  });

  it('agentStateFiles lists the existing agent-state files, sorted, skills recursively', async () => {
    const h = await home({
      'memories/MEMORY.md': 'a',
      'memories/ARCHIVE.jsonl': '{}\n',
      'memories/MEMORY.md.lock': '',
      'SOUL.md': 'soul',
      'skills/devops/deploy/SKILL.md': '---\nname: d\n---',
      'skills/devops/deploy/scripts/run.sh': 'echo',
      'skills/.hub/lock.json': '{}',
      'config.yaml': 'x: 1',
      '.env': 'KEY=1',
    });
    await fs.mkdir(path.join(h, 'skills', 'empty-dir'));
    const store = openStore(`hermes:${h}`);
    assert.deepEqual(await store.agentStateFiles(), [
      'SOUL.md',
      'memories/ARCHIVE.jsonl',
      'memories/MEMORY.md',
      'skills/.hub/lock.json',
      'skills/devops/deploy/SKILL.md',
      'skills/devops/deploy/scripts/run.sh',
    ]);
    assert.equal(store.isAgentStatePath('memories/USER.md'), true);
    assert.equal(store.isAgentStatePath('memories/MEMORY.md'), true);
    assert.equal(store.isAgentStatePath('skills/x/SKILL.md'), true);
    assert.equal(store.isAgentStatePath('./SOUL.md'), true);
    assert.equal(store.isAgentStatePath('memories/MEMORY.md.lock'), false);
    assert.equal(store.isAgentStatePath('config.yaml'), false);
    assert.equal(store.isAgentStatePath('.env'), false);
    assert.equal(store.isAgentStatePath('skills'), false);
    assert.equal(store.isAgentStatePath('skills/../.env'), false);
    assert.equal(store.isAgentStatePath('../x/SOUL.md'), false);
  });
});
