/**
 * The nb2cwl state of one open notebook: what the server makes of its content
 * (deployments, step graph, plan: notebook_plan.ts), its runs, and the live
 * state of the run it follows, driven by the server's run events.
 */
import type * as nbformat from '@jupyterlab/nbformat';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { IDisposable } from '@lumino/disposable';
import { type ISignal, Signal } from '@lumino/signaling';

import {
  type Granularity,
  isUnavailable,
  type IDeploymentsResponse,
  type IGraph,
  type IGraphStep,
  type IPlan,
  type IRun,
  type IRunDetail,
  type Nb2cwlApi,
  type RunMode
} from './api';
import { NotebookPlan } from './notebook_plan';
import {
  cellView,
  graphStep,
  type ICellView,
  type ICellViewState,
  stepOf,
  stepsOf
} from './cell_view';
import type { IRunEvent } from './events';
import { FollowedRun, runOfEvent } from './followed_run';
import { type IRunRequestMemo, KnownRuns } from './known_runs';
import {
  CELL_STATUSES,
  type CellStatus,
  type IStepRunState,
  isFinal
} from './run_states';

export {
  CELL_STATUSES,
  type CellStatus,
  type ICellView,
  type IRunRequestMemo,
  type IStepRunState
};

const TICK_MS = 250;

/**
 * The nb2cwl state of one notebook panel.
 */
export class NotebookSession implements IDisposable {
  constructor(
    readonly panel: NotebookPanel,
    readonly api: Nb2cwlApi
  ) {
    this._notebookPlan = new NotebookPlan(panel, api, unavailable => {
      this._serverError = unavailable;
    });
    this._notebookPlan.changed.connect(() => this._changed.emit(), this);
    panel.context.pathChanged.connect(this._onPathChanged, this);
    void panel.context.ready.then(() => {
      if (this._isDisposed) {
        return;
      }
      this._notebookPlan.watchContent();
      void this.refreshAll();
    });
  }

  /** Emitted whenever anything shown changes (state, plan, graph, runs, live times). */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Emitted for each run event of this notebook, after the state took it in. */
  get runEvent(): ISignal<this, IRunEvent> {
    return this._runEvent;
  }

  /** Emitted once when the followed run reaches a final status. */
  get runEnded(): ISignal<this, IRun> {
    return this._runEnded;
  }

