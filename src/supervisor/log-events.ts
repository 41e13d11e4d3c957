// The names of the events the server writes on standard error, one line each
// (operator-log.ts). docs/running.md documents each with its level and fields,
// and test/operator-events.test.ts checks every line a session writes against
// that table, and this list against it.

export const LOG_EVENTS = [
  'startup.project',
  'startup.project_access',
  'startup.confinement_route',
  'startup.agents_dir',
  'startup.agents',
  'startup.agent',
  'startup.left_out',
  'startup.limits',
  'startup.agents_md',
  'startup.policy',
  'startup.audit',
  'startup.provider',
  'startup.serving',
  'client.malformed',
  'tool.internal_error',
  'invoke.refused',
  'invoke.capacity',
  'run.started',
  'provider.retry',
  'provider.message',
  'policy.denied',
  'run.cancelled',
  'run.ended',
  'run.unfinalised',
  'audit.key_changed',
  'schemapin.warning',
  'worker.stdout',
  'stderr.other',
  'project.changed',
  'project.moved',
  'summary',
  'shutdown.stopping',
  'shutdown',
  'shutdown.unfinalised',
  'shutdown.forced',
] as const;

export type LogEvent = (typeof LOG_EVENTS)[number];
