/**
 * The sidebar's status line: what the open notebook's session is doing, in one line.
 */
import { FINAL_RUN_STATUSES } from './api';
import { formatSeconds, oneLine } from './format';
import { runDuration } from './run_list';
import type { NotebookSession } from './session';

/** The line's text, its state (a run status, idle or error) and its tooltip. */
export interface StatusLine {
  text: string;
  state: string;
  title?: string;
}

/** The status line of `session` (none: no notebook is open). */
export function statusLine(session: NotebookSession | null): StatusLine {
  if (!session) {
    return { text: 'Open a notebook to run it with nb2cwl.', state: 'idle' };
  }
  if (session.serverError) {
    return {
      text: `nb2cwl server extension unavailable: ${session.serverError}`,
      state: 'error'
    };
  }
  if (session.isStarting) {
    return { text: 'Starting a run…', state: 'running' };
  }
  const run = session.run;
  if (run && !FINAL_RUN_STATUSES.includes(run.status)) {
    const { finished, running, total } = session.stepProgress();
    const current = Math.min(total, finished + (running > 0 ? 1 : 0));
    const parts = [run.status === 'queued' ? 'Queued' : 'Running'];
    if (total > 0) {
      parts.push(`step ${current}/${total}`);
    }
    if (run.deployment) {
      parts.push(`on ${run.deployment}`);
    }
    const elapsed = runDuration(run);
    if (elapsed !== null) {
      parts.push(formatSeconds(elapsed));
    }
    return {
      text: parts.join(' · '),
      state: run.status,
      title: `run ${run.id}`
    };
  }
  if (session.actionError) {
    return { text: session.actionError, state: 'error' };
  }
  if (session.analysisError) {
    return { text: session.analysisError, state: 'error' };
  }
  if (run) {
    const parts = [`Last run ${run.status}`];
    const duration = runDuration(run);
    if (duration !== null) {
      parts.push(formatSeconds(duration));
    }
    let text = parts.join(' · ');
    if (run.error) {
      text += `: ${oneLine(run.error)}`;
    }
    return {
      text,
      state: run.status,
      title: `run ${run.id}: ${parts.join(' · ')}${run.error ? `\n${run.error}` : ''}`
    };
  }
  if (!session.graph) {
    return { text: 'Analysing the notebook…', state: 'idle' };
  }
  return {
    text: `Ready: ${session.graph.steps.length} step${session.graph.steps.length === 1 ? '' : 's'}`,
    state: 'idle'
  };
}
