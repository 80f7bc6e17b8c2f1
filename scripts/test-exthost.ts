/**
 * Runs the extension-host integration tests (test/exthost, bundled to out/test/exthost/index.js)
 * inside code-server's real extension host: a fresh demo agent in a temp dir, a fresh user-data dir,
 * code-server with the smoke-test driver, headless chromium opening the payload URL, and the exit
 * code the workbench reports through window.codeAutomationExit. Prints the mocha output.
 *
 * Usage: npx tsx scripts/test-exthost.ts   (after `node esbuild.mjs` and scripts/setup-host.sh;
 * scripts/test-exthost.sh does all three). Env: KEEP_TMP=1 keeps the temp dir; CHROMIUM.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as util from 'node:util';
import { chromium } from 'playwright-core';
import { createDemoAgent } from '../extension/demo';
import { writeDemoSessionHistory } from './lib/demoHistory';
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  checkHost,
  checkSidecar,
  freePort,
  onExit,
  REPO,
  startCodeServer,
  workbenchUrl,
  type CodeServer,
  runMain,
} from './lib/host';

async function main(): Promise<number> {
  checkHost();
  checkSidecar();
  for (const f of ['out/extension.js', 'out/sidecar.js', 'out/cli.js', 'out/test/exthost/index.js']) {
    if (!fs.existsSync(path.join(REPO, f))) throw new Error(`${f} is missing. Build first: node esbuild.mjs`);
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentkeep-exthost-'));
  const demo = createDemoAgent(path.join(tmp, 'demo'));
  writeDemoSessionHistory(demo.hermesHome); // provenance for the memory inspector
  let cs: CodeServer | undefined;
  let ok = false;
  onExit(() => {
    cs?.stop();
    if (ok && !process.env.KEEP_TMP) fs.rmSync(tmp, { recursive: true, force: true });
    else console.log(`(temp files kept in ${tmp})`);
  });
  const started = Date.now();
  cs = await startCodeServer({
    port: await freePort(),
    home: path.join(tmp, 'code-server'),
    env: { npm_config_update_notifier: 'false' },
  });
  console.log(`code-server listening at ${cs.url} (${Date.now() - started} ms); demo agent in ${demo.root}`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage();
    let finish!: (code: number | string) => void;
    const finished = new Promise<number | string>((r) => (finish = r));
    await page.exposeFunction('codeAutomationLog', (_type: string, args: unknown[]) => {
      const line = util.format(...(args as [unknown, ...unknown[]]));
      if (!/queryGalleryExtensions|No signed-in session|AgentHost/.test(line)) console.log(line);
    });
    await page.exposeFunction('codeAutomationExit', (code: number) => finish(code));
    await page.goto(workbenchUrl(cs, demo.workspace, REPO, path.join(REPO, 'out', 'test', 'exthost', 'index')));
    const timeoutMs = Number(process.env.EXTHOST_TIMEOUT_MS ?? 240000);
    const code = await Promise.race([finished, new Promise<string>((r) => setTimeout(() => r('timeout'), timeoutMs))]);
    console.log(`extension host exited: ${code} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    if (code !== 0) {
      const logs = cs
        .log()
        .split('\n')
        .filter((l) => /error|fail/i.test(l))
        .slice(-20);
      if (logs.length) console.log(`code-server log (errors):\n${logs.join('\n')}`);
    }
    ok = code === 0;
    return ok ? 0 : 1;
  } finally {
    await browser.close();
  }
}

runMain('test-exthost', main);
