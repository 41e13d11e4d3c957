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
  const { stdout, stderr } = process;
  const writes = { stdout: stdout.write, stderr: stderr.write };
  const exit = process.exit;
  const savedExitCode = process.exitCode;
  const keep =
    (into: string[]) =>
    (chunk: string | Uint8Array): boolean => {
      into.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      return true;
    };
  stdout.write = keep(out) as typeof stdout.write;
  stderr.write = keep(err) as typeof stderr.write;
  process.exit = ((code?: number) => {
    throw new Exited(code ?? 0);
  }) as typeof process.exit;
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
    stdout.write = writes.stdout;
    stderr.write = writes.stderr;
    process.exit = exit;
    process.exitCode = savedExitCode;
  }
  return { code, stdout: out.join(''), stderr: err.join('') };
}
