// `npm run checks`: after the build, the type check, the lint and the import rules need only the
// sources, and each runs on one core, so they run at once (on two cores the checks take about as
// long as the lint alone). Each script's output is held and printed whole when it ends, so the
// three never interleave; the exit status is 1 if any failed.
import { spawn } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const scripts = process.argv.slice(2);
if (scripts.length === 0) {
  process.stderr.write('run-parallel: name the npm scripts to run, such as: typecheck lint\n');
  process.exit(2);
}

function runScript(name: string): Promise<boolean> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(npm, ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] });
    const output: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    child.on('error', (err) => output.push(Buffer.from(`${err.message}\n`)));
    child.on('close', (code, signal) => {
      const ok = code === 0;
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      process.stderr.write(`> npm run ${name}: ${ok ? 'passed' : `FAILED (${signal ?? `exit ${code}`})`} in ${seconds} s\n`);
      process.stderr.write(Buffer.concat(output));
      resolve(ok);
    });
  });
}

const results = await Promise.all(scripts.map(runScript));
process.exit(results.every(Boolean) ? 0 : 1);
