/** createDemoAgent (extension/demo.ts) on a real temp dir. */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDemoAgent, DEMO_MEMORY_ENTRIES, DEMO_USER_ENTRIES } from '../../extension/demo';

describe('extension/demo: createDemoAgent', () => {
  let tmp: string;
  beforeEach(() => (tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentkeep-demo-test-'))));
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it('creates a Hermes home, a workspace with a real npm install, and settings pointing at them', () => {
    const d = createDemoAgent(path.join(tmp, 'demo'));
    assert.equal(d.created, true);
    assert.equal(d.target, `dir:${path.join(tmp, 'demo', 'agent-home')}`);
    assert.equal(d.store, `hermes:${path.join(tmp, 'demo', 'agent-home', '.hermes')}`);
    const mem = fs.readFileSync(path.join(d.hermesHome, 'memories', 'MEMORY.md'), 'utf8');
    assert.deepEqual(mem.split('\n§\n'), [...DEMO_MEMORY_ENTRIES]);
    assert.ok(mem.length <= 2200, 'fits the memory char limit');
    const user = fs.readFileSync(path.join(d.hermesHome, 'memories', 'USER.md'), 'utf8');
    assert.deepEqual(user.split('\n§\n'), [...DEMO_USER_ENTRIES]);
    assert.ok(user.length <= 1375, 'fits the user char limit');
    assert.match(fs.readFileSync(path.join(d.hermesHome, 'config.yaml'), 'utf8'), /memory_char_limit: 2200/);
    assert.equal(fs.statSync(path.join(d.hermesHome, '.env')).mode & 0o777, 0o600);
    assert.ok(fs.existsSync(path.join(d.hermesHome, 'SOUL.md')));
    assert.ok(fs.existsSync(path.join(d.hermesHome, 'skills', 'devops', 'deploy-staging', 'SKILL.md')));
    const setup = fs.readFileSync(d.setupScript, 'utf8');
    assert.match(setup, /^#!\/usr\/bin\/env bash\n#/);
    assert.match(setup, /^npm install --no-audit --no-fund left-pad@1\.3\.0$/m);
    assert.equal(fs.statSync(d.setupScript).mode & 0o111, 0o111, 'setup.sh is executable');
    assert.match(fs.readFileSync(path.join(d.workspace, 'README.md'), 'utf8'), /```bash\npip install requests\n```/);
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(d.workspace, 'package.json'), 'utf8')), {
      name: 'demo-agent-tools',
      private: true,
    });
    const settings = JSON.parse(fs.readFileSync(path.join(d.workspace, '.vscode', 'settings.json'), 'utf8'));
    assert.deepEqual(settings, {
      'agentkeep.target': d.target,
      'agentkeep.stores': [d.store],
      'agentkeep.stateDir': d.stateDir,
    });
    assert.ok(!d.stateDir.startsWith(d.agentHome + path.sep), 'the state dir is outside the target');
    assert.ok(fs.statSync(d.stateDir).isDirectory());
    const leftovers = fs.readdirSync(d.workspace).filter((f) => f.includes('.tmp-'));
    assert.deepEqual(leftovers, [], 'no temp files left behind');
  });

  it('is idempotent: an existing demo is left alone unless force is set', () => {
    const root = path.join(tmp, 'demo');
    const d = createDemoAgent(root);
    fs.writeFileSync(path.join(d.hermesHome, 'memories', 'MEMORY.md'), 'edited by the user');
    const again = createDemoAgent(root);
    assert.equal(again.created, false);
    assert.equal(fs.readFileSync(path.join(d.hermesHome, 'memories', 'MEMORY.md'), 'utf8'), 'edited by the user');
    fs.mkdirSync(path.join(d.workspace, 'node_modules'));
    const forced = createDemoAgent(root, { force: true });
    assert.equal(forced.created, true);
    assert.equal(
      fs.readFileSync(path.join(d.hermesHome, 'memories', 'MEMORY.md'), 'utf8'),
      DEMO_MEMORY_ENTRIES.join('\n§\n'),
    );
    assert.equal(fs.existsSync(path.join(d.workspace, 'node_modules')), false);
  });

  it('refuses a relative root with a message naming the fix', () => {
    assert.throws(() => createDemoAgent('relative/demo'), /not an absolute path.*path\.resolve/);
  });
});
