/**
 * Loading the full CLI bundle (out/cli.js, 5 MB) with V8's code cache, so a start does not compile it
 * again (issue 14). Node 20 has no `module.enableCompileCache` (Node 22.1+), so this does what it does
 * for one file: the bundle is compiled as a CommonJS module through `vm.Script` with the cached data
 * of an earlier run, and the cache is written when there was none or V8 rejected it.
 *
 * Where: `$AGENTKEEP_CODE_CACHE_DIR`, else `$XDG_CACHE_HOME/agentkeep/code-cache`, else
 * `~/.cache/agentkeep/code-cache`: a directory of the user running the program (made 0700; used only
 * when it is a real directory owned by that user and not writable by others). One file per bundle
 * path and Node version: `<sha1(path, version, arch)>.bin` = a header line `agentkeep-code-cache 1 <sha1 of the source> <node
 * version> <arch> <sha1 of the payload>\n`, then V8's cached data. `AGENTKEEP_CODE_CACHE=off` (or 0, false, no) turns it off; a value not
 * on/off-like, or a relative AGENTKEEP_CODE_CACHE_DIR, warns once on stderr (cache on / no cache).
 *
 * It never fails a command: a missing, unreadable, foreign, stale or corrupt cache file (checked by
 * the source hash and the payload hash before V8 sees it; V8 checks its own version and flags too)
 * means a normal compile; a cache that cannot be written is skipped. Concurrent writers each write
 * their own temp file and rename it into place, so a reader sees a whole file or none; each write
 * also drops files of the directory not written for 30 days (old versions, a crashed writer's temp
 * file), so the directory does not grow with every update. A failure of
 * the cache itself falls back to a plain `require`; errors of the CLI itself are not caught here.
 * Off as well under `--inspect*` and with source maps on (`--enable-source-maps`), which a plain
 * require serves best.
 */
import { isAscii } from 'node:buffer';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import Module, { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vm from 'node:vm';
import { envSwitch, warnBadEnv } from './core/envWarn';

const MAGIC = 'agentkeep-code-cache 1';

/** The cache directory to use, or undefined when none is safe (see the module doc). */
export function codeCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!envSwitch(env, 'AGENTKEEP_CODE_CACHE', true, 'the code cache')) return undefined;
  let dir = env.AGENTKEEP_CODE_CACHE_DIR;
  if (!dir) {
    const base = env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : undefined;
    const home = base ?? (os.homedir() ? path.join(os.homedir(), '.cache') : undefined);
    if (!home) return undefined;
    dir = path.join(home, 'agentkeep', 'code-cache');
  }
  if (!path.isAbsolute(dir)) {
    warnBadEnv('AGENTKEEP_CODE_CACHE_DIR', dir, 'an absolute path', 'no code cache (the CLI is compiled afresh)');
    return undefined;
  }
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = fs.lstatSync(dir);
    const uid = process.getuid?.();
    if (!st.isDirectory() || (uid !== undefined && st.uid !== uid) || (st.mode & 0o022) !== 0) return undefined;
    return dir;
  } catch {
    return undefined;
  }
}

function sha1(b: Buffer | string): string {
  return createHash('sha1').update(b).digest('hex');
}

