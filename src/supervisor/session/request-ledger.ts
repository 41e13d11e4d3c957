import type { JSONRPCMessage, MessageExtraInfo, RequestId, Transport, TransportSendOptions } from '@modelcontextprotocol/server';

// The ledger of requests read: every request the SDK is handed enters it, and
// leaves it exactly once, when its answer is written or when the client
// cancels it (MCP's cancellation: a cancelled request gets no response,
// https://modelcontextprotocol.io/specification/2025-06-18/basic/utilities/cancellation).
// It sits on the session's transport, so every answer, whoever writes it (a
// tool handler, the SDK's own errors, shutdown), passes through one place: an
// answer for a request no longer in the ledger is never written, so no request
// is answered twice. Once the server is stopping, a request read is answered
// at once with an error saying so, and never reaches a handler.

/** JSON-RPC 2.0 leaves -32000 to -32099 to the server; this one says the server is stopping. */
const SERVER_STOPPING_CODE = -32000;

type Message = JSONRPCMessage & { id?: RequestId; method?: string; params?: { requestId?: RequestId } };

function isRequest(message: Message): boolean {
  return message.method !== undefined && message.id !== undefined;
}

function isAnswer(message: Message): message is Message & { id: RequestId } {
  return message.method === undefined && message.id !== undefined && ('result' in message || 'error' in message);
}

export class RequestLedger {
  /** Requests read and not yet answered or cancelled, by id (a client may reuse an id while it is open: counted). */
  private readonly open = new Map<RequestId, number>();
  private openCount = 0;
  private stopping: string | undefined;
  private emptied: Array<() => void> = [];
  private inner: Transport | undefined;

  /** Requests read and still owed an answer. */
  get size(): number {
    return this.openCount;
  }

  /**
   * The transport the SDK serves on: `inner`, with every request and answer passing through this
   * ledger; `onClosed` hears when `inner` has closed.
   */
  around(inner: Transport, onClosed?: () => void): Transport {
    this.inner = inner;
    const wrapped: Transport = {
      start: () => inner.start(),
      close: () => inner.close(),
      setProtocolVersion: (version: string) => inner.setProtocolVersion?.(version),
      send: (message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> => {
        const m = message as Message;
        if (isAnswer(m) && !this.leave(m.id)) return Promise.resolve();
        return inner.send(message, options);
      },
    };
    inner.onmessage = (message: JSONRPCMessage, extra?: MessageExtraInfo): void => {
      const m = message as Message;
      if (isRequest(m)) {
        if (this.stopping !== undefined) {
          void inner.send({ jsonrpc: '2.0', id: m.id!, error: { code: SERVER_STOPPING_CODE, message: this.stopping } }).catch(() => undefined);
          return;
        }
        this.enter(m.id!);
      } else if (m.method === 'notifications/cancelled' && m.params?.requestId !== undefined) {
        this.leave(m.params.requestId);
      }
      wrapped.onmessage?.(message, extra);
    };
    inner.onclose = () => {
      // A closed transport answers nothing more (the SDK aborts every handler in flight and sends
      // nothing for it): nothing is owed any longer.
      this.open.clear();
      this.openCount = 0;
      this.settle();
      try {
        wrapped.onclose?.();
      } finally {
        onClosed?.();
      }
    };
    inner.onerror = (err: Error) => wrapped.onerror?.(err);
    return wrapped;
  }

  /** From now on every request read is answered at once with `message` (an error), without reaching a handler. */
  stopAdmitting(message: string): void {
    this.stopping ??= message;
  }

  /** Settles once every request read has been answered or cancelled, or after `timeoutMs`; true when none is left. */
  async answered(timeoutMs: number): Promise<boolean> {
    if (this.openCount === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const empty = new Promise<boolean>((resolve) => this.emptied.push(() => resolve(true)));
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    try {
      return await Promise.race([empty, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Answers every request still open with an error saying `message`; returns how many there were. Their handlers' answers, if any come, are not written. */
  answerRemaining(message: string): number {
    const left = this.openCount;
    for (const [id, count] of this.open) {
      for (let i = 0; i < count; i++) void this.inner?.send({ jsonrpc: '2.0', id, error: { code: SERVER_STOPPING_CODE, message } }).catch(() => undefined);
    }
    this.open.clear();
    this.openCount = 0;
    this.settle();
    return left;
  }

  private enter(id: RequestId): void {
    this.open.set(id, (this.open.get(id) ?? 0) + 1);
    this.openCount += 1;
  }

  /** Takes `id` out of the ledger; false when it was not in it (answered already, or never read). */
  private leave(id: RequestId): boolean {
    const count = this.open.get(id);
    if (count === undefined) return false;
    if (count === 1) this.open.delete(id);
    else this.open.set(id, count - 1);
    this.openCount -= 1;
    if (this.openCount === 0) this.settle();
    return true;
  }

  private settle(): void {
    const waiting = this.emptied;
    this.emptied = [];
    for (const resolve of waiting) resolve();
  }
}
