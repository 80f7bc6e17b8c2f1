/**
 * A contract stub of Agent Zero's web UI API for memory edits (Agent Zero itself cannot run here:
 * it needs its Docker image, LangChain, FAISS and an embedding model). It serves the same endpoints,
 * auth and CSRF rules as agent0ai/agent-zero @ 2d95cd9f (helpers/api.py csrf_protect / requires_auth,
 * api/csrf_token.py, helpers/ui_server.py login_handler, plugins/_memory/api/memory_dashboard.py), and
 * changes index.pkl with real Python pickle (test/fixtures/memory/a0_pickle.py) the way memory.py
 * does: delete by ids; update = delete + add under metadata.id. Embeddings are not computed.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { FIXTURES } from './paths';

export const A0_PICKLE_PY = path.join(FIXTURES, 'memory', 'a0_pickle.py');

/** Run a0_pickle.py with `args`, feeding `input` on stdin; resolves stdout. */
export function a0Pickle(args: string[], input = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('python3', [A0_PICKLE_PY, ...args], { maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
    );
    child.stdin!.end(input);
  });
}

export interface A0Stub {
  url: string;
  /** Requests seen, as "METHOD path" (+ " action" for the dashboard). */
  log: string[];
  close(): Promise<void>;
}

/**
 * Start the stub on 127.0.0.1 (random port).
 * @param memoryRoot the directory holding `<subdir>/index.pkl` (e.g. <root>/usr/memory); project
 *   memory `projects/<p>` is read from `<memoryRoot>/../projects/<p>/.a0proj/memory`
 * @param login AUTH_LOGIN / AUTH_PASSWORD, when the instance has login enabled
 * @param legacy serve the older routes (/csrf_token, /memory_dashboard) only
 */
export async function startA0Stub(
  memoryRoot: string,
  login?: { user: string; password: string },
  legacy = false,
): Promise<A0Stub> {
  const sessions = new Map<string, { csrf?: string; auth?: boolean }>();
  const log: string[] = [];
  const runtimeId = randomBytes(4).toString('hex');
  const sessionOf = (req: http.IncomingMessage, res: http.ServerResponse): { csrf?: string; auth?: boolean } => {
    const m = /(?:^|;\s*)session=([^;]+)/.exec(req.headers.cookie ?? '');
    if (m && sessions.has(m[1])) return sessions.get(m[1])!;
    const sid = randomBytes(12).toString('hex');
    const s = {};
    sessions.set(sid, s);
    res.setHeader('Set-Cookie', `session=${sid}; HttpOnly; Path=/; SameSite=Strict`);
    return s;
  };
  const body = (req: http.IncomingMessage): Promise<string> =>
    new Promise((resolve) => {
      let b = '';
      req.on('data', (d: Buffer) => (b += d.toString()));
      req.on('end', () => resolve(b));
    });
  const json = (res: http.ServerResponse, v: unknown, status = 200): void => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(v));
  };
  const csrfPath = legacy ? '/csrf_token' : '/api/csrf_token';
  const dashPath = legacy ? '/memory_dashboard' : '/api/plugins/_memory/memory_dashboard';

  const server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const text = await body(req);
      const s = sessionOf(req, res);
      if (url.pathname === '/login' && req.method === 'POST') {
        log.push('POST /login');
        const f = new URLSearchParams(text);
        if (login && f.get('username') === login.user && f.get('password') === login.password) {
          s.auth = true;
          res.writeHead(302, { Location: '/' });
          return res.end();
        }
        res.writeHead(200, { 'Content-Type': 'text/html' });
        return res.end('<form>Invalid Credentials. Please try again.</form>');
      }
      if (url.pathname === csrfPath && req.method === 'GET') {
        log.push(`GET ${csrfPath}`);
        if (login && !s.auth) {
          res.writeHead(302, { Location: '/login' });
          return res.end();
        }
        const origin = req.headers.origin ?? '';
        if (!login && !/^https?:\/\/(localhost|127\.0\.0\.1)(:\d+)?$/.test(origin))
          return json(res, { ok: false, error: `Origin ${origin} not allowed when login is disabled.` });
        s.csrf ??= randomBytes(16).toString('base64url');
        return json(res, { ok: true, token: s.csrf, runtime_id: runtimeId });
      }
      if (url.pathname === dashPath && req.method === 'POST') {
        if (login && !s.auth) {
          log.push(`POST ${dashPath} (unauthenticated)`);
          res.writeHead(302, { Location: '/login' });
          return res.end();
        }
        if (!s.csrf || req.headers['x-csrf-token'] !== s.csrf) {
          log.push(`POST ${dashPath} (bad csrf)`);
          res.writeHead(403, { 'Content-Type': 'text/plain' });
          return res.end('CSRF token missing or invalid');
        }
        const input = JSON.parse(text || '{}') as Record<string, unknown>;
        log.push(`POST ${dashPath} ${String(input.action)}`);
        const subdir = String(input.memory_subdir ?? 'default');
        // abs_db_dir: projects/<p> -> usr/projects/<p>/.a0proj/memory, else usr/memory/<subdir>
        const pkl = subdir.startsWith('projects/')
          ? path.join(memoryRoot, '..', 'projects', subdir.slice('projects/'.length), '.a0proj', 'memory', 'index.pkl')
          : path.join(memoryRoot, subdir, 'index.pkl');
        try {
          if (input.action === 'delete') {
            if (!input.memory_id) return json(res, { success: false, error: 'Memory ID is required for deletion' });
            const r = JSON.parse(
              await a0Pickle(['apply', pkl], JSON.stringify({ action: 'delete', ids: [input.memory_id] })),
            ) as { removed: string[] };
            if (!r.removed.length)
              return json(res, { success: false, error: `Memory with ID '${String(input.memory_id)}' not found` });
            return json(res, { success: true, message: `Memory ${String(input.memory_id)} deleted successfully` });
          }
          if (input.action === 'update') {
            const edited = input.edited as { content_full: string; metadata: Record<string, unknown> } | undefined;
            if (!input.memory_subdir || !input.original || !edited)
              return json(res, { success: false, error: 'Missing required parameters' });
            await a0Pickle(
              ['apply', pkl],
              JSON.stringify({
                action: 'update',
                docs: [{ page_content: edited.content_full, metadata: edited.metadata }],
              }),
            );
            return json(res, {
              success: true,
              memory: { id: edited.metadata.id, content_full: edited.content_full, metadata: edited.metadata },
            });
          }
          return json(res, {
            success: false,
            error: `Unknown action: ${String(input.action)}`,
            memories: [],
            total_count: 0,
          });
        } catch (e) {
          return json(res, { success: false, error: String((e as Error).message), memories: [], total_count: 0 });
        }
      }
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end(`API endpoint not found: ${url.pathname}`);
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
