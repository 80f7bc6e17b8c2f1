/**
 * `npm start` (after scripts/start.sh has built and installed the host): creates the demo agent
 * under .demo/ (gitignored), installs the built extension into .demo/extensions, starts code-server
 * on 127.0.0.1:$PORT (default 8080; own process group, XDG dirs and user data under .demo), prints
 * the URL to open, and stays in the foreground until Ctrl+C, then stops code-server's whole group.
 * code-server's log goes to .demo/code-server.log.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { createDemoAgent } from '../extension/demo';
import { checkSidecar, installExtensionCopy, onExit, REPO, startCodeServer, type CodeServer } from './lib/host';

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

async function main(): Promise<void> {
  const port = Number(process.env.PORT ?? 8080);
  if (!Number.isInteger(port) || port <= 0 || port > 65535)
    throw new Error(`PORT=${process.env.PORT} is not a TCP port. Use e.g. PORT=8081 npm start`);
  if (!(await portFree(port)))
    throw new Error(`Port ${port} on 127.0.0.1 is in use. Stop what uses it, or pick another: PORT=8081 npm start`);
  checkSidecar();
  const dotDemo = path.join(REPO, '.demo');
  const demo = createDemoAgent(dotDemo);
  console.log(
    `${demo.created ? 'Created' : 'Using'} the demo agent in ${path.relative(REPO, demo.agentHome)}/ (memory: .hermes, workspace: workspace/; remove .demo/ to start over)`,
  );
  installExtensionCopy(path.join(dotDemo, 'code-server', 'extensions'));
  let cs: CodeServer | undefined;
  onExit(() => cs?.stop());
  const log = fs.createWriteStream(path.join(dotDemo, 'code-server.log'));
  cs = await startCodeServer({
    port,
    home: path.join(dotDemo, 'code-server'),
    userDataDir: path.join(dotDemo, 'vscode'),
    smokeTestDriver: false,
    env: { npm_config_update_notifier: 'false' },
  });
  cs.proc.stdout!.pipe(log);
  cs.proc.stderr!.pipe(log);
  const url = `${cs.url}/?folder=${encodeURIComponent(demo.workspace).replace(/%2F/g, '/')}`;
  console.log('');
  console.log('  AgentKeep is running in code-server (a real VS Code in your browser). Open:');
  console.log('');
  console.log(`    ${url}`);
  console.log('');
  console.log('  Open setup.sh and click "Snapshot & run" above the npm install; the Agent view is the');
  console.log('  robot icon in the activity bar; the status bar item restores in one click.');
  console.log('  Press Ctrl+C to stop.');
  await new Promise<void>((resolve) => cs!.proc.on('exit', () => resolve()));
  throw new Error(`code-server exited (log: ${path.join(dotDemo, 'code-server.log')})`);
}

main().catch((e) => {
  console.error(`npm start: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
