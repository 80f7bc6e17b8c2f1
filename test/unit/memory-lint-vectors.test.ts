/**
 * Vectors for the memory lint (issue 12 item 2): the stores' own embeddings reach LintEntry.embedding
 * (Agent Zero: index.faiss written by the real FAISS library, python3-faiss, mapped to documents
 * through index.pkl's index_to_docstore_id; mem0: a local Qdrant storage.sqlite written with python3's
 * sqlite3 and pickle, as qdrant_client's local persistence does), and the optional OpenAI-compatible
 * embeddings endpoint, against a contract stub on 127.0.0.1 that speaks OpenAI's /v1/embeddings shape
 * (no real embeddings server runs here): success, batching, the key, and its failures (HTTP 500, a
 * timeout, vectors of the wrong dimension, a non-loopback http URL refused, the per-lint limit).
 */
import * as assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli, type CliIO } from '../../sidecar/cli';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { openStore } from '../../sidecar/memory';
import { readFaissVectors } from '../../sidecar/memory/agent-zero';
import { configuredEndpoint, embeddingsRequestUrl, maxAnswerBytes } from '../../sidecar/memory/lint/embeddings';
import type { LintEntry, LintInput } from '../../sidecar/memory/lint/model';
import { runLint, type RunLintDeps } from '../../sidecar/memory/lint/run';
import type { LintFinding } from '../../sidecar/protocol';
import { FIXTURES } from './helpers/paths';
import { restoreEnv } from './helpers/env';
import { simCert } from './helpers/pve';

const A0_FIXTURE = path.join(FIXTURES, 'memory', 'agent-zero');
const MEM0_FIXTURE = path.join(FIXTURES, 'memory', 'mem0');
const MINILM = 'huggingface/sentence-transformers/all-MiniLM-L6-v2';

/**
 * A python3 that imports faiss (Debian's python3-faiss is for the system python3, which may not be
 * first on PATH). @throws naming the package when there is none: this test needs the real library.
 */
function faissPython(): string {
  for (const py of ['python3', '/usr/bin/python3']) {
    try {
      execFileSync(py, ['-c', 'import faiss'], { stdio: 'ignore' });
      return py;
    } catch {
      /* next */
    }
  }
  throw new Error('No python3 with faiss: install python3-faiss (apt-get install -y python3-faiss; .ci/run does).');
}

function python(code: string, py = 'python3'): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(py, ['-c', code], (err, out, stderr) => (err ? reject(new Error(stderr || err.message)) : resolve(out))),
  );
}

/**
 * No machine probes, no endpoint unless a test configures one, and no other vector source than the
 * ones under test (`semantic: false`: the bundled sentence encoder of the pair rules, when present,
 * fills entries without a store vector too; an unknown dep is ignored before it lands).
 */
const QUIET = { probe: null, embeddings: null, semantic: false } as RunLintDeps;

/** runLint with a spy on the pure core: the input it was given, and the findings. */
async function lintInput(
  p: Parameters<typeof runLint>[0],
  deps: Parameters<typeof runLint>[1] = {},
): Promise<{ input: LintInput; entries: Map<string, LintEntry>; findings: LintFinding[] }> {
  let input: LintInput | undefined;
  const { findings } = await runLint(p, {
    ...QUIET,
    ...deps,
    lint: (i) => {
      input = i;
      return [];
    },
  });
  assert.ok(input, 'lintEntries was called');
  const entries = new Map<string, LintEntry>();
  for (const s of input.stores) for (const f of s.files) for (const e of f.entries) entries.set(e.id, e);
  return { input, entries, findings };
}

const vec = (e: LintEntry | undefined): number[] | undefined => (e?.embedding ? [...e.embedding.vector] : undefined);

