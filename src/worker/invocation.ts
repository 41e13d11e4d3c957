import { randomUUID } from 'node:crypto';
import { closeAuditStorage, openRunAuditStorage, type AuditStorage } from '../shared/storage/audit-storage.js';
import { canonicalHash } from '../shared/canonical-json.js';
import { JournalExistsError, JournalWriter } from '../shared/journal/journal-writer.js';
import { JournalHandover } from '../shared/journal/journal-handover.js';
import { signingKeyFileChange } from '../shared/storage/signing-key-change.js';
import { finishWithheld } from '../shared/provider/finish-reasons.js';
import { TYPED_REQUEST_MAX_BYTES, TYPED_RESPONSE_MAX_BYTES } from '../shared/limits.js';
import { authorizeRespond } from '../shared/policy/respond-authorization.js';
import { respondRequestFor, respondResponseContext } from '../shared/policy/respond-request.js';
import type { LoadedPolicySet } from '../shared/policy/policy-set.js';
import type { AuditReference, InvokeOutcome, InvokeTask, RunEnd, RunPhase, WorkerNotice } from '../shared/worker-protocol.js';
import { failedFinishEvent, RUN_SURFACE, startedEvent } from '../shared/journal/run-events.js';
import { containsSecret } from '../shared/secrets/key-redaction.js';
import { buildConversation } from './conversation.js';
import { AttemptsFailed, failedAttemptFinish, inferWithRetries } from './inference-attempts.js';
import type { TypedInferenceRequest, TypedInferenceResponse } from '../shared/provider/inference-types.js';
import type { ProviderError } from './providers/provider-error.js';
import { listenForCancellation, pollCancellations } from './run-cancellation.js';
import { stopReservingJournalFiles, takeReservedJournalFile } from './journal-reserve.js';
import type { WorkerResources } from './worker-resources.js';

/** A failure that ends the run with an `Error` terminal record and withholds any text; `end` says why to the operator. */
class RunStopped extends Error {
  constructor(
    message: string,
    readonly end: RunEnd,
  ) {
    super(message);
  }
}

/** The operator's reason for a provider failure: provider_http_<status>, or provider_<kind>. */
function providerEnd(failure: ProviderError): RunEnd {
  return { reason: failure.kind === 'http' && failure.status !== undefined ? `provider_http_${failure.status}` : `provider_${failure.kind}` };
}

/**
 * One governed invocation: every journal record is durable before the step it
 * guards, and the text is returned only after the terminal record is durable.
 * Whatever goes wrong after the journal exists, a terminal record is attempted.
 */
