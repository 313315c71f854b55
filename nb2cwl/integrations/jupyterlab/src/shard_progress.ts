/**
 * The jobs (shards) of a scattered loop's map step, from the run's step events:
 * which have ended, which run, and the step's status and time from them.
 */
import type { IRunEvent } from './events';
import { type IStepRunState, now } from './run_states';

/**
 * One job of a scattered loop's map step. A job's `running` event names its
 * shard; its end may not (then it ends the oldest shard still running), and
 * an end with no shard running ends the whole step.
 */
export function applyShardEvent(
  state: IStepRunState,
  status: string,
  event: IRunEvent
): void {
  const total = state.shards as number;
  const finishAll = (): void => {
    for (let i = 1; i <= total; i++) {
      state.shardsDone.add(i);
    }
    state.shardsRunning.clear();
  };
  if (status === 'running') {
    const shard =
      event.shard ?? state.shardsDone.size + state.shardsRunning.size + 1;
    state.shard = shard;
    state.shardsRunning.add(shard);
    state.startedAt = state.startedAt ?? now();
    if (state.status !== 'failed') {
      state.status = 'running';
    }
    return;
  }
  let shard = event.shard;
  if (shard === undefined && state.shardsRunning.size > 0) {
    shard = Math.min(...state.shardsRunning);
  }
  if (shard === undefined) {
    finishAll();
  } else {
    state.shardsRunning.delete(shard);
    if (status === 'done' || status === 'cached') {
      state.shardsDone.add(shard);
    }
  }
  if (status === 'failed') {
    state.status = 'failed';
  } else if (status === 'skipped' && state.shardsDone.size === 0) {
    state.status = 'skipped';
  } else if (state.shardsDone.size >= total && state.status !== 'failed') {
    state.status = status === 'cached' ? 'cached' : 'done';
  } else if (state.status !== 'failed') {
    state.status = 'running';
    state.startedAt = state.startedAt ?? now();
    return;
  }
  state.elapsed =
    state.startedAt !== undefined
      ? Math.max(0, now() - state.startedAt)
      : (event.elapsed ?? state.elapsed);
}
