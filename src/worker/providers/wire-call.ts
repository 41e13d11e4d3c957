import type { ProviderConfig } from '../../shared/provider/provider-config.js';
import { WIRE_FORMATS, wireOf, type WireFormat } from '../../shared/provider/provider-kinds.js';
import type { TypedInferenceRequest, TypedInferenceResponse } from '../../shared/provider/inference-types.js';
import { modelPathProblem, type WireFormatDeclaration } from '../../shared/provider/wire-format.js';
import { explainHttpFailure } from './http-failure-explanations.js';
import { ProviderError } from './provider-error.js';
import { postJson } from './provider-http.js';
import { noteUnrecognizedFinish, reportedError, type AnswerContext } from './reported-error.js';

// One request in the configured provider's wire format, sent and read by that format's declaration
// (src/shared/provider/wire-*.ts): its URL and headers, its body, its error fields and failure
// explanations, its answer's parser. This module adds only what a worker does: the HTTP call and the
// ProviderErrors a parser's findings become.

/** The typed response read from an answer in `wire`; provider-chosen text for the operator goes to `context.operatorNotes`. */
export function parseWireAnswer(wire: WireFormat | WireFormatDeclaration, json: unknown, context: AnswerContext = {}): TypedInferenceResponse {
  const declared = typeof wire === 'string' ? WIRE_FORMATS[wire] : wire;
  return declared.parse(json, {
    malformed: (detail) => new ProviderError(`the provider response is not ${declared.answerName}: ${detail}`, 'malformed'),
    reported: (errorBody, where) => reportedError(declared.errorFields(errorBody), where, context),
    unrecognizedFinish: (normalized) => noteUnrecognizedFinish(normalized, context),
  });
}

/** One POST to the endpoint and its answer as the typed response; provider-chosen text for the operator goes to `operatorNotes`. */
export async function callWire(
  config: ProviderConfig,
  request: TypedInferenceRequest,
  signal: AbortSignal,
  operatorNotes?: Pick<string[], 'push'>,
): Promise<TypedInferenceResponse> {
  const wire = wireOf(config.kind);
  const model = request.options.model;
  // Checked at configuration time too (provider-config.ts); checked again where the name enters the path.
  if (wire.modelInPath && modelPathProblem(model) !== undefined) {
    throw new ProviderError(`the model name ${modelPathProblem(model)}, which cannot go into the request's URL path`, 'malformed');
  }
  const url = wire.url(config.baseUrl, model);
  const answer = await postJson(
    {
      url,
      headers: wire.headers(config.apiKey),
      body: wire.body({ conversation: request.conversation, model, maxOutputTokens: request.options.max_tokens, limitParameter: config.tokenLimitParameter }),
      secret: config.apiKey,
      proxy: config.proxy,
      errorFields: wire.errorFields,
      explainFailure: (status, fields) => explainHttpFailure(status, fields, config),
    },
    signal,
  );
  return parseWireAnswer(wire, answer.json, {
    url,
    requestId: answer.requestId,
    secret: config.apiKey,
    ...(operatorNotes !== undefined ? { operatorNotes } : {}),
  });
}
