/**
 * Runs the extension-host suite (test/exthost, the same one scripts/test-exthost.ts runs inside
 * code-server) in desktop VS Code through @vscode/test-electron: on a machine that can download VS
 * Code, or with VSCODE_EXECUTABLE pointing at an installed `code` binary. A fresh demo agent in a
 * temp dir is the workspace; `--disable-extensions` keeps other extensions out.
 *
 * Usage: npm run build && npx tsx scripts/test-desktop.ts   (env: VSCODE_EXECUTABLE, VSCODE_VERSION)
 * Exit code: 0 when every test passed, 1 otherwise.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runTests } from '@vscode/test-electron';
import { createDemoAgent } from '../extension/demo';
import { runMain } from './lib/host';

const REPO = path.resolve(__dirname, '..');

async function main(): Promise<number> {
  if (!fs.existsSync(path.join(REPO, 'out', 'test', 'exthost', 'index.js'))) {
    console.error('out/test/exthost/index.js is missing. Build first: npm run build');
    return 1;
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentkeep-desktop-'));
  const demo = createDemoAgent(path.join(tmp, 'demo'));
  try {
    await runTests({
      extensionDevelopmentPath: REPO,
      extensionTestsPath: path.join(REPO, 'out', 'test', 'exthost', 'index'),
      vscodeExecutablePath: process.env.VSCODE_EXECUTABLE || undefined,
      version: process.env.VSCODE_VERSION || undefined,
      launchArgs: [
        demo.workspace,
        '--disable-extensions',
        '--disable-workspace-trust',
        `--user-data-dir=${path.join(tmp, 'ud')}`,
      ],
    });
    return 0;
  } catch (e) {
    console.error(`desktop extension tests failed: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

runMain('test-desktop', main);
