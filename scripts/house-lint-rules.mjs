// The house lint rules, an oxlint JS plugin (.oxlintrc.json's jsPlugins; oxlint runs plugins through
// ESLint's rule API and selectors). Each keeps a choke point of docs/development.md:
//   - symbi/standard-output: standard output belongs to the MCP transport and the CLI commands;
//     .oxlintrc.json turns it off for the files that own it;
//   - symbi/thread-start: threads start only through the thread factory, which applies the whole
//     sandbox (test/process/worker-sandbox.test.ts checks the same by scanning src/).
// Plain JavaScript because oxlint loads it with Node.js as it is (no TypeScript loader).

const stdoutMessage =
  'Standard output belongs to the MCP transport (supervisor/session/mcp-session.ts) and the CLI commands; write operator messages through the OperatorLog (supervisor/operator/operator-log.ts).';

const standardOutput = {
  meta: { type: 'problem', docs: { description: 'standard output only in the files that own it' } },
  create(context) {
    return {
      "CallExpression[callee.object.object.name='process'][callee.object.property.name='stdout'][callee.property.name='write']"(node) {
        context.report({ node, message: stdoutMessage });
      },
      "MemberExpression[object.name='console']"(node) {
        context.report({ node, message: `console.* writes to standard output. ${stdoutMessage}` });
      },
    };
  },
};

const threadStart = {
  meta: { type: 'problem', docs: { description: 'threads start only in the thread factory' } },
  create(context) {
    return {
      'NewExpression[callee.name=/^(Worker|Piscina)$/], NewExpression[callee.property.name=/^(Worker|Piscina)$/]'(node) {
        context.report({
          node,
          message:
            'Start worker threads with startSandboxedThread or startSandboxedPool (supervisor/threads/sandboxed-thread.ts), which apply the whole sandbox.',
        });
      },
    };
  },
};

export default { meta: { name: 'symbi' }, rules: { 'standard-output': standardOutput, 'thread-start': threadStart } };
