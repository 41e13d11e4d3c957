// A stream's writes taken over and cut into lines. The worker threads' standard output and the
// supervisor's standard error both reach the operator this way (worker-stdout.ts,
// operator-log.ts), each then redacting, cutting and counting its lines.

/** A line without a newline is held up to this many characters, then passed on as it is. */
const HELD_LINE_MAX_CHARS = 8192;

/** Where a taken-over stream's writes go: the written chunk and its encoding. */
export type WrittenChunkSink = (chunk: unknown, encoding?: BufferEncoding) => void;

type WriteCallback = (err?: Error | null) => void;

/** The text of one write to a stream: a string, or bytes in the write's encoding. */
function writtenText(chunk: unknown, encoding?: BufferEncoding): string {
  if (typeof chunk === 'string') return chunk;
  if (ArrayBuffer.isView(chunk)) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString(encoding === 'latin1' ? 'latin1' : 'utf8');
  return String(chunk);
}

/**
 * A sink that passes `onLine` each complete line written to it, and the held text once it grows
 * past HELD_LINE_MAX_CHARS without a newline. `prepareHeld` sees the held text before it is cut
 * (the supervisor redacts keys there, so a key a newline split is found whole).
 */
export function lineSink(onLine: (line: string) => void, prepareHeld: (held: string) => string = (held) => held): WrittenChunkSink {
  let held = '';
  return (chunk, encoding) => {
    held = prepareHeld(held + writtenText(chunk, encoding));
    let newline = held.indexOf('\n');
    while (newline !== -1) {
      onLine(held.slice(0, newline));
      held = held.slice(newline + 1);
      newline = held.indexOf('\n');
    }
    if (held.length > HELD_LINE_MAX_CHARS) {
      onLine(held);
      held = '';
    }
  };
}

/** Replaces `stream`'s low-level writes with `sink`, so every write reaches it whichever reference to the stream the writer holds. */
export function takeOverStream(stream: NodeJS.WritableStream, sink: WrittenChunkSink): void {
  const internals = stream as unknown as {
    _write: (chunk: unknown, encoding: BufferEncoding, callback: WriteCallback) => void;
    _writev?: (chunks: { chunk: unknown; encoding: BufferEncoding }[], callback: WriteCallback) => void;
  };
  internals._write = (chunk, encoding, callback) => {
    sink(chunk, encoding);
    callback();
  };
  internals._writev = (chunks, callback) => {
    for (const { chunk, encoding } of chunks) sink(chunk, encoding);
    callback();
  };
}
