/**
 * JSON-RPC 2.0 conformance in front of vscode-jsonrpc, for both transports (stdio and WebSocket).
 *
 * vscode-jsonrpc drops what is not a request, notification or response: a body that is not JSON
 * fires a reader error, and valid JSON that is not a message object (`42`, `{"hello":"world"}`,
 * `[]`, a batch) goes to its `handleInvalidMessage`, which only logs. A client then waits forever.
 * The gate sits between the transport and the connection and answers as the specification says
 * (https://www.jsonrpc.org/specification, §4-§6):
 *   - a body that is not JSON: Parse error -32700, id null;
 *   - JSON that is not a valid Request object (not an object, `jsonrpc` not "2.0", `method` not a
 *     string, `id` not a string, number or null, `params` not an object or array): Invalid Request
 *     -32600, with the request's id when it has a valid one, else null;
 *   - an empty batch `[]`: one Invalid Request -32600 (not an array);
 *   - a batch: every element is checked and dispatched on its own; the responses (and the errors of
 *     invalid elements) come back as one array, in the order of the batch; notifications (and
 *     responses a client sends back) in a batch get no response; a batch of only those gets nothing;
 *   - a request with `id: null` (allowed, discouraged) is answered with id null;
 *   - LSP `initialize` without `capabilities` (e.g. `params: {}`) reaches the connection with
 *     `capabilities: {}`: a client that declares none (the library would fail on it with -32603).
 * Requests of a batch and null-id requests reach the connection under private ids
 * (`BATCH_ID_PREFIX…`), so they cannot collide with the client's other ids; `$/cancelRequest` for such
 * a request is mapped to its private id, and the response gets the client's id back.
 *
 * Wiring: the transport's reader yields raw frames (`rawFrame(text)`: one WebSocket text frame, or
 * one Content-Length body via RAW_JSON_DECODER); `new JsonRpcGate(frames, writer)` gives the
 * `reader` and `writer` to hand to createConnection. The transport's writer must accept any JSON
 * value (a batch answer is an array): StreamMessageWriter and WebSocketMessageWriter stringify it.
 */
import {
  AbstractMessageReader,
  AbstractMessageWriter,
  Disposable,
  type ContentTypeDecoder,
  type DataCallback,
  type Message,
  type MessageReader,
  type MessageWriter,
} from 'vscode-languageserver';

/** JSON-RPC 2.0 error codes the gate answers with (§5.1). */
export const JsonRpcErrorCodes = { ParseError: -32700, InvalidRequest: -32600 } as const;

/** Prefix of the private ids under which batch elements and null-id requests reach the connection. */
export const BATCH_ID_PREFIX = '\u0000agentkeep-batch:';

const RAW = Symbol('agentkeep.rawFrame');

/** One frame as the transport received it: the text, or why it is not text (e.g. a binary WS frame). */
interface RawFrame {
  [RAW]: true;
  text?: string;
  error?: string;
}

/** Wrap the text of one received frame for the gate (a transport reader passes it to its callback). */
export function rawFrame(text: string): Message {
  return { [RAW]: true, text } as unknown as Message;
}

/** A frame that cannot be a JSON-RPC message at all (answered with a Parse error naming `reason`). */
export function badFrame(reason: string): Message {
  return { [RAW]: true, error: reason } as unknown as Message;
}

/**
 * Content type decoder for vscode-jsonrpc's StreamMessageReader that does not parse: it hands the
 * body's text to the gate (as rawFrame), so a body that is not JSON is answered instead of dropped.
 */
export const RAW_JSON_DECODER: ContentTypeDecoder = {
  name: 'application/json',
  decode: (buffer, options) => Promise.resolve(rawFrame(new TextDecoder(options.charset).decode(buffer))),
};

type Id = string | number | null;

