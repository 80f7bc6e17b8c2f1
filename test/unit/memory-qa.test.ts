/**
 * Memory write fixes from the QA pass (issue 4 #2-#7), on real Hermes homes (copies of the shared
 * fixture, with its real state.db), real flocks held by python3, the real CLI bundle, and a real
 * non-root user (setpriv to nobody) for permission errors.
 */
import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { buildSidecar, runSidecar } from './helpers/sidecar';
import { copyFixture, hashTree } from './helpers/hermes-db';
import { FIXTURES } from './helpers/paths';
import { expectAgentKeepError } from './helpers/errors';

const FIXTURE = path.join(FIXTURES, 'memory', 'hermes');

describe('memory QA fixes (Hermes, real files)', function () {
  this.timeout(60000);
  let tmp: string;
  let home: string;
  let store: string;
  let core: Core;
  const memFile = (): string => path.join(home, 'memories', 'MEMORY.md');
  const entriesOf = async (): Promise<Array<{ id: string; text: string }>> =>
    (await core.listMemory({ stores: [store] })).stores.flatMap((f) => f.entries);

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-memqa-'));
    home = path.join(tmp, 'hermes');
    await copyFixture(FIXTURE, home);
    await fs.writeFile(
      path.join(home, 'config.yaml'),
      'memory:\n  memory_char_limit: 20000\n  user_char_limit: 1375\n',
    );
    store = `hermes:${home}`;
    core = new Core({ stateDir: path.join(tmp, 'state') });
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('#2: 12 parallel adds without expectedHash all land (each re-reads under the lock and appends)', async () => {
    const texts = Array.from({ length: 12 }, (_, i) => `Parallel fact number ${i + 1}.`);
    const results = await Promise.allSettled(texts.map((text) => core.addMemory({ store, text })));
    assert.deepEqual(
      results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)),
      [],
    );
    const now = (await entriesOf()).map((e) => e.text);
    for (const t of texts) assert.ok(now.includes(t), `${t} present`);
  });

  it('#2: an add waits for Hermes writing under its flock, then appends to what Hermes wrote', async () => {
    const py = spawn(
      'python3',
      [
        '-c',
        'import fcntl,sys,time\nf=open(sys.argv[1]+".lock","a")\nfcntl.flock(f,fcntl.LOCK_EX)\nprint("held",flush=True)\ntime.sleep(0.8)\nopen(sys.argv[1],"a").write("\\n§\\nWritten by Hermes meanwhile.")\nfcntl.flock(f,fcntl.LOCK_UN)\nsys.stdin.read()',
        memFile(),
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve) =>
        py.stdout.on('data', (d: Buffer) => d.toString().includes('held') && resolve()),
      );
      const r = await core.addMemory({ store, text: 'Added by AgentKeep.' });
      assert.equal(r.alreadyPresent, undefined);
      const text = await fs.readFile(memFile(), 'utf8');
      assert.match(text, /Written by Hermes meanwhile\.\n§\nAdded by AgentKeep\.$/);
    } finally {
      py.kill('SIGKILL');
    }
  });

  it('#2: with expectedHash the compare-and-swap holds, and the hint fits an add', async () => {
    const shown = await core.showMemory({ stores: [store], entry: (await entriesOf())[0].id });
    await core.addMemory({ store, text: 'Someone else added this.' });
    const before = await hashTree(home);
    const e = await expectAgentKeepError(
      core.addMemory({ store, text: 'Mine.', expectedHash: shown.contentHash }),
      'Conflict',
      /changed since it was read/,
    );
    assert.match(e.hint ?? '', /memory list.*add the entry again/);
    assert.doesNotMatch(e.hint ?? '', /redo the edit/);
    assert.deepEqual(await hashTree(home), before);
  });

  it('#3: adding an exact duplicate says alreadyPresent and writes nothing; no backup, no log line', async () => {
    const existing = (await entriesOf())[0];
    const before = await hashTree(home);
    const r = await core.addMemory({ store, text: existing.text });
    assert.equal(r.alreadyPresent, true);
    assert.equal(r.entry.id, existing.id);
    assert.deepEqual(await hashTree(home), before);
    assert.deepEqual(await fs.readdir(path.join(tmp, 'state')).catch(() => []), []);
    const fresh = await core.addMemory({ store, text: 'A brand new fact.' });
    assert.equal(fresh.alreadyPresent, undefined);
  });

  it('#3: memory edit does not make an entry an exact duplicate of another (Conflict naming it)', async () => {
    const [a, b] = (await entriesOf()).filter((e) => e.text);
    const before = await hashTree(home);
    const e = await expectAgentKeepError(core.editMemory({ store, entry: a.id, text: b.text }), 'Conflict');
    assert.ok(e.message.includes(b.id), e.message);
    assert.match(e.hint ?? '', new RegExp(`memory remove --entry ${a.id}`));
    assert.deepEqual(await hashTree(home), before);
  });

  it('#4: entries AgentKeep wrote are traced to it (source agentkeep), and lint does not call them untraceable', async () => {
    const added = await core.addMemory({ store, text: 'Backups run nightly at 02:00 UTC.' });
    const target = (await entriesOf()).find((e) => e.text.startsWith('Staging') || e.text.length > 10)!;
    const edited = await core.editMemory({
      store,
      entry: target.id,
      text: 'The staging host moved to staging2.example.com.',
    });
    const log = (
      await fs.readFile(
        path.join(
          tmp,
          'state',
          'memory-backups',
          (await fs.readdir(path.join(tmp, 'state', 'memory-backups')))[0],
          'writes.jsonl',
        ),
        'utf8',
      )
    )
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      log.map((r: { action: string; id: string }) => [r.action, r.id]),
      [
        ['add', added.entry.id],
        ['replace', edited.entry.id],
      ],
    );
    assert.equal(log[1].previous, target.text);
    for (const [id, action] of [
      [added.entry.id, 'add'],
      [edited.entry.id, 'replace'],
    ] as const) {
      const shown = await core.showMemory({ stores: [store], entry: id });
      const mine = shown.provenance.traces.filter((t) => t.source === 'agentkeep');
      assert.equal(mine.length, 1, JSON.stringify(shown.provenance));
      assert.equal(mine[0].action, action);
      assert.match(mine[0].time ?? '', /^\d{4}-\d\d-\d\dT/);
      assert.doesNotMatch(shown.provenance.note ?? '', /edited by hand/);
    }
    const lint = await core.lintMemory({ stores: [store] });
    const untraceable = lint.findings.filter((f) => f.kind === 'untraceable').flatMap((f) => f.entries);
    assert.ok(!untraceable.includes(added.entry.id), 'added entry not untraceable');
    assert.ok(!untraceable.includes(edited.entry.id), 'edited entry not untraceable');
    // a hand-written entry still is (the rule still works)
    await fs.appendFile(memFile(), '\n§\nWritten by hand in an editor.');
    const lint2 = await core.lintMemory({ stores: [store] });
    const hand = (await entriesOf()).find((e) => e.text === 'Written by hand in an editor.')!;
    assert.ok(lint2.findings.some((f) => f.kind === 'untraceable' && f.entries.includes(hand.id)));
  });

  it('#6: the same store named twice (trailing slash, symlink) is listed and linted once', async () => {
    const link = path.join(tmp, 'link-to-hermes');
    await fs.symlink(home, link);
    const once = await core.listMemory({ stores: [store] });
    const thrice = await core.listMemory({ stores: [store, `hermes:${home}/`, `hermes:${link}`] });
    assert.equal(thrice.stores.length, once.stores.length);
    assert.deepEqual(
      thrice.stores.map((f) => f.store),
      once.stores.map((f) => f.store),
      'first spelling kept',
    );
    const lintOnce = await core.lintMemory({ stores: [store] });
    const lintThrice = await core.lintMemory({ stores: [store, `hermes:${link}`] });
    assert.equal(
      lintThrice.findings.filter((f) => f.kind === 'duplicate').length,
      lintOnce.findings.filter((f) => f.kind === 'duplicate').length,
    );
    const shown = await core.showMemory({ stores: [store, `hermes:${link}`], entry: once.stores[0].entries[0].id });
    assert.equal(shown.store, store);
  });
});

