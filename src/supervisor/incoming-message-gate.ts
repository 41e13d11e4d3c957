import { Transform, type TransformCallback } from 'node:stream';
import { judgeIncomingLine, withoutByteOrderMark } from './incoming-message-check.js';

// Sits between the line limiter and the SDK's stdio transport: each complete
// line is judged (incoming-message-check.ts) and either passed on unchanged,
// answered here on standard output, or logged and left unanswered (malformed
// notifications and client responses). The SDK therefore only ever sees
// messages its schema accepts, and nothing malformed goes unanswered.

export interface GateEvents {
  /**
   * Writes one JSON-RPC message to the client (standard output). Returns a
   * promise when the output is full; the gate reads no further input until it
   * settles, so a client that floods garbage without reading the answers
   * stalls its own input instead of growing the server's memory.
   */
  answer(message: Record<string, unknown>): Promise<void> | void;
  /** One line for the operator: what was wrong, never the bytes themselves. */
  report(reason: string): void;
}

export class IncomingMessageGate extends Transform {
  constructor(private readonly events: GateEvents) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    // The limiter delivers whole lines only; a chunk may still hold several.
    let start = 0;
    let outputFull: Promise<void> | undefined;
    while (start < chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline + 1;
      outputFull = this.judge(chunk.subarray(start, end)) ?? outputFull;
      start = end;
    }
    if (outputFull === undefined) callback();
    else outputFull.then(() => callback());
  }

  private judge(line: Buffer): Promise<void> | void {
    const verdict = judgeIncomingLine(line);
    switch (verdict.kind) {
      case 'forward':
        this.push(withoutByteOrderMark(line));
        return;
      case 'answer':
        this.events.report(verdict.reason);
        return this.events.answer(verdict.message);
      case 'ignore':
        this.events.report(verdict.reason);
        return;
      case 'blank':
        return;
    }
  }
}
