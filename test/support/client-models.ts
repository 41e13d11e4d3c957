// Scripted fakes of the model APIs Claude Code, Gemini CLI and Codex talk to, on 127.0.0.1, for
// test/e2e/client-snippets.ts: each client, started headless against its fake, is made to call our
// invoke_agent tool a few times, and the fake records what the client then sends its model.
//
// The script is stateless: a request that offers our tool is answered by looking at how many tool
// results it already carries. With k results, the fake asks for call k+1 of the script; once every
// call has its result, it answers a final text and the client ends the session. Requests that do not
// offer our tool (title, next-speaker and other side requests) get a short text, or JSON when the
// client asked for JSON. Every request is recorded, headers and raw body, so a test can look for
// anything that must never reach a model (the server's provider key).

import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ModelApi = 'anthropic' | 'gemini' | 'openai-responses';

/** One scripted invoke_agent call: its arguments. */
export interface ScriptedCall {
  agent: string;
  prompt: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  body: unknown;
  /** The name our tool has in this request's tool list, when it offers it. */
  toolName: string | undefined;
  /** The tool results the request carries, oldest first. */
  results: ToolResult[];
}

/** One tool result as the client put it in front of its model. */
export interface ToolResult {
  /** The whole result as the model receives it, as JSON text. */
  raw: string;
  /** Whether the client marked it as an error in the wire format's own field. */
  flaggedError: boolean;
}

