import { parentPort } from 'node:worker_threads';
import { ANALYSIS_THREAD_READY, type AnalysisRequest, type AnalysisResponse } from '../shared/dsl/analysis-messages.js';
import { selectConversationalDefinition } from '../shared/dsl/conversational-definition.js';
import { parseDslReport } from '../shared/dsl/parse-report.js';
import { summariseSource } from '../shared/dsl/source-summary.js';
import { DSL_REPORT_MAX_BYTES } from '../shared/limits.js';

// The DSL analysis thread: lexes, parses and reports one text at a time, off
// the supervisor's event loop. The supervisor ends this thread when a text
// takes longer than its budget (dsl-analysis-pool.ts), so nothing here needs
// to watch the clock.

function answer(request: AnalysisRequest): AnalysisResponse {
  if (request.kind === 'summary') return { id: request.id, ok: true, value: summariseSource(request.entry, request.peers) };
  if (request.kind === 'selection') return { id: request.id, ok: true, value: selectConversationalDefinition([request.entry], request.entry.stem) };
  const text = JSON.stringify(parseDslReport(request.text, request.source), null, 2);
  // Measured here, where it costs the supervisor nothing; the answer carries this text and the same data as JSON.
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > DSL_REPORT_MAX_BYTES) {
    return {
      id: request.id,
      ok: false,
      message: `the parse report would be ${bytes} bytes, over the ${DSL_REPORT_MAX_BYTES}-byte answer limit; split the text into smaller files`,
    };
  }
  return { id: request.id, ok: true, value: text };
}

parentPort!.on('message', (request: AnalysisRequest) => {
  let response: AnalysisResponse;
  try {
    response = answer(request);
  } catch (err) {
    response = { id: request.id, ok: false, message: `the analysis failed (${err instanceof Error ? err.name : 'error'}); please report this input` };
  }
  parentPort!.postMessage(response);
});
parentPort!.postMessage(ANALYSIS_THREAD_READY);
