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
import { listenForCancellation, pollCancellations, type RunCancellation } from './run-cancellation.js';
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

/** Test-only hooks around each phase's progress notice (fault-injection.ts). */
export interface PhaseHooks {
  beforeNotice?: (phase: RunPhase) => void;
  afterNotice?: (phase: RunPhase) => void;
}

/**
 * One governed invocation: every journal record is durable before the step it
 * guards, and the text is returned only after the terminal record is durable.
 * Whatever goes wrong after the journal exists, a terminal record is attempted.
 * It reads as the run's states (run-state.ts): each step below is one transition, and writes
 * that transition's records and notices.
 */
export async function performInvocation(task: InvokeTask, resources: WorkerResources, hooks?: PhaseHooks): Promise<InvokeOutcome> {
  const invocation = new Invocation(task, resources, hooks);
  try {
    // no_journal -> journal_open, unless the run is refused or its owner claimed the journal.
    const refused = await invocation.openJournal();
    if (refused !== undefined) return refused;
    // journal_open -> request_durable -> (attempt_failed -> request_durable)* -> response_durable.
    const request = await invocation.sendRequest();
    const response = await invocation.callProvider(request);
    const typedResponse = await invocation.receiveResponse(response);
    invocation.screenAnswer(response, typedResponse);
    // response_durable -> ended.
    return await invocation.decide(response, typedResponse);
  } catch (err) {
    // Any state with a journal -> ended (without one, nothing is written).
    return await invocation.endAfterFailure(err);
  } finally {
    await invocation.close();
  }
}

/** One run's signals, journal state and notices: the transitions performInvocation takes, each in one method. */
class Invocation {
  private readonly definition: RunDefinition;
  private readonly cancellation: RunCancellation;
  // One signal for every way a run stops, a cancel or the deadline (a plain listener and timer:
  // AbortSignal.any and an abortable sleep cost every run measurably more, docs/benchmarks.md).
  private readonly stop = new AbortController();
  private readonly stopOnCancel = (): void => this.stop.abort(this.cancellation.signal.reason);
  // The owner may end a cancelled run's journal itself, between two of this thread's writes.
  private readonly handover: JournalHandover;
  // The run's journal state (run-state.ts): what is durable, and so what its end still writes.
  private readonly run: RunState;
  private storage: AuditStorage | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private deadlineAt = 0;
  private audit: AuditReference | undefined;
  // The provider's own error words: standard error only (at once), never the result or the journal.
  private readonly providerNotes = {
    push: (...notes: string[]): number => {
      for (const text of notes) this.notify({ type: 'provider', note: { kind: 'message', text } });
      return 0;
    },
  };

  constructor(
    private readonly task: InvokeTask,
    private readonly resources: WorkerResources,
    private readonly hooks: PhaseHooks | undefined,
  ) {
    this.definition = task.definition;
    this.cancellation = listenForCancellation(task.port);
    if (this.cancellation.signal.aborted) this.stopOnCancel();
    else this.cancellation.signal.addEventListener('abort', this.stopOnCancel, { once: true });
    this.handover = new JournalHandover(task.handover);
    this.run = new RunState(new RunRecords(this.definition, Date.now()));
  }

  private notify(notice: WorkerNotice): void {
    try {
      this.task.port.postMessage(notice);
    } catch {
      // The supervisor side may be gone; the journal is what matters.
    }
  }

  private progress(phase: RunPhase): void {
    this.hooks?.beforeNotice?.(phase);
    if (this.task.reportProgress) this.notify({ type: 'progress', phase });
    this.hooks?.afterNotice?.(phase);
  }

  private get cancelled(): boolean {
    return this.cancellation.reason() !== undefined;
  }

  private stopReason(): string {
    return this.cancellation.reason() ?? `the response deadline of ${formatSeconds(this.definition.timeoutMs)} passed`;
  }

  private stoppedEnd(): RunEnd {
    return { kind: this.cancelled ? 'cancelled' : 'deadline' };
  }

  private throwIfStopped(): void {
    pollCancellations();
    if (this.stop.signal.aborted) throw new RunStopped(this.stopReason(), this.stoppedEnd());
    if (this.handover.taken) {
      // The owner posted the cancel before it took the journal: the cancel is on the port by now.
      pollCancellations();
      throw new RunStopped(this.stopReason(), { kind: 'cancelled' });
    }
  }