export async function performInvocation(
  task: InvokeTask,
  resources: WorkerResources,
  afterPhase?: (phase: RunPhase) => void,
): Promise<InvokeOutcome> {
  const { definition } = task;
  const notify = (notice: WorkerNotice): void => {
    try {
      task.port.postMessage(notice);
    } catch {
      // The supervisor side may be gone; the journal is what matters.
    }
  };
  const progress = (phase: RunPhase): void => {
    if (task.reportProgress) notify({ type: 'progress', phase });
    afterPhase?.(phase);
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
  const stopReason = (): string =>
    cancellation.reason() ?? `the response deadline of ${formatSeconds(definition.timeoutMs)} passed`;
  const stoppedEnd = (): RunEnd => ({ reason: cancellation.reason() !== undefined ? 'cancelled' : 'deadline' });
  // The owner may end a cancelled run's journal itself, between two of this thread's writes.
  const handover = new JournalHandover(task.handover);
  const throwIfStopped = (): void => {
    pollCancellations();
    if (stopSignal.aborted) throw new RunStopped(stopReason(), stoppedEnd());
    if (handover.taken) {
      // The owner posted the cancel before it took the journal: the cancel is on the port by now.
      pollCancellations();
      throw new RunStopped(stopReason(), { reason: 'cancelled' });
    }
  };
  const started = startedEvent(definition);

  let storage: AuditStorage | undefined;
  let writer: JournalWriter | undefined;
  let audit: AuditReference | undefined;
  let callId: string | undefined;
  // A failed attempt's finish, held until the next record (a retry's request, or the terminal) shares its sync.
  let failedFinish: Record<string, unknown> | undefined;
  // The provider's own error words: standard error only (at once), never the result or the journal.
  const providerNotes = {
    push: (...notes: string[]): number => {
      for (const text of notes) notify({ type: 'provider', note: { kind: 'message', text } });
      return 0;
    },
  };
  let startedRecorded = false;
  let finishRecorded = false;
  let terminalWritten = false;

  try {
    // Even a run cancelled before it started gets its journal: every accepted run
    // has a Started and a Terminated record, so an auditor can count them.
    storage = openRunAuditStorage(resources.project, resources.signingKey);
    // Refused before any journal when the key file is no longer the one this process signs for,
    // looked at in the very directory the journal would be created in.
    const keyFileChange = signingKeyFileChange(storage.route, storage.governedDirFd, resources.signingKeyFile);
    if (keyFileChange !== undefined) {
      return { ok: false, message: keyFileChange, terminalDurable: false, cancelled: cancellation.reason() !== undefined, keyFileChange, end: { reason: 'key_file_changed' } };
    }
    try {
      const reservedFd = takeReservedJournalFile();
      writer = await JournalWriter.create(storage, task.runId, definition.principal, { reservedFd, syncInThread: resources.journalSyncInThread, handover, stopSignal });
      if (reservedFd !== undefined && !writer.usedReservedFile) stopReservingJournalFiles();
    } catch (err) {
      // A run cancelled before this thread started it is finalised by its owner,
      // and creating the journal is the owner's claim: nothing is left to write here.
      pollCancellations();
      const reason = cancellation.reason();
      if (err instanceof JournalExistsError && reason !== undefined) return { ok: false, message: reason, terminalDurable: false, cancelled: true, end: { reason: 'cancelled' } };
      throw err;
    }
    audit = { run_id: task.runId, path: writer.path, public_key: storage.signingKey.publicKeyHex };
    notify({ type: 'journal', path: audit.path, publicKey: audit.public_key });
    // The deadline covers the whole invocation after the journal opens.
    const deadlineAt = performance.now() + definition.timeoutMs;
    deadlineTimer = setTimeout(() => stop.abort(new Error('deadline')), definition.timeoutMs);

    const typedRequest: TypedInferenceRequest = {
      conversation: buildConversation(task),
      options: { provider: resources.provider.kind, model: resources.provider.model, max_tokens: resources.provider.maxOutputTokens },
    };
    const requestDigest = canonicalHash(typedRequest);
    if (requestDigest.bytes > TYPED_REQUEST_MAX_BYTES) {
      throw new RunStopped(`the typed inference request is ${requestDigest.bytes} bytes; the limit is ${TYPED_REQUEST_MAX_BYTES} bytes`, { reason: 'request_too_large' });
    }
    throwIfStopped();
    // Started and DirectInferenceRequested share one write and one sync: the
    // protocol needs the request record durable before the request leaves, and
    // Started before it in the chain.
    const requested = (requestCallId: string): Record<string, unknown> => ({
      DirectInferenceRequested: {
        call_id: requestCallId,
        operation: RUN_SURFACE,
        provider: resources.provider.kind,
        model: resources.provider.model,
        request_hash: requestDigest.hash,
        request_bytes: requestDigest.bytes,
        recipient: definition.principal,
        recipient_definition_hash: definition.sourceHash,
      },
    });
    const requestCallId = randomUUID();
    await writer.appendAll([started, requested(requestCallId)]);
    startedRecorded = true;
    callId = requestCallId;
    progress('journal_opened');
    progress('request_sent');
    throwIfStopped();

    let response: TypedInferenceResponse;
    try {
      response = await inferWithRetries(resources.provider, typedRequest, stopSignal, () => deadlineAt - performance.now(), {
        attemptFailed: (failure: ProviderError) => {
          failedFinish = failedAttemptFinish(callId as string, failure);
          // Only this thread can write that finish, with the retry's request or the terminal record.
          handover.hold();
        },
        retrying: ({ attempt, failure, waitMs }) => {
          notify({ type: 'provider', note: { kind: 'retry', attempt, nextAttempt: attempt + 1, status: failure.status ?? null, failure: failure.kind, waitMs } });
        },
        // Each retry is its own provider call: its request record is durable before it is sent,
        // in the same sync as the failed attempt's finish.
        beforeRetry: async () => {
          const retryCallId = randomUUID();
          await writer!.appendAll([failedFinish as Record<string, unknown>, requested(retryCallId)]);
          failedFinish = undefined;
          callId = retryCallId;
          throwIfStopped();
        },
      }, providerNotes);
    } catch (err) {
      if (stopSignal.aborted) throw new RunStopped(stopReason(), stoppedEnd());
      if (err instanceof AttemptsFailed) throw new RunStopped(err.message, providerEnd(err.failure));
      throw err;
    }
    const responseDigest = canonicalHash(response);
    if (responseDigest.bytes > TYPED_RESPONSE_MAX_BYTES) {
      throw new RunStopped(`the typed inference response is ${responseDigest.bytes} bytes; the limit is ${TYPED_RESPONSE_MAX_BYTES} bytes`, { reason: 'response_too_large' });
    }
    // Both response records are durable (one write, one sync) before the policy runs.
    await writer.appendAll([
      { DirectInferenceResponseReceived: { call_id: callId, response_hash: responseDigest.hash, response_bytes: responseDigest.bytes } },
      {
        DirectInferenceFinished: {
          call_id: callId,
          reason: 'Completed',
          response_hash: responseDigest.hash,
          response_bytes: responseDigest.bytes,
          finish_reason: response.finish_reason,
          provider_finish_reason: response.provider_finish_reason,
          usage: response.usage,
        },
      },
    ]);
    finishRecorded = true;
    progress('response_received');
    throwIfStopped();

    if (response.tool_calls.length > 0) {
      throw new RunStopped(
        `the model proposed ${response.tool_calls.length} tool call(s); this route runs no tools, so the response was withheld`,
        { reason: 'tool_call_withheld' },
      );
    }
    const withheld = finishWithheld(response.finish_reason, response.provider_finish_reason);
    if (withheld !== undefined) throw new RunStopped(withheld, { reason: `finish_${response.finish_reason}` });

    // The server's secrets never leave it: an answer holding the provider key (a provider that
    // echoes the request's headers) is withheld whole, however the key is split or cased in it.
    if (containsSecret(response.content, [resources.provider.apiKey])) {
      throw new RunStopped('the answer contains the configured provider key, so it was withheld', { reason: 'provider_key_in_answer' });
    }

    const responseContext = respondResponseContext(response.content, response.finish_reason, response.provider_finish_reason);
    const { sha256: contentHash, bytes: contentBytes } = responseContext;
    const respondRequest = respondRequestFor(definition, task.runId, responseContext);
    const decision = authorizeRespond(resources.policySet, respondRequest);
    const policyEvaluated = {
      PolicyEvaluated: {
        action: 'respond',
        decision: decision.decision,
        determining_policies: decision.determining_policies,
        errors: decision.errors,
        denied_count: decision.decision === 'allow' ? 0 : 1,
        response_hash: contentHash,
        response_bytes: contentBytes,
      },
    };
    // A cancel that arrived while the policy ran still wins over its decision.
    pollCancellations();
    const failure = stopSignal.aborted
      ? stopReason()
      : decision.decision !== 'allow'
        ? `Cedar policy denied the response: ${decision.reason}`
        : undefined;
    const end: RunEnd = stopSignal.aborted
      ? stoppedEnd()
      : decision.decision !== 'allow'
        ? { reason: 'policy_denied', policies: policyLabels(resources.policySet, decision.determining_policies) }
        : { reason: 'completed' };
    // The decision and the terminal record become durable together, before any text leaves.
    await writer.appendTerminal(failure === undefined ? 'Completed' : { Error: { message: failure } }, [policyEvaluated], { urgent: stopSignal.aborted });
    terminalWritten = true;
    const terminalDurableAt = epochNow();
    progress('policy_evaluated');
    if (failure !== undefined) {
      return { ok: false, message: failure, audit, terminalDurable: true, terminalDurableAt, cancelled: cancellation.reason() !== undefined, end };
    }
    return { ok: true, text: response.content, audit, terminalDurableAt, end };
  } catch (err) {
    const message = describeFailure(err);
    let terminalDurable = false;
    if (writer !== undefined && !terminalWritten) {
      const reason = { Error: { message } };
      // The records still missing before the terminal one (Started, and the
      // open call's finish) share its sync; if they cannot be written (a
      // tampered file), the terminal record is tried alone.
      const preceding: Record<string, unknown>[] = [
        ...(startedRecorded ? [] : [started]),
        ...(callId !== undefined && !finishRecorded
          ? [failedFinish ?? failedFinishEvent(callId, message)]
          : []),
      ];
      // A failed or stopped run's end is what a cancel waits for: synced at once (journal-writer.ts).
      const urgent = { urgent: true };
      terminalDurable = await writer.appendTerminal(reason, preceding, urgent).then(
        () => true,
        () => (preceding.length > 0 ? writer!.appendTerminal(reason, [], urgent).then(() => true, () => false) : false),
      );
    }
    const end: RunEnd =
      err instanceof RunStopped ? err.end
      : stopSignal.aborted ? stoppedEnd()
      : writer === undefined || !startedRecorded ? { reason: 'journal_failed' }
      : { reason: 'internal_error' };
    const result: InvokeOutcome = { ok: false, message, terminalDurable, cancelled: cancellation.reason() !== undefined, end };
    if (terminalDurable) result.terminalDurableAt = epochNow();
    // A journal whose first records never became durable was removed by its writer: the run has no reference.
    if (audit !== undefined && writer?.journalRemoved !== true) result.audit = audit;
    return result;
  } finally {
    clearTimeout(deadlineTimer);
    cancellation.signal.removeEventListener('abort', stopOnCancel);
    cancellation.dispose();
    if (writer !== undefined) await writer.close().catch(() => undefined);
    if (storage !== undefined) closeAuditStorage(storage);
  }
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