describe('memory lint: vectors from the stores and from an embeddings endpoint (issue 12)', function () {
  this.timeout(60_000);
  let tmp: string;
  const savedEnv = { ...process.env };
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-vec-'));
    for (const k of Object.keys(process.env)) if (/^AGENTKEEP_(EMBEDDINGS|A0|MEM0)_/.test(k)) delete process.env[k];
  });
  afterEach(async () => {
    restoreEnv(savedEnv);
    await fs.rm(tmp, { recursive: true, force: true });
  });

  describe('Agent Zero: index.faiss rows through index_to_docstore_id', () => {
    /**
     * An Agent Zero root whose subdir `sub` has an index.pkl (a0_pickle, LangChain's shape) and an
     * index.faiss written by FAISS itself (`kind`: IndexFlatIP as Agent Zero makes it, IndexFlatL2, or
     * an HNSW index). Rows are added in `order` (docstore keys), so row i ↔ order[i].
     */
    async function a0Root(opts: {
      sub?: string;
      docs: Record<string, { text: string; id?: string }>;
      order: string[];
      vectors: number[][];
      kind?: 'IndexFlatIP' | 'IndexFlatL2' | 'IndexHNSWFlat';
      embedding?: object | null;
    }): Promise<string> {
      const root = path.join(tmp, 'a0');
      const dir = path.join(root, 'usr', 'memory', opts.sub ?? 'default');
      await fs.mkdir(dir, { recursive: true });
      const docs = Object.entries(opts.docs).map(([key, d]) => ({
        key,
        text: d.text,
        md: { id: d.id ?? key, area: 'main', timestamp: '2026-01-01 10:00:00' },
      }));
      await python(`
import sys, json; sys.path.insert(0, ${JSON.stringify(path.join(FIXTURES, 'memory'))})
import a0_pickle as a
docs = json.loads(${JSON.stringify(JSON.stringify(docs))})
store = a.InMemoryDocstore({d["key"]: a.Document(d["text"], d["md"]) for d in docs})
a.save(${JSON.stringify(path.join(dir, 'index.pkl'))}, store, dict(enumerate(${JSON.stringify(opts.order)})))
`);
      const kind = opts.kind ?? 'IndexFlatIP';
      const d = opts.vectors[0].length;
      await python(
        `
import faiss, numpy as np
index = faiss.${kind}(${d}${kind === 'IndexHNSWFlat' ? ', 8' : ''})
index.add(np.array(${JSON.stringify(opts.vectors)}, dtype="float32"))
faiss.write_index(index, ${JSON.stringify(path.join(dir, 'index.faiss'))})
`,
        faissPython(),
      );
      if (opts.embedding !== null)
        await fs.writeFile(
          path.join(dir, 'embedding.json'),
          JSON.stringify(
            opts.embedding ?? { model_provider: 'huggingface', model_name: 'sentence-transformers/all-MiniLM-L6-v2' },
          ),
        );
      return root;
    }

    /** Two documents, a and b, rows in that order, d=4. */
    const TWO_DOCS = {
      docs: { a: { text: 'Alpha' }, b: { text: 'Beta' } },
      order: ['a', 'b'],
      vectors: [
        [1, 2, 3, 4],
        [5, 6, 7, 8],
      ],
    };

    it('maps each FAISS row (IndexFlatIP, written by faiss) to its document, not by docstore order', async () => {
      // rows in another order than the docstore's; one document whose metadata.id is not its key
      const root = await a0Root({
        docs: {
          k1: { text: 'User prefers concise answers' },
          k2: { text: "User's staging server listens on port 2222" },
          k3: { text: 'Deploys go through GitHub Actions', id: 'Zz9Yy8Xx7W' },
        },
        order: ['k3', 'k1', 'k2'],
        vectors: [
          [0.5, 0.25, -1, 2],
          [1, 0, 0, 0.125],
          [-0.75, 3, 0.5, 0],
        ],
      });
      const { entries, findings } = await lintInput({ stores: [`agent-zero:${root}`] });
      assert.deepEqual(vec(entries.get('Zz9Yy8Xx7W')), [0.5, 0.25, -1, 2]);
      assert.deepEqual(vec(entries.get('k1')), [1, 0, 0, 0.125]);
      assert.deepEqual(vec(entries.get('k2')), [-0.75, 3, 0.5, 0]);
      for (const e of entries.values()) assert.equal(e.embedding?.model, MINILM, 'the model of embedding.json');
      assert.deepEqual(findings, [], 'no note, no warning');
    });

    it('IndexFlatL2 is read too; without embedding.json the model is agent-zero:unknown-model', async () => {
      const root = await a0Root({
        docs: { a: { text: 'Alpha' }, b: { text: 'Beta' } },
        order: ['a', 'b'],
        vectors: [
          [1, 2, 3],
          [4, 5, 6],
        ],
        kind: 'IndexFlatL2',
        embedding: null,
      });
      const bytes = await fs.readFile(path.join(root, 'usr', 'memory', 'default', 'index.faiss'));
      assert.equal(bytes.toString('latin1', 0, 4), 'IxF2', 'FAISS wrote an L2 flat index');
      const { entries } = await lintInput({ stores: [`agent-zero:${root}`] });
      assert.deepEqual(vec(entries.get('b')), [4, 5, 6]);
      assert.match(entries.get('a')?.embedding?.model ?? '', /^agent-zero:unknown-model \/.*\/usr\/memory\/default$/);
    });

    it('reads the vectors of the shared fixture index.faiss (d=8) for its four documents', async () => {
      const root = path.join(tmp, 'a0');
      await fs.cp(A0_FIXTURE, root, { recursive: true });
      const { entries } = await lintInput({ stores: [`agent-zero:${root}`] });
      assert.equal(entries.size, 4);
      const raw = readFaissVectors(await fs.readFile(path.join(root, 'usr', 'memory', 'default', 'index.faiss')));
      assert.equal(raw.d, 8);
      assert.equal(raw.vectors?.length, 4);
      for (const e of entries.values()) {
        assert.equal(e.embedding?.vector.length, 8, e.id);
        assert.equal(e.embedding?.model, MINILM);
      }
      // every row went to a different entry
      const rows = new Set(
        [...entries.values()].map((e) => raw.vectors!.findIndex((v) => vec(e)!.join() === [...v].join())),
      );
      assert.deepEqual([...rows].sort(), [0, 1, 2, 3]);
    });

    it('a damaged (truncated) index.faiss gives no vectors and stays a broken-store error, never a crash', async () => {
      const root = await a0Root(TWO_DOCS);
      const faiss = path.join(root, 'usr', 'memory', 'default', 'index.faiss');
      const full = await fs.readFile(faiss);
      await fs.writeFile(faiss, full.subarray(0, full.length - 5));
      assert.match(readFaissVectors(await fs.readFile(faiss)).problem ?? '', /truncated/);
      const { entries, input } = await lintInput({ stores: [`agent-zero:${root}`] });
      assert.equal(entries.size, 2, 'the texts are still read from index.pkl');
      for (const e of entries.values()) assert.equal(e.embedding, undefined);
      assert.match(input.stores[0].files[0].broken?.message ?? '', /index\.faiss is damaged/);
      // a file too short for a header
      await fs.writeFile(faiss, 'IxF');
      const again = await lintInput({ stores: [`agent-zero:${root}`] });
      for (const e of again.entries.values()) assert.equal(e.embedding, undefined);
    });

    it('an index.faiss over the size cap, or not a flat index (HNSW by faiss), is skipped with a lint note', async () => {
      const root = await a0Root(TWO_DOCS);
      const capped = await lintInput({ stores: [`agent-zero:${root}`] }, { storeVectorMaxBytes: 64 });
      for (const e of capped.entries.values()) assert.equal(e.embedding, undefined);
      assert.equal(capped.findings.length, 1);
      assert.equal(capped.findings[0].kind, 'store');
      assert.equal(capped.findings[0].severity, 'info');
      assert.match(
        capped.findings[0].message,
        /^Lint note: The vectors of .*index\.faiss were not read: the file is 77 B, over the 64 B/,
      );

      const hnsw = await a0Root({ ...TWO_DOCS, kind: 'IndexHNSWFlat' });
      const r = await lintInput({ stores: [`agent-zero:${hnsw}`] });
      for (const e of r.entries.values()) assert.equal(e.embedding, undefined);
      const note = r.findings.find((f) => f.severity === 'info');
      assert.match(note?.message ?? '', /it is a FAISS IHNf index, and the lint reads flat indexes only/);
    });
    it('FAISS rows that do not match index.pkl (3, 5 or 0 rows for 4 documents) are a broken store, with a note', async () => {
      const docs = { a: { text: 'Alpha' }, b: { text: 'Beta' }, c: { text: 'Gamma' }, d: { text: 'Delta' } };
      const rows = (n: number): number[][] => Array.from({ length: n }, (_, i) => [i + 1, 0.5, -1, 2]);
      for (const [n, re] of [
        [
          3,
          /holds 3 vector\(s\), index\.pkl 4 document\(s\) \(0 row\(s\) without a document, 1 document\(s\) without a row\).*never recalls/,
        ],
        [
          5,
          /holds 5 vector\(s\), index\.pkl 4 document\(s\) \(1 row\(s\) without a document, 0 document\(s\) without a row\).*KeyError/,
        ],
      ] as const) {
        const root = await a0Root({ docs, order: ['a', 'b', 'c', 'd'], vectors: rows(n) });
        const { input, entries, findings } = await lintInput({ stores: [`agent-zero:${root}`] });
        const broken = input.stores[0].files[0].broken?.message ?? '';
        assert.match(
          broken,
          /^usr\/memory\/default\/index\.faiss does not match usr\/memory\/default\/index\.pkl/,
          `${n}`,
        );
        assert.match(broken, re, `${n} rows`);
        assert.deepEqual(vec(entries.get('a')), [1, 0.5, -1, 2], 'a row that belongs to a document is still read');
        if (n === 3) assert.equal(entries.get('d')?.embedding, undefined, 'the document without a row');
        const note = findings.find((f) => f.severity === 'info' && /does not match its index\.pkl/.test(f.message));
        assert.ok(note, `a lint note says rows were left out (${n})`);
        // the full lint reports the store as broken: an error
        const full = await runLint({ stores: [`agent-zero:${root}`] }, QUIET);
        assert.ok(
          full.findings.some(
            (f) =>
              f.severity === 'error' &&
              /^index\.faiss is broken, so the store cannot be trusted as it is: usr\/memory\/default\/index\.faiss does not match/.test(
                f.message,
              ),
          ),
          JSON.stringify(full.findings.map((f) => f.message)),
        );
        await fs.rm(root, { recursive: true });
      }
      // 0 rows (an empty index written by faiss) for 4 documents
      const root = await a0Root({ docs, order: ['a', 'b', 'c', 'd'], vectors: rows(1) });
      await python(
        `import faiss; faiss.write_index(faiss.IndexFlatIP(4), ${JSON.stringify(path.join(root, 'usr/memory/default/index.faiss'))})`,
        faissPython(),
      );
      const zero = await lintInput({ stores: [`agent-zero:${root}`] });
      assert.match(zero.input.stores[0].files[0].broken?.message ?? '', /holds 0 vector\(s\), index\.pkl 4 document/);
    });

    it('a big, sparse, FIFO or /dev/zero index.faiss is judged by its header and size, never read whole', async () => {
      const root = await a0Root(TWO_DOCS);
      const faiss = path.join(root, 'usr', 'memory', 'default', 'index.faiss');
      const brokenOf = async (): Promise<string> =>
        (await lintInput({ stores: [`agent-zero:${root}`] })).input.stores[0].files[0].broken?.message ?? '';
      // a 3 GiB sparse file of zeros: damaged by its first bytes (it was "greater than 2 GiB … check the permissions")
      await fs.rm(faiss);
      const h = await fs.open(faiss, 'w');
      await h.truncate(3 * 1024 ** 3);
      await h.close();
      assert.match(
        await brokenOf(),
        /^usr\/memory\/default\/index\.faiss is damaged: it does not start with a FAISS index type \(first bytes 00000000\)/,
      );
      // a valid flat header for 2 rows of d=4 on a 3 GiB file: the size arithmetic says so
      const head = Buffer.alloc(45);
      head.write('IxFI', 0, 'latin1');
      head.writeInt32LE(4, 4);
      head.writeBigInt64LE(2n, 8);
      head.writeUInt8(1, 32);
      head.writeBigUInt64LE(8n, 37);
      const fh = await fs.open(faiss, 'r+');
      await fh.write(head, 0, head.length, 0);
      await fh.close();
      assert.match(
        await brokenOf(),
        /its header says 2 vectors of dimension 4 \(77 bytes\), but the file has 3221225472 bytes/,
      );
      // a FIFO, and a symlink to /dev/zero: refused, not read (both hung)
      await fs.rm(faiss);
      execFileSync('mkfifo', [faiss]);
      assert.match(
        await brokenOf(),
        /index\.faiss is a FIFO \(named pipe\), not a regular file.*AgentKeep does not read it/,
      );
      await fs.rm(faiss);
      await fs.symlink('/dev/zero', faiss);
      assert.match(await brokenOf(), /index\.faiss is a device or other special file, not a regular file/);
      const r = await lintInput({ stores: [`agent-zero:${root}`] });
      for (const e of r.entries.values()) assert.equal(e.embedding, undefined);
    });

    it('an index.faiss row with NaN or Infinity is not a vector: left out with a note', async () => {
      const root = await a0Root(TWO_DOCS);
      const faiss = path.join(root, 'usr', 'memory', 'default', 'index.faiss');
      const buf = await fs.readFile(faiss);
      buf.writeFloatLE(NaN, buf.length - 4); // row b, last component
      await fs.writeFile(faiss, buf);
      const { entries, findings } = await lintInput({ stores: [`agent-zero:${root}`] });
      assert.deepEqual(vec(entries.get('a')), [1, 2, 3, 4]);
      assert.equal(entries.get('b')?.embedding, undefined);
      assert.ok(findings.some((f) => /1 vector\(s\) of .*index\.faiss hold NaN or Infinity/.test(f.message)));
    });
  });

  it('a store whose vectors cannot be read (its machine gone) is a warning; the lint goes on by the words', async () => {
    const root = path.join(tmp, 'a0');
    await fs.cp(A0_FIXTURE, root, { recursive: true });
    const { findings, entries } = await lintInput(
      { stores: [`agent-zero:${root}`] },
      {
        openStore: (spec) => {
          const real = openStore(spec);
          const lintProfile = {
            embeddings: (): never => {
              throw new AgentKeepError(
                'FileError',
                'Cannot read index.faiss over SSH: the connection was lost.',
                'Check the host.',
              );
            },
          };
          return new Proxy(real, { get: (t, k, r) => (k === 'lintProfile' ? lintProfile : Reflect.get(t, k, r)) });
        },
      },
    );
    assert.equal(entries.size, 4);
    for (const e of entries.values()) assert.equal(e.embedding, undefined);
    assert.equal(findings.length, 1);
    assert.equal(findings[0].severity, 'warning');
    assert.match(
      findings[0].message,
      /^The vectors of agent-zero:.* could not be read: Cannot read index\.faiss over SSH.*compared by their words only/,
    );
    assert.equal(findings[0].suggestion, 'Check the host.');
  });

  describe('mem0: the vectors of the local Qdrant points', () => {
    /** A mem0 dir with a local Qdrant collection: points pickled as qdrant_client persists them. */
    async function mem0Dir(
      points: Array<{ id: string; text: string; vector: unknown }>,
      config?: object,
    ): Promise<string> {
      const dir = path.join(tmp, '.mem0');
      const db = path.join(dir, 'qdrant', 'collection', 'mem0', 'storage.sqlite');
      await fs.mkdir(path.dirname(db), { recursive: true });
      await fs.copyFile(path.join(MEM0_FIXTURE, 'history.db'), path.join(dir, 'history.db'));
      await fs.chmod(path.join(dir, 'history.db'), 0o644);
      await fs.writeFile(
        path.join(dir, 'qdrant', 'meta.json'),
        JSON.stringify({
          collections: { mem0: { vectors: { size: 4, distance: 'Cosine', on_disk: true } } },
          aliases: {},
        }),
      );
      if (config) await fs.writeFile(path.join(dir, 'config.json'), JSON.stringify(config));
      // a stand-in PointStruct with the real class path and pydantic v2's pickled state
      await python(`
import base64, json, pickle, sqlite3, sys, types
for n in ["qdrant_client", "qdrant_client.http", "qdrant_client.http.models", "qdrant_client.http.models.models"]:
    sys.modules.setdefault(n, types.ModuleType(n))
class PointStruct:
    def __init__(self, id, vector, payload):
        self.__dict__.update({"id": id, "vector": vector, "payload": payload})
    def __getstate__(self):
        return {"__dict__": dict(self.__dict__), "__pydantic_extra__": None,
                "__pydantic_fields_set__": {"id", "vector", "payload"}, "__pydantic_private__": None}
PointStruct.__module__ = "qdrant_client.http.models.models"; PointStruct.__qualname__ = "PointStruct"
sys.modules["qdrant_client.http.models.models"].PointStruct = PointStruct
c = sqlite3.connect(${JSON.stringify(db)})
c.execute("CREATE TABLE IF NOT EXISTS points (id TEXT PRIMARY KEY, point BLOB)")
for p in json.loads(${JSON.stringify(JSON.stringify(points))}):
    pt = PointStruct(p["id"], p["vector"], {"data": p["text"], "user_id": "dana", "created_at": "2026-01-01T10:00:00+00:00"})
    c.execute("INSERT INTO points VALUES (?,?)", (base64.b64encode(pickle.dumps(p["id"])).decode(), sqlite3.Binary(pickle.dumps(pt))))
c.commit(); c.close()
`);
      return dir;
    }
    const ID1 = '11111111-1111-4111-8111-111111111111';
    const ID2 = '22222222-2222-4222-8222-222222222222';
    const ID3 = '33333333-3333-4333-8333-333333333333';

    it('each point vector reaches its entry; the model from config.json, else mem0:unknown-model', async () => {
      const points = [
        { id: ID1, text: 'Likes Sichuan food', vector: [0.1, -0.2, 0.3, 0.4] },
        { id: ID2, text: 'Works at Acme', vector: { '': [1, 2, 3, 4] } }, // one named dense vector
        { id: ID3, text: 'Has no usable vector', vector: { a: [1, 2], b: [3, 4] } },
      ];
      const dir = await mem0Dir(points, {
        embedder: { provider: 'openai', config: { model: 'text-embedding-3-small' } },
      });
      const { entries, findings } = await lintInput({ stores: [`mem0:${dir}`] });
      assert.deepEqual(
        vec(entries.get(ID1))?.map((x) => Math.round(x * 1e6) / 1e6),
        [0.1, -0.2, 0.3, 0.4],
      );
      assert.equal(entries.get(ID1)?.embedding?.model, 'openai/text-embedding-3-small');
      assert.deepEqual(vec(entries.get(ID2)), [1, 2, 3, 4]);
      assert.equal(entries.get(ID3)?.embedding, undefined, 'two named vectors: which one is unknown');
      assert.deepEqual(findings, []);

      await fs.rm(path.join(dir, 'config.json'));
      const again = await lintInput({ stores: [`mem0:${dir}`] });
      assert.equal(again.entries.get(ID1)?.embedding?.model, `mem0:unknown-model ${dir}`, 'named with its store');
    });

    it('the shared fixture storage.sqlite gives its point its vector', async () => {
      const dir = path.join(tmp, '.mem0f');
      await fs.cp(MEM0_FIXTURE, dir, { recursive: true });
      const { entries } = await lintInput({ stores: [`mem0:${dir}`] });
      const e = entries.get('3f2b8a9e-6c1d-4b7a-9e2f-0a1b2c3d4e5f');
      assert.deepEqual(
        vec(e)?.map((x) => Math.round(x * 1e6) / 1e6),
        [0.1, 0.2, 0.3, 0.4],
      );
    });

    it('a damaged storage.sqlite gives no vectors and stays broken; one over the cap is a lint note', async () => {
      const dir = await mem0Dir([{ id: ID1, text: 'Likes Sichuan food', vector: [0.1, 0.2, 0.3, 0.4] }]);
      const capped = await lintInput({ stores: [`mem0:${dir}`] }, { storeVectorMaxBytes: 100 });
      assert.equal(capped.entries.get(ID1)?.embedding, undefined);
      assert.match(
        capped.findings[0]?.message ?? '',
        /^Lint note: The vectors of .*storage\.sqlite were not read: .* over the 100 B/,
      );

      const db = path.join(dir, 'qdrant', 'collection', 'mem0', 'storage.sqlite');
      // a second, intact collection: a store with every file broken is an error of its own
      await fs.mkdir(path.join(dir, 'qdrant', 'collection', 'intact'));
      await fs.copyFile(db, path.join(dir, 'qdrant', 'collection', 'intact', 'storage.sqlite'));
      const bytes = await fs.readFile(db);
      bytes.fill(0x55, 100, 4000); // the header survives, the pages do not
      await fs.writeFile(db, bytes);
      const { input, findings } = await lintInput({ stores: [`mem0:${dir}`] });
      const [intact, broken] = input.stores[0].files;
      assert.match(broken.file, /collection\/mem0\/storage\.sqlite$/);
      assert.ok(broken.broken, 'reported as broken');
      assert.equal(broken.entries.length, 0);
      assert.match(intact.file, /collection\/intact\/storage\.sqlite$/);
      assert.equal(intact.entries[0].embedding?.vector.length, 4, 'the intact collection keeps its vectors');
      assert.deepEqual(findings, [], 'no vector warning of its own: the broken file is said once, by the lint');
    });
    it('a damaged or empty storage.sqlite is a broken store (an error finding); the other stores are still linted', async () => {
      const a0 = path.join(tmp, 'a0');
      await fs.cp(A0_FIXTURE, a0, { recursive: true });
      const dir = await mem0Dir([{ id: ID1, text: 'Likes Sichuan food', vector: [0.1, 0.2, 0.3, 0.4] }]);
      const db = path.join(dir, 'qdrant', 'collection', 'mem0', 'storage.sqlite');
      const good = await fs.readFile(db);
      for (const [what, bytes, re] of [
        [
          'truncated',
          good.subarray(0, 1000),
          /storage\.sqlite is broken, so .*SQLite database .*storage\.sqlite is damaged/,
        ],
        ['random bytes', Buffer.from(Array.from({ length: 8192 }, (_, i) => (i * 7919) % 251)), /is damaged/],
        [
          '0 bytes',
          Buffer.alloc(0),
          /storage\.sqlite is broken, .*is empty \(no tables\): the points of Qdrant collection "mem0" are gone/,
        ],
      ] as const) {
        await fs.writeFile(db, bytes);
        const { input } = await lintInput({ stores: [`agent-zero:${a0}`, `mem0:${dir}`] });
        assert.equal(input.stores.length, 2, what);
        assert.equal(input.stores[0].files.flatMap((f) => f.entries).length, 4, `Agent Zero is still linted (${what})`);
        const full = await runLint({ stores: [`agent-zero:${a0}`, `mem0:${dir}`] }, QUIET);
        const err = full.findings.find((f) => f.severity === 'error' && f.stores?.includes(`mem0:${dir}`));
        assert.match(err?.message ?? '', re, what);
      }
      // through the CLI: the lint exits 1 (an error finding) with the store error in its findings
      const out: string[] = [];
      const errs: string[] = [];
      const io: CliIO = { out: (x) => out.push(x), err: (x) => errs.push(x), isTTY: false, confirm: async () => true };
      const argv = ['memory', 'lint', '--store', `agent-zero:${a0}`, '--store', `mem0:${dir}`, '--json'];
      const code = await runCli([...argv, '--state-dir', path.join(tmp, 'state')], (o) => new Core(o), io);
      assert.equal(code, 1);
      const r = JSON.parse(out.join('')) as { findings: LintFinding[] };
      assert.ok(r.findings.some((f) => f.severity === 'error' && /is empty \(no tables\)/.test(f.message)));
      assert.deepEqual(errs, [], 'findings, not a failed command');
    });
  });

  describe('the embeddings endpoint (contract stub of OpenAI /v1/embeddings on 127.0.0.1)', () => {
    interface Seen {
      path: string;
      auth?: string;
      body: { model: string; input: string[] };
    }
    /** A stub answering POST /v1/embeddings; `answer` decides (default: one 3-d vector per text, from its length). */
    async function stub(
      answer?: (body: Seen['body'], res: http.ServerResponse) => void,
    ): Promise<{ url: string; seen: Seen[]; close: () => Promise<void> }> {
      const seen: Seen[] = [];
      const server = http.createServer((req, res) => {
        let raw = '';
        req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
        req.on('end', () => {
          const body = JSON.parse(raw) as Seen['body'];
          seen.push({
            path: req.url ?? '',
            ...(req.headers.authorization ? { auth: req.headers.authorization } : {}),
            body,
          });
          if (req.method !== 'POST' || req.url !== '/v1/embeddings') {
            res.writeHead(404).end();
            return;
          }
          if (answer) return answer(body, res);
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              object: 'list',
              model: body.model,
              // reversed, with their indexes: the client must order by index
              data: body.input
                .map((t, index) => ({ object: 'embedding', index, embedding: [t.length, index, 0.5] }))
                .reverse(),
            }),
          );
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as AddressInfo).port;
      return {
        url: `http://127.0.0.1:${port}/v1`,
        seen,
        close: () =>
          new Promise<void>((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      };
    }

    async function hermes(entries: string[]): Promise<string> {
      const h = path.join(tmp, 'hermes');
      await fs.mkdir(path.join(h, 'memories'), { recursive: true });
      await fs.writeFile(path.join(h, 'memories', 'MEMORY.md'), entries.join('\n§\n'));
      return `hermes:${h}`;
    }
    const TEXTS = ['User prefers concise answers', 'Staging listens on 2222', 'Deploys via GitHub Actions'];

    it('fills the entries without a store vector, in batches, with the key from env; store vectors stay', async () => {
      const s = await stub();
      try {
        process.env.AGENTKEEP_EMBEDDINGS_KEY = 'sk-test-123';
        const a0 = path.join(tmp, 'a0');
        await fs.cp(A0_FIXTURE, a0, { recursive: true });
        const { entries, findings } = await lintInput(
          { stores: [await hermes(TEXTS), `agent-zero:${a0}`], embeddings: { url: s.url, model: 'nomic-embed-text' } },
          { embeddings: undefined, embeddingsLimits: { batch: 2 } },
        );
        assert.deepEqual(findings, []);
        assert.equal(s.seen.length, 2, '3 texts in batches of 2');
        assert.deepEqual(
          s.seen.flatMap((x) => x.body.input),
          TEXTS,
          'only the Hermes entries were sent: Agent Zero has its own vectors',
        );
        assert.ok(s.seen.every((x) => x.body.model === 'nomic-embed-text' && x.auth === 'Bearer sk-test-123'));
        const hermesEntries = [...entries.values()].filter((e) => TEXTS.includes(e.text));
        assert.equal(hermesEntries.length, 3);
        for (const e of hermesEntries) {
          assert.equal(e.embedding?.model, 'nomic-embed-text');
          assert.equal(e.embedding?.vector[0], e.text.length, 'each text got its own vector (ordered by index)');
        }
        const a0Entries = [...entries.values()].filter((e) => !TEXTS.includes(e.text));
        assert.equal(a0Entries.length, 4);
        for (const e of a0Entries) assert.equal(e.embedding?.model, MINILM);
      } finally {
        await s.close();
      }
    });

    it('is configured from env (AGENTKEEP_EMBEDDINGS_URL / _MODEL) and off without it', async () => {
      const s = await stub();
      try {
        const store = await hermes(TEXTS);
        const off = await lintInput({ stores: [store] }, { embeddings: undefined });
        assert.equal(s.seen.length, 0, 'off by default');
        for (const e of off.entries.values()) assert.equal(e.embedding, undefined);
        process.env.AGENTKEEP_EMBEDDINGS_URL = s.url;
        process.env.AGENTKEEP_EMBEDDINGS_MODEL = 'all-minilm';
        const on = await lintInput({ stores: [store] }, { embeddings: undefined });
        assert.equal(s.seen.length, 1);
        assert.equal(s.seen[0].auth, undefined, 'no key configured: no Authorization header');
        for (const e of on.entries.values()) assert.equal(e.embedding?.model, 'all-minilm');
      } finally {
        await s.close();
      }
    });

    /** Lint TEXTS with the endpoint: the warning it gives, and that no entry got a vector. */
    async function failing(url: string, limits = {}): Promise<LintFinding> {
      const { entries, findings } = await lintInput(
        { stores: [await hermes(TEXTS)], embeddings: { url, model: 'nomic-embed-text' } },
        { embeddings: undefined, embeddingsLimits: limits },
      );
      for (const e of entries.values()) assert.equal(e.embedding, undefined, 'no half-filled vectors');
      assert.equal(findings.length, 1);
      const f = findings[0];
      assert.equal(f.kind, 'store');
      assert.equal(f.severity, 'warning');
      assert.ok(f.message.includes(`${url}/embeddings`), 'names the URL');
      assert.match(f.suggestion ?? '', /ollama pull nomic-embed-text.*or lint without it/);
      return f;
    }

    it('HTTP 500: a store warning naming the URL, the answer and the fix; the lint still runs', async () => {
      const s = await stub((_b, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('model not loaded'));
      try {
        const f = await failing(s.url);
        assert.match(f.message, /failed: HTTP 500 Internal Server Error: model not loaded\. The 3 entries/);
        // and the real lint (not the spy) still gives its findings with the warning
        const before = s.seen.length;
        const { findings } = await runLint(
          { stores: [await hermes([...TEXTS, TEXTS[0]])], embeddings: { url: s.url, model: 'm' } },
          { ...QUIET, embeddings: undefined },
        );
        assert.deepEqual(findings.map((x) => x.kind).sort(), ['duplicate', 'store']);
        assert.equal(s.seen[before].body.input.length, 3, 'the repeated text is asked once');
      } finally {
        await s.close();
      }
    });

    it('a timeout: no answer within the time is a warning, not a hung lint', async () => {
      const s = await stub(() => undefined); // never answers
      try {
        const t0 = Date.now();
        const f = await failing(s.url, { timeoutMs: 300 });
        assert.match(f.message, /failed: no answer within 0\.3 s/);
        assert.ok(Date.now() - t0 < 5000);
      } finally {
        await s.close();
      }
    });

    it("the lint's deadline running out mid-request is named as the deadline, not as the request's timeout", async () => {
      const s = await stub(() => undefined); // never answers
      try {
        const f = await failing(s.url, { timeoutMs: 5000, deadlineMs: 300 });
        assert.match(f.message, /failed: the lint's 0\.3 s for the endpoint ran out/);
      } finally {
        await s.close();
      }
    });

    it('vectors of the wrong dimension (differing within an answer or across batches) are refused', async () => {
      const s = await stub((b, res) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            data: b.input.map((_t, index) => ({ index, embedding: index ? [1, 2, 3, 4] : [1, 2, 3] })),
          }),
        ),
      );
      try {
        const f = await failing(s.url);
        assert.match(f.message, /different dimensions \(3 and 4\)/);
      } finally {
        await s.close();
      }
      let calls = 0;
      const s2 = await stub((b, res) => {
        const dim = calls++ === 0 ? 3 : 5;
        res
          .writeHead(200)
          .end(JSON.stringify({ data: b.input.map((_t, index) => ({ index, embedding: Array(dim).fill(1) })) }));
      });
      try {
        const f = await failing(s2.url, { batch: 2 });
        assert.match(f.message, /different dimensions \(3 and 5\)/);
      } finally {
        await s2.close();
      }
      const s3 = await stub((_b, res) =>
        res.writeHead(200).end(JSON.stringify({ data: [{ index: 0, embedding: [1] }] })),
      );
      try {
        assert.match((await failing(s3.url)).message, /the answer holds 1 vectors for 3 texts/);
      } finally {
        await s3.close();
      }
    });

    it('a refused connection is a warning too', async () => {
      const s = await stub();
      const url = s.url;
      await s.close(); // nothing listens there now
      assert.match((await failing(url)).message, /failed: the connection was refused/);
    });

    it('plain http to another machine is refused before anything is read or sent; https is allowed', async () => {
      await assert.rejects(
        runLint(
          { stores: [await hermes(TEXTS)], embeddings: { url: 'http://192.0.2.7:11434/v1', model: 'm' } },
          { probe: null },
        ),
        (e: unknown) =>
          e instanceof AgentKeepError &&
          e.kind === 'InvalidParams' &&
          /plain http to another machine \(192\.0\.2\.7\)/.test(e.message) &&
          /ssh -L 11434:127\.0\.0\.1:11434 192\.0\.2\.7/.test(e.hint ?? ''),
      );
      assert.equal(
        embeddingsRequestUrl('https://api.openai.com/v1').toString(),
        'https://api.openai.com/v1/embeddings',
      );
      assert.equal(
        embeddingsRequestUrl('http://localhost:11434/v1/').toString(),
        'http://localhost:11434/v1/embeddings',
      );
      assert.equal(
        embeddingsRequestUrl('http://[::1]:8080/v1/embeddings').toString(),
        'http://[::1]:8080/v1/embeddings',
      );
      assert.throws(() => embeddingsRequestUrl('https://u:p@example.com/v1'), /carries a user or password/);
      assert.throws(() => embeddingsRequestUrl('ftp://127.0.0.1/v1'), /is not http\(s\)/);
      assert.throws(() => configuredEndpoint({ url: 'http://127.0.0.1:1/v1' }, {}), /without a model/);
      assert.throws(() => configuredEndpoint({ model: 'm' }, {}), /without an embeddings URL/);
      assert.equal(configuredEndpoint(undefined, {}), undefined, 'off by default');
    });

    it('an endless or oversized answer is cut at the cap (bytes for the batch), a warning, not an out-of-memory lint', async () => {
      let sent = 0;
      const s = await stub((_b, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(1 << 20, 0x20); // spaces: valid JSON whitespace, forever
        const more = (): void => {
          while (sent < 2 ** 31 && res.write(chunk)) sent += chunk.length;
          if (sent < 2 ** 31) res.once('drain', more);
        };
        res.write('{"data": [');
        more();
      });
      try {
        const f = await failing(s.url, { batch: 2 });
        assert.match(f.message, /failed: the answer is over 4.0 MiB, more than this batch's vectors .* take as JSON/);
        assert.ok(sent < 64 << 20, `the stub was stopped early (${sent} bytes sent)`);
        assert.equal(maxAnswerBytes(64), (1 << 20) + 64 * 8192 * 32, '17 MiB for the default batch');
      } finally {
        await s.close();
      }
    });

    it('a redirect is not followed and names its Location; an untrusted certificate hints NODE_EXTRA_CA_CERTS', async () => {
      const s = await stub((_b, res) => res.writeHead(307, { location: 'http://192.0.2.7/v1/embeddings' }).end());
      try {
        assert.match(
          (await failing(s.url)).message,
          /failed: HTTP 307: the endpoint redirects to http:\/\/192\.0\.2\.7\/v1\/embeddings, and redirects are not followed/,
        );
      } finally {
        await s.close();
      }
      const { key, cert } = simCert();
      const tls = https.createServer({ key, cert }, (_req, res) => res.writeHead(200).end('{}'));
      await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
      try {
        const url = `https://127.0.0.1:${(tls.address() as AddressInfo).port}/v1`;
        const f = await failing(url);
        assert.match(
          f.message,
          /its TLS certificate is not trusted \((DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)/,
        );
        assert.match(f.message, /NODE_EXTRA_CA_CERTS=\/path\/to\/ca\.pem/);
      } finally {
        tls.closeAllConnections();
        await new Promise<void>((r) => tls.close(() => r()));
      }
    });

    it('0.0.0.0 is a listen address: refused with a hint to 127.0.0.1; *.localhost is not loopback; the CLI exits 2', async () => {
      assert.throws(
        () => embeddingsRequestUrl('http://0.0.0.0:11434/v1'),
        (e: unknown) =>
          e instanceof AgentKeepError &&
          e.kind === 'InvalidParams' &&
          /names 0\.0\.0\.0, the address a server listens on/.test(e.message) &&
          e.hint === "Give this machine's loopback address: http://127.0.0.1:11434/v1.",
      );
      assert.throws(() => embeddingsRequestUrl('http://[::]:11434/v1'), /the address a server listens on/);
      assert.throws(() => embeddingsRequestUrl('http://evil.localhost:11434/v1'), /plain http to another machine/);
      assert.equal(embeddingsRequestUrl('http://127.8.0.1/v1').toString(), 'http://127.8.0.1/v1/embeddings');
      const out: string[] = [];
      const err: string[] = [];
      const io: CliIO = { out: (x) => out.push(x), err: (x) => err.push(x), isTTY: false, confirm: async () => true };
      const store = await hermes(TEXTS);
      const argv = ['memory', 'lint', '--store', store, '--embeddings-url', 'http://192.0.2.7:11434/v1'];
      const code = await runCli(
        [...argv, '--embeddings-model', 'm', '--state-dir', path.join(tmp, 'state')],
        (o) => new Core(o),
        io,
      );
      assert.equal(code, 2, 'a refused URL is a bad argument (exit 2), not an error finding (exit 1)');
      assert.match(err.join('\n'), /plain http to another machine/);
    });

    it('memory lint --fix with a failing endpoint says so (not only "Nothing to lint --fix.")', async () => {
      const s = await stub();
      const url = s.url;
      await s.close();
      const out: string[] = [];
      const err: string[] = [];
      const io: CliIO = { out: (x) => out.push(x), err: (x) => err.push(x), isTTY: false, confirm: async () => true };
      const argv = ['memory', 'lint', '--fix', '--store', await hermes(TEXTS), '--embeddings-url', url];
      const code = await runCli(
        [...argv, '--embeddings-model', 'm', '--state-dir', path.join(tmp, 'state')],
        (o) => new Core(o),
        io,
      );
      assert.equal(code, 0);
      const text = out.join('\n');
      assert.match(text, /Nothing to lint --fix\./);
      assert.match(text, /skipped: The embeddings endpoint .* failed: the connection was refused/);
    });

    it('at most maxEntries entries per lint: the rest is a lint note', async () => {
      const s = await stub();
      try {
        const { entries, findings } = await lintInput(
          { stores: [await hermes(TEXTS)], embeddings: { url: s.url, model: 'm' } },
          { embeddings: undefined, embeddingsLimits: { maxEntries: 2 } },
        );
        assert.equal([...entries.values()].filter((e) => e.embedding).length, 2);
        assert.equal(findings.length, 1);
        assert.equal(findings[0].severity, 'info');
        assert.match(
          findings[0].message,
          /^Lint note: the embeddings endpoint .* first 2 of 3 entries .* other 1 were compared by their words only/,
        );
      } finally {
        await s.close();
      }
    });

    it('agentkeep memory lint --embeddings-url/--embeddings-model reach the endpoint through memory.lint', async () => {
      const s = await stub();
      try {
        const store = await hermes(TEXTS);
        const out: string[] = [];
        const err: string[] = [];
        const io: CliIO = { out: (x) => out.push(x), err: (x) => err.push(x), isTTY: false, confirm: async () => true };
        const state = path.join(tmp, 'state');
        const code = await runCli(
          [
            'memory',
            'lint',
            '--store',
            store,
            '--embeddings-url',
            s.url,
            '--embeddings-model',
            'nomic-embed-text',
            '--json',
            '--state-dir',
            state,
          ],
          (o) => new Core(o),
          io,
        );
        assert.equal(code ?? 0, 0, err.join('\n'));
        assert.equal(s.seen.length, 1);
        assert.equal(s.seen[0].body.model, 'nomic-embed-text');
        const bad = await runCli(
          ['memory', 'lint', '--store', store, '--embeddings-model', 'x', '--state-dir', state],
          (o) => new Core(o),
          io,
        );
        assert.notEqual(bad, 0);
        assert.match(err.join('\n'), /--embeddings-model needs --embeddings-url/);
      } finally {
        await s.close();
      }
    });
  });
});