  /**
   * no_journal -> journal_open: the journal file, and the `journal` notice. Returns the run's outcome
   * instead when no journal may exist: the key file changed, or the run's owner claimed it.
   */
  async openJournal(): Promise<InvokeOutcome | undefined> {
    const { task, resources, definition } = this;
    // Even a run cancelled before it started gets its journal: every accepted run
    // has a Started and a Terminated record, so an auditor can count them.
    const storage = (this.storage = openRunAuditStorage(resources.project, resources.signingKey));
    // Refused before any journal when the key file is no longer the one this process signs for,
    // looked at in the very directory the journal would be created in.
    const keyFileChange = signingKeyFileChange(storage.route, storage.governedDirFd, resources.signingKeyFile);
    if (keyFileChange !== undefined) {
      return { ok: false, message: keyFileChange, terminalDurable: false, cancelled: this.cancelled, keyFileChange, end: { kind: 'key_file_changed' } };
    }
    let writer: JournalWriter;
    try {
      const reservedFd = takeReservedJournalFile();
      writer = await JournalWriter.create(storage, task.runId, definition.principal, {
        reservedFd,
        syncInThread: resources.journalSyncInThread,
        handover: this.handover,
        stopSignal: this.stop.signal,
      });
      if (reservedFd !== undefined && !writer.usedReservedFile) stopReservingJournalFiles();
    } catch (err) {
      // A run cancelled before this thread started it is finalised by its owner,
      // and creating the journal is the owner's claim: nothing is left to write here.
      pollCancellations();
      const reason = this.cancellation.reason();
      if (err instanceof JournalExistsError && reason !== undefined)
        return { ok: false, message: reason, terminalDurable: false, cancelled: true, end: { kind: 'cancelled' } };
      throw err;
    }
    const audit: AuditReference = { run_id: task.runId, path: writer.path, public_key: storage.signingKey.publicKeyHex };
    this.audit = audit;
    this.run.journalCreated(writer, audit);
    this.notify({ type: 'journal', path: audit.path, publicKey: audit.public_key });
    // The deadline covers the whole invocation after the journal opens.
    this.deadlineAt = performance.now() + definition.timeoutMs;
    this.deadlineTimer = setTimeout(() => this.stop.abort(new Error('deadline')), definition.timeoutMs);
    return undefined;
  }