describe('memory QA fixes: Agent Zero read-only wording', () => {
  it('#7: one sentence ending once, and a hint that does not contradict the AGENTKEEP_A0_URL step', async () => {
    const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-a0ro-'));
    const saved = process.env.AGENTKEEP_A0_URL;
    delete process.env.AGENTKEEP_A0_URL;
    try {
      const root = path.join(tmp, 'a0');
      await fs.cp(path.join(FIXTURES, 'memory', 'agent-zero'), root, { recursive: true });
      const core = new Core({ stateDir: path.join(tmp, 'state') });
      const e = await expectAgentKeepError(
        core.editMemory({ store: `agent-zero:${root}`, entry: 'Xk3P9aQ2mZ', text: 'x' }),
        'Unsupported',
        /AGENTKEEP_A0_URL/,
      );
      assert.doesNotMatch(e.message, /\.\./);
      assert.match(e.message, /web UI\.$/);
      assert.doesNotMatch(e.hint ?? '', /^Change it with the agent's own tools\.$/);
      assert.match(e.hint ?? '', /let AgentKeep edit it/);
    } finally {
      if (saved !== undefined) process.env.AGENTKEEP_A0_URL = saved;
      await fs.rm(tmp, { recursive: true, force: true });
    }
  });
});

describe('memory QA fixes: permissions as a non-root user (setpriv nobody)', function () {
  this.timeout(60000);
  let tmp: string;
  let home: string;
  before(async function () {
    if (process.getuid?.() !== 0 || spawnSync('setpriv', ['--version']).status !== 0) {
      throw new Error(
        'these tests run as root with util-linux setpriv (to become nobody); see scripts/setup-test-deps.sh',
      );
    }
    await buildSidecar();
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-memperm-'));
    await fs.chmod(tmp, 0o755);
    home = path.join(tmp, 'hermes');
    await copyFixture(FIXTURE, home);
    await fs.mkdir(path.join(tmp, 'state'), { mode: 0o777 });
    await fs.chmod(path.join(tmp, 'state'), 0o777);
    spawnSync('chmod', ['-R', 'a+rX', home]);
  });
  afterEach(async () => {
    spawnSync('chmod', ['-R', 'u+rwX', tmp]);
    await fs.rm(tmp, { recursive: true, force: true });
  });
  const asNobody = (args: string[]) =>
    runSidecar(['--state-dir', path.join(tmp, 'state'), ...args], {}, undefined, [
      'setpriv',
      '--reuid=65534',
      '--regid=65534',
      '--clear-groups',
    ]);

  it('#5: a read-only memories folder: add fails with a FileError naming the lock path and the fix', async () => {
    const before = await hashTree(home);
    const r = await asNobody(['memory', 'add', '--store', `hermes:${home}`, '--text', 'New fact.', '--json']);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const err = JSON.parse(r.stdout || r.stderr).error;
    assert.equal(err.code, 'file_error', JSON.stringify(err));
    assert.ok(err.message.includes(path.join(home, 'memories', 'MEMORY.md.lock')), err.message);
    assert.match(err.message, /permission denied/);
    assert.doesNotMatch(err.message, /EACCES/);
    assert.match(err.hint, /user Hermes runs as|write access/);
    assert.deepEqual(await hashTree(home), before);
  });

  it('#5: one unreadable USER.md: list shows MEMORY.md and a warning on USER.md; all unreadable fails', async () => {
    await fs.chmod(path.join(home, 'memories', 'USER.md'), 0o000);
    const r = await asNobody(['memory', 'list', '--store', `hermes:${home}`, '--json']);
    // exit 1 since stop 17: an unreadable file is a broken one, and `memory list` says so in its exit code too
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const files = JSON.parse(r.stdout).stores as Array<{ kind: string; entries: unknown[]; warnings?: string[] }>;
    assert.ok(files.find((f) => f.kind === 'hermes-memory')!.entries.length > 0);
    const user = files.find((f) => f.kind === 'hermes-user')!;
    assert.equal(user.entries.length, 0);
    assert.match((user.warnings ?? []).join(' '), /Cannot read this file.*USER\.md.*permission denied/);
    // an edit of USER.md refuses instead of writing over what it could not read
    await fs.chmod(path.join(home, 'memories'), 0o777);
    const add = await asNobody([
      'memory',
      'add',
      '--store',
      `hermes:${home}`,
      '--file',
      'user',
      '--text',
      'x',
      '--json',
    ]);
    assert.equal(add.code, 1);
    assert.match(JSON.parse(add.stdout || add.stderr).error.message, /Cannot read .*USER\.md/);
    await fs.chmod(path.join(home, 'memories'), 0o755);
    await fs.chmod(path.join(home, 'memories', 'MEMORY.md'), 0o000);
    await fs.rm(path.join(home, 'skills'), { recursive: true, force: true });
    const all = await asNobody(['memory', 'list', '--store', `hermes:${home}`, '--json']);
    assert.equal(all.code, 1);
    assert.equal(JSON.parse(all.stdout || all.stderr).error.code, 'file_error');
  });
});

describe('memory QA fixes: CLI wording', function () {
  this.timeout(60000);
  let tmp: string;
  let home: string;
  before(() => buildSidecar());
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-memcli-'));
    home = path.join(tmp, 'hermes');
    await fs.mkdir(path.join(home, 'memories'), { recursive: true });
    await fs.writeFile(path.join(home, 'memories', 'MEMORY.md'), 'Only one fact.');
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });
  const ak = (...args: string[]) => runSidecar(['--state-dir', path.join(tmp, 'state'), ...args]);

  it('#7: "1 entry", a clear error for an empty --text, "already present; nothing written"', async () => {
    const list = await ak('memory', 'list', '--store', `hermes:${home}`);
    assert.match(list.stdout, /MEMORY\.md \(hermes-memory\): 1 entry,/);
    assert.match(list.stdout, /USER\.md \(hermes-user\): 0 entries/);
    const id = JSON.parse((await ak('memory', 'list', '--store', `hermes:${home}`, '--json')).stdout).stores[0]
      .entries[0].id;
    const empty = await ak('memory', 'edit', '--store', `hermes:${home}`, '--entry', id, '--text', '');
    assert.equal(empty.code, 2, empty.stdout + empty.stderr);
    const out = empty.stdout + empty.stderr;
    assert.match(out, /--text is empty/);
    assert.match(out, /memory remove/);
    assert.doesNotMatch(out, /protocol\.schema\.json|too_small|zod/i);
    const dup = await ak('memory', 'add', '--store', `hermes:${home}`, '--text', 'Only one fact.');
    assert.equal(dup.code, 0, dup.stderr);
    assert.match(dup.stdout, /already present.*nothing written/);
    assert.doesNotMatch(dup.stdout, /^Added/);
    const dupJson = JSON.parse(
      (await ak('memory', 'add', '--store', `hermes:${home}`, '--text', 'Only one fact.', '--json')).stdout,
    );
    assert.equal(dupJson.alreadyPresent, true);
    assert.equal(await fs.readFile(path.join(home, 'memories', 'MEMORY.md'), 'utf8'), 'Only one fact.');
  });
});
