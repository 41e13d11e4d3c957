import { randomUUID } from 'node:crypto';
import { closeAuditStorage, openRunAuditStorage, type AuditStorage } from '../shared/storage/audit-storage.js';
import { digestJson, type HashedRequest, type RunRecord, RunRecords, symbiontHash } from '../shared/journal/run-records.js';
import { INFERENCE_FAILED_PREFIX, RUN_CANCELLED_MESSAGE } from '../shared/journal/journal-format.js';
import type { EventFields, ProposedAction, TerminationReason } from '../shared/journal/journal-records.js';
import { symbiontResponse } from './symbiont-response.js';
import { JournalExistsError, JournalWriter } from '../shared/journal/journal-writer.js';
import { JournalHandover } from '../shared/journal/journal-handover.js';
import { signingKeyFileChange } from '../shared/storage/signing-key-change.js';
import { finishWithheld } from '../shared/provider/finish-reasons.js';
import { ANSWER_IN_JOURNAL_MAX_BYTES, TYPED_REQUEST_MAX_BYTES, TYPED_RESPONSE_MAX_BYTES } from '../shared/limits.js';
import { authorizeRespond } from '../shared/policy/respond-authorization.js';
import { respondRequestFor, respondResponseContext } from '../shared/policy/respond-request.js';
import type { LoadedPolicySet } from '../shared/policy/policy-set.js';
import type { AuditReference, InvokeOutcome, InvokeTask, RunDefinition, RunEnd, RunPhase, WorkerNotice } from '../shared/worker-protocol.js';
import { containsSecret } from '../shared/secrets/key-redaction.js';
import { buildConversation } from './conversation.js';
import { AttemptsFailed, inferWithRetries } from './inference-attempts.js';
import type { ChatMessage, TypedInferenceRequest, TypedInferenceResponse } from '../shared/provider/inference-types.js';
import type { ProviderError, ProviderErrorFields } from './providers/provider-error.js';
import { listenForCancellation, pollCancellations } from './run-cancellation.js';
import { stopReservingJournalFiles, takeReservedJournalFile } from './journal-reserve.js';
import type { WorkerResources } from './worker-resources.js';
import { RunState, type CallRecords } from './run-state.js';

/** A failure that ends the run with an `Error` terminal record and withholds any text; `end` says why to the operator. */
class RunStopped extends Error {
  constructor(
    message: string,
    readonly end: RunEnd,
    /** Symbiont's reason for this ending, when it is not an Error with the message. */
    readonly termination?: TerminationReason,
  ) {
    super(message);
  }
}

/** A provider failure's end: its kind, and the HTTP status when it has one. */
function providerEnd(failure: ProviderError): RunEnd {
  return { kind: 'provider_failed', failure: failure.kind, ...(failure.status !== undefined ? { status: failure.status } : {}) };
}

/**
 * One governed invocation: every journal record is durable before the step it
 * guards, and the text is returned only after the terminal record is durable.
 * Whatever goes wrong after the journal exists, a terminal record is attempted.
 */
/** Test-only hooks around each phase's progress notice (fault-injection.ts). */
export interface PhaseHooks {
  beforeNotice?: (phase: RunPhase) => void;
  afterNotice?: (phase: RunPhase) => void;
}

