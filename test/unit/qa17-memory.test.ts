/**
 * QA stop 17 follow-ups on Hermes stores (real files, the real CLI bundle):
 * 1. a restore point taken while MEMORY.md is broken (a directory, a dangling symlink) says so, records
 *    the file in AgentCapture.broken, and a later restore leaves the (by then good) file alone instead
 *    of deleting it; diff says it is left alone; undo still works; old captures still restore.
 * 2. a config.yaml that does not parse (or is a directory) is reported: usage "(default limit: …)",
 *    a warning on MEMORY.md / USER.md with the YAML error and line, a memory lint warning, agent
 *    status's store entry; hook status names the directory instead of a raw EISDIR.
 */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildSidecar, cliRunner } from './helpers/sidecar';
import { copyFixture } from './helpers/hermes-db';
import { FIXTURES } from './helpers/paths';

const HERMES = path.join(FIXTURES, 'memory', 'hermes');

describe('QA 17: Hermes broken files in restore points, broken config.yaml (real files, real CLI)', function () {
  this.timeout(90000);
  let tmp: string;
  let home: string;
  let store: string;
  let target: string;
  const { ak, json } = cliRunner(() => path.join(tmp, 'state'));
  const mem = (): string => path.join(home, 'memories', 'MEMORY.md');

  before(() => buildSidecar());
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-qa17-'));
    home = path.join(tmp, 'hermes');
    await copyFixture(HERMES, home);
    store = `hermes:${home}`;
    target = `dir:${home}`;
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('MEMORY.md a directory at capture: create warns and records it; diff and restore leave the good file alone; undo works', async () => {
    const good = await fs.readFile(mem());
    await fs.rm(mem());
    await fs.mkdir(mem());
    const created = await ak('restore-point', 'create', '--target', target, '--store', store);
    assert.equal(created.code, 0, created.stderr);
    assert.match(
      created.stderr + created.stdout,
      /memories\/MEMORY\.md of hermes:.* was broken and is not in this restore point's agent state .*is a directory/,
    );
    const rps = await json('restore-point', 'list', '--target', target);
    const rp = rps[0];
    assert.deepEqual(
      rp.agent[0].broken.map((b: any) => b.path),
      ['memories/MEMORY.md'],
    );
    assert.match(rp.agent[0].broken[0].message, /is a directory, not a file/);
    assert.ok(!rp.agent[0].files.some((f: any) => f.path === 'memories/MEMORY.md'));

    // the file is fixed afterwards
    await fs.rmdir(mem());
    await fs.writeFile(mem(), good);
    const d = await json('restore-point', 'diff', rp.id, '--target', target, '--store', store);
    assert.deepEqual(d.agentChanged, [], 'MEMORY.md is not "put back" (the restore point has nothing to put back)');
    assert.deepEqual(d.agentLeftAlone, [`${store}:memories/MEMORY.md`]);
    const text = (await ak('restore-point', 'diff', rp.id, '--target', target, '--store', store)).stdout;
    assert.match(text, /agent-state files left alone \(broken when the restore point was taken, not in it\) \(1\):/);
    assert.doesNotMatch(text, /will be put back/);

    await fs.writeFile(path.join(home, 'memories', 'USER.md'), 'Changed after the restore point.');
    const r = await json(
      'restore-point',
      'restore',
      rp.id,
      '--target',
      target,
      '--store',
      store,
      '--scope',
      'agent',
      '--yes',
    );
    assert.deepEqual(await fs.readFile(mem()), good, 'the good MEMORY.md is still there, byte for byte');
    const changes = r.changes;
    assert.deepEqual(changes.agentChanged, [`${store}:memories/USER.md`]);
    assert.deepEqual(changes.agentLeftAlone, [`${store}:memories/MEMORY.md`]);
    assert.equal(
      await fs.readFile(path.join(home, 'memories', 'USER.md'), 'utf8'),
      await fs.readFile(path.join(HERMES, 'memories', 'USER.md'), 'utf8'),
    );

    // undo: back to the state before the restore (the undo point captured the good MEMORY.md)
    const undo = r.undo.id;
    assert.equal(r.undo.agent[0].broken, undefined, 'the undo point held the good MEMORY.md');
    await json('restore-point', 'restore', undo, '--target', target, '--store', store, '--scope', 'agent', '--yes');
    assert.equal(await fs.readFile(path.join(home, 'memories', 'USER.md'), 'utf8'), 'Changed after the restore point.');
    assert.deepEqual(await fs.readFile(mem()), good);
  });

  it('MEMORY.md a dangling symlink at capture: recorded; the file put there later survives a restore', async () => {
    const good = await fs.readFile(mem());
    await fs.rm(mem());
    await fs.symlink(path.join(tmp, 'gone.md'), mem());
    const rp = await json('restore-point', 'create', '--target', target, '--store', store);
    assert.deepEqual(
      rp.agent[0].broken.map((b: any) => b.path),
      ['memories/MEMORY.md'],
    );
    assert.ok(
      rp.warnings.some((w: string) => /MEMORY\.md .*was broken .*symbolic link/.test(w)),
      rp.warnings,
    );
    await fs.rm(mem());
    await fs.writeFile(mem(), good);
    await json('restore-point', 'restore', rp.id, '--target', target, '--store', store, '--scope', 'agent', '--yes');
    assert.deepEqual(await fs.readFile(mem()), good);
  });

  it('nothing broken: no `broken` field, and a restore still removes agent-state files made since', async () => {
    const rp = await json('restore-point', 'create', '--target', target, '--store', store);
    assert.equal(rp.agent[0].broken, undefined);
    assert.equal(rp.warnings, undefined);
    const skill = path.join(home, 'skills', 'new', 'SKILL.md');
    await fs.mkdir(path.dirname(skill), { recursive: true });
    await fs.writeFile(skill, '---\nname: new\n---\nA skill written after the restore point.\n');
    const d = await json('restore-point', 'diff', rp.id, '--target', target, '--store', store);
    assert.deepEqual(d.agentChanged, [`${store}:skills/new/SKILL.md`]);
    assert.equal(d.agentLeftAlone, undefined);
    await json('restore-point', 'restore', rp.id, '--target', target, '--store', store, '--scope', 'agent', '--yes');
    await assert.rejects(fs.stat(skill), /ENOENT/);
  });

  it('config.yaml that does not parse: usage says default limit, files warn with the line, lint warns, status says it', async () => {
    await fs.writeFile(path.join(home, 'config.yaml'), 'memory:\n  memory_char_limit: [oops\n');
    const files = (await json('memory', 'list', '--store', store)).stores;
    const m = files.find((f: any) => f.kind === 'hermes-memory');
    assert.equal(m.usage.limit, 2200);
    assert.equal(m.usage.limitNote, 'default limit: config.yaml does not parse');
    assert.ok(
      m.warnings.some(
        (w: string) => w.includes(path.join(home, 'config.yaml')) && /does not parse as YAML.*line 3/.test(w),
      ),
      JSON.stringify(m.warnings),
    );
    const text = (await ak('memory', 'list', '--store', store)).stdout;
    assert.match(
      text,
      /MEMORY\.md \(hermes-memory\): 4 entries, \d+\/2200 chars \(\d+%\) \(default limit: config\.yaml does not parse\)/,
    );
    assert.match(text, /Fix the YAML at line 3/);

    const lint = (await json('memory', 'lint', '--store', store)).findings;
    const cfg = lint.filter((f: any) => f.kind === 'store' && /config/.test(f.message));
    assert.equal(cfg.length, 1, JSON.stringify(lint));
    assert.equal(cfg[0].severity, 'warning', 'Hermes falls back to its defaults: a warning, not a broken store');
    assert.ok(cfg[0].message.includes(path.join(home, 'config.yaml')), cfg[0].message);
    assert.match(cfg[0].suggestion, /Fix the YAML at line 3/);

    const st = await json('agent', 'status', '--target', target, '--store', store);
    assert.equal(st.stores[0].ok, true);
    assert.match(st.stores[0].configProblem.message, /does not parse as YAML/);
    assert.equal(st.stores[0].configProblem.file, path.join(home, 'config.yaml'));
    const stText = (await ak('agent', 'status', '--target', target, '--store', store)).stdout;
    assert.match(stText, /warning \(config\): .*config\.yaml does not parse/);

    // fixed: nothing said any more
    await fs.writeFile(path.join(home, 'config.yaml'), 'memory:\n  memory_char_limit: 3000\n');
    const fixed = (await json('memory', 'list', '--store', store)).stores.find((f: any) => f.kind === 'hermes-memory');
    assert.equal(fixed.usage.limit, 3000);
    assert.equal(fixed.usage.limitNote, undefined);
    const st2 = await json('agent', 'status', '--target', target, '--store', store);
    assert.equal(st2.stores[0].configProblem, undefined);
  });

  it('config.yaml that is a directory: named with the fix, never a raw EISDIR', async () => {
    await fs.rm(path.join(home, 'config.yaml'), { force: true });
    await fs.mkdir(path.join(home, 'config.yaml'));
    const m = (await json('memory', 'list', '--store', store)).stores.find((f: any) => f.kind === 'hermes-memory');
    assert.equal(m.usage.limitNote, 'default limit: config.yaml cannot be read');
    assert.ok(
      m.warnings.some((w: string) => /config\.yaml is a directory, not a file/.test(w)),
      m.warnings,
    );
    const lint = (await json('memory', 'lint', '--store', store)).findings;
    assert.ok(
      lint.some((f: any) => f.kind === 'store' && f.severity === 'warning' && /is a directory/.test(f.message)),
    );
    const hs = await ak('hook', 'status', 'hermes', '--home', home);
    const out = hs.stdout + hs.stderr;
    assert.doesNotMatch(out, /EISDIR|illegal operation/);
    assert.match(out, /config\.yaml is a directory, not Hermes' config file/);
    assert.match(out, /mv .*config\.yaml .*config\.yaml\.moved/);
  });
});
