// `npm run lint:types`: the type-aware half of the lint, typescript-eslint's recommendedTypeChecked
// rules run by oxlint's tsgolint on TypeScript 7 (.oxlintrc.json; ESLint keeps the rules that read
// syntax alone, eslint.config.js). tsgolint is a Go binary published for Linux, macOS and Windows
// only; where it has none (FreeBSD), this says so and passes, since what the rules find does not
// depend on the platform and the workflow's Linux and macOS jobs run them. Anywhere it is
// published, a missing binary fails like any other lint failure.

import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const tsgolint = require('oxlint-tsgolint/package.json') as { optionalDependencies: Record<string, string> };
const target = `${process.platform}-${process.arch}`;

if (!(`@oxlint-tsgolint/${target}` in tsgolint.optionalDependencies)) {
  const published = Object.keys(tsgolint.optionalDependencies).map((name) => name.replace('@oxlint-tsgolint/', ''));
  process.stderr.write(
    `lint:types: skipped: oxlint-tsgolint publishes no binary for ${target} (only ${published.join(', ')}); the workflow's Linux and macOS jobs run these rules\n`,
  );
  process.exit(0);
}

const oxlint = path.join(path.dirname(require.resolve('oxlint/package.json')), 'bin', 'oxlint');
const run = spawnSync(process.execPath, [oxlint, '--type-aware', '--max-warnings', '0'], { stdio: 'inherit' });
process.exit(run.status ?? 1);