/** The cached data in `file` for a source with hash `sourceHash`, or undefined (missing, foreign, stale, corrupt). */
function readCache(file: string, sourceHash: string): Buffer | undefined {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    const st = fs.fstatSync(fd);
    const uid = process.getuid?.();
    if (!st.isFile() || (uid !== undefined && st.uid !== uid)) return undefined;
    const all = Buffer.allocUnsafe(st.size);
    let got = 0;
    while (got < st.size) {
      const n = fs.readSync(fd, all, got, st.size - got, got);
      if (n === 0) return undefined;
      got += n;
    }
    const nl = all.indexOf(10);
    if (nl < 0) return undefined;
    const [m1, m2, src, node, arch, sum] = all.subarray(0, nl).toString('latin1').split(' ');
    if (`${m1} ${m2}` !== MAGIC || src !== sourceHash || node !== process.version || arch !== process.arch)
      return undefined;
    const data = all.subarray(nl + 1);
    return sha1(data) === sum ? data : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Write the cache file whole (temp file + rename); any failure leaves no file behind and is ignored. */
function writeCache(file: string, sourceHash: string, data: Buffer): void {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const header = `${MAGIC} ${sourceHash} ${process.version} ${process.arch} ${sha1(data)}\n`;
    const fd = fs.openSync(tmp, 'wx', 0o600);
    try {
      fs.writeSync(fd, header);
      fs.writeSync(fd, data);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
    sweep(path.dirname(file), file);
  } catch {
    try {
      fs.rmSync(tmp, { force: true });
    } catch {
      /* nothing to clean */
    }
  }
}

/** Files of `dir` (but `keep`) not written for 30 days: caches of old versions and paths, temp files of crashed writers. */
function sweep(dir: string, keep: string): void {
  const old = Date.now() - 30 * 24 * 3600 * 1000;
  for (const n of fs.readdirSync(dir)) {
    const f = path.join(dir, n);
    if (f === keep || !/\.(bin|tmp)$/.test(n)) continue;
    try {
      const st = fs.lstatSync(f);
      if (st.isFile() && st.mtimeMs < old) fs.rmSync(f, { force: true });
    } catch {
      /* gone already */
    }
  }
}

/** Whether a plain require serves this process better (debugger, source maps). */
function cacheUnwanted(): boolean {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  return (
    flags.some((f) => f.startsWith('--inspect') || f === '--enable-source-maps') ||
    (process as { sourceMapsEnabled?: boolean }).sourceMapsEnabled === true
  );
}

/**
 * Load the CommonJS bundle `file` as a module (child of `parent`), with V8's code cache when one is
 * usable. Same module semantics as `require(file)`: `module`, `exports`, `require`, `__filename`,
 * `__dirname`, and the module in require.cache.
 * @param file absolute path of the bundle
 * @returns the module's exports (as `require(file)` returns them)
 */
export function loadWithCodeCache(file: string, parent: NodeModule): unknown {
  let run: (() => void) | undefined;
  try {
    run = prepare(file, parent);
  } catch {
    run = undefined;
  }
  // no usable cache machinery (or it failed): a plain require
  if (!run) return parent.require(file) as unknown;
  return run();
}

/** Compile `file` (with the cache); returns the function that runs it (and returns its exports), or undefined for a plain require. */
function prepare(file: string, parent: NodeModule): (() => unknown) | undefined {
  if (cacheUnwanted()) return undefined;
  const dir = codeCacheDir();
  if (!dir) return undefined;
  const bytes = fs.readFileSync(file);
  const sourceHash = sha1(bytes);
  // an ASCII bundle decodes as latin1 at memory speed; UTF-8 decoding of 5 MB costs ~10 ms more
  let source = isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
  if (source.startsWith('#!')) source = `//${source.slice(2)}`;
  // per bundle path and Node (the extension host's Electron and the system's node each keep theirs)
  const cacheFile = path.join(dir, `${sha1(`${file}\0${process.version}\0${process.arch}`)}.bin`);
  const cachedData = readCache(cacheFile, sourceHash);
  const script = new vm.Script(Module.wrap(source), {
    filename: file,
    ...(cachedData ? { cachedData } : {}),
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const fn = script.runInThisContext() as (
    exports: unknown,
    require: NodeJS.Require,
    module: NodeModule,
    filename: string,
    dirname: string,
  ) => void;
  const mod = new Module(file, parent);
  mod.filename = file;
  mod.paths = (Module as unknown as { _nodeModulePaths(d: string): string[] })._nodeModulePaths(path.dirname(file));
  const cache = (Module as unknown as { _cache: Record<string, NodeModule> })._cache;
  return () => {
    cache[file] = mod;
    const req = createRequire(file);
    fn.call(mod.exports, mod.exports, req, mod, file, path.dirname(file));
    mod.loaded = true;
    // after the top level ran, so the functions it compiled are in the cache too
    if (!cachedData || script.cachedDataRejected) {
      try {
        writeCache(cacheFile, sourceHash, script.createCachedData());
      } catch {
        /* no cache this time */
      }
    }
    return mod.exports as unknown;
  };
}
