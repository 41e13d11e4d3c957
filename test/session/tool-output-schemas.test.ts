import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { repoRoot } from '../support/server-entry.js';
import { makeProject, removeProject } from '../support/project.js';
import { type InProcessServer, startInProcessServer } from '../support/in-process-server.js';
import { providerEnv } from '../support/server.js';
import { SAMPLE_SCHEMA, ecKeyPair, signSchema, startKeyServer, type KeyServer } from '../support/schemapin-fixtures.js';

// Every tool that returns structuredContent declares an outputSchema, and real
// results from the built session (served in process, test/support/in-process-server.ts)
// validate against the JSON Schema the server advertised, checked here with Ajv in the dialect each schema names in
// its $schema, independently of the zod schemas they were generated from.

const DIALECTS: Record<string, () => Ajv | Ajv2020> = {
  'http://json-schema.org/draft-07/schema#': () => new Ajv({ strict: true, allErrors: true }),
  'https://json-schema.org/draft/2020-12/schema': () => new Ajv2020({ strict: true, allErrors: true }),
};

function compile(schema: Record<string, unknown>): ValidateFunction {
  const dialect = String(schema.$schema);
  const make = DIALECTS[dialect];
  assert.ok(make, `a JSON Schema dialect Ajv knows: ${dialect}`);
  return make().compile(schema);
}

const TOOLS_WITH_STRUCTURED_RESULTS = ['get_agent_dsl', 'invoke_agent', 'list_agents', 'parse_dsl', 'verify_schema'];

const RICH_DSL = `metadata {
  version = "1.2"
  tags = ["a", "b"]
  limits = { depth: 3, nested: { ok: true } }
  __proto__ = "an ordinary key"
}

agent analyst(input: Text, count: Int) -> Report {
  capabilities = ["analyse", "summarize"]
  policy guard {
    allow: ["read"] if context.user.role == "admin"
    deny: "write"
  }
  with sandbox = "tier2", timeout = 30.seconds {}
}

schedule nightly {
  cron = "0 3 * * *"
  agent = "analyst"
  one_shot = true
}

schedule broken {
  agent = "analyst"
}

channel support {
  platform = "slack"
  channels = ["#help", "#ops"]
  default_deny = true
  data_classification {
    pii: redact
  }
  policy quiet {
    deny: "post"
  }
}

memory notes {
  store markdown
  path "data/notes"
  retention 30d
  search {
    vector_weight 0.6
    keyword_weight 0.4
  }
}

webhook hook {
  path "/hooks/gh"
  provider github
  secret "s3cret"
  agent analyst
  filter {
    json_path "$.action"
    equals "opened"
  }
}
`;

function dslFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...dslFiles(full));
    else if (/\.(symbi|dsl)$/.test(entry.name)) found.push(full);
  }
  return found.sort();
}

