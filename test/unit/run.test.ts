/**
 * `agentkeep run` (issue 15 item 1) with real processes: the real bin runs a real command between a
 * pre and a post restore point of a real directory; exit codes, signals, the summary, rollback on
 * failure, the terminal choice (through util-linux `script`) and a killed wrapper.
 */
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { RestorePoint } from '../../sidecar/protocol';
import { buildSidecar, cliRunner, SIDECAR } from './helpers/sidecar';

interface Done {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

describe('agentkeep run (real processes)', function () {
  let tmp: string;
  let state: string;
  let agent: string;
  let target: string;
  const { ak, json } = cliRunner(() => state);

  /** Start the real bin in `cwd` (stdin not a terminal); `detached` puts it in its own process group. */
  const start = (args: string[], cwd: string, detached = false): ChildProcess =>
    spawn(process.execPath, [SIDECAR, '--state-dir', state, ...args], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached,
    });
  const finish = (child: ChildProcess): Promise<Done> =>
    new Promise((resolve, reject) => {
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    });
  const run = (args: string[]): Promise<Done> => finish(start(['run', ...args], agent));
  /** Wait until `file` exists (the command inside the wrapper got going). */
  const waitFor = async (file: string, ms = 20000): Promise<void> => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (
        await fs.stat(file).then(
          () => true,
          () => false,
        )
      )
        return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${file} did not appear`);
  };
  const points = (): Promise<RestorePoint[]> => json('restore-point', 'list', '--target', target);

  before(async function () {
    this.timeout(120000);
    await buildSidecar();
  });

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-run-'));
    state = path.join(tmp, 'state');
    agent = path.join(tmp, 'agent');
    await fs.mkdir(path.join(agent, 'memories'), { recursive: true });
    await fs.writeFile(path.join(agent, 'memories', 'MEMORY.md'), 'user prefers tabs');
    await fs.writeFile(path.join(agent, 'keep.txt'), 'old');
    target = `dir:${agent}`;
  });

  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('passes the exit code through, records the pair, names what changed, prints the restore command', async () => {
    const r = await run([
      '--target',
      target,
      '--',
      'sh',
      '-c',
      'echo x > f; echo changed > keep.txt; echo out; exit 3',
    ]);
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.stdout, 'out\n', "the command's stdout is its own");
    const [post, pre] = await points();
    assert.equal(pre.kind, 'pre');
    assert.equal(post.kind, 'post');
    assert.equal(post.pairOf, pre.id);
    assert.equal(pre.reason?.command, "sh -c 'echo x > f; echo changed > keep.txt; echo out; exit 3'");
    assert.match(post.label, /\(exit 3\)$/);
    assert.deepEqual(
      pre.agent.map((a) => a.store),
      [`hermes:${agent}`],
      'the Hermes home found in the target is captured',
    );
    assert.match(r.stderr, /files added \(1\):\n\s+f\n/);
    assert.match(r.stderr, /files changed \(1\):\n\s+keep\.txt\n/);
    assert.match(r.stderr, /ended \(exit 3\)/);
    assert.match(
      r.stderr,
      new RegExp(
        `to roll back: agentkeep restore-point restore ${pre.id} --target \\S+ --state-dir \\S+ --scope machine --yes`,
      ),
    );
    const list = await ak('restore-point', 'list', '--target', target);
    assert.match(list.stdout, new RegExp(`${pre.id} .* pre, post ${post.id}`));
    assert.match(list.stdout, new RegExp(`${post.id} .* post of ${pre.id}`));
    assert.equal(await fs.readFile(path.join(agent, 'f'), 'utf8'), 'x\n', 'nothing was rolled back');
  });

  it('--rollback-on-failure rolls back (scope machine) and says what; success is kept; --json last line', async () => {
    await fs.writeFile(path.join(agent, 'memories', 'MEMORY.md'), 'user prefers tabs');
    const cmd = 'echo x > f; rm keep.txt; printf "\\n§\\nlearned during the run" >> memories/MEMORY.md; exit 4';
    const r = await run(['--target', target, '--rollback-on-failure', '--json', '--', 'sh', '-c', cmd]);
    assert.equal(r.code, 4, r.stderr);
    await assert.rejects(fs.stat(path.join(agent, 'f')), 'the added file is gone');
    assert.equal(await fs.readFile(path.join(agent, 'keep.txt'), 'utf8'), 'old', 'the removed file is back');
    assert.match(
      await fs.readFile(path.join(agent, 'memories', 'MEMORY.md'), 'utf8'),
      /learned during the run/,
      'scope machine keeps the memory',
    );
    assert.match(
      r.stderr,
      /the command failed \(exit 4\): rolled back to pre \S+ \(scope machine\): 1 file\(s\) removed, 1 brought back/,
    );
    assert.match(r.stderr, /memory entries: 1 added/);
    const doc = JSON.parse(r.stdout.trimEnd().split('\n').at(-1)!);
    assert.equal(doc.exit.code, 4);
    assert.equal(doc.post.pairOf, doc.pre.id);
    assert.deepEqual(doc.changes.added, ['f']);
    assert.equal(doc.rolledBack.scope, 'machine');
    assert.equal(doc.memory.added.length, 1);

    const ok = await run(['--target', target, '--rollback-on-failure', '--', 'sh', '-c', 'echo y > g']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(await fs.readFile(path.join(agent, 'g'), 'utf8'), 'y\n');
    assert.doesNotMatch(ok.stderr, /rolled back/);
  });

  it('a SIGTERM to the wrapper reaches the command; the wrapper still takes the post', async () => {
    const script = 'trap "echo got-term > term.txt; exit 7" TERM; touch started; while :; do sleep 0.1; done';
    const child = start(['run', '--target', target, '--', 'sh', '-c', script], agent);
    const done = finish(child);
    await waitFor(path.join(agent, 'started'));
    child.kill('SIGTERM');
    const r = await done;
    assert.equal(r.code, 7, r.stderr);
    assert.equal(await fs.readFile(path.join(agent, 'term.txt'), 'utf8'), 'got-term\n');
    const [post, pre] = await points();
    assert.equal(post.pairOf, pre.id);
    assert.match(r.stderr, /files added \(2\):\n\s+started\n\s+term\.txt/);
    // killed by a signal it does not trap: 128 + the signal number
    const c2 = start(['run', '--target', target, '--', 'sh', '-c', 'touch s2; exec sleep 30'], agent);
    const d2 = finish(c2);
    await waitFor(path.join(agent, 's2'));
    c2.kill('SIGHUP');
    const r2 = await d2;
    assert.equal(r2.code, 128 + os.constants.signals.SIGHUP, r2.stderr);
    assert.match(r2.stderr, /ended \(killed by SIGHUP\)/);
  });

  it('a killed wrapper leaves a pre without post, listed as such', async () => {
    const child = start(['run', '--target', target, '--', 'sh', '-c', 'touch started; exec sleep 30'], agent, true);
    const done = finish(child);
    await waitFor(path.join(agent, 'started'));
    process.kill(child.pid!, 'SIGKILL');
    await new Promise((r) => child.once('exit', r));
    process.kill(-child.pid!, 'SIGKILL'); // the orphaned sleep (same process group) holds the pipes
    await done;
    const list = await points();
    assert.equal(list.length, 1);
    assert.equal(list[0].kind, 'pre');
    const human = await ak('restore-point', 'list', '--target', target);
    assert.match(human.stdout, /pre without post: the command did not finish/);
  });

  it('no pre restore point, no run: the command is not started', async () => {
    const r = await run(['--target', `dir:${path.join(tmp, 'missing')}`, '--', 'sh', '-c', 'touch ran']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /No pre restore point could be taken, so the command was not run: .*does not exist/);
    await assert.rejects(fs.stat(path.join(agent, 'ran')));
    const nf = await run(['--target', target, '--', 'no-such-command-ak']);
    assert.equal(nf.code, 127);
    assert.match(nf.stderr, /cannot run no-such-command-ak: command not found/);
    const usage = await ak('run', '--target', target);
    assert.equal(usage.code, 2);
  });

  it('uses the default agent; on a terminal the choice is keep / roll back / diff', async () => {
    await json('agent', 'add', 'box', '--target', target);
    // on a pseudo-terminal: d shows the full diff, then r rolls back
    const quote = (a: string): string => `'${a.replace(/'/g, `'\\''`)}'`;
    const line = [process.execPath, SIDECAR, '--state-dir', state, 'run', '--', 'sh', '-c', 'echo x > made.txt']
      .map(quote)
      .join(' ');
    const out = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn('script', ['-qec', line, '/dev/null'], { cwd: agent, stdio: ['pipe', 'pipe', 'pipe'] });
      let output = '';
      const answers = ['d', 'r'];
      let asked = 0;
      child.stdout.on('data', (d: Buffer) => {
        output += d.toString();
        const n = output.split('[d]iff:').length - 1;
        if (n > asked && answers.length) {
          asked = n;
          child.stdin.write(`${answers.shift()}\n`);
        }
      });
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, output }));
    });
    assert.equal(out.code, 0, out.output);
    assert.match(out.output, /Keep the change\? \[K\]eep \/ \[r\]oll back to \S+ \(scope machine\) \/ \[d\]iff:/);
    assert.match(out.output, /files added \(1\):\s+made\.txt/);
    assert.match(out.output, /Memory from restore point/, 'd shows the memory diff too');
    assert.match(out.output, /as asked: rolled back to pre \S+ \(scope machine\): 1 file\(s\) removed/);
    await assert.rejects(fs.stat(path.join(agent, 'made.txt')));
    const rps = await points();
    const pre = rps.find((p) => p.kind === 'pre')!;
    assert.equal(pre.reason?.text, "agentkeep run for agent box: sh -c 'echo x > made.txt'");
    assert.equal(pre.reason?.origin, 'run');
    assert.equal(pre.reason?.agent, 'box');
  });
});
