/**
 * The live state of the run a notebook follows: each step's and each cell's
 * status, time and place, from the server's run events (or, for a page opened
 * while or after it ran, from the run's detail). The badges, the graph and the
 * status line read it through NotebookSession.
 */
import type { IGraph, IGraphStep, IRunDetail } from './api';
import { derivedStatus } from './cell_progress';
import type { IRunEvent } from './events';
import {
  type CellStatus,
  type ICellRunPart,
  type ICellRunState,
  type IStepRunState,
  now,
  toCellStatus
} from './run_states';
import { applyShardEvent } from './shard_progress';

const ENDED = ['done', 'cached', 'failed', 'skipped'];

/**
 * The steps and cells of one followed run. `graph` answers the notebook's
 * current step graph: a step's role and cells before the run's events say.
 */
export class RunProgress {
  constructor(private readonly _graph: () => IGraph | null) {}

  readonly steps = new Map<string, IStepRunState>();
  readonly cells = new Map<string, ICellRunState>();
  /** Each cell's steps, in the order the run's events named them. */
  readonly cellSteps = new Map<string, string[]>();

  /** The number of steps, and how many have finished or are running. */
  counts(stepsTotal: number): {
    finished: number;
    running: number;
    total: number;
  } {
    let finished = 0;
    let running = 0;
    for (const state of this.steps.values()) {
      if (ENDED.includes(state.status)) {
        finished += 1;
      } else if (state.status === 'running') {
        running += 1;
      }
    }
    const total = Math.max(stepsTotal, this.steps.size, finished + running);
    return { finished, running, total };
  }

  /** The cells the run ran (or reused): those of its steps that were not skipped. */
  participatingCells(): Set<string> {
    const cells = new Set<string>(this.cells.keys());
    for (const [cell, steps] of this.cellSteps.entries()) {
      for (const step of steps) {
        const state = this.steps.get(step);
        if (state && state.status !== 'skipped') {
          cells.add(cell);
        }
      }
    }
    return cells;
  }

  /** Something is running (the status line's clock ticks). */
  get live(): boolean {
    return (
      [...this.steps.values()].some(s => s.status === 'running') ||
      [...this.cells.values()].some(c => c.status === 'running')
    );
  }

  /** Live seconds of a step, or its final elapsed time. */
  stepElapsed(state: IStepRunState): number | null {
    if (state.elapsed !== undefined) {
      return state.elapsed;
    }
    if (state.startedAt !== undefined && state.status === 'running') {
      return Math.max(0, now() - state.startedAt);
    }
    return null;
  }

  /** The cell's status, time and place in the run (null: not in it). */
  cellPart(cellId: string, steps: string[]): ICellRunPart | null {
    const states = steps
      .map(name => this.steps.get(name))
      .filter((s): s is IStepRunState => s !== undefined);
    const own = this.cells.get(cellId);
    // The cell's own events, else its steps'.
    const derived = derivedStatus(this, cellId, steps);
    let status: CellStatus | null = own ? own.status : derived;
    if (
      own &&
      derived &&
      steps.length > 1 &&
      ['done', 'cached'].includes(own.status) &&
      ['queued', 'running'].includes(derived)
    ) {
      status = derived; // more steps of the cell (a scattered loop) to go
    }
    if (status === null) {
      return null;
    }
    let elapsed: number | null = null;
    if (own?.elapsed !== undefined && steps.length <= 1) {
      elapsed = own.elapsed;
    } else if (
      own?.startedAt !== undefined &&
      own.status === 'running' &&
      steps.length <= 1
    ) {
      elapsed = Math.max(0, now() - own.startedAt);
    } else if (status !== 'queued') {
      const times = states
        .map(s => this.stepElapsed(s))
        .filter((t): t is number => t !== null);
      elapsed = times.length > 0 ? times.reduce((a, b) => a + b, 0) : null;
    }
    const whereState =
      states.find(s => s.status === 'running' && s.where) ??
      [...states].reverse().find(s => s.where);
    return { status, elapsed, where: whereState?.where ?? null };
  }

  /** Take in a step, cell or output event. */
  apply(event: IRunEvent): void {
    switch (event.kind) {
      case 'step':
        this._onStepEvent(event);
        break;
      case 'cell':
        this._onCellEvent(event);
        break;
      case 'output':
        if (event.cell && event.step) {
          this._link(event.cell, event.step);
        }
        break;
    }
  }

  /** The run's state so far, as the server's detail gives it (events were faster). */
  load(detail: IRunDetail): void {
    const t = now();
    for (const [name, s] of Object.entries(detail.steps ?? {})) {
      if (this.steps.has(name)) {
        continue;
      }
      const state: IStepRunState = {
        status: String(s.status ?? 'queued'),
        where: s.where,
        elapsed: typeof s.elapsed === 'number' ? s.elapsed : undefined,
        shards: s.shards,
        shard: s.shard,
        role: typeof s.role === 'string' ? s.role : undefined,
        shardsDone: new Set(),
        shardsRunning: new Set()
      };
      if (state.shards && ['done', 'cached'].includes(state.status)) {
        for (let i = 1; i <= state.shards; i++) {
          state.shardsDone.add(i);
        }
      }
      if (state.status === 'running') {
        const started = (s as { started?: unknown }).started;
        state.startedAt =
          typeof started === 'number' ? Math.min(started, t) : t;
      }
      const cells = (s as { cells?: unknown }).cells;
      if (Array.isArray(cells)) {
        for (const cell of cells) {
          this._link(String(cell), name);
        }
      }
      this.steps.set(name, state);
    }
    for (const [id, c] of Object.entries(detail.cells ?? {})) {
      if (this.cells.has(id)) {
        continue;
      }
      if (c.step) {
        this._link(id, c.step);
      }
      this.cells.set(id, {
        status: toCellStatus(c.status),
        executionCount: c.execution_count,
        startedAt: c.status === 'running' ? t : undefined
      });
    }
  }

