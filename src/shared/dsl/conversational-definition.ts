import { responsePrincipal } from '../agent-identity.js';
import { canonicalHash } from '../canonical-json.js';
import { AGENT_DECLARED_NAME_MAX_BYTES, DSL_FILE_MAX_BYTES, RESPONSE_DEADLINE_MS } from '../limits.js';
import type { AgentDecl, Expr, PolicyDecl, WithBlock } from './ast.js';
import { checkInlinePolicies } from './inline-policy-check.js';
import { timeoutSeconds } from './durations.js';
import { parseDsl, type ParseResult } from './parser.js';
import { shownName } from './shown-name.js';

// Name selection and the conversational-definition check described in
// docs/writing-agents.md: which registry entry a name means, which agent in
// it is selected, and whether the text-response route may run it.

export interface RegistryEntry {
  stem: string;
  /** Project-relative path, e.g. "agents/foo.symbi". */
  file: string;
  text: string;
}

export interface SelectedDefinition {
  stem: string;
  file: string;
  declaredName: string;
  /** responsePrincipal(declaredName). */
  principal: string;
  sourceText: string;
  /** SHA-256 of the canonical JSON of the whole file text (a JSON string). */
  sourceHash: string;
  /** The selected `agent ... { }` text exactly as in the file. */
  declarationText: string;
  declarationHash: string;
  capabilities: string[];
  /** min(RESPONSE_DEADLINE_MS, the `with` timeout). */
  timeoutMs: number;
  inlinePolicies: { name: string; rules: number }[];
}

/** What a policy is asked about a definition before inference (respond-request.ts RespondAgent): no source text. */
export type DefinitionFacts = Pick<SelectedDefinition, 'stem' | 'file' | 'declaredName' | 'principal' | 'sourceHash' | 'declarationHash' | 'capabilities'>;

/**
 * Why the text-response route refuses a name or a file before any policy is asked, with its data;
 * definitionRefusalText words it. `not_conversational.problem` is the check's own sentence (which rule, where).
 */
export type DefinitionRefusal =
  | { kind: 'unknown_agent'; name: string }
  | { kind: 'ambiguous_agent'; stem: string; files: string[] }
  | { kind: 'not_conversational'; file: string; problem: string };

export type AgentVerdict = { invocable: true; declaredName: string; facts: DefinitionFacts } | { invocable: false; refusal: DefinitionRefusal };

/** `candidates`: for an unknown name, the registered stems (at most CANDIDATES_SHOWN); for an ambiguous one, its files. */
export type Selection = { ok: true; definition: SelectedDefinition } | { ok: false; refusal: DefinitionRefusal; candidates: string[] };

/** The one line a refusal is shown as. */
export function definitionRefusalText(refusal: DefinitionRefusal): string {
  switch (refusal.kind) {
    case 'unknown_agent':
      return `unknown agent ${quote(refusal.name)}`;
    case 'ambiguous_agent':
      return `agent ${quote(refusal.stem)} is ambiguous: ${[...refusal.files].sort().join(' and ')} share that stem; rename or remove one`;
    case 'not_conversational':
      return `${refusal.file}: ${refusal.problem}`;
  }
}

/** How many stems an unknown-name selection returns as candidates. */
const CANDIDATES_SHOWN = 20;
const AGENTS_NAMED = 10;
const ROUTE_ONLY = 'the text-response route runs conversational definitions only';

// Files per stem, computed once per registry: startup asks for the verdict of
// every entry, and a scan of the registry per entry would be quadratic.
const stemIndexes = new WeakMap<readonly RegistryEntry[], Map<string, string[]>>();

function filesWithStem(registry: readonly RegistryEntry[], stem: string): string[] {
  let index = stemIndexes.get(registry);
  if (index === undefined) {
    index = new Map();
    for (const e of registry) {
      const files = index.get(e.stem);
      if (files === undefined) index.set(e.stem, [e.file]);
      else files.push(e.file);
    }
    stemIndexes.set(registry, index);
  }
  return index.get(stem) ?? [];
}

