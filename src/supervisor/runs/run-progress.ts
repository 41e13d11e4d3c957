import { RUN_PHASES, type RunPhase } from '../../shared/worker-protocol.js';

// While a run waits (on a thread, on the provider), a caller that asked for progress hears the run's
// phase again at this interval, well inside the 60 s request timeout MCP clients commonly keep.
export const PROGRESS_HEARTBEAT_MS = 5_000;

/** One `notifications/progress` of a run, without its token. */
export interface ProgressNotice {
  progress: number;
  total: number;
  /** The run's phase (or `queued` before the first): never model text, which leaves only once authorised. */
  message: RunPhase | 'queued';
}

export interface RunProgress {
  /** The run reached `phase`. */
  phase(phase: RunPhase): void;
  /** Stops the heartbeat; resolves once every notice sent has gone out (before the result that ends the request). */
  stop(): Promise<void>;
}

/**
 * The progress a caller hears of one run: a notice per phase, and the current phase again every
 * PROGRESS_HEARTBEAT_MS while nothing else happens, so a client that restarts its request clock on
 * progress (the MCP SDK client's `resetTimeoutOnProgress`) waits out a slow provider. MCP asks that
 * progress increase with every notice: phase n is n, and its k-th repeat n + k/(k+1), which stays
 * below n + 1.
 */
export function runProgress(send: (notice: ProgressNotice) => Promise<void>, heartbeatMs = PROGRESS_HEARTBEAT_MS): RunProgress {
  const sent: Promise<void>[] = [];
  let phaseNumber = 0;
  let message: ProgressNotice['message'] = 'queued';
  let repeats = 0;
  const notify = (progress: number): void => {
    sent.push(send({ progress, total: RUN_PHASES.length, message }).catch(() => undefined));
  };
  const heartbeat = setInterval(() => {
    repeats += 1;
    notify(phaseNumber + repeats / (repeats + 1));
  }, heartbeatMs);
  return {
    phase(phase) {
      phaseNumber = RUN_PHASES.indexOf(phase) + 1;
      message = phase;
      repeats = 0;
      heartbeat.refresh();
      notify(phaseNumber);
    },
    async stop() {
      clearInterval(heartbeat);
      await Promise.all(sent);
    },
  };
}
