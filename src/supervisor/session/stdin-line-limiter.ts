import { Transform, type TransformCallback } from 'node:stream';

// Sits between process.stdin and the SDK's stdio transport. The transport
// buffers bytes until a newline and closes the whole session when a message
// outgrows its buffer, so one huge line would end the session and grow memory
// meanwhile. This stream forwards complete lines only and drops any line
// longer than the cap as the bytes arrive, keeping at most the cap buffered.

export interface LineLimiterEvents {
  /** Called once per dropped line with the number of bytes discarded. */
  onDroppedLine(bytes: number): void;
}

export class StdinLineLimiter extends Transform {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private discarding = false;
  private discardedBytes = 0;

  constructor(
    private readonly maxLineBytes: number,
    private readonly events: LineLimiterEvents,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let pos = 0;
    while (pos < chunk.length) {
      const newline = chunk.indexOf(0x0a, pos);
      if (newline === -1) {
        this.keepPartial(chunk.subarray(pos));
        break;
      }
      const segment = chunk.subarray(pos, newline + 1);
      pos = newline + 1;
      if (this.discarding) {
        this.finishDiscard(segment.length);
        continue;
      }
      if (this.pendingBytes + segment.length - 1 > this.maxLineBytes) {
        this.discardedBytes = this.pendingBytes;
        this.clearPending();
        this.finishDiscard(segment.length);
        continue;
      }
      const line = this.pendingBytes === 0 ? segment : Buffer.concat([...this.pending, segment], this.pendingBytes + segment.length);
      this.clearPending();
      this.push(line);
    }
    callback();
  }

  override _flush(callback: TransformCallback): void {
    // A final fragment without a newline is not a message; drop it quietly.
    if (this.discarding) this.finishDiscard(0);
    this.clearPending();
    callback();
  }

  private keepPartial(part: Buffer): void {
    if (this.discarding) {
      this.discardedBytes += part.length;
      return;
    }
    if (this.pendingBytes + part.length > this.maxLineBytes) {
      this.discarding = true;
      this.discardedBytes = this.pendingBytes + part.length;
      this.clearPending();
      return;
    }
    // Copy: the chunk's backing memory may be a large pooled buffer.
    this.pending.push(Buffer.from(part));
    this.pendingBytes += part.length;
  }

  private finishDiscard(lastSegmentBytes: number): void {
    const total = this.discardedBytes + lastSegmentBytes;
    this.discarding = false;
    this.discardedBytes = 0;
    this.events.onDroppedLine(total);
  }

  private clearPending(): void {
    this.pending = [];
    this.pendingBytes = 0;
  }
}