  get path(): string {
    return this.panel.context.path;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  // ---- state -------------------------------------------------------------

  get deployments(): IDeploymentsResponse | null {
    return this._notebookPlan.deployments;
  }

  get deployment(): string | null {
    return this._notebookPlan.deployment;
  }

  set deployment(name: string | null) {
    this._notebookPlan.deployment = name;
  }

  /** Where step boundaries go: where they pay (auto), or one step per cell. */
  get granularity(): Granularity {
    return this._notebookPlan.granularity;
  }

  set granularity(value: Granularity) {
    this._notebookPlan.granularity = value;
  }

  get graph(): IGraph | null {
    return this._notebookPlan.graph;
  }

  get plan(): IPlan | null {
    return this._notebookPlan.plan;
  }

  get runs(): ReadonlyArray<IRun> {
    return this._known.list;
  }

  /** The run the badges follow: the active one, or the latest one. */
  get run(): IRun | null {
    return this._followed.run;
  }

  get isRunActive(): boolean {
    return this._followed.isActive;
  }

  /** Whether a run request is in flight. */
  get isStarting(): boolean {
    return this._starting;
  }

  /** The connection error (server extension missing, ...), if any. */
  get serverError(): string | null {
    return this._serverError;
  }

  /** Why the graph or the plan cannot be computed (e.g. a syntax error). */
  get analysisError(): string | null {
    return this._notebookPlan.analysisError;
  }

  /** Why the deployments could not be listed (the server answered). */
  get deploymentsError(): string | null {
    return this._notebookPlan.deploymentsError;
  }

  /** The last error of an action (run, cancel). */
  get actionError(): string | null {
    return this._actionError;
  }

  get stepStates(): ReadonlyMap<string, IStepRunState> {
    return this._followed.progress.steps;
  }

  /** How a run was asked for from this page, if it was. */
  requestOf(runId: string): IRunRequestMemo | undefined {
    return this._known.requestOf(runId);
  }

  /** The cells the followed run ran (or reused): those of its steps that were not skipped. */
  participatingCells(): Set<string> {
    return this._followed.progress.participatingCells();
  }

  /** The graph's step of that name. */
  graphStep(name: string): IGraphStep | undefined {
    return graphStep(this._viewState(), name);
  }

  /** The number of steps of the followed run, and how many have finished. */
  stepProgress(): { finished: number; running: number; total: number } {
    return this._followed.progress.counts(this.run?.steps_total ?? 0);
  }

  /**
   * The steps a cell belongs to, in order: from the run's step events, else the
   * graph (a scattered loop's cell has a split, a map and a gather step).
   */
  stepsOf(cellId: string): string[] {
    return stepsOf(this._viewState(), cellId);
  }

  /** The step a cell's badge names: the one running, else the last one that ran, else the graph's. */
  stepOf(cellId: string): string | null {
    return stepOf(this._viewState(), cellId);
  }

  /** Live seconds of a step, or its final elapsed time. */
  stepElapsed(state: IStepRunState): number | null {
    return this._followed.progress.stepElapsed(state);
  }

  /** Everything a cell's badge shows. */
  cellView(cellId: string): ICellView {
    return cellView(this._viewState(), cellId);
  }

  /** The graph status of a step: the followed run's, else an earlier run's. */
  stepState(name: string): IStepRunState | undefined {
    return this._followed.stepState(name);
  }

  // ---- actions -----------------------------------------------------------

  /**
   * Start a run of the notebook's current content (unsaved edits included;
   * the file is never saved). Resolves to the new run's id.
   */
  async startRun(
    mode: RunMode,
    options: {
      deployment?: string | null;
      granularity?: Granularity;
      cells?: string[];
    } = {}
  ): Promise<string> {
    await this.panel.context.ready;
    const deployment = options.deployment ?? this.deployment ?? undefined;
    const granularity = options.granularity ?? this.granularity;
    const content =
      this.panel.context.model.toJSON() as nbformat.INotebookContent;
    this._starting = true;
    this._actionError = null;
    this._changed.emit();
    try {
      const run = await this.api.startRun({
        path: this.path,
        content,
        deployment,
        granularity,
        mode,
        ...(mode === 'selected' ? { cells: options.cells ?? [] } : {})
      });
      this._known.remember(run.id, {
        mode,
        deployment: deployment ?? run.deployment ?? null,
        granularity,
        cells: options.cells
      });
      this._serverError = null;
      this._adopt(run);
      this._known.upsert(run);
      return run.id;
    } catch (error) {
      this._actionError = `Run failed to start: ${(error as Error).message}`;
      throw error;
    } finally {
      this._starting = false;
      this._changed.emit();
    }
  }

  /** Cancel the active run; resolves to its id, or null when none is active. */
  async cancel(): Promise<string | null> {
    const run = this.run;
    if (!run || isFinal(run.status)) {
      return null;
    }
    this._actionError = null;
    try {
      const answer = await this.api.cancel(run.id);
      this._known.upsert(answer);
      const followed = this._followed.cancelled(answer);
      if (followed && isFinal(followed.status)) {
        this._finish(followed);
      }
      return run.id;
    } catch (error) {
      this._actionError = `Cancel failed: ${(error as Error).message}`;
      throw error;
    } finally {
      this._changed.emit();
    }
  }

  /** Run again what that run ran (same mode and deployment), with the current content. */
  runAgain(run: IRun, selection: string[]): Promise<string> {
    const { mode, ...options } = this._known.again(run, selection);
    return this.startRun(mode, options);
  }

  // ---- refreshing --------------------------------------------------------

  /** Deployments, then graph + plan, and the runs list. */
  async refreshAll(): Promise<void> {
    this._serverError = null;
    await this.refreshDeployments();
    await Promise.all([this.refreshGraphAndPlan(), this.refreshRuns(true)]);
  }

  refreshDeployments(): Promise<void> {
    return this._notebookPlan.refreshDeployments();
  }

  /** Ask for the graph and the plan of the current content. */
  refreshGraphAndPlan(): Promise<void> {
    return this._notebookPlan.refreshGraphAndPlan();
  }

  /**
   * Refresh the runs list; with `follow`, start following the newest run
   * (its state so far shows on the badges: a page that reopens mid-run).
   */
  async refreshRuns(follow = false): Promise<void> {
    const path = this.path;
    try {
      const runs = await this.api.runs(path);
      if (this._isDisposed || path !== this.path) {
        return;
      }
      this._known.replace(runs);
      this._followed.refresh(runs);
      if (follow && runs.length > 0) {
        this._notebookPlan.adoptGranularity(runs[0].granularity ?? 'auto');
      }
      if (follow && !this.run && runs.length > 0) {
        await this._follow(runs[0]);
      }
    } catch (error) {
      if (isUnavailable(error)) {
        this._serverError = this._serverError ?? (error as Error).message;
      }
    }
    this._changed.emit();
  }

  // ---- events ------------------------------------------------------------

  /** Take in one run event (the caller routes the events of this path here). */
  handleEvent(event: IRunEvent): void {
    if (this._isDisposed || event.path !== this.path) {
      return;
    }
    if (this._followed.hasEnded(event.run)) {
      return;
    }
    if (!this.run || this.run.id !== event.run) {
      this._adopt(runOfEvent(event));
      // Fill in mode, deployment, steps_total, files.
      void this.refreshRuns();
    }
    if (event.kind === 'run') {
      const run = this._followed.applyRunEvent(event);
      if (isFinal(run.status)) {
        this._finish(run);
      } else {
        this._known.upsert(run);
      }
    } else {
      this._followed.progress.apply(event);
    }
    this._runEvent.emit(event);
    this._updateTicker();
    this._changed.emit();
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._notebookPlan.dispose();
    window.clearInterval(this._ticker);
    Signal.clearData(this);
  }

  // ---- private -----------------------------------------------------------

  private _viewState(): ICellViewState {
    return this._followed.viewState(this.plan, this._notebookPlan.stale);
  }

  /** Follow a new run: forget the previous run's live state. */
  private _adopt(run: IRun): void {
    this._followed.adopt(run, this.panel.context.model, cell => this.stepsOf(cell));
    this._changed.emit();
  }

  /** Load a run's state so far (a page opened while it runs, or after). */
  private async _follow(run: IRun): Promise<void> {
    this._adopt(run);
    let detail: IRunDetail;
    try {
      detail = await this.api.run(run.id);
    } catch {
      return;
    }
    if (this._isDisposed || this.run?.id !== run.id) {
      return;
    }
    this._followed.load(detail, this.panel.context.model);
    this._updateTicker();
    this._changed.emit();
  }

  /** The run reached a final status. */
  private _finish(run: IRun): void {
    if (!this._followed.end(run)) {
      return;
    }
    if (run.status === 'done') {
      this._notebookPlan.ran(this._followed.progress.ranCells());
    }
    this._known.upsert(run);
    this._updateTicker();
    this._runEnded.emit(run);
    void this.refreshGraphAndPlan();
    void this.refreshRuns();
  }

  private _updateTicker(): void {
    const live = this._followed.progress.live || this.isRunActive;
    if (live && !this._ticker) {
      this._ticker = window.setInterval(() => this._changed.emit(), TICK_MS);
    } else if (!live && this._ticker) {
      window.clearInterval(this._ticker);
      this._ticker = 0;
    }
  }

  private _onPathChanged(): void {
    this._notebookPlan.forget();
    this._known.forget();
    this._followed.forget();
    void this.refreshAll();
  }

  private _isDisposed = false;
  private _changed = new Signal<this, void>(this);
  private _runEvent = new Signal<this, IRunEvent>(this);
  private _runEnded = new Signal<this, IRun>(this);
  private _notebookPlan: NotebookPlan;
  private _known = new KnownRuns();
  private _followed = new FollowedRun(() => this.graph);
  private _starting = false;
  private _serverError: string | null = null;
  private _actionError: string | null = null;
  private _ticker = 0;
}