/**
 * The verdict list_agents shows for one registry entry. `parsed` lets a caller
 * that has already parsed the file (startup builds its report too) skip a second parse.
 */
export function conversationalVerdict(entry: RegistryEntry, registry: readonly RegistryEntry[], parsed?: ParseResult): AgentVerdict {
  const sameStem = filesWithStem(registry, entry.stem);
  if (sameStem.length > 1 || (sameStem.length === 1 && sameStem[0] !== entry.file)) {
    return { invocable: false, refusal: { kind: 'ambiguous_agent', stem: entry.stem, files: [...new Set([entry.file, ...sameStem])].sort() } };
  }
  const result = examine(entry, parsed);
  if (!result.ok) return { invocable: false, refusal: result.refusal };
  const { stem, file, declaredName, principal, sourceHash, declarationHash, capabilities } = result.definition();
  return { invocable: true, declaredName, facts: { stem, file, declaredName, principal, sourceHash, declarationHash, capabilities } };
}

export function selectConversationalDefinition(registry: readonly RegistryEntry[], name: string): Selection {
  const matches = registry.filter((e) => e.stem === name);
  if (matches.length === 0) {
    // Which of the other names can be invoked is the caller's to add: it holds
    // the startup verdicts, and working them out here would parse every file.
    const shown = [...new Set(registry.map((e) => e.stem))].sort().slice(0, CANDIDATES_SHOWN);
    return { ok: false, refusal: { kind: 'unknown_agent', name }, candidates: shown };
  }
  if (matches.length > 1) {
    const files = matches.map((e) => e.file).sort();
    return { ok: false, refusal: { kind: 'ambiguous_agent', stem: name, files }, candidates: files };
  }
  const entry = matches[0]!;
  const result = examine(entry);
  if (!result.ok) return { ok: false, refusal: result.refusal, candidates: [] };
  return { ok: true, definition: result.definition() };
}

/** Names are echoed in backticks when they look like names, else as a short JSON string. */
function quote(name: string): string {
  if (/^[A-Za-z0-9_.-]{1,64}$/.test(name)) return `\`${name}\``;
  const cut = name.length > 64 ? name.slice(0, 64) + '…' : name;
  return JSON.stringify(cut);
}

type Examined = { ok: true; declaredName: string; definition: () => SelectedDefinition } | { ok: false; refusal: DefinitionRefusal };