  /**
   * The run reached a final status: a step or cell it stopped in the middle of
   * was cancelled (the user's Cancel) or failed (the run did); whatever had not
   * started was skipped.
   */
  stop(stopped: 'cancelled' | 'failed'): void {
    const end = (state: IStepRunState | ICellRunState): void => {
      if (state.status === 'queued' || state.status === 'running') {
        state.status = state.status === 'running' ? stopped : 'skipped';
        if (state.startedAt !== undefined && state.elapsed === undefined) {
          state.elapsed = Math.max(0, now() - state.startedAt);
        }
      }
    };
    for (const state of this.steps.values()) {
      end(state);
      state.shardsRunning.clear();
    }
    for (const state of this.cells.values()) {
      end(state);
    }
  }

  /** The cells every step of which ended done or reused. */
  ranCells(): string[] {
    return [...this.cellSteps.entries()]
      .filter(([, steps]) =>
        steps.every(step =>
          ['done', 'cached'].includes(this.steps.get(step)?.status ?? '')
        )
      )
      .map(([cell]) => cell);
  }

  private _graphStep(name: string): IGraphStep | undefined {
    return this._graph()?.steps.find(step => step.name === name);
  }

  private _onStepEvent(event: IRunEvent): void {
    const name = event.step;
    if (!name) {
      return;
    }
    const state = this._stepState(name);
    for (const cell of event.cells ?? []) {
      this._link(cell, name);
    }
    if (typeof event.role === 'string') {
      state.role = event.role;
    }
    const role = state.role ?? this._graphStep(name)?.role;
    if (event.shards) {
      if (role === 'split') {
        // The split tells how many shards its map step gets.
        const map = this._mapOf(name);
        if (map) {
          this._stepState(map).shards = event.shards;
        }
      } else if (role === 'map' || event.shard) {
        state.shards = event.shards;
      }
    }
    if (event.where) {
      state.where = event.where;
    }
    if (event.message) {
      state.message = event.message;
    }
    const status = event.status ?? state.status;
    if (state.shards && state.shards > 1 && status !== 'queued') {
      applyShardEvent(state, status, event);
      return;
    }
    state.status = status;
    if (status === 'running') {
      state.startedAt = now();
      state.elapsed = undefined;
    } else if (ENDED.includes(status)) {
      if (event.elapsed !== undefined) {
        state.elapsed = event.elapsed;
      } else if (state.startedAt !== undefined && status !== 'skipped') {
        state.elapsed = Math.max(0, now() - state.startedAt);
      }
    }
  }

  private _stepState(name: string): IStepRunState {
    let state = this.steps.get(name);
    if (!state) {
      state = {
        status: 'queued',
        shardsDone: new Set(),
        shardsRunning: new Set()
      };
      this.steps.set(name, state);
    }
    return state;
  }

  /** The map step of a split step (the graph's step of role map with the same cells). */
  private _mapOf(split: string): string | null {
    // a split joined with the step before it runs that step's cells first,
    // the loop's cell last: any of its cells the map shares is the loop's
    const cells = this._graphStep(split)?.cells ?? this._cellsOfStep(split);
    for (const cell of cells) {
      const fromGraph = this._graph()?.steps.find(
        step => step.role === 'map' && step.cells.includes(cell)
      );
      if (fromGraph) {
        return fromGraph.name;
      }
      for (const name of this.cellSteps.get(cell) ?? []) {
        if (this.steps.get(name)?.role === 'map') {
          return name;
        }
      }
    }
    return null;
  }

  private _cellsOfStep(step: string): string[] {
    return [...this.cellSteps.entries()]
      .filter(([, steps]) => steps.includes(step))
      .map(([cell]) => cell);
  }

  private _onCellEvent(event: IRunEvent): void {
    const id = event.cell;
    if (!id) {
      return;
    }
    if (event.step) {
      this._link(id, event.step);
    }
    const state = this.cells.get(id) ?? { status: 'queued' as CellStatus };
    const status = toCellStatus(event.status);
    state.status = status;
    if (status === 'running') {
      state.startedAt = now();
      state.elapsed = undefined;
    } else if (status !== 'queued') {
      if (state.startedAt !== undefined) {
        state.elapsed = Math.max(0, now() - state.startedAt);
      }
    }
    if (event.execution_count !== undefined) {
      state.executionCount = event.execution_count;
    }
    this.cells.set(id, state);
  }

  private _link(cell: string, step: string): void {
    const steps = this.cellSteps.get(cell);
    if (!steps) {
      this.cellSteps.set(cell, [step]);
    } else if (!steps.includes(step)) {
      steps.push(step);
    }
  }
}