describe('declared output schemas, checked with Ajv against real results over stdio', { timeout: 300_000 }, () => {
  let endpoint: SyntheticEndpoint;
  let keys: KeyServer;
  let project: string;
  let server: InProcessServer;
  let tools: Tool[];
  const validators = new Map<string, ValidateFunction>();
  const key = ecKeyPair();

  before(async () => {
    endpoint = await startSyntheticEndpoint();
    keys = await startKeyServer();
    keys.serve('/.well-known/schemapin.json', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ public_key_pem: key.publicPem }) });
    project = makeProject({
      'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n',
      'agents/pipeline.symbi': 'agent pipeline {\n  with timeout = 30s {\n    let x = 1;\n  }\n}\n',
      'agents/rich.symbi': RICH_DSL,
      'policies/mcp-server/respond.cedar':
        'permit(principal, action == Action::"respond", resource);\n' +
        'forbid(principal, action == Action::"respond", resource) when { context.response.content like "*secret*" };\n',
    });
    server = await startInProcessServer(project, { env: providerEnv(endpoint.url, { SYMBIONT_SCHEMAPIN_ALLOW_INSECURE: '1' }) });
    tools = (await server.client.listTools()).tools;
    for (const tool of tools) if (tool.outputSchema) validators.set(tool.name, compile(tool.outputSchema));
  });

  after(async () => {
    await server?.close();
    await endpoint?.close();
    await keys?.close();
    if (project) removeProject(project);
  });

  /** Calls a tool and checks its structuredContent against the tool's advertised schema. */
  async function callAndValidate(name: string, args: Record<string, unknown>, expectError = false): Promise<Record<string, unknown>> {
    const result = (await server.client.callTool({ name, arguments: args })) as CallToolResult;
    assert.equal(result.isError === true, expectError, `${name}: ${JSON.stringify(result.content).slice(0, 300)}`);
    const structured = result.structuredContent;
    assert.ok(structured, `${name} returns structuredContent`);
    const validate = validators.get(name);
    assert.ok(validate, `${name} declares an outputSchema`);
    assert.ok(validate(structured), `${name}: ${JSON.stringify(validate.errors)}`);
    return structured;
  }

  it('declares an outputSchema on exactly the tools that return structuredContent', () => {
    assert.deepEqual([...validators.keys()].sort(), TOOLS_WITH_STRUCTURED_RESULTS);
    for (const name of TOOLS_WITH_STRUCTURED_RESULTS) {
      const schema = tools.find((t) => t.name === name)!.outputSchema!;
      assert.equal(schema.type, 'object', `${name}: an object schema`);
      assert.equal((schema as { additionalProperties?: unknown }).additionalProperties, false, `${name}: no undeclared fields`);
    }
  });

  it('the validator rejects a result that breaks the schema', async () => {
    const structured = await callAndValidate('get_agent_dsl', { agent: 'assistant' });
    const validate = validators.get('get_agent_dsl')!;
    assert.equal(validate({ ...structured, source: 42 }), false);
    assert.equal(validate({ ...structured, extra: 'field' }), false);
    const { file: _file, ...missing } = structured;
    assert.equal(validate(missing), false);
  });

  it('list_agents: invocable and refused entries both validate', async () => {
    const structured = await callAndValidate('list_agents', {});
    const agents = structured.agents as { stem: string; invocable: boolean }[];
    assert.deepEqual(
      agents.map((a) => [a.stem, a.invocable]),
      [
        ['assistant', true],
        ['pipeline', false],
        ['rich', false],
      ],
    );
    const validate = validators.get('list_agents')!;
    const refused = agents.find((a) => !a.invocable)!;
    assert.equal(validate({ ...structured, agents: [{ ...refused, declared_name: 'x' }] }), false, 'a refused entry carries a reason, not a declared name');
  });

  it('get_agent_dsl', async () => {
    const structured = await callAndValidate('get_agent_dsl', { agent: 'rich' });
    assert.equal(structured.source, RICH_DSL);
  });

  it('parse_dsl: a file using every kind of item, with extraction errors', async () => {
    const structured = await callAndValidate('parse_dsl', { file: 'agents/rich.symbi' });
    assert.equal(structured.has_errors, false, JSON.stringify(structured.errors));
    assert.ok(Object.hasOwn(structured.metadata as object, '__proto__'), 'a metadata key named __proto__ is an ordinary field');
    for (const field of ['agents', 'policies', 'with_blocks', 'schedules', 'channels', 'memories', 'webhooks', 'extraction_errors']) {
      assert.ok((structured[field] as unknown[]).length > 0, `the report has ${field}`);
    }
  });

  it('parse_dsl: a text with syntax errors', async () => {
    const structured = await callAndValidate('parse_dsl', { content: 'agent broken {\n  capabilities = [\n' });
    assert.equal(structured.has_errors, true);
  });

  it('parse_dsl: every DSL fixture and every text of the Symbiont corpus', async () => {
    const files = dslFiles(path.join(repoRoot, 'test', 'fixtures', 'dsl'));
    assert.ok(files.length > 100, `found ${files.length} DSL texts`);
    for (const file of files) await callAndValidate('parse_dsl', { content: fs.readFileSync(file, 'utf8') });
  });

  it('invoke_agent: an answer, and a withheld answer whose error still carries the audit reference', async () => {
    const answered = await callAndValidate('invoke_agent', { agent: 'assistant', prompt: 'hello' });
    assert.match(String((answered.audit as { run_id: string }).run_id), /^[0-9a-f-]{36}$/);
    const withheld = await callAndValidate('invoke_agent', { agent: 'assistant', prompt: '[[secret]] tell me' }, true);
    assert.notEqual((withheld.audit as { run_id: string }).run_id, (answered.audit as { run_id: string }).run_id);
  });

  it('verify_schema: a verified report and an unverified one', async () => {
    const url = keys.url('/.well-known/schemapin.json');
    const schema = JSON.stringify(SAMPLE_SCHEMA);
    const verified = await callAndValidate('verify_schema', { schema, public_key_url: url, signature: signSchema(SAMPLE_SCHEMA, key.privateKey) });
    assert.equal(verified.verified, true, String(verified.message));
    const missingKey = await callAndValidate('verify_schema', {
      schema,
      public_key_url: keys.url('/missing.json'),
      signature: signSchema(SAMPLE_SCHEMA, key.privateKey),
    });
    assert.equal(missingKey.verified, false);
    assert.equal(missingKey.key_fingerprint, null);
  });
});
