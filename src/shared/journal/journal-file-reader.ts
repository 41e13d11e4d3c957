import fs from 'node:fs';
import { JOURNAL_FILE_MAX_BYTES } from '../limits.js';

// Reads a journal for verification, read-only and with the verifier's
// refusals: no symlink at the final component, only regular files (a FIFO or
// device must not block or stream forever), at most the file limit, and the
// file must not change while it is read.

export class JournalFileRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JournalFileRefusal';
  }
}

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = fs.constants;

function sameFile(a: fs.BigIntStats, b: fs.BigIntStats): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/** Reads the journal at `filePath` (or the one `open` returns a descriptor for) with the verifier's refusals. */
export function readJournalFile(
  filePath: string,
  maxBytes = JOURNAL_FILE_MAX_BYTES,
  open: () => number = () => fs.openSync(filePath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK),
): Buffer {
  let fd: number;
  try {
    fd = open();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'EMLINK') throw new JournalFileRefusal('the journal is a symlink; symlinks are refused');
    if (code === 'ENOENT') throw new JournalFileRefusal('the journal file does not exist');
    if (code === 'ENXIO') throw new JournalFileRefusal('the journal is not a regular file');
    throw new JournalFileRefusal(`the journal cannot be opened (${code ?? 'error'})`);
  }
  try {
    const before = fs.fstatSync(fd, { bigint: true });
    if (!before.isFile()) throw new JournalFileRefusal('the journal is not a regular file (directory, FIFO, socket or device)');
    if (before.size > BigInt(maxBytes)) {
      throw new JournalFileRefusal(`the journal is ${before.size} bytes; the limit is ${maxBytes} bytes`);
    }
    // One byte more than fstat promised reveals a file that grew meanwhile.
    const buffer = Buffer.alloc(Number(before.size) + 1);
    let filled = 0;
    while (filled < buffer.length) {
      const n = fs.readSync(fd, buffer, filled, buffer.length - filled, filled);
      if (n === 0) break;
      filled += n;
    }
    const after = fs.fstatSync(fd, { bigint: true });
    if (filled !== Number(before.size) || !sameFile(before, after)) {
      throw new JournalFileRefusal('the journal changed while it was read; verify a copy that is not being written');
    }
    return buffer.subarray(0, filled);
  } catch (err) {
    if (err instanceof JournalFileRefusal) throw err;
    throw new JournalFileRefusal(`the journal cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  } finally {
    fs.closeSync(fd);
  }
}
