/**
 * A cell's status in a run from the states of its steps, where the cell's own
 * events do not say (a fused step runs its cells one after another; a stopped
 * step's cells that never started were skipped).
 */
import {
  type CellStatus,
  type ICellRunState,
  type IStepRunState,
  toCellStatus
} from './run_states';

/** The run's steps and cells, and each cell's steps (RunProgress). */
export interface IRunMaps {
  readonly steps: ReadonlyMap<string, IStepRunState>;
  readonly cells: ReadonlyMap<string, ICellRunState>;
  readonly cellSteps: ReadonlyMap<string, string[]>;
}

/** A cell's status from its steps' states (null: not in the run). */
export function derivedStatus(
  run: IRunMaps,
  cellId: string,
  steps: string[]
): CellStatus | null {
  const states = steps
    .map(name => [name, run.steps.get(name)] as const)
    .filter((e): e is readonly [string, IStepRunState] => e[1] !== undefined);
  if (states.length === 0) {
    return null;
  }
  const statuses = states.map(([, s]) => s.status);
  const running = states.find(([, s]) => s.status === 'running');
  if (running) {
    // The cells of a fused step run one after another: with events for
    // some of them, the others wait (or are through).
    const siblings = [...run.cellSteps.entries()]
      .filter(([cell, s]) => cell !== cellId && s.includes(running[0]))
      .map(([cell]) => run.cells.get(cell));
    return siblings.some(s => s !== undefined) && !run.cells.has(cellId)
      ? 'queued'
      : 'running';
  }
  for (const ended of ['failed', 'cancelled'] as const) {
    const stoppedSteps = states
      .filter(([, s]) => s.status === ended)
      .map(([name]) => name);
    if (stoppedSteps.length === 0) {
      continue;
    }
    // A cell of that step with no events of its own never started: the step
    // stopped in another of its cells (which has its own events).
    const siblingStarted = [...run.cellSteps.entries()].some(
      ([cell, s]) =>
        cell !== cellId &&
        s.some(name => stoppedSteps.includes(name)) &&
        run.cells.has(cell)
    );
    return siblingStarted && !run.cells.has(cellId) ? 'skipped' : ended;
  }
  if (statuses.every(s => s === 'skipped')) {
    return 'skipped';
  }
  if (statuses.every(s => s === 'cached')) {
    return 'cached';
  }
  if (statuses.every(s => ['done', 'cached', 'skipped'].includes(s))) {
    return 'done';
  }
  if (statuses.some(s => ['done', 'cached'].includes(s))) {
    return 'running'; // between two of its steps
  }
  return toCellStatus(statuses[0]);
}
