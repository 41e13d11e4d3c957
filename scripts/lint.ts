// `npm run lint`: oxlint with the rules and options of .oxlintrc.json, zero warnings, and an unused
// disable comment counted as a finding. The type-aware rules (typescript/*, typescript-eslint's
// recommendedTypeChecked) run in tsgolint, a Go binary on TypeScript 7 published for Linux, macOS
// and Windows only; where it has none (FreeBSD), the other rules run and this says the type-aware
// ones did not, since what they find does not depend on the platform and the workflow's Linux and
// macOS jobs run them. Anywhere it is published, a missing binary fails the lint. Arguments are
// passed on to oxlint (test/process/lint-rules.test.ts asks for `-f json`).

import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const tsgolint = require('oxlint-tsgolint/package.json') as { optionalDependencies: Record<string, string> };
const target = `${process.platform}-${process.arch}`;
const typeAware = `@oxlint-tsgolint/${target}` in tsgolint.optionalDependencies;

if (!typeAware) {
  const published = Object.keys(tsgolint.optionalDependencies).map((name) => name.replace('@oxlint-tsgolint/', ''));
  process.stderr.write(
    `lint: the type-aware rules are skipped: oxlint-tsgolint publishes no binary for ${target} (only ${published.join(', ')}); the workflow's Linux and macOS jobs run them\n`,
  );
}

const oxlint = path.join(path.dirname(require.resolve('oxlint/package.json')), 'bin', 'oxlint');
const flags = [...(typeAware ? ['--type-aware'] : []), '--max-warnings', '0', '--report-unused-disable-directives'];
const run = spawnSync(process.execPath, [oxlint, ...flags, ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(run.status ?? 1);