export async function performInvocation(task: InvokeTask, resources: WorkerResources, hooks?: PhaseHooks): Promise<InvokeOutcome> {
  const { definition } = task;
  const notify = (notice: WorkerNotice): void => {
    try {
      task.port.postMessage(notice);
    } catch {
      // The supervisor side may be gone; the journal is what matters.
    }
  };
  const progress = (phase: RunPhase): void => {
    hooks?.beforeNotice?.(phase);
    if (task.reportProgress) notify({ type: 'progress', phase });
    hooks?.afterNotice?.(phase);
  };

  const cancellation = listenForCancellation(task.port);
  // One signal for every way a run stops, a cancel or the deadline (a plain listener and timer:
  // AbortSignal.any and an abortable sleep cost every run measurably more, docs/benchmarks.md).
  const stop = new AbortController();
  const stopSignal = stop.signal;
  const stopOnCancel = (): void => stop.abort(cancellation.signal.reason);
  if (cancellation.signal.aborted) stopOnCancel();
  else cancellation.signal.addEventListener('abort', stopOnCancel, { once: true });
  let deadlineTimer: NodeJS.Timeout | undefined;
  const stopReason = (): string => cancellation.reason() ?? `the response deadline of ${formatSeconds(definition.timeoutMs)} passed`;
  const stoppedEnd = (): RunEnd => ({ kind: cancellation.reason() !== undefined ? 'cancelled' : 'deadline' });
  // The owner may end a cancelled run's journal itself, between two of this thread's writes.
  const handover = new JournalHandover(task.handover);
  const throwIfStopped = (): void => {
    pollCancellations();
    if (stopSignal.aborted) throw new RunStopped(stopReason(), stoppedEnd());
    if (handover.taken) {
      // The owner posted the cancel before it took the journal: the cancel is on the port by now.
      pollCancellations();
      throw new RunStopped(stopReason(), { kind: 'cancelled' });
    }
  };
  const startedAtMs = Date.now();
  // The run's journal state (run-state.ts): what is durable, and so what its end still writes.
  const run = new RunState(new RunRecords(definition, startedAtMs));
  let storage: AuditStorage | undefined;
  // The provider's own error words: standard error only (at once), never the result or the journal.
  const providerNotes = {
    push: (...notes: string[]): number => {
      for (const text of notes) notify({ type: 'provider', note: { kind: 'message', text } });
      return 0;
    },
  };

  try {
    // Even a run cancelled before it started gets its journal: every accepted run
    // has a Started and a Terminated record, so an auditor can count them.
    storage = openRunAuditStorage(resources.project, resources.signingKey);
    // Refused before any journal when the key file is no longer the one this process signs for,
    // looked at in the very directory the journal would be created in.
    const keyFileChange = signingKeyFileChange(storage.route, storage.governedDirFd, resources.signingKeyFile);
    if (keyFileChange !== undefined) {
      return {
        ok: false,
        message: keyFileChange,
        terminalDurable: false,
        cancelled: cancellation.reason() !== undefined,
        keyFileChange,
        end: { kind: 'key_file_changed' },
      };
    }
    let writer: JournalWriter;
    try {
      const reservedFd = takeReservedJournalFile();
      writer = await JournalWriter.create(storage, task.runId, definition.principal, {
        reservedFd,
        syncInThread: resources.journalSyncInThread,
        handover,
        stopSignal,
      });
      if (reservedFd !== undefined && !writer.usedReservedFile) stopReservingJournalFiles();
    } catch (err) {
      // A run cancelled before this thread started it is finalised by its owner,
      // and creating the journal is the owner's claim: nothing is left to write here.
      pollCancellations();
      const reason = cancellation.reason();
      if (err instanceof JournalExistsError && reason !== undefined)
        return { ok: false, message: reason, terminalDurable: false, cancelled: true, end: { kind: 'cancelled' } };
      throw err;
    }
    const audit: AuditReference = { run_id: task.runId, path: writer.path, public_key: storage.signingKey.publicKeyHex };
    run.journalCreated(writer, audit);
    notify({ type: 'journal', path: audit.path, publicKey: audit.public_key });
    // The deadline covers the whole invocation after the journal opens.
    const deadlineAt = performance.now() + definition.timeoutMs;
    deadlineTimer = setTimeout(() => stop.abort(new Error('deadline')), definition.timeoutMs);

    const conversation = buildConversation(task);
    const { provider } = resources;
    // Symbiont's input reservation: the request's bytes, a bound on its tokens, plus a margin.
    const fullRequest = digestJson(hashedRequest(conversation, provider.model, provider.maxOutputTokens));
    const inputTokens = RunRecords.inputTokens(fullRequest.bytes);
    // The provider call: its tokens reserved and its request record built; the request it sends is the one hashed.
    // Its retries, if any, send the same request under the same records.
    const nextCall = (): CallRecords & { request: TypedInferenceRequest } => {
      const { records } = run;
      const reservation = records.reserve(inputTokens, provider.maxOutputTokens);
      if (reservation === undefined) {
        throw new RunStopped(
          `the request needs ${inputTokens} input tokens of the run's ${records.budget.limit}-token budget and leaves none for an answer; shorten the prompt or system_prompt (a typed request of up to ${records.budget.limit - provider.maxOutputTokens - RunRecords.inputTokens(0)} bytes, definition and guidance included, leaves room for a full answer)`,
          { kind: 'request_too_large' },
          'MaxTokens',
        );
      }
      // Usually the budget allows every output token asked for, and the request is the one already hashed.
      const digest =
        reservation.output === provider.maxOutputTokens ? fullRequest : digestJson(hashedRequest(conversation, provider.model, reservation.output));
      if (digest.bytes > TYPED_REQUEST_MAX_BYTES) {
        throw new RunStopped(`the typed inference request is ${digest.bytes} bytes; the limit is ${TYPED_REQUEST_MAX_BYTES} bytes`, {
          kind: 'request_too_large',
        });
      }
      const callId = randomUUID();
      const request: TypedInferenceRequest = { conversation, options: { provider: provider.kind, model: provider.model, max_tokens: reservation.output } };
      return {
        request,
        call: { callId, reservation },
        records: records.request(
          reservation,
          { callId, provider: provider.kind, model: provider.model, requestDigest: digest.digest, requestBytes: digest.bytes },
          audit,
        ),
      };
    };
    throwIfStopped();
    // The first durable point: the request record (with the opening records, one sync) before the request leaves.
    const first = await run.firstRequest(nextCall);
    progress('journal_opened');
    progress('request_sent');
    throwIfStopped();

    let response: TypedInferenceResponse;
    try {
      response = await inferWithRetries(
        provider,
        first.request,
        stopSignal,
        () => deadlineAt - performance.now(),
        {
          attemptFailed: (failure: ProviderError) => {
            run.attemptFailed({ message: failure.message, error: withoutKey(failure.journalFields(), provider.apiKey) });
            // Only this thread knows the attempts, which the call's finish lists: the owner must not end the run.
            handover.hold();
          },
          retrying: ({ attempt, failure, waitMs }) => {
            notify({
              type: 'provider',
              note: { kind: 'retry', attempt, nextAttempt: attempt + 1, status: failure.status ?? null, failure: failure.kind, waitMs },
            });
          },
          sending: (attempt) => notify({ type: 'attempt', attempt }),
          notRetried: (why) => notify({ type: 'not_retried', why }),
          beforeRetry: () => {
            throwIfStopped();
            run.retrying();
            return first.request;
          },
        },
        providerNotes,
      );
    } catch (err) {
      if (stopSignal.aborted) throw new RunStopped(stopReason(), stoppedEnd());
      // Symbiont's words for the run's end; the call's finish has the error itself.
      if (err instanceof AttemptsFailed)
        throw new RunStopped(err.message, providerEnd(err.failure), { Error: { message: `${INFERENCE_FAILED_PREFIX}${err.failure.message}` } });
      throw err;
    }
    const typedResponse = symbiontResponse(response);
    const responseDigest = digestJson(typedResponse);
    if (responseDigest.bytes > TYPED_RESPONSE_MAX_BYTES || Buffer.byteLength(JSON.stringify(response.content), 'utf8') > ANSWER_IN_JOURNAL_MAX_BYTES) {
      throw new RunStopped(
        `the typed inference response is ${responseDigest.bytes} bytes; the limit is ${TYPED_RESPONSE_MAX_BYTES} bytes, and ${ANSWER_IN_JOURNAL_MAX_BYTES} bytes for the answer's text, which the journal records`,
        { kind: 'response_too_large' },
      );
    }
    // The second: the response's hashes and the settlement (one sync) before the policy runs.
    const settlement = await run.responseReceived((answered, earlierAttempts) =>
      run.records.response(answered.reservation, {
        earlierAttempts,
        callId: answered.callId,
        responseDigest: responseDigest.digest,
        responseBytes: responseDigest.bytes,
        finishReason: typedResponse.finish_reason,
        providerFinishReason: response.provider_finish_reason,
        usage: typedResponse.usage,
      }),
    );
    progress('response_received');
    throwIfStopped();
    if (settlement === 'exceeded') {
      throw new RunStopped('the provider reported more tokens than the call reserved, so the response was withheld', { kind: 'usage_exceeded' });
    }
    // An answer whose text had to be made well-formed where it entered (well-formed-response.ts) is not the
    // provider's answer any more: its hashes are recorded, the text is never released nor written.
    if (response.not_well_formed === true) {
      throw new RunStopped("the provider's answer is not well-formed Unicode text (it holds an unpaired UTF-16 surrogate), so it was withheld", {
        kind: 'provider_failed',
        failure: 'malformed',
      });
    }
    // Symbiont's step stops here, before it proposes any action, on a refusal and on an answer with
    // neither text nor a tool call, and ends the run with its Error (phases.rs, produce_output).
    const noProgress = noProgressStop(response);
    if (noProgress !== undefined) throw new RunStopped(noProgress.message, noProgress.end, { Error: { message: noProgress.symbiont } });

    // The server's secrets never leave it, not even into the journal: an answer holding the
    // provider key (a provider that echoes the request's headers) in its text or in any string of a
    // proposed tool call, each of which the step's records would journal, is withheld whole, however
    // the key is split or cased in it.
    if (providerChosenText(typedResponse).some((text) => containsSecret(text, [provider.apiKey]))) {
      throw new RunStopped('the answer contains the configured provider key, so it was withheld', { kind: 'provider_key_in_answer' });
    }

    const step = decideStep(run.records, response, typedResponse, definition, task.runId, resources.policySet);
    // A cancel that arrived while the policy ran still wins over its decision: the step's records
    // stay, and the run ends as a stopped run does, with nothing dispatched.
    pollCancellations();
    const stopped = stopSignal.aborted;
    const failure = stopped ? stopReason() : step.failure;
    const end: RunEnd = stopped ? stoppedEnd() : step.end;
    const reason: TerminationReason = stopped ? stoppedTermination(cancellation.reason()) : step.failure === undefined ? 'Completed' : 'MaxIterations';
    // The third: the decision and the terminal record, durable together before any text leaves.
    await run.decided(step.reasoning, step.fields, reason, stopped);
    const terminalDurableAt = epochNow();
    progress('policy_evaluated');
    if (failure !== undefined) {
      return { ok: false, message: failure, audit, terminalDurable: true, terminalDurableAt, cancelled: cancellation.reason() !== undefined, end };
    }
    return { ok: true, text: response.content, audit, terminalDurableAt, end };
  } catch (err) {
    const message = describeFailure(err);
    // The state the failure left says what is still missing before the terminal record (run-state.ts).
    const state = run.name;
    let terminalDurable = false;
    if (state !== 'no_journal' && state !== 'ended') {
      const cancelled = stopSignal.aborted && cancellation.reason() !== undefined;
      const reason: TerminationReason =
        err instanceof RunStopped && err.termination !== undefined
          ? err.termination
          : stopSignal.aborted
            ? stoppedTermination(cancellation.reason())
            : { Error: { message } };
      terminalDurable = await run.failed(reason, cancelled);
    }
    const end: RunEnd =
      err instanceof RunStopped
        ? err.end
        : stopSignal.aborted
          ? stoppedEnd()
          : state === 'no_journal' || state === 'journal_open'
            ? { kind: 'journal_failed' }
            : { kind: 'internal_error' };
    const result: InvokeOutcome = { ok: false, message, terminalDurable, cancelled: cancellation.reason() !== undefined, end };
    if (terminalDurable) result.terminalDurableAt = epochNow();
    // A journal whose first records never became durable was removed by its writer: the run has no reference.
    if (run.audit !== undefined && run.writer?.journalRemoved !== true) result.audit = run.audit;
    return result;
  } finally {
    clearTimeout(deadlineTimer);
    cancellation.signal.removeEventListener('abort', stopOnCancel);
    cancellation.dispose();
    await run.writer?.close().catch(() => undefined);
    if (storage !== undefined) closeAuditStorage(storage);
  }
}

