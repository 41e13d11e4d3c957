// Lint for symbi-mcp, first half: ESLint's and typescript-eslint's recommended rules that read
// syntax alone over src/, test/ and scripts/, plus the house rules that keep the choke points
// (docs/development.md). The type-aware half of typescript-eslint's recommendedTypeChecked runs in
// oxlint's tsgolint on TypeScript 7 (.oxlintrc.json, `npm run lint:types`).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// `new Worker(...)` and `new Piscina(...)` only in the thread factory, which applies the whole sandbox
// (test/process/worker-sandbox.test.ts checks the same by scanning src/).
const threadRules = [
  {
    selector: 'NewExpression[callee.name=/^(Worker|Piscina)$/], NewExpression[callee.property.name=/^(Worker|Piscina)$/]',
    message: 'Start worker threads with startSandboxedThread or startSandboxedPool (supervisor/threads/sandboxed-thread.ts), which apply the whole sandbox.',
  },
];

const stdoutMessage =
  'Standard output belongs to the MCP transport (supervisor/session/mcp-session.ts) and the CLI commands; write operator messages through the OperatorLog (supervisor/operator/operator-log.ts).';

const stdoutRules = [
  {
    selector: "CallExpression[callee.object.object.name='process'][callee.object.property.name='stdout'][callee.property.name='write']",
    message: stdoutMessage,
  },
  {
    selector: "MemberExpression[object.name='console']",
    message: `console.* writes to standard output. ${stdoutMessage}`,
  },
];

export default tseslint.config(
  { ignores: ['dist/', 'bundle/', '.test-build/', 'node_modules/', '.ci/cache/', 'test/fixtures/', '**/*.mjs', '**/*.cjs', 'bin/'] },
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    rules: {
      // `{ field: _, ...rest }` is how this code drops a field from a copy.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
      // A closure that reads the variable before its one assignment (mcp-command's shutdown) must stay `let`: `const` would throw there.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': ['error', ...stdoutRules, ...threadRules],
    },
  },
  {
    // The files that own standard output: the CLI's own output (commander, the audit, dsl and
    // schemapin commands), the demo's report and its endpoint's lines, mcp-command's console redirect to standard error,
    // the worker's fd-1 guard, and the fault injection that tests it by writing stray lines.
    files: [
      'src/supervisor/cli.ts',
      'src/supervisor/commands/audit-command.ts',
      'src/supervisor/commands/dsl-command.ts',
      'src/supervisor/commands/schemapin-command.ts',
      'src/supervisor/commands/route-proof-command.ts',
      'src/supervisor/commands/check-command.ts',
      'src/supervisor/commands/policy-command.ts',
      'src/supervisor/commands/mcp-command.ts',
      'src/demo/demo-run.ts',
      'src/demo/demo-endpoint.ts',
      'src/worker/worker-stdout.ts',
      'src/worker/fault-injection.ts',
    ],
    rules: { 'no-restricted-syntax': ['error', ...threadRules] },
  },
  {
    // The thread factory: the one file that starts threads; standard output stays forbidden in it.
    files: ['src/supervisor/threads/sandboxed-thread.ts'],
    rules: { 'no-restricted-syntax': ['error', ...stdoutRules] },
  },
);
