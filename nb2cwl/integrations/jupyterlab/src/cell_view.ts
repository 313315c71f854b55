/**
 * What a cell's badge shows: the step it runs in, where, its status and time,
 * shard progress, warnings and why the plan reruns it. Made from one
 * notebook's graph, plan and the run it follows (NotebookSession).
 */
import type { IGraph, IGraphStep, IPlan } from './api';
import type { RunProgress } from './run_progress';
import type { CellStatus, ICellRunPart } from './run_states';

/** What a cell badge shows. */
export interface ICellView {
  cellId: string;
  step: string | null;
  deployment: string | null;
  where: string | null;
  status: CellStatus;
  stale: boolean;
  /** Seconds, live while running. */
  elapsed: number | null;
  shard: number | null;
  shards: number | null;
  shardsDone: number | null;
  warnings: string[];
  /** Why the plan reruns (or reuses) the cell's step. */
  reason: string | null;
}

/** What a cell's view is made from: a notebook session's state. */
export interface ICellViewState {
  readonly graph: IGraph | null;
  readonly plan: IPlan | null;
  /** The followed run's progress. */
  readonly progress: RunProgress;
  /** What earlier runs left on the cells the followed run does not touch. */
  readonly previous: ReadonlyMap<string, ICellRunPart>;
  /** Cells that do not show the followed run (a notebook reopened after it). */
  readonly notShown: ReadonlySet<string>;
  /** Cells the plan would run again. */
  readonly stale: ReadonlySet<string>;
  readonly runActive: boolean;
  /** The followed run's deployment. */
  readonly runDeployment: string | null;
}

/** The graph's step of that name. */
export function graphStep(
  state: ICellViewState,
  name: string
): IGraphStep | undefined {
  return state.graph?.steps.find(step => step.name === name);
}

/**
 * The steps a cell belongs to, in order: from the run's step events, else the
 * graph (a scattered loop's cell has a split, a map and a gather step).
 */
export function stepsOf(
  state: ICellViewState,
  cellId: string
): string[] {
  const fromRun = state.progress.cellSteps.get(cellId);
  if (fromRun && fromRun.length > 0) {
    return fromRun;
  }
  const fromGraph = (state.graph?.steps ?? [])
    .filter(step => step.cells.includes(cellId))
    .map(step => step.name);
  if (fromGraph.length > 0) {
    return fromGraph;
  }
  const step = state.graph?.cells[cellId]?.step;
  return step ? [step] : [];
}

/** The step a cell's badge names: the one running, else the last one that ran, else the graph's. */
export function stepOf(
  state: ICellViewState,
  cellId: string
): string | null {
  const steps = stepsOf(state, cellId);
  const states = state.progress.steps;
  const running = steps.find(n => states.get(n)?.status === 'running');
  if (running) {
    return running;
  }
  if (state.runActive) {
    const started = steps.filter(n => {
      const status = states.get(n)?.status;
      return status !== undefined && status !== 'queued';
    });
    if (started.length > 0) {
      return started[started.length - 1];
    }
  }
  return state.graph?.cells[cellId]?.step ?? steps[steps.length - 1] ?? null;
}


/** Everything a cell's badge shows. */
export function cellView(
  state: ICellViewState,
  cellId: string
): ICellView {
  const steps = stepsOf(state, cellId);
  const stepName = stepOf(state, cellId);
  const named = stepName ? graphStep(state, stepName) : undefined;
  const stale = state.stale.has(cellId);
  // The followed run's state of the cell, else what an earlier run left
  // (a "selected" run leaves the other cells alone).
  // (none where a reopened notebook does not show the run's results)
  const part = state.notShown.has(cellId)
    ? null
    : (state.progress.cellPart(cellId, steps) ??
      state.previous.get(cellId) ??
      null);
  const runStatus = part?.status ?? null;

  let status: CellStatus;
  if (
    runStatus &&
    state.runActive &&
    state.progress.cellPart(cellId, steps)
  ) {
    status = runStatus;
  } else if (stale && state.plan?.last_run) {
    status = 'stale';
  } else {
    status = runStatus ?? 'idle';
  }

  const planStep = state.plan?.steps.find(
    s =>
      (stepName !== null && s.name === stepName) || s.cells.includes(cellId)
  );
  const mapState = steps
    .map(name => state.progress.steps.get(name))
    .find(s => s?.shards);
  const mapGraph = steps
    .map(name => graphStep(state, name))
    .find(s => s?.shards);
  const shards = mapState?.shards ?? mapGraph?.shards ?? null;
  return {
    cellId,
    step: stepName,
    deployment: named?.deployment ?? state.runDeployment,
    where: part?.where ?? null,
    status,
    stale,
    elapsed: part?.elapsed ?? null,
    shard: mapState?.shard ?? null,
    shards,
    shardsDone: mapState ? mapState.shardsDone.size : null,
    warnings: state.graph?.cells[cellId]?.warnings ?? [],
    reason: planStep?.reason ?? named?.reason ?? null
  };
}