/** The step's decision on the answer: the reasoning record, the PolicyEvaluated fields, and the run's failure and end when the answer is withheld. */
interface StepDecision {
  reasoning: RunRecord;
  fields: EventFields<'PolicyEvaluated'>;
  failure: string | undefined;
  end: RunEnd;
}

/**
 * Decides the step on the exact answer: proposed tool calls are denied (this route runs none), an
 * answer that is not complete is withheld by the finish rule, and Cedar decides the rest.
 */
function decideStep(
  records: RunRecords,
  response: TypedInferenceResponse,
  typedResponse: ReturnType<typeof symbiontResponse>,
  definition: RunDefinition,
  runId: string,
  policySet: LoadedPolicySet,
): StepDecision {
  const responseContext = respondResponseContext(response.content, response.finish_reason, response.provider_finish_reason);
  const judged = { response_hash: symbiontHash(responseContext.sha256), response_bytes: responseContext.bytes };
  if (response.tool_calls.length > 0) {
    // The step proposed tool calls, which this route never runs: each is denied, as Symbiont's route denies them.
    const actions = typedResponse.tool_calls.map((toolCall): ProposedAction => ({
      ToolCall: { call_id: toolCall.id, name: toolCall.name, arguments: toolCall.arguments },
    }));
    const why = `the model proposed ${response.tool_calls.length} tool call(s); this route runs no tools, so the response was withheld`;
    return {
      reasoning: records.reasoning(actions, typedResponse.usage),
      fields: {
        iteration: 1,
        action_count: actions.length,
        denied_count: actions.length,
        approved_calls: [],
        denied_calls: actions.map((action) => ({ action, reason: why })),
        denied_by: 'finish_rule',
        decision: 'deny',
        ...judged,
      },
      failure: why,
      end: { kind: 'tool_call_withheld' },
    };
  }
  const respond: ProposedAction = { Respond: { content: response.content } };
  const reasoning = records.reasoning([respond], typedResponse.usage);
  const withheld = finishWithheld(response.finish_reason, response.provider_finish_reason);
  if (withheld !== undefined) {
    return {
      reasoning,
      fields: {
        iteration: 1,
        action_count: 1,
        denied_count: 1,
        approved_calls: [],
        denied_calls: [{ action: respond, reason: withheld }],
        denied_by: 'finish_rule',
        decision: 'deny',
        ...judged,
      },
      failure: withheld,
      end: { kind: 'finish_withheld', finish: response.finish_reason },
    };
  }
  const decision = authorizeRespond(policySet, respondRequestFor(definition, runId, responseContext));
  const allowed = decision.decision === 'allow';
  return {
    reasoning,
    fields: {
      iteration: 1,
      action_count: 1,
      denied_count: allowed ? 0 : 1,
      approved_calls: allowed ? [{ action: respond, fingerprint: digestJson({ action: respond }).digest }] : [],
      denied_calls: allowed ? [] : [{ action: respond, reason: `Cedar policy denied the response: ${decision.reason}` }],
      ...(allowed ? {} : { denied_by: 'cedar' as const }),
      decision: allowed ? 'allow' : 'deny',
      determining_policies: decision.determining_policies,
      errors: decision.errors,
      ...judged,
    },
    failure: allowed ? undefined : `Cedar policy denied the response: ${decision.reason}`,
    end: allowed ? { kind: 'completed' } : { kind: 'policy_denied', policies: policyLabels(policySet, decision.determining_policies) },
  };
}

