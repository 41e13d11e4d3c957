// The house rules for imports, checked by `npm run lint:imports` (part of `npm test`).
// The supervisor's rooms, lowest first: a room imports only the rooms below it, so a reader knows
// which way every import goes, and cli.ts (the only module at the top level) starts a command.
const SUPERVISOR_ROOMS = ['operator', 'threads', 'startup', 'runs', 'tools', 'session', 'commands'];
const roomRules = SUPERVISOR_ROOMS.map((room, index) => {
  const below = SUPERVISOR_ROOMS.slice(0, index);
  return {
    name: `supervisor-${room}-imports-below`,
    severity: 'error',
    comment: `src/supervisor/${room}/ imports only ${below.length === 0 ? 'no other supervisor room' : `the rooms below it (${below.join(', ')})`}: the rooms are layered ${SUPERVISOR_ROOMS.join(' < ')}.`,
    from: { path: `^src/supervisor/${room}/` },
    to: { path: '^src/supervisor/', pathNot: [`^src/supervisor/${room}/`, ...below.map((name) => `^src/supervisor/${name}/`)] },
  };
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle: modules that need each other belong in one module, or the shared part moves below both.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'shared-stays-below',
      severity: 'error',
      comment: 'src/shared/ is what both sides import; it never imports the supervisor or the worker.',
      from: { path: '^src/shared/' },
      to: { path: '^src/(supervisor|worker|demo)/' },
    },
    {
      name: 'worker-not-supervisor',
      severity: 'error',
      comment: 'The worker thread never loads supervisor code: the two sides meet only in src/shared/worker-protocol.ts.',
      from: { path: '^src/worker/' },
      to: { path: '^src/supervisor/' },
    },
    {
      name: 'confinement-one-entry',
      severity: 'error',
      comment: 'Outside src/shared/confinement/, project file confinement is reached through its index.ts only.',
      from: { path: '^src/', pathNot: '^src/shared/confinement/' },
      to: { path: '^src/shared/confinement/', pathNot: '^src/shared/confinement/index\\.ts$' },
    },
    {
      name: 'storage-not-journal',
      severity: 'error',
      comment: 'The journal uses the storage; the storage never imports the journal.',
      from: { path: '^src/shared/storage/' },
      to: { path: '^src/shared/journal/' },
    },
    {
      name: 'src-not-tests',
      severity: 'error',
      comment: 'Shipped code never imports tests or scripts.',
      from: { path: '^src/' },
      to: { path: '^(test|scripts)/' },
    },
    {
      name: 'supervisor-top-is-entry-points',
      severity: 'error',
      comment: 'The top of src/supervisor/ holds only entry points (cli.ts); everything else lives in a room.',
      from: { path: '^src/' },
      to: { path: '^src/supervisor/[^/]+$', pathNot: '^src/supervisor/cli\\.ts$' },
    },
    ...roomRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs'] },
  },
};
