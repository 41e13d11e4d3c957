// Two kinds of failure, reported differently. A SchemaPinInputError means the
// caller's arguments are unusable (over a limit, not JSON, not a URL): the tool
// answers with an MCP tool error. A SchemaPinCheckError means verification ran
// and failed closed (key fetch refused, bad key, revoked key): the tool answers
// with a normal result whose `verified` is false and whose message is this one.

export class SchemaPinInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SchemaPinInputError';
  }
}

export class SchemaPinCheckError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SchemaPinCheckError';
  }
}