function examine(entry: RegistryEntry, parsed?: ParseResult): Examined {
  const refuse = (problem: string): Examined => ({ ok: false, refusal: { kind: 'not_conversational', file: entry.file, problem } });
  const bytes = Buffer.byteLength(entry.text, 'utf8');
  if (bytes > DSL_FILE_MAX_BYTES) return refuse(`the file is ${bytes} bytes; the limit is ${DSL_FILE_MAX_BYTES} bytes`);
  const { file, errors } = parsed ?? parseDsl(entry.text);
  const firstError = errors[0];
  if (firstError) {
    const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
    return refuse(`syntax error at ${firstError.line}:${firstError.column}: ${firstError.message}${more}; fix the file before invoking it`);
  }

  const agents = file.items.filter((i): i is AgentDecl => i.kind === 'agent');
  let agent: AgentDecl;
  if (agents.length === 0) {
    return refuse('declares no agent; a conversational definition needs one `agent name { ... }` declaration');
  } else if (agents.length === 1) {
    agent = agents[0]!;
  } else {
    const named = agents.filter((a) => a.name === entry.stem);
    if (named.length === 0) {
      const listed = agents
        .slice(0, AGENTS_NAMED)
        .map((a) => `\`${shownName(a.name)}\` at ${a.line}:${a.column}`)
        .join(', ');
      const more = agents.length > AGENTS_NAMED ? ` and ${agents.length - AGENTS_NAMED} more` : '';
      return refuse(
        `declares ${agents.length} agents (${listed}${more}) and none is named \`${entry.stem}\`; a file with several agents needs one named exactly like its filename stem`,
      );
    }
    if (named.length > 1) {
      return refuse(`declares agent \`${entry.stem}\` more than once (at ${named[0]!.line}:${named[0]!.column} and ${named[1]!.line}:${named[1]!.column})`);
    }
    agent = named[0]!;
  }
  const nameBytes = Buffer.byteLength(agent.name, 'utf8');
  if (nameBytes > AGENT_DECLARED_NAME_MAX_BYTES) {
    return refuse(
      `the agent declared at ${agent.line}:${agent.column} has a name of ${nameBytes} bytes; the limit is ${AGENT_DECLARED_NAME_MAX_BYTES} bytes (UTF-8)`,
    );
  }
  const who = `agent \`${shownName(agent.name)}\``;

  for (const item of file.items) {
    if (item.kind !== 'metadata') continue;
    const executor = item.pairs.find((p) => p.key === 'executor');
    if (executor) return refuse(`metadata \`executor\` at ${executor.line}:${executor.column} selects an alternate executor; ${ROUTE_ONLY}`);
  }
  if (agent.params && agent.params.length > 0 && agent.paramsPos) {
    return refuse(`${who} has parameters at ${agent.paramsPos.line}:${agent.paramsPos.column}; ${ROUTE_ONLY}`);
  }
  if (agent.returnType) return refuse(`${who} has a return type at ${agent.returnType.line}:${agent.returnType.column}; ${ROUTE_ONLY}`);

  const withBlocks: WithBlock[] = [];
  const policies: PolicyDecl[] = file.items.filter((i): i is PolicyDecl => i.kind === 'policy');
  const capabilities: string[] = [];
  for (const member of agent.members) {
    switch (member.kind) {
      case 'function':
        return refuse(`${who} has a \`function\` \`${shownName(member.name)}\` at ${member.line}:${member.column}; ${ROUTE_ONLY}`);
      case 'with':
        if (member.body.statements.length > 0 || member.body.tail !== null) {
          return refuse(`${who} has a \`with\` block with statements at ${member.line}:${member.column}; ${ROUTE_ONLY}`);
        }
        withBlocks.push(member);
        break;
      case 'policy':
        policies.push(member);
        break;
      case 'capabilities': {
        const problem = collectCapabilities(member.value, capabilities);
        if (problem) return refuse(`${who} has ${problem}`);
        break;
      }
    }
  }

  let timeoutMs = RESPONSE_DEADLINE_MS;
  for (const block of withBlocks) {
    for (const attr of block.attributes) {
      if (attr.key !== 'timeout') continue;
      // Read as Symbiont's extract_with_blocks reads it (durations.ts).
      const seconds = timeoutSeconds(entry.text.slice(attr.value.start, attr.value.end));
      if (seconds === null || seconds <= 0) {
        return refuse(
          `${who} has a \`with\` timeout at ${attr.line}:${attr.column} that is not a positive duration (such as \`30s\`, \`5m\` or \`30.seconds\`) or whole number of seconds`,
        );
      }
      timeoutMs = Math.min(timeoutMs, seconds * 1000);
    }
  }

  const policyProblem = checkInlinePolicies(policies);
  if (policyProblem) return refuse(policyProblem);

  return {
    ok: true,
    // Built on demand: a refused file is never hashed.
    definition: () => {
      const declarationText = entry.text.slice(agent.start, agent.end);
      return {
        stem: entry.stem,
        file: entry.file,
        declaredName: agent.name,
        principal: responsePrincipal(agent.name),
        sourceText: entry.text,
        sourceHash: canonicalHash(entry.text).hash,
        declarationText,
        declarationHash: canonicalHash(declarationText).hash,
        capabilities,
        timeoutMs,
        inlinePolicies: policies.map((p) => ({ name: p.name, rules: p.rules.length })),
      };
    },
    declaredName: agent.name,
  };
}

/** Capabilities are names: an array of strings or identifiers. Returns a problem, or null. */
function collectCapabilities(value: Expr & { kind: 'array' }, out: string[]): string | null {
  for (const item of value.items) {
    if (item.kind === 'string') out.push(item.value);
    else if (item.kind === 'ident') out.push(item.name);
    else return `a capability at ${item.line}:${item.column} that is not a name; write \`capabilities = ["read", "analyze"]\``;
  }
  return null;
}
