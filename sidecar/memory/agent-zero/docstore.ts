/**
 * Read Agent Zero's `index.pkl`: the pickle LangChain's `FAISS.save_local` writes, a tuple
 * `(InMemoryDocstore, index_to_docstore_id)` where `InMemoryDocstore._dict` maps id -> `Document`
 * (page_content, metadata). Parsed with pickleparser (pure JS); no Python class is executed.
 *
 * Lenient about class paths and versions: `langchain_community.docstore.in_memory.InMemoryDocstore`
 * (current), `langchain.docstore.in_memory.InMemoryDocstore` (older), and any `Document` class whose
 * state carries `page_content` (pydantic v2 state `{__dict__: {...}}` or a plain state dict, as
 * pydantic v1 / older LangChain pickled it). Unknown shapes are reported as warnings, never thrown,
 * except when nothing in the file looks like a docstore (FileError).
 * Sources: shared/reference/memory-stores.md §2.2, §2.5 (agent0ai/agent-zero @ 2d95cd9f
 * plugins/_memory/helpers/memory.py).
 */
import { Parser } from 'pickleparser';
import { AgentKeepError } from '../../core/errors';

/** One document of the docstore, as stored. */
export interface A0Document {
  /** Docstore key (= metadata.id in Agent Zero). */
  key: string;
  /** page_content */
  text: string;
  /** Document.metadata as a plain object ({} when absent). */
  metadata: Record<string, unknown>;
  /** Fully qualified Python class name of the document object (e.g. langchain_core.documents.base.Document). */
  className?: string;
}

/** The parsed docstore. */
export interface A0Docstore {
  docs: A0Document[];
  /** FAISS row -> docstore key (index_to_docstore_id), when present. */
  indexToId: Map<number, string>;
  /** Problems that did not stop the read (unknown class, a document without text, an id map mismatch). */
  warnings: string[];
}

/** Class paths seen in real Agent Zero installs (and in the fixture); anything else earns a warning. */
const KNOWN_DOCSTORES = [
  'langchain_community.docstore.in_memory.InMemoryDocstore',
  'langchain.docstore.in_memory.InMemoryDocstore',
];
const KNOWN_DOCUMENTS = [
  'langchain_core.documents.base.Document',
  'langchain_core.documents.Document',
  'langchain.schema.document.Document',
  'langchain.schema.Document',
  'langchain.docstore.document.Document',
];

function isObj(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/** `module.Name` of an object pickleparser created for a Python class, if any. */
function classOf(v: unknown): string | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const p = v as { __module__?: unknown; __name__?: unknown };
  return typeof p.__module__ === 'string' && typeof p.__name__ === 'string'
    ? `${p.__module__}.${p.__name__}`
    : undefined;
}

/** The state of a pickled object: pydantic v2 keeps fields in `__dict__`; older classes set them directly. */
function stateOf(v: Record<string, unknown>): Record<string, unknown> {
  return isObj(v.__dict__) ? v.__dict__ : v;
}

/** Turn a Map (from pickleparser's Map mode or nested) into a plain object; leave others alone. */
function plain(v: unknown): unknown {
  if (v instanceof Map) return Object.fromEntries([...v.entries()].map(([k, x]) => [String(k), plain(x)]));
  if (Array.isArray(v)) return v.map(plain);
  if (isObj(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = plain(x);
    return out;
  }
  return v;
}

/**
 * Parse the bytes of an `index.pkl`.
 * @param buf file content
 * @param file path, for messages
 * @throws AgentKeepError FileError when the bytes are not a pickle or hold no docstore at all.
 */
export function parseDocstore(buf: Uint8Array, file: string): A0Docstore {
  let root: unknown;
  try {
    root = new Parser().parse(buf);
  } catch (e) {
    throw new AgentKeepError(
      'FileError',
      `Cannot unpickle ${file}: ${(e as Error).message.replace(/[.\s]+$/, '')}.`,
      'The file is damaged or not a LangChain FAISS index.pkl; Agent Zero re-creates it from its knowledge and memories only if you delete the memory subdir (a loss). Restore it from a restore point instead.',
    );
  }
  const warnings: string[] = [];
  // Expected: [docstore, {row: id}]; tolerate a bare docstore or a bare dict of documents.
  let store: unknown = root;
  let idMap: unknown;
  if (Array.isArray(root)) {
    store = root[0];
    idMap = root[1];
    if (root.length !== 2)
      warnings.push(
        `${file}: expected a 2-tuple (docstore, index_to_docstore_id), found ${root.length} items; reading the first as the docstore.`,
      );
  }
  const storeClass = classOf(store);
  if (storeClass && !KNOWN_DOCSTORES.includes(storeClass))
    warnings.push(`${file}: unknown docstore class ${storeClass}; read leniently.`);
  let dict: unknown = isObj(store) ? (store._dict ?? stateOf(store)._dict) : undefined;
  if (dict === undefined && (store instanceof Map || isObj(store))) dict = store; // a bare {id: Document}
  if (dict instanceof Map) dict = Object.fromEntries(dict);
  if (!isObj(dict)) {
    throw new AgentKeepError(
      'FileError',
      `${file} does not hold a LangChain docstore (found ${storeClass ?? typeof store}).`,
      'Point the store at an Agent Zero root whose usr/memory/<subdir>/index.pkl was written by Agent Zero (FAISS.save_local).',
    );
  }
  const docs: A0Document[] = [];
  const unknownClasses = new Set<string>();
  for (const [key, raw] of Object.entries(dict)) {
    const cls = classOf(raw);
    if (cls && !KNOWN_DOCUMENTS.includes(cls)) unknownClasses.add(cls);
    const st = isObj(raw) ? stateOf(raw) : undefined;
    const text = st?.page_content;
    if (typeof text !== 'string') {
      warnings.push(`${file}: docstore entry ${key} has no page_content (${cls ?? typeof raw}); skipped.`);
      continue;
    }
    // pickleparser's default (object mode) gives plain objects already; only a Map needs converting
    const md = st?.metadata instanceof Map ? plain(st.metadata) : st?.metadata;
    docs.push({ key, text, metadata: isObj(md) ? md : {}, ...(cls ? { className: cls } : {}) });
  }
  for (const c of unknownClasses)
    warnings.push(`${file}: unknown document class ${c}; read its page_content and metadata leniently.`);

  const indexToId = new Map<number, string>();
  const m = idMap instanceof Map ? Object.fromEntries(idMap) : idMap;
  if (isObj(m)) {
    for (const [row, id] of Object.entries(m))
      if (typeof id === 'string' && /^\d+$/.test(row)) indexToId.set(Number(row), id);
    const keys = new Set(docs.map((d) => d.key));
    const dangling = [...indexToId.values()].filter((id) => !keys.has(id));
    if (dangling.length)
      warnings.push(
        `${file}: ${dangling.length} FAISS row(s) point to ids missing from the docstore (e.g. ${dangling[0]}); Agent Zero may return empty results for them.`,
      );
    if (indexToId.size !== docs.length)
      warnings.push(
        `${file}: the FAISS id map has ${indexToId.size} rows but the docstore has ${docs.length} documents.`,
      );
  } else if (Array.isArray(root)) {
    warnings.push(`${file}: no index_to_docstore_id map found.`);
  }
  return { docs, indexToId, warnings };
}
