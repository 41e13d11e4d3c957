// A `symbi` sub-command's run function called in this process, with what it writes and the exit
// status it sets or exits with, as a process would report them. The logic of a command (each case
// file, each policy set, each input) is tested this way; what only a process shows (the arguments as
// the shell passes them, commander's parsing, the real descriptors) keeps one `symbi` process per
// behaviour in the same test file.

/** What the command wrote to standard output and standard error, and its exit status. */
export interface CommandRun {
  code: number;
  stdout: string;
  stderr: string;
}

class Exited extends Error {
  constructor(readonly code: number) {
    super(`process.exit(${code})`);
  }
}

/**
 * Runs `command` (synchronous: nothing else in this process writes while it runs) with its writes to
 * process.stdout and process.stderr kept, process.exit turned into the end of the run, and
 * process.exitCode read and then restored, so the test process keeps its own status.
 */
export function runCommandInProcess(command: () => void): CommandRun {
  const out: string[] = [];
  const err: string[] = [];
  // Each replaced property is put back as it was: an own property restored, one inherited deleted.
  const replaced = [
    { target: process.stdout, key: 'write', own: Object.getOwnPropertyDescriptor(process.stdout, 'write') },
    { target: process.stderr, key: 'write', own: Object.getOwnPropertyDescriptor(process.stderr, 'write') },
    { target: process, key: 'exit', own: Object.getOwnPropertyDescriptor(process, 'exit') },
  ] as const;
  const savedExitCode = process.exitCode;
  const keep =
    (into: string[]) =>
    (chunk: string | Uint8Array): boolean => {
      into.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      return true;
    };
  const exit = (code?: number): never => {
    throw new Exited(code ?? 0);
  };
  Object.defineProperty(process.stdout, 'write', { value: keep(out), configurable: true, writable: true });
  Object.defineProperty(process.stderr, 'write', { value: keep(err), configurable: true, writable: true });
  Object.defineProperty(process, 'exit', { value: exit, configurable: true, writable: true });
  process.exitCode = undefined;
  let code: number;
  try {
    const returned: unknown = command();
    if (returned instanceof Promise) throw new Error('runCommandInProcess takes a synchronous command only');
    code = Number(process.exitCode ?? 0);
  } catch (error) {
    if (!(error instanceof Exited)) throw error;
    code = error.code;
  } finally {
    for (const { target, key, own } of replaced) {
      if (own === undefined) Reflect.deleteProperty(target, key);
      else Object.defineProperty(target, key, own);
    }
    process.exitCode = savedExitCode;
  }
  return { code, stdout: out.join(''), stderr: err.join('') };
}
