/**
 * JSON-RPC over one WebSocket: one JSON-RPC message (or one batch array) per text frame. A
 * MessageReader/MessageWriter pair for vscode-jsonrpc on top of a `ws` socket (clients use
 * WebSocketMessageReader), and WebSocketFrameReader, the server's reader, which hands each frame
 * unparsed to the JSON-RPC gate (./jsonrpc.ts) so that every frame gets the answer JSON-RPC 2.0 asks for.
 */
import {
  AbstractMessageReader,
  AbstractMessageWriter,
  Disposable,
  type DataCallback,
  type Message,
  type MessageReader,
  type MessageWriter,
} from 'vscode-languageserver';
import type { RawData, WebSocket } from 'ws';
import { badFrame, rawFrame } from './jsonrpc';

function text(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}

/**
 * A reader of one socket that keeps what arrives before `listen` (vscode-jsonrpc attaches its
 * listener after the socket is open) and forwards the socket's errors and close.
 */
abstract class QueuedSocketReader extends AbstractMessageReader implements MessageReader {
  private callback: DataCallback | undefined;
  private readonly queue: Message[] = [];

  constructor(socket: WebSocket) {
    super();
    socket.on('error', (e) => this.fireError(e));
    socket.on('close', () => this.fireClose());
  }

  /** Hand one message to the listener, or queue it until there is one. */
  protected deliver(m: Message): void {
    if (this.callback) this.callback(m);
    else this.queue.push(m);
  }

  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    while (this.queue.length) callback(this.queue.shift()!);
    return Disposable.create(() => {
      this.callback = undefined;
    });
  }
}

/** Reads one JSON-RPC message per WebSocket frame. */
export class WebSocketMessageReader extends QueuedSocketReader {
  /**
   * @param socket the open socket
   * @param rewrite optional hook to adjust an incoming message before it is dispatched
   */
  constructor(
    socket: WebSocket,
    private readonly rewrite?: (m: Message) => Message,
  ) {
    super(socket);
    socket.on('message', (data: RawData, isBinary: boolean) => {
      let msg: Message;
      try {
        if (isBinary) throw new Error('binary frames are not JSON-RPC messages');
        msg = JSON.parse(text(data)) as Message;
      } catch (e) {
        // JSON-RPC 2.0 §5.1: a frame that is not JSON gets a Parse error response with id null.
        const reason = e instanceof Error ? e.message : String(e);
        socket.send(
          JSON.stringify({
            jsonrpc: '2.0',
            id: null,
            error: { code: -32700, message: `Parse error: ${reason}. Send one JSON-RPC 2.0 message per text frame.` },
          }),
        );
        this.fireError(e);
        return;
      }
      this.deliver(this.rewrite ? this.rewrite(msg) : msg);
    });
  }
}

/**
 * The server's reader: each frame as it came, unparsed (rawFrame(text), or badFrame for a binary
 * frame), for a JsonRpcGate, which answers frames that are not JSON-RPC and splits batches.
 */
export class WebSocketFrameReader extends QueuedSocketReader {
  constructor(socket: WebSocket) {
    super(socket);
    socket.on('message', (data: RawData, isBinary: boolean) => {
      const binary = 'binary frames are not JSON-RPC messages (send text frames)';
      this.deliver(isBinary ? badFrame(binary) : rawFrame(text(data)));
    });
  }
}

/** Writes one JSON-RPC message (or one batch answer, an array) per WebSocket text frame. */
export class WebSocketMessageWriter extends AbstractMessageWriter implements MessageWriter {
  private errorCount = 0;

  constructor(private readonly socket: WebSocket) {
    super();
    socket.on('close', () => this.fireClose());
  }

  write(msg: Message): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.send(JSON.stringify(msg), (err) => {
        if (err) {
          this.errorCount++;
          this.fireError(err, msg, this.errorCount);
          reject(err);
        } else {
          this.errorCount = 0;
          resolve();
        }
      });
    });
  }

  end(): void {
    /* the socket is closed by its owner */
  }
}