  /**
   * journal_open -> request_durable: the first durable point, the opening records and the request
   * record (one sync) before the request leaves, then the `journal_opened` and `request_sent` notices.
   */
  async sendRequest(): Promise<TypedInferenceRequest> {
    const { run, audit } = this;
    const conversation = buildConversation(this.task);
    const { provider } = this.resources;
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
          audit!,
        ),
      };
    };
    this.throwIfStopped();
    const first = await run.firstRequest(nextCall);
    this.progress('journal_opened');
    this.progress('request_sent');
    this.throwIfStopped();
    return first.request;
  }

  /**
   * request_durable -> attempt_failed -> request_durable, as often as the call is retried: nothing is
   * written until the call's last attempt, only the attempt, retry and provider notices.
   */
  async callProvider(request: TypedInferenceRequest): Promise<TypedInferenceResponse> {
    const { run } = this;
    const { provider } = this.resources;
    const stopSignal = this.stop.signal;
    try {
      return await inferWithRetries(
        provider,
        request,
        stopSignal,
        () => this.deadlineAt - performance.now(),
        {
          attemptFailed: (failure: ProviderError) => {
            run.attemptFailed({ message: failure.message, error: withoutKey(failure.journalFields(), provider.apiKey) });
            // Only this thread knows the attempts, which the call's finish lists: the owner must not end the run.
            this.handover.hold();
          },
          retrying: ({ attempt, failure, waitMs }) => {
            this.notify({
              type: 'provider',
              note: { kind: 'retry', attempt, nextAttempt: attempt + 1, status: failure.status ?? null, failure: failure.kind, waitMs },
            });
          },
          sending: (attempt) => this.notify({ type: 'attempt', attempt }),
          notRetried: (why) => this.notify({ type: 'not_retried', why }),
          beforeRetry: () => {
            this.throwIfStopped();
            run.retrying();
            return request;
          },
        },
        this.providerNotes,
      );
    } catch (err) {
      if (stopSignal.aborted) throw new RunStopped(this.stopReason(), this.stoppedEnd());
      // Symbiont's words for the run's end; the call's finish has the error itself.
      if (err instanceof AttemptsFailed)
        throw new RunStopped(err.message, providerEnd(err.failure), { Error: { message: `${INFERENCE_FAILED_PREFIX}${err.failure.message}` } });
      throw err;
    }
  }

  /**
   * request_durable -> response_durable: the second durable point, the response's hashes and the
   * settlement (one sync) before the policy runs, then the `response_received` notice.
   */
  async receiveResponse(response: TypedInferenceResponse): Promise<TypedResponse> {
    const { run } = this;
    const typedResponse = symbiontResponse(response);
    const responseDigest = digestJson(typedResponse);
    if (responseDigest.bytes > TYPED_RESPONSE_MAX_BYTES || Buffer.byteLength(JSON.stringify(response.content), 'utf8') > ANSWER_IN_JOURNAL_MAX_BYTES) {
      throw new RunStopped(
        `the typed inference response is ${responseDigest.bytes} bytes; the limit is ${TYPED_RESPONSE_MAX_BYTES} bytes, and ${ANSWER_IN_JOURNAL_MAX_BYTES} bytes for the answer's text, which the journal records`,
        { kind: 'response_too_large' },
      );
    }
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
    this.progress('response_received');
    this.throwIfStopped();
    if (settlement === 'exceeded') {
      throw new RunStopped('the provider reported more tokens than the call reserved, so the response was withheld', { kind: 'usage_exceeded' });
    }
    return typedResponse;
  }

  /** In response_durable, before the policy: the answers the run withholds whatever the policy says (each ends the run as a failure). */
  screenAnswer(response: TypedInferenceResponse, typedResponse: TypedResponse): void {
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
    if (providerChosenText(typedResponse).some((text) => containsSecret(text, [this.resources.provider.apiKey]))) {
      throw new RunStopped('the answer contains the configured provider key, so it was withheld', { kind: 'provider_key_in_answer' });
    }
  }

  /**
   * response_durable -> ended: the third durable point, the step's decision and the terminal record
   * together before any text leaves, then the `policy_evaluated` notice.
   */
  async decide(response: TypedInferenceResponse, typedResponse: TypedResponse): Promise<InvokeOutcome> {
    const { run, task, audit } = this;
    const step = decideStep(run.records, response, typedResponse, this.definition, task.runId, this.resources.policySet);
    // A cancel that arrived while the policy ran still wins over its decision: the step's records
    // stay, and the run ends as a stopped run does, with nothing dispatched.
    pollCancellations();
    const stopped = this.stop.signal.aborted;
    const failure = stopped ? this.stopReason() : step.failure;
    const end: RunEnd = stopped ? this.stoppedEnd() : step.end;
    const reason: TerminationReason = stopped ? stoppedTermination(this.cancellation.reason()) : step.failure === undefined ? 'Completed' : 'MaxIterations';
    await run.decided(step.reasoning, step.fields, reason, stopped);
    const terminalDurableAt = epochNow();
    this.progress('policy_evaluated');
    if (failure !== undefined) {
      return { ok: false, message: failure, audit, terminalDurable: true, terminalDurableAt, cancelled: this.cancelled, end };
    }
    return { ok: true, text: response.content, audit: audit!, terminalDurableAt, end };
  }

  /** Any state with a journal -> ended, after a failure: what the state still lacks, and the terminal record. */
  async endAfterFailure(err: unknown): Promise<InvokeOutcome> {
    const { run } = this;
    const stopSignal = this.stop.signal;
    const message = describeFailure(err);
    // The state the failure left says what is still missing before the terminal record (run-state.ts).
    const state = run.name;
    let terminalDurable = false;
    if (state !== 'no_journal' && state !== 'ended') {
      const cancelled = stopSignal.aborted && this.cancelled;
      const reason: TerminationReason =
        err instanceof RunStopped && err.termination !== undefined
          ? err.termination
          : stopSignal.aborted
            ? stoppedTermination(this.cancellation.reason())
            : { Error: { message } };
      terminalDurable = await run.failed(reason, cancelled);
    }
    const end: RunEnd =
      err instanceof RunStopped
        ? err.end
        : stopSignal.aborted
          ? this.stoppedEnd()
          : state === 'no_journal' || state === 'journal_open'
            ? { kind: 'journal_failed' }
            : { kind: 'internal_error' };
    const result: InvokeOutcome = { ok: false, message, terminalDurable, cancelled: this.cancelled, end };
    if (terminalDurable) result.terminalDurableAt = epochNow();
    // A journal whose first records never became durable was removed by its writer: the run has no reference.
    if (run.audit !== undefined && run.writer?.journalRemoved !== true) result.audit = run.audit;
    return result;
  }

  /** Whatever the run's end: the timer, the cancel listener, the journal file and the storage released. */
  async close(): Promise<void> {
    clearTimeout(this.deadlineTimer);
    this.cancellation.signal.removeEventListener('abort', this.stopOnCancel);
    this.cancellation.dispose();
    await this.run.writer?.close().catch(() => undefined);
    if (this.storage !== undefined) closeAuditStorage(this.storage);
  }
}

/** The response as Symbiont's journal types it. */
type TypedResponse = ReturnType<typeof symbiontResponse>;

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