export interface FakeModel {
  /** The origin, e.g. http://127.0.0.1:PORT. */
  origin: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export const FINAL_TEXT = 'All three calls are done.';
const SIDE_TEXT = 'ok';

type Json = Record<string, unknown>;

function asObject(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** A JSON field as a string ('' when it is not one). */
function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The name ending in `invoke_agent` (ours, prefixed by the server name) among a list of tool names. */
function ourTool(names: string[]): string | undefined {
  return names.find((name) => /symbi.*invoke_agent$/.test(name));
}

// ---- Anthropic Messages (Claude Code) ----

function anthropicToolNames(body: Json): string[] {
  return asArray(body.tools).map((tool) => str(asObject(tool).name));
}

/** The results of our tool's calls: tool_result blocks answering a tool_use of that name. */
function anthropicResults(body: Json, toolName: string | undefined): ToolResult[] {
  if (toolName === undefined) return [];
  const names = new Map<string, string>();
  const results: ToolResult[] = [];
  for (const message of asArray(body.messages)) {
    for (const block of asArray(asObject(message).content)) {
      const b = asObject(block);
      if (b.type === 'tool_use') names.set(String(b.id), String(b.name));
      if (b.type === 'tool_result' && names.get(String(b.tool_use_id)) === toolName)
        results.push({ raw: JSON.stringify(b.content ?? ''), flaggedError: b.is_error === true });
    }
  }
  return results;
}

/** Whether the conversation already has a call of this tool (Claude Code's ToolSearch). */
function anthropicCalled(body: Json, name: string): boolean {
  return asArray(body.messages).some((message) =>
    asArray(asObject(message).content).some((block) => asObject(block).type === 'tool_use' && asObject(block).name === name),
  );
}

function sse(res: ServerResponse, events: { event?: string; data: unknown }[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const { event, data } of events) res.write(`${event === undefined ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`);
  res.end();
}

function anthropicAnswer(res: ServerResponse, body: Json, id: number, call: { name: string; input: object } | undefined, text: string): void {
  const model = typeof body.model === 'string' ? body.model : 'claude-fake';
  const block = call === undefined ? { type: 'text', text } : { type: 'tool_use', id: `toolu_fake_${id}`, name: call.name, input: call.input };
  const stopReason = call === undefined ? 'end_turn' : 'tool_use';
  const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  if (body.stream !== true) {
    const message = { id: `msg_fake_${id}`, type: 'message', role: 'assistant', model, content: [block], stop_reason: stopReason, stop_sequence: null, usage };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(message));
    return;
  }
  const start = call === undefined ? { type: 'text', text: '' } : { ...block, input: {} };
  const delta = call === undefined ? { type: 'text_delta', text } : { type: 'input_json_delta', partial_json: JSON.stringify(call.input) };
  sse(res, [
    {
      event: 'message_start',
      data: {
        type: 'message_start',
        message: { id: `msg_fake_${id}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage },
      },
    },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: start } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 5 } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ]);
}

// ---- Gemini generateContent / streamGenerateContent (Gemini CLI) ----

function geminiToolNames(body: Json): string[] {
  return asArray(body.tools).flatMap((tool) => asArray(asObject(tool).functionDeclarations).map((d) => str(asObject(d).name)));
}

function geminiResults(body: Json, toolName: string | undefined): ToolResult[] {
  if (toolName === undefined) return [];
  const results: ToolResult[] = [];
  for (const content of asArray(body.contents)) {
    for (const part of asArray(asObject(content).parts)) {
      const response = asObject(asObject(part).functionResponse);
      if (response.name !== toolName) continue;
      const inner = asObject(response.response);
      // Gemini CLI has no error field of its own: a failed call's response is {error: ...}.
      results.push({ raw: JSON.stringify(response), flaggedError: inner.error !== undefined });
    }
  }
  return results;
}

function geminiAnswer(res: ServerResponse, path: string, call: { name: string; input: object } | undefined, text: string): void {
  const part = call === undefined ? { text } : { functionCall: { name: call.name, args: call.input } };
  const chunk = {
    candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: 'gemini-fake',
  };
  if (path.includes(':streamGenerateContent')) {
    sse(res, [{ data: chunk }]);
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(chunk));
}

// ---- OpenAI Responses (Codex) ----

/** Codex names MCP tools in the tool list either flat or inside a namespace; both are read here. */
function responsesToolNames(body: Json): string[] {
  const names: string[] = [];
  for (const tool of asArray(body.tools)) {
    const t = asObject(tool);
    if (typeof t.name === 'string') names.push(t.name);
    for (const inner of asArray(t.tools)) {
      const name = asObject(inner).name;
      if (typeof name === 'string') names.push(typeof t.name === 'string' ? `${t.name}/${name}` : name);
    }
  }
  return names;
}

function responsesResults(body: Json, toolName: string | undefined): ToolResult[] {
  if (toolName === undefined) return [];
  const names = new Map<string, string>();
  const results: ToolResult[] = [];
  for (const item of asArray(body.input)) {
    const i = asObject(item);
    if (i.type === 'function_call') names.set(String(i.call_id), typeof i.namespace === 'string' ? `${i.namespace}/${String(i.name)}` : String(i.name));
    if (i.type === 'function_call_output' && names.get(String(i.call_id)) === toolName) {
      // The Responses API has no error flag on a tool output; Codex may say so inside it.
      const output = asObject(i.output);
      results.push({ raw: JSON.stringify(i), flaggedError: output.success === false });
    }
  }
  return results;
}

/** Splits a tool name Codex offered as namespace + name back into what its function_call carries. */
function responsesCall(body: Json, fullName: string): { name: string; namespace?: string } {
  for (const tool of asArray(body.tools)) {
    const t = asObject(tool);
    for (const inner of asArray(t.tools)) {
      const name = asObject(inner).name;
      if (typeof name === 'string' && typeof t.name === 'string' && `${t.name}/${name}` === fullName) return { name, namespace: t.name };
    }
  }
  return { name: fullName };
}

function responsesAnswer(res: ServerResponse, body: Json, id: number, call: { name: string; input: object } | undefined, text: string): void {
  const item =
    call === undefined
      ? { type: 'message', role: 'assistant', id: `msg_fake_${id}`, status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }
      : {
          type: 'function_call',
          id: `fc_fake_${id}`,
          call_id: `call_fake_${id}`,
          status: 'completed',
          ...responsesCall(body, call.name),
          arguments: JSON.stringify(call.input),
        };
  const usage = { input_tokens: 10, input_tokens_details: null, output_tokens: 5, output_tokens_details: null, total_tokens: 15 };
  sse(res, [
    { event: 'response.created', data: { type: 'response.created', response: { id: `resp_fake_${id}` } } },
    { event: 'response.output_item.added', data: { type: 'response.output_item.added', output_index: 0, item } },
    { event: 'response.output_item.done', data: { type: 'response.output_item.done', output_index: 0, item } },
    { event: 'response.completed', data: { type: 'response.completed', response: { id: `resp_fake_${id}`, output: [item], usage } } },
  ]);
}

/** Starts the fake of one client's model API, playing `script` (one invoke_agent call per entry). */
export async function startFakeModel(api: ModelApi, script: ScriptedCall[]): Promise<FakeModel> {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let parsed: unknown;
      try {
        parsed = rawBody === '' ? undefined : JSON.parse(rawBody);
      } catch {
        parsed = undefined;
      }
      const body = asObject(parsed);
      const path = req.url ?? '/';
      const names = api === 'anthropic' ? anthropicToolNames(body) : api === 'gemini' ? geminiToolNames(body) : responsesToolNames(body);
      // Claude Code defers MCP tools: it lists their names in a message (or, while the server is still
      // starting, the server's name as "still connecting") and offers ToolSearch, which loads a tool's
      // schema and waits for a connecting server. A model that wants our tool asks ToolSearch first.
      const deferred =
        api === 'anthropic' &&
        names.includes('ToolSearch') &&
        (/mcp__symbi__invoke_agent(?![A-Za-z0-9_])/.test(rawBody) || /still connecting[^"]*\\nsymbi\\n/.test(rawBody))
          ? 'mcp__symbi__invoke_agent'
          : undefined;
      const toolName = ourTool(names) ?? deferred;
      const results =
        api === 'anthropic' ? anthropicResults(body, toolName) : api === 'gemini' ? geminiResults(body, toolName) : responsesResults(body, toolName);
      const record: RecordedRequest = { method: req.method ?? 'GET', path, headers: req.headers, rawBody, body: parsed, toolName, results };
      requests.push(record);
      const id = requests.length;
      let next: { name: string; input: object } | undefined =
        toolName !== undefined && results.length < script.length ? { name: toolName, input: script[results.length]! } : undefined;
      if (next !== undefined && deferred !== undefined && ourTool(names) === undefined && !anthropicCalled(body, 'ToolSearch'))
        next = { name: 'ToolSearch', input: { query: `select:${deferred}` } };
      const text = toolName !== undefined ? FINAL_TEXT : SIDE_TEXT;
      if (req.method !== 'POST') {
        // Model lists and the like: an empty, well-formed answer.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(api === 'openai-responses' ? { object: 'list', data: [], models: [] } : { data: [], models: [] }));
        return;
      }
      if (api === 'anthropic') {
        if (path.includes('/count_tokens')) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ input_tokens: 10 }));
          return;
        }
        anthropicAnswer(res, body, id, next, text);
      } else if (api === 'gemini') {
        if (path.includes(':countTokens')) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ totalTokens: 10 }));
          return;
        }
        // A side request that asked for JSON (Gemini CLI's next-speaker check) gets JSON that ends the turn.
        const wantsJson = asObject(body.generationConfig).responseMimeType === 'application/json';
        geminiAnswer(
          res,
          path,
          next,
          wantsJson && next === undefined && toolName === undefined ? '{"reasoning":"The answer is complete.","next_speaker":"user"}' : text,
        );
      } else {
        responsesAnswer(res, body, id, next, text);
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
