import { PROJECT_PATH_MAX_BYTES } from '../limits.js';

// The rules for what a project path and a project file's text may be: pure
// functions and the one error type every confinement refusal uses. Nothing here
// touches the file system, so every route and every caller checks the same way.

export type ConfinementCode =
  | 'invalid_path'
  | 'not_found'
  | 'symlink'
  | 'not_directory'
  | 'not_regular'
  | 'hardlinked'
  | 'too_large'
  | 'not_utf8'
  | 'io'
  /** A directory on another device than the project root: a mount inside the project (reserved-directories.ts). */
  | 'other_device'
  /** Descriptor-relative access does not work on this system (route-choice.ts). */
  | 'unavailable';

/** A refused project path or file: `code` says which rule, the message says it in one line for the user. */
export class ConfinementError extends Error {
  constructor(
    readonly code: ConfinementCode,
    message: string,
  ) {
    super(message);
    this.name = 'ConfinementError';
  }
}

export interface PathRules {
  /** Allow components starting with `.` (only the server's own `.symbiont` storage uses this). */
  allowHidden?: boolean;
  /** Allow paths under `policies/` (only the startup policy loader uses this). */
  allowPolicies?: boolean;
}

const ALLOWED_PATHS =
  'a project-relative path of plain components in valid Unicode (no leading "/", no "..", no hidden names, no backslashes, not under policies/)';

/** Splits a caller-supplied project-relative path into components, refusing anything outside the rules. */
export function projectPathComponents(relPath: string, rules: PathRules = {}): string[] {
  const refuse = (what: string): never => {
    throw new ConfinementError('invalid_path', `path refused: ${what}; expected ${ALLOWED_PATHS}`);
  };
  if (typeof relPath !== 'string' || relPath.length === 0) refuse('the path is empty');
  if (relPath.includes('\0')) refuse('the path contains a NUL byte');
  // A lone surrogate has no UTF-8 form: encoding it for the kernel would turn it into U+FFFD and name another file.
  if (!relPath.isWellFormed()) refuse('the path contains an unpaired UTF-16 surrogate, which names no file');
  if (relPath.includes('\\')) refuse('the path contains a backslash');
  if (relPath.startsWith('/')) refuse('absolute paths are not allowed');
  if (Buffer.byteLength(relPath, 'utf8') > PROJECT_PATH_MAX_BYTES) refuse(`the path is longer than ${PROJECT_PATH_MAX_BYTES} bytes`);
  const components = relPath.split('/').filter((c) => c !== '' && c !== '.');
  if (components.length === 0) refuse('the path names the project root');
  for (const c of components) {
    if (c === '..') refuse('parent traversal ("..") is not allowed');
    if (c.startsWith('.') && !rules.allowHidden) refuse(`hidden component "${c}" is not allowed`);
  }
  if (components[0] === 'policies' && !rules.allowPolicies) refuse('the policies directory is not readable through this tool');
  return components;
}

/** The one-line refusal for a failed open of `shown` (ELOOP, and EMLINK on FreeBSD, mean a refused symlink). */
export function describeOpenError(err: NodeJS.ErrnoException, shown: string): ConfinementError {
  switch (err.code) {
    case 'ENOENT':
      return new ConfinementError('not_found', `${shown}: no such file in the project`);
    case 'ELOOP':
    case 'EMLINK':
      return new ConfinementError('symlink', `${shown}: is a symlink; symlinks are never followed`);
    case 'ENOTDIR':
      return new ConfinementError('not_directory', `${shown}: a path component is not a directory`);
    case 'EACCES':
    case 'EPERM':
      return new ConfinementError('io', `${shown}: permission denied`);
    case 'ENXIO':
      return new ConfinementError('not_regular', `${shown}: is not a regular file`);
    default:
      return new ConfinementError('io', `${shown}: cannot be opened (${err.code ?? 'error'})`);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Decodes `bytes` as UTF-8, refusing invalid sequences with a one-line error naming `shown`. */
export function decodeUtf8Strict(bytes: Uint8Array, shown: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ConfinementError('not_utf8', `${shown}: is not valid UTF-8 text`);
  }
}