/** What one parsed JSON value is, as a JSON-RPC message. */
export type Checked =
  | { kind: 'request'; id: Id; msg: Record<string, unknown> }
  | { kind: 'notification'; msg: Record<string, unknown> }
  | { kind: 'response'; msg: Record<string, unknown> }
  | { kind: 'invalid'; id: Id; reason: string };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v} (${JSON.stringify(v).slice(0, 40)})`;
}

/**
 * Check one JSON value against the Request / Notification / Response objects of JSON-RPC 2.0.
 * @param v a parsed JSON value (one message, or one element of a batch)
 * @param inBatch whether `v` is a batch element (a nested array is then named as such)
 */
export function checkMessage(v: unknown, inBatch = false): Checked {
  if (!isPlainObject(v)) {
    const reason =
      Array.isArray(v) && inBatch
        ? 'a batch element is itself an array (batches do not nest)'
        : `a JSON-RPC message is an object, this is ${describe(v)}`;
    return { kind: 'invalid', id: null, reason };
  }
  const hasId = 'id' in v;
  const id = v.id;
  const echo: Id = typeof id === 'string' || typeof id === 'number' ? id : null;
  if (hasId && id !== null && typeof id !== 'string' && typeof id !== 'number') {
    return { kind: 'invalid', id: null, reason: `"id" must be a string, a number or null, not ${describe(id)}` };
  }
  if (v.jsonrpc !== '2.0') {
    return {
      kind: 'invalid',
      id: echo,
      reason:
        'jsonrpc' in v
          ? `"jsonrpc" must be exactly "2.0", not ${JSON.stringify(v.jsonrpc)}`
          : 'the "jsonrpc": "2.0" member is missing',
    };
  }
  if ('method' in v) {
    if (typeof v.method !== 'string')
      return { kind: 'invalid', id: echo, reason: `"method" must be a string, not ${describe(v.method)}` };
    if ('params' in v && v.params !== undefined && (v.params === null || typeof v.params !== 'object')) {
      return { kind: 'invalid', id: echo, reason: `"params" must be an object or an array, not ${describe(v.params)}` };
    }
    return hasId ? { kind: 'request', id: id as Id, msg: v } : { kind: 'notification', msg: v };
  }
  if (hasId && 'result' in v !== 'error' in v) return { kind: 'response', msg: v };
  return { kind: 'invalid', id: echo, reason: 'it has no "method" (a request names the method to call)' };
}

/** A JSON-RPC error response (data carries the AgentKeep string code and the fix, as ErrorData). */
function errorResponse(id: Id, code: number, message: string, hint: string): Message {
  const name = code === JsonRpcErrorCodes.ParseError ? 'parse_error' : 'invalid_request';
  return { jsonrpc: '2.0', id, error: { code, message, data: { code: name, hint } } } as unknown as Message;
}

const REQUEST_HINT =
  'Send {"jsonrpc": "2.0", "id": <number or string>, "method": "<name>", "params": {...}}, ' +
  'or an array of such objects (a batch).';

function invalid(id: Id, reason: string): Message {
  return errorResponse(id, JsonRpcErrorCodes.InvalidRequest, `Invalid Request: ${reason}.`, REQUEST_HINT);
}

/** One batch (or one null-id request) waiting for the connection's responses. */
interface Pending {
  /** Answer slots in batch order; undefined = no answer (notification) or not yet answered. */
  answers: Array<Message | undefined>;
  waiting: number;
  /** false: a single null-id request, answered with one response, not an array. */
  array: boolean;
}

/** The reader the connection listens to: messages the gate lets through. */
class GateReader extends AbstractMessageReader implements MessageReader {
  private callback?: DataCallback;
  private readonly queue: Message[] = [];

  constructor(private readonly start: () => Disposable) {
    super();
  }

  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    while (this.queue.length) callback(this.queue.shift()!);
    const inner = this.start();
    return Disposable.create(() => {
      this.callback = undefined;
      inner.dispose();
    });
  }

  deliver(m: Message): void {
    if (this.callback) this.callback(m);
    else this.queue.push(m);
  }
  error(e: unknown): void {
    this.fireError(e);
  }
  close(): void {
    this.fireClose();
  }
}

/** The writer the connection writes to: responses to batch elements are held and sent as one array. */
class GateWriter extends AbstractMessageWriter implements MessageWriter {
  constructor(
    private readonly out: MessageWriter,
    private readonly route: (m: Message) => boolean,
  ) {
    super();
    out.onError(([e, m, n]) => this.fireError(e, m, n));
    out.onClose(() => this.fireClose());
  }

  write(msg: Message): Promise<void> {
    if (this.route(msg)) return Promise.resolve();
    return this.out.write(msg);
  }

  end(): void {
    this.out.end();
  }
}

/** See the module doc. */
export class JsonRpcGate {
  /** Give this to createConnection as the reader. */
  readonly reader: MessageReader;
  /** Give this to createConnection as the writer. */
  readonly writer: MessageWriter;
  /** Whether the client sent the LSP `shutdown` request (the stdio server exits 0 after it, else 1). */
  shutdownRequested = false;
  private readonly gateReader: GateReader;
  private readonly slots = new Map<string, { pending: Pending; index: number; clientId: Id }>();
  /** Client id -> private id, for $/cancelRequest of a batch element. */
  private readonly privateOf = new Map<string | number, string>();
  private seq = 0;

  /**
   * @param frames the transport's reader, yielding rawFrame()/badFrame() values (e.g. a
   *   StreamMessageReader with RAW_JSON_DECODER, or a WebSocketFrameReader)
   * @param out the transport's writer; it must write any JSON value (a batch answer is an array)
   * @param rewrite optional hook applied to each message before the connection sees it
   */
  constructor(
    frames: MessageReader,
    private readonly out: MessageWriter,
    private readonly rewrite?: (m: Message) => Message,
  ) {
    this.gateReader = new GateReader(() => {
      frames.onError((e) => this.gateReader.error(e));
      frames.onClose(() => this.gateReader.close());
      return frames.listen((m) => this.receive(m));
    });
    this.reader = this.gateReader;
    this.writer = new GateWriter(out, (m) => this.route(m));
  }

  private send(m: Message): void {
    void this.out.write(m).catch(() => undefined); // the writer reports its errors on onError
  }

  private forward(msg: Record<string, unknown>): void {
    if (msg.method === 'shutdown') this.shutdownRequested = true;
    // $/cancelRequest for a batch element: cancel it under its private id
    if (msg.method === '$/cancelRequest' && isPlainObject(msg.params)) {
      const cid = msg.params.id;
      const priv = (typeof cid === 'string' || typeof cid === 'number') && this.privateOf.get(cid);
      if (priv) msg = { ...msg, params: { ...msg.params, id: priv } };
    }
    // LSP initialize without capabilities (params {} or none): a client with none. vscode-languageserver
    // reads params.capabilities.workspace before our handler runs and would answer -32603.
    if (msg.method === 'initialize' && 'id' in msg) {
      const p = isPlainObject(msg.params) ? msg.params : {};
      if (!isPlainObject(p.capabilities)) msg = { ...msg, params: { ...p, capabilities: {} } };
    }
    const m = msg as unknown as Message;
    this.gateReader.deliver(this.rewrite ? this.rewrite(m) : m);
  }

  /** One frame from the transport (or an already parsed message from a reader that parses). */
  private receive(m: Message): void {
    const frame = m as unknown as Partial<RawFrame>;
    let value: unknown = m;
    if (frame && frame[RAW]) {
      if (frame.error !== undefined) {
        this.send(
          errorResponse(
            null,
            JsonRpcErrorCodes.ParseError,
            `Parse error: ${frame.error}.`,
            'Send JSON-RPC 2.0 messages as UTF-8 JSON text.',
          ),
        );
        return;
      }
      try {
        value = JSON.parse(frame.text ?? '');
      } catch (e) {
        const reason = e instanceof Error ? e.message : String(e);
        this.send(
          errorResponse(
            null,
            JsonRpcErrorCodes.ParseError,
            `Parse error: ${reason}.`,
            'Send one JSON-RPC 2.0 message (or one batch array) as JSON text per message.',
          ),
        );
        return;
      }
    }
    if (Array.isArray(value)) this.batch(value);
    else this.single(value);
  }

  private single(value: unknown): void {
    const c = checkMessage(value);
    if (c.kind === 'invalid') return this.send(invalid(c.id, c.reason));
    if (c.kind === 'request' && c.id === null) {
      const pending: Pending = { answers: [undefined], waiting: 1, array: false };
      return this.forward(this.claim(c.msg, null, pending, 0));
    }
    this.forward(c.msg);
  }

  private batch(items: unknown[]): void {
    if (!items.length) return this.send(invalid(null, 'the batch is empty (an array needs at least one request)'));
    const pending: Pending = { answers: items.map(() => undefined), waiting: 0, array: true };
    const toForward: Array<Record<string, unknown>> = [];
    items.forEach((item, i) => {
      const c = checkMessage(item, true);
      if (c.kind === 'invalid') pending.answers[i] = invalid(c.id, c.reason);
      else if (c.kind === 'request') {
        pending.waiting++;
        toForward.push(this.claim(c.msg, c.id, pending, i));
      } else toForward.push(c.msg); // notifications and responses: no answer
    });
    if (!pending.waiting) this.flush(pending);
    for (const m of toForward) this.forward(m);
  }

  /** The request under a new private id, its answer slot registered. */
  private claim(msg: Record<string, unknown>, clientId: Id, pending: Pending, index: number): Record<string, unknown> {
    const priv = `${BATCH_ID_PREFIX}${++this.seq}`;
    this.slots.set(priv, { pending, index, clientId });
    if (clientId !== null) this.privateOf.set(clientId, priv);
    return { ...msg, id: priv };
  }

  /** A response from the connection to a private id: into its slot (true), else not ours (false). */
  private route(m: Message): boolean {
    const r = m as unknown as Record<string, unknown>;
    if ('method' in r || typeof r.id !== 'string' || !r.id.startsWith(BATCH_ID_PREFIX)) return false;
    const slot = this.slots.get(r.id);
    if (!slot) return false;
    this.slots.delete(r.id);
    if (slot.clientId !== null && this.privateOf.get(slot.clientId) === r.id) this.privateOf.delete(slot.clientId);
    slot.pending.answers[slot.index] = { ...r, id: slot.clientId } as unknown as Message;
    if (--slot.pending.waiting === 0) this.flush(slot.pending);
    return true;
  }

  private flush(p: Pending): void {
    const answers = p.answers.filter((a): a is Message => a !== undefined);
    if (!answers.length) return; // only notifications: nothing is sent back
    this.send(p.array ? (answers as unknown as Message) : answers[0]);
  }
}
