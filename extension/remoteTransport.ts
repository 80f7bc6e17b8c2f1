/**
 * JSON-RPC over one WebSocket for the LanguageClient: one message per text frame, as
 * `agentkeep serve --ws` speaks it (sidecar/server/wsTransport.ts is the server's side). The socket
 * comes open from RemoteLink (./remote.ts); messages that arrive before the client listens are kept.
 */
import {
  AbstractMessageReader,
  AbstractMessageWriter,
  Disposable,
  type DataCallback,
  type Message,
  type MessageReader,
  type MessageTransports,
  type MessageWriter,
} from 'vscode-languageclient/node';
import type WebSocket from 'ws';

class SocketReader extends AbstractMessageReader implements MessageReader {
  private callback: DataCallback | undefined;
  private readonly queue: Message[] = [];

  constructor(socket: WebSocket) {
    super();
    socket.on('message', (data, isBinary) => {
      if (isBinary) return; // the sidecar sends text frames only
      let msg: Message;
      try {
        msg = JSON.parse(Array.isArray(data) ? Buffer.concat(data).toString('utf8') : data.toString()) as Message;
      } catch (e) {
        this.fireError(e);
        return;
      }
      if (this.callback) this.callback(msg);
      else this.queue.push(msg);
    });
    socket.on('error', (e) => this.fireError(e));
    socket.on('close', () => this.fireClose());
  }

  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    while (this.queue.length) callback(this.queue.shift()!);
    return Disposable.create(() => {
      this.callback = undefined;
    });
  }
}

class SocketWriter extends AbstractMessageWriter implements MessageWriter {
  private errors = 0;

  constructor(private readonly socket: WebSocket) {
    super();
    socket.on('close', () => this.fireClose());
  }

  write(msg: Message): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.send(JSON.stringify(msg), (err) => {
        if (err) {
          this.fireError(err, msg, ++this.errors);
          reject(err);
        } else {
          this.errors = 0;
          resolve();
        }
      });
    });
  }

  end(): void {
    /* RemoteLink owns the socket */
  }
}

/** Reader and writer of one open socket, for LanguageClient's `ServerOptions` function form. */
export function socketTransports(socket: WebSocket): MessageTransports {
  return { reader: new SocketReader(socket), writer: new SocketWriter(socket) };
}
