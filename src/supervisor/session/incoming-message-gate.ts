import { Transform, type TransformCallback } from 'node:stream';
import { judgeIncomingLine, withoutByteOrderMark, type ServedSurface } from './incoming-message-check.js';

// Sits between the line limiter and the SDK's stdio transport: each complete
// line is judged (incoming-message-check.ts) and either passed on (without a
// leading byte-order mark), answered here on standard output, or logged and
// left unanswered (malformed notifications and client responses). The SDK
// therefore only ever sees messages its schema accepts, and nothing malformed
// goes unanswered.
//
// It is also where input waits for output: lines are taken one at a time, and
// none while too many answers wait unread (outputRoom), so a client that
// sends requests without reading the answers stalls its own input instead of
// growing the server's memory. Nothing is dropped: the lines wait in the pipe.

export interface GateEvents {
  /** Writes one JSON-RPC message to the client (standard output). */
  answer(message: Record<string, unknown>): void;
  /** One line for the operator: what was wrong, never the bytes themselves. */
  report(reason: string): void;
  /** Settles once the answers waiting unread are within their bound (at once when they are). */
  outputRoom(): Promise<void> | void;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class IncomingMessageGate extends Transform {
  constructor(
    private readonly events: GateEvents,
    private readonly served: ServedSurface,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.judgeLines(chunk).then(() => callback(), callback);
  }

  /** The limiter delivers whole lines only; a chunk may still hold several. */
  private async judgeLines(chunk: Buffer): Promise<void> {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline + 1;
      await this.events.outputRoom();
      const forwarded = this.judge(chunk.subarray(start, end));
      start = end;
      // The SDK handles a forwarded request over the following microtasks; the
      // next line (in this chunk or the next) waits for them, so outputRoom
      // sees the answer they queue.
      if (forwarded) await nextTurn();
    }
  }

  /** Acts on one line's verdict; true when the line went on to the SDK. */
  private judge(line: Buffer): boolean {
    const verdict = judgeIncomingLine(line, this.served);
    switch (verdict.kind) {
      case 'forward':
        this.push(verdict.line !== undefined ? Buffer.from(verdict.line) : withoutByteOrderMark(line));
        return true;
      case 'answer':
        this.events.report(verdict.reason);
        this.events.answer(verdict.message);
        return false;
      case 'ignore':
        this.events.report(verdict.reason);
        return false;
      case 'blank':
        return false;
    }
  }
}
