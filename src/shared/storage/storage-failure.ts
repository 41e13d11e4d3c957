// Names a failed journal write in words an operator can act on. A full disk
// and an exhausted quota are said plainly, with the errno name, because their
// remedy (free space under .symbiont/governed, then retry) differs from that
// of a failing device or a permission problem.

const STORAGE_FULL: Readonly<Record<string, string>> = {
  ENOSPC: 'the audit storage is full (ENOSPC: no space left on device)',
  EDQUOT: 'the audit storage is full (EDQUOT: disk quota exceeded)',
};

function errnoCode(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** One clause naming why a journal write failed, e.g. "the audit storage is full (ENOSPC: no space left on device)". */
export function describeStorageFailure(err: unknown): string {
  const code = errnoCode(err);
  if (code !== undefined && Object.hasOwn(STORAGE_FULL, code)) return STORAGE_FULL[code]!;
  if (code !== undefined) return `the write failed (${code})`;
  const message = (err as Error | null)?.message;
  return `the write failed (${typeof message === 'string' ? message.split('\n')[0] : String(err)})`;
}
