/**
 * The run a notebook's badges follow, and what earlier runs left on the cells
 * it does not touch: its status as it moves forward, its steps' and cells'
 * progress (run_progress.ts), and what a cell's badge shows (cell_view.ts).
 */
import type { INotebookModel } from '@jupyterlab/notebook';

import type { IGraph, IPlan, IRun, IRunDetail } from './api';
import { type ICellViewState } from './cell_view';
import type { IRunEvent } from './events';
import { RunProgress } from './run_progress';
import {
  type ICellRunPart,
  type IStepRunState,
  isFinal,
  mostAdvanced,
  now
} from './run_states';
import { cellsNotShowing } from './shown_run';

/** A run known only from its first event (its list entry fills in the rest). */
export function runOfEvent(event: IRunEvent): IRun {
  return {
    id: event.run,
    path: event.path,
    deployment: '',
    mode: 'all',
    status: 'running',
    started: now(),
    finished: null,
    duration: null,
    steps_total: 0,
    error: null,
    files: {}
  };
}

/**
 * The followed run of one notebook. `graph` gives the notebook's current
 * step graph (the steps a run's events have not named yet).
 */
export class FollowedRun {
  constructor(private readonly _graph: () => IGraph | null) {}

  /** The run followed: the active one, or the latest one. */
  get run(): IRun | null {
    return this._run;
  }

  get progress(): RunProgress {
    return this._progress;
  }

  get isActive(): boolean {
    return !!this._run && !isFinal(this._run.status);
  }

  /** That run reached its end here already (its late events change nothing). */
  hasEnded(id: string): boolean {
    return this._ended.has(id);
  }

  /** Follow `run` (unless it is the one followed already: then its news are merged). */
  adopt(run: IRun, model: INotebookModel | null, stepsOf: (cell: string) => string[]): void {
    if (this._run && this._run.id === run.id) {
      this._run = { ...this._run, ...run, status: mostAdvanced(this._run.status, run.status) };
      return;
    }
    // What this run leaves stays on the cells the next run does not touch.
    for (const cell of model ? model.cells : []) {
      const part = this._progress.cellPart(cell.id, stepsOf(cell.id));
      if (part && !this._notShown.has(cell.id)) {
        this._previous.set(cell.id, { ...part, where: part.where });
      }
    }
    for (const [name, state] of this._progress.steps) {
      this._previousSteps.set(name, state);
    }
    this._run = { ...run };
    this._notShown = new Set();
    this._progress = new RunProgress(this._graph);
  }

  /** The list's newer entry of the followed run (its status never moves back). */
  refresh(runs: ReadonlyArray<IRun>): void {
    const fresh = this._run ? runs.find(r => r.id === this._run!.id) : undefined;
    if (this._run && fresh) {
      this._run = { ...fresh, status: mostAdvanced(this._run.status, fresh.status) };
    }
  }

  /** The state so far of the run followed (a page opened while it runs, or after). */
  load(detail: IRunDetail, model: INotebookModel | null): void {
    if (!this._run || this._run.id !== detail.id) {
      return;
    }
    this._progress.load(detail);
    if (isFinal(detail.status) && model) {
      // a page opened after the run: badges only where the cells show it
      this._notShown = cellsNotShowing(model, detail.cells ?? {});
    }
    const { steps: _s, cells: _c, ...plain } = detail;
    void _s;
    void _c;
    this._run = {
      ...this._run,
      ...plain,
      status: mostAdvanced(this._run.status, plain.status)
    };
    if (isFinal(this._run.status)) {
      this._ended.add(this._run.id);
    }
  }

  /** A `run` event of the followed run; its new state. */
  applyRunEvent(event: IRunEvent): IRun {
    const run = this._run as IRun;
    const status = (event.status ?? run.status) as IRun['status'];
    this._run = {
      ...run,
      status: mostAdvanced(run.status, status),
      error: event.message ?? run.error
    };
    if (Array.isArray(event.steps) && event.steps.length > 0) {
      this._run.steps_total = event.steps.length;
    }
    if (isFinal(this._run.status)) {
      const finished = now();
      this._run.finished = this._run.finished ?? finished;
      this._run.duration = this._run.duration ?? Math.max(0, finished - this._run.started);
    }
    return this._run;
  }

  /** Merge the server's answer to a cancel; the run's new state. */
  cancelled(answer: IRun): IRun | null {
    if (!this._run || this._run.id !== answer.id) {
      return null;
    }
    this._run = {
      ...this._run,
      ...answer,
      status: mostAdvanced(this._run.status, answer.status)
    };
    return this._run;
  }

  /** The run reached a final status: false when it had already. */
  end(run: IRun): boolean {
    if (this._ended.has(run.id)) {
      return false;
    }
    this._ended.add(run.id);
    this._progress.stop(run.status === 'cancelled' ? 'cancelled' : 'failed');
    return true;
  }

  /** Another file: nothing of this one's runs stays. */
  forget(): void {
    this._run = null;
    this._progress = new RunProgress(this._graph);
    this._previous = new Map();
    this._previousSteps = new Map();
  }

  /** The graph status of a step: the followed run's, else an earlier run's. */
  stepState(name: string): IStepRunState | undefined {
    return this._progress.steps.get(name) ?? this._previousSteps.get(name);
  }

  /** What cell_view.ts reads, with the notebook's graph, plan and stale cells. */
  viewState(plan: IPlan | null, stale: ReadonlySet<string>): ICellViewState {
    return {
      graph: this._graph(),
      plan,
      progress: this._progress,
      previous: this._previous,
      notShown: this._notShown,
      stale,
      runActive: this.isActive,
      runDeployment: this._run?.deployment || null
    };
  }

  private _run: IRun | null = null;
  private _ended = new Set<string>();
  private _progress: RunProgress = new RunProgress(() => this._graph());
  private _previous = new Map<string, ICellRunPart>();
  private _notShown = new Set<string>();
  private _previousSteps = new Map<string, IStepRunState>();
}