/** Every provider-chosen string the step's records would journal: the answer's text, and each proposed tool call's id, name and arguments. */
function providerChosenText(response: ReturnType<typeof symbiontResponse>): string[] {
  return [response.content, ...response.tool_calls.flatMap((call) => [call.id, call.name, call.arguments])];
}

/**
 * A failed call's journal fields, each provider identifier (request id, error type, param) that
 * holds the provider key left out (an echo): the key never reaches the journal, whatever field it
 * rides in.
 */
function withoutKey(fields: ProviderErrorFields, key: string): ProviderErrorFields {
  const screened = (value: string | null): string | null => (value !== null && containsSecret(value, [key]) ? null : value);
  return { ...fields, error_type: screened(fields.error_type), error_param: screened(fields.error_param), request_id: screened(fields.request_id) };
}

/** Rust's `char::is_whitespace` (Unicode White_Space), which Symbiont's `str::trim` removes; JavaScript's trim differs (U+FEFF, U+0085). */
const ONLY_RUST_WHITESPACE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;

/**
 * Symbiont's two early stops after a provider answer (phases.rs, produce_output), in its order and
 * words: a refusal, then an answer with no tool call and only white space. `message` is ours, for
 * the caller.
 */
function noProgressStop(response: TypedInferenceResponse): { message: string; end: RunEnd; symbiont: string } | undefined {
  if (response.finish_reason === 'refused') {
    return {
      message: finishWithheld(response.finish_reason, response.provider_finish_reason)!,
      end: { kind: 'finish_withheld', finish: response.finish_reason },
      symbiont: 'model refused the request (stop_reason=refusal)',
    };
  }
  if (response.tool_calls.length === 0 && ONLY_RUST_WHITESPACE.test(response.content)) {
    return {
      message:
        finishWithheld(response.finish_reason, response.provider_finish_reason) ??
        'the model answered with no text and no tool call; there is nothing to release',
      end: response.finish_reason === 'complete' ? { kind: 'empty_answer' } : { kind: 'finish_withheld', finish: response.finish_reason },
      symbiont: 'model produced no tool calls and no text (no-progress turn)',
    };
  }
  return undefined;
}

/** How Symbiont ends a stopped run: `Timeout` at the deadline, an `Error` in its own words for a cancel. */
function stoppedTermination(cancelReason: string | undefined): TerminationReason {
  return cancelReason === undefined ? 'Timeout' : { Error: { message: RUN_CANCELLED_MESSAGE } };
}

/** The request as the journal hashes it: Symbiont's `Conversation` and `InferenceOptions` (docs/audit.md). */
function hashedRequest(conversation: ChatMessage[], model: string, maxTokens: number): HashedRequest {
  return { conversation: { messages: conversation }, options: { max_tokens: maxTokens, model, response_format: { type: 'text' } } };
}

/** The determining policies as the operator knows them: @id, else file:line (policy-label.ts). */
function policyLabels(set: LoadedPolicySet, ids: readonly string[]): string[] {
  return ids.map((id) => set.policies.find((p) => p.id === id)?.label ?? id);
}

function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

function describeFailure(err: unknown): string {
  if (err instanceof RunStopped) return err.message;
  if (err instanceof Error) return err.message.split('\n')[0] ?? 'the run failed';
  return 'the run failed';
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
