// The Cedar schema of the respond request, embedded so the runtime never depends on the
// project's policies/ folder. policies/respond.cedarschema is the same text (a test checks).
export const RESPOND_SCHEMA_TEXT = `// Cedar schema of the one request symbi mcp asks: may this agent return this exact text?
// The server embeds an identical copy (src/shared/policy/respond-schema.ts) and
// validates every loaded policy against it; a policy that uses a field not named
// here, or fails validation otherwise, makes the whole set deny every response.

// The principal: a registered response, identified by the UUID v5 of
// symbi://response/<declared agent name>.
entity Agent = {
  name: String,
  capabilities: Set<String>,
};

// The only resource is Resource::"default".
entity Resource;

action respond appliesTo {
  principal: [Agent],
  resource: [Resource],
  context: {
    surface: String,          // always "mcp-server"
    mode: String,             // always "text_response"
    tools_enabled: Bool,      // always false: this route runs no tools
    run_id: String,
    agent: {
      name: String,
      file: String,           // project-relative path of the agent source
      source_hash: String,    // SHA-256 of the complete source file text
      declaration_hash: String,
      capabilities: Set<String>,
    },
    response: {
      content: String,        // exactly the text that would be returned
      sha256: String,
      bytes: Long,
      finish_reason: String,          // "complete": only a finished answer is ever judged and released
      provider_finish_reason: String, // the provider's own value ("stop", "end_turn", ...; it differs by provider), or ""
    },
  },
};
`;
