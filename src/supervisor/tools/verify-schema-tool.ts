import type { CallToolResult, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { SCHEMA_KEY_URL_MAX_BYTES, SCHEMA_MAX_BYTES } from '../../shared/limits.js';
import type { PinnedDirectory } from '../../shared/confinement/index.js';
import { SchemaPinInputError } from '../../shared/schemapin/schemapin-errors.js';
import { insecureWarning, schemapinInsecureFromEnv } from '../../shared/schemapin/insecure-mode.js';
import { verificationReportSchema } from '../../shared/schemapin/verification-report-schema.js';
import type { VerifySchemaInput } from '../../shared/schemapin/verify-schema.js';
import { isRecord } from '../../shared/json-value.js';

// The verify_schema MCP tool. Unusable arguments (wrong type, over a limit,
// not JSON, not a URL) are MCP tool errors with one line of text. A
// verification that runs and fails is NOT a tool error: the result comes back
// normally with verified: false and a message, in structuredContent and as
// the same JSON text, so clients read one shape for every outcome.

const TOOL = 'verify_schema';
const ARGUMENTS = ['schema', 'public_key_url', 'signature'] as const;

// Arguments are checked in the handler (one-line errors); the SDK's own zod
// failures would be multi-line. These schemas accept anything at run time and
// advertise the real types to clients.
const inputSchema = z
  .looseObject({
    schema: z
      .unknown()
      .optional()
      .meta({
        type: 'string',
        description: `The tool schema as JSON text (at most ${SCHEMA_MAX_BYTES} bytes). A top-level "signature" field is taken as the signature and left out of the signed bytes.`,
      }),
    public_key_url: z
      .unknown()
      .optional()
      .meta({
        type: 'string',
        description: `https URL of the publisher's key: a PEM public key or a .well-known/schemapin.json document (at most ${SCHEMA_KEY_URL_MAX_BYTES} bytes).`,
      }),
    signature: z.unknown().optional().meta({
      type: 'string',
      description: 'Base64 DER ECDSA P-256 signature over the canonical JSON of the schema; optional when the schema carries a "signature" field.',
    }),
  })
  .meta({ required: ['schema', 'public_key_url'], additionalProperties: false });

export interface VerifySchemaToolOptions {
  project: PinnedDirectory;
  log: (line: string) => void;
  /** Testing switch for http: and local addresses; read from SYMBIONT_SCHEMAPIN_ALLOW_INSECURE when absent. */
  allowInsecure?: boolean;
}

export function registerVerifySchemaTool(server: McpServer, options: VerifySchemaToolOptions): void {
  const allowInsecure = options.allowInsecure ?? schemapinInsecureFromEnv(process.env);
  if (allowInsecure) options.log(insecureWarning());

  server.registerTool(
    TOOL,
    {
      title: 'Verify a signed tool schema (SchemaPin)',
      description:
        'Checks that a tool schema was signed by its publisher: fetches the public key from public_key_url (https only, public addresses only, no redirects), ' +
        'verifies the ECDSA P-256 signature over the canonical JSON of the schema, and pins the first key seen for each host (trust on first use). ' +
        'Returns verified true or false with a message; an unsigned schema, a revoked key or a key different from the pinned one is never verified.',
      inputSchema,
      outputSchema: verificationReportSchema,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async (raw: unknown): Promise<CallToolResult> => {
      try {
        const input = readArguments(raw);
        // The fetch and crypto code loads on the first call, not at server startup.
        const { verifySchema } = await import('../../shared/schemapin/verify-schema.js');
        const result = await verifySchema(input, { project: options.project, allowInsecure });
        return { content: [{ type: 'text', text: JSON.stringify(result, null, 2) }], structuredContent: result };
      } catch (err) {
        if (err instanceof SchemaPinInputError) return toolError(`${TOOL}: ${err.message}`);
        options.log(`${TOOL}: internal error: ${(err as Error)?.stack ?? String(err)}`);
        return toolError(`${TOOL}: internal error while verifying; see the server's standard error`);
      }
    },
  );
}

function toolError(message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: message.replace(/[\r\n]+/g, ' ') }] };
}

function readArguments(raw: unknown): VerifySchemaInput {
  if (!isRecord(raw)) {
    throw new SchemaPinInputError('arguments must be an object with "schema", "public_key_url" and optionally "signature"');
  }
  const args = raw;
  for (const key of Object.keys(args)) {
    if (!(ARGUMENTS as readonly string[]).includes(key)) {
      throw new SchemaPinInputError(
        `unknown argument ${JSON.stringify(key.slice(0, 40))}; verify_schema takes only "schema", "public_key_url" and "signature"`,
      );
    }
  }
  const text = (name: string, required: boolean): string | undefined => {
    const value = args[name];
    if (value === undefined && !required) return undefined;
    if (value === undefined) throw new SchemaPinInputError(`missing required argument "${name}" (a string)`);
    if (typeof value !== 'string')
      throw new SchemaPinInputError(
        `argument "${name}" must be a string, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`}`,
      );
    return value;
  };
  return { schema: text('schema', true)!, public_key_url: text('public_key_url', true)!, signature: text('signature', false) };
}
