/**
 * CLI wording that must be true: a mem0 / Agent Zero store that cannot be edited here (no API URL)
 * is headed read-only, not "editable"; a state dir that is a file (or under one, or a dangling
 * symbolic link) is named as such, not as a raw EEXIST. Real CLI processes on copies of the fixtures.
 */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FIXTURES } from './helpers/paths';
import { buildSidecar, runSidecar, type RunResult } from './helpers/sidecar';

/** Exit code 1 and exactly one line on stderr. */
function oneLineError(r: RunResult): string {
  assert.equal(r.code, 1, r.stderr);
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, r.stderr);
  return lines[0];
}

describe('CLI wording: read-only stores and a state dir that is not a directory', function () {
  this.timeout(120000);
  let tmp: string;
  let state: string;
  const NO_API = { AGENTKEEP_MEM0_URL: undefined, AGENTKEEP_A0_URL: undefined };
  before(async () => {
    await buildSidecar();
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-wording-'));
    state = path.join(tmp, 'state');
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  for (const [kind, sub] of [
    ['mem0', 'mem0'],
    ['agent-zero', 'agent-zero/usr'],
  ]) {
    it(`memory list of the ${kind} store without its API URL: the heading says read-only, as its files do`, async () => {
      const dir = path.join(tmp, kind);
      await fs.cp(path.join(FIXTURES, 'memory', sub), dir, { recursive: true });
      const r = await runSidecar(['--state-dir', state, 'memory', 'list', '--store', `${kind}:${dir}`], NO_API);
      assert.equal(r.code, 0, r.stderr);
      const [heading, file] = r.stdout.split('\n');
      assert.match(heading, new RegExp(`^Store ${kind}:${dir}: .* at ${dir}: read-only, provenance, memory diff$`));
      assert.doesNotMatch(heading, /editable/);
      assert.match(file, /\[read-only: /);
      // with the API's URL the store is editable and says so (nothing is dialled by a list)
      const url =
        kind === 'mem0' ? { AGENTKEEP_MEM0_URL: 'http://127.0.0.1:9' } : { AGENTKEEP_A0_URL: 'http://127.0.0.1:9' };
      const editable = await runSidecar(['--state-dir', state, 'memory', 'list', '--store', `${kind}:${dir}`], url);
      assert.equal(editable.code, 0, editable.stderr);
      assert.match(editable.stdout.split('\n')[0], /: editable, provenance, memory diff$/);
      assert.doesNotMatch(editable.stdout, /\[read-only: /);
    });
  }

  it('a Hermes store stays editable in the heading', async () => {
    const dir = path.join(tmp, 'hermes');
    await fs.cp(path.join(FIXTURES, 'memory', 'hermes'), dir, { recursive: true });
    const r = await runSidecar(['--state-dir', state, 'memory', 'list', '--store', `hermes:${dir}`]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout.split('\n')[0], /: editable, provenance, char budgets/);
  });

  it('a state dir that is a file, under a file, or a dangling link: named, with --state-dir / AGENTKEEP_STATE_DIR as the fix', async () => {
    const tree = path.join(tmp, 'tree');
    await fs.mkdir(tree);
    const file = path.join(tmp, 'state-file');
    await fs.writeFile(file, 'not a directory');
    const create = (dir: string, env: NodeJS.ProcessEnv = {}): Promise<RunResult> =>
      runSidecar(
        [
          ...(env.AGENTKEEP_STATE_DIR ? [] : ['--state-dir', dir]),
          'restore-point',
          'create',
          '--target',
          `dir:${tree}`,
        ],
        env,
      );
    const fix = (p: string): string =>
      `Point --state-dir (or AGENTKEEP_STATE_DIR) at a writable directory elsewhere, or move ${p} aside.`;
    for (const line of [
      oneLineError(await create(file)),
      oneLineError(await create('', { AGENTKEEP_STATE_DIR: file })),
    ]) {
      assert.equal(line, `agentkeep: The state dir ${file} is not usable: it is a file, not a directory. ${fix(file)}`);
      assert.doesNotMatch(line, /EEXIST/);
    }
    assert.equal(
      oneLineError(await create(path.join(file, 'sub'))),
      `agentkeep: The state dir ${path.join(file, 'sub')} is not usable: ${file} is a file, not a directory, so it cannot be made. ${fix(file)}`,
    );
    const link = path.join(tmp, 'dangling');
    await fs.symlink(path.join(tmp, 'nowhere'), link);
    assert.equal(
      oneLineError(await create(link)),
      `agentkeep: The state dir ${link} is not usable: it is a symbolic link to ${path.join(tmp, 'nowhere')}, which does not exist. ${fix(link)}`,
    );
    assert.equal(await fs.readFile(file, 'utf8'), 'not a directory', 'the file is untouched');
  });
  it('a state dir whose name is too long for the file system: said in words, not as a raw ENAMETOOLONG message (QA)', async () => {
    const tree = path.join(tmp, 'tree');
    await fs.mkdir(tree);
    const long = path.join(tmp, 'x'.repeat(300));
    const r = await runSidecar(['--state-dir', long, 'restore-point', 'create', '--target', `dir:${tree}`]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.equal(
      oneLineError(r),
      `agentkeep: The state dir ${long} is not usable: a name in its path is longer than the file system allows (usually 255 bytes per name) (ENAMETOOLONG). Point --state-dir (or AGENTKEEP_STATE_DIR) at a writable directory.`,
    );
    assert.doesNotMatch(r.stderr, /name too long, mkdir/);
  });
});
