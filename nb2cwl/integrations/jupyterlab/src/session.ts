/**
 * The nb2cwl state of one open notebook: its deployments, step graph, plan
 * (stale cells), runs, and the live state of the run it follows, driven by the
 * server's run events.
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
import {
  cellView,
  graphStep,
  type ICellView,
  type ICellViewState,
  stepOf,
  stepsOf
} from './cell_view';
import type { IRunEvent } from './events';
import {
  CELL_STATUSES,
  type CellStatus,
  type ICellRunPart,
  type IStepRunState,
  isFinal,
  now,
  RunProgress
} from './run_progress';
import { cellsNotShowing } from './shown_run';

export { CELL_STATUSES, type CellStatus, type ICellView, type IStepRunState };

/** How a run was asked for, to run it again. */
export interface IRunRequestMemo {
  mode: RunMode;
  deployment: string | null;
  granularity?: Granularity;
  cells?: string[];
}

/** Delay between an edit and the graph + plan refresh, in ms. */
export const REFRESH_DEBOUNCE_MS = 800;

const TICK_MS = 250;

/**
 * The nb2cwl state of one notebook panel.
 */
export class NotebookSession implements IDisposable {
  constructor(
    readonly panel: NotebookPanel,
    readonly api: Nb2cwlApi
  ) {
    panel.context.pathChanged.connect(this._onPathChanged, this);
    void panel.context.ready.then(() => {
      if (this._isDisposed) {
        return;
      }
      this._fingerprint = this._computeFingerprint();
      panel.context.model.contentChanged.connect(this._onContentChanged, this);
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
    return this._deployments;
  }

  get deployment(): string | null {
    return this._deployment;
  }

  set deployment(name: string | null) {
    if (name === this._deployment) {
      return;
    }
    this._deployment = name;
    this._changed.emit();
    void this.refreshGraphAndPlan();
  }

  /** Where step boundaries go: where they pay (auto), or one step per cell. */
  get granularity(): Granularity {
    return this._granularity;
  }

  set granularity(value: Granularity) {
    this._granularityChosen = true;
    if (value === this._granularity) {
      return;
    }
    this._granularity = value;
    this._changed.emit();
    void this.refreshGraphAndPlan();
  }

  get graph(): IGraph | null {
    return this._graph;
  }

  get plan(): IPlan | null {
    return this._plan;
  }

  get runs(): ReadonlyArray<IRun> {
    return this._runs;
  }

  /** The run the badges follow: the active one, or the latest one. */
  get run(): IRun | null {
    return this._run;
  }

  get isRunActive(): boolean {
    return !!this._run && !isFinal(this._run.status);
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
    return this._analysisError;
  }

  /** Why the deployments could not be listed (the server answered). */
  get deploymentsError(): string | null {
    return this._deploymentsError;
  }

  /** The last error of an action (run, cancel). */
  get actionError(): string | null {
    return this._actionError;
  }

  get stepStates(): ReadonlyMap<string, IStepRunState> {
    return this._progress.steps;
  }

  /** How a run was asked for from this page, if it was. */
  requestOf(runId: string): IRunRequestMemo | undefined {
    return this._requests.get(runId);
  }

  /** The cells the followed run ran (or reused): those of its steps that were not skipped. */
  participatingCells(): Set<string> {
    return this._progress.participatingCells();
  }

  /** The graph's step of that name. */
  graphStep(name: string): IGraphStep | undefined {
    return graphStep(this._viewState(), name);
  }

  /** The number of steps of the followed run, and how many have finished. */
  stepProgress(): { finished: number; running: number; total: number } {
    return this._progress.counts(this._run?.steps_total ?? 0);
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
    return this._progress.stepElapsed(state);
  }

  /** Everything a cell's badge shows. */
  cellView(cellId: string): ICellView {
    return cellView(this._viewState(), cellId);
  }

  /** The graph status of a step: the followed run's, else an earlier run's. */
  stepState(name: string): IStepRunState | undefined {
    return this._progress.steps.get(name) ?? this._previousSteps.get(name);
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
    const deployment = options.deployment ?? this._deployment ?? undefined;
    const granularity = options.granularity ?? this._granularity;
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
      this._requests.set(run.id, {
        mode,
        deployment: deployment ?? run.deployment ?? null,
        granularity,
        cells: options.cells
      });
      this._serverError = null;
      this._adopt(run);
      this._upsertRun(run);
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
    const run = this._run;
    if (!run || isFinal(run.status)) {
      return null;
    }
    this._actionError = null;
    try {
      const answer = await this.api.cancel(run.id);
      this._upsertRun(answer);
      if (this._run && this._run.id === answer.id) {
        this._run = {
          ...this._run,
          ...answer,
          status: this._mostAdvanced(this._run.status, answer.status)
        };
        if (isFinal(this._run.status)) {
          this._finish(this._run);
        }
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
    const memo = this._requests.get(run.id);
    const mode = memo?.mode ?? run.mode ?? 'all';
    return this.startRun(mode, {
      deployment: memo?.deployment ?? run.deployment,
      granularity: memo?.granularity ?? run.granularity ?? 'auto',
      cells:
        mode === 'selected'
          ? (memo?.cells ??
            (run.cells_selected?.length ? run.cells_selected : selection))
          : undefined
    });
  }

  // ---- refreshing --------------------------------------------------------

  /** Deployments, then graph + plan, and the runs list. */
  async refreshAll(): Promise<void> {
    this._serverError = null;
    await this.refreshDeployments();
    await Promise.all([this.refreshGraphAndPlan(), this.refreshRuns(true)]);
  }

  async refreshDeployments(): Promise<void> {
    const path = this.path;
    try {
      let reply: IDeploymentsResponse;
      try {
        reply = await this.api.deployments(path);
        this._deploymentsError = null;
      } catch (error) {
        if (isUnavailable(error)) {
          throw error;
        }
        // The file on disk does not compile (e.g. a syntax error): without
        // the notebook's own deployments, the others still list.
        reply = await this.api.deployments();
        this._deploymentsError = `Deployments the notebook defines are missing: ${(error as Error).message}`;
      }
      if (this._isDisposed || path !== this.path) {
        return;
      }
      this._deployments = reply;
      this._serverError = null;
      const names = reply.deployments.map(d => d.name);
      const usable = reply.deployments
        .filter(d => d.available)
        .map(d => d.name);
      if (!this._deployment || !names.includes(this._deployment)) {
        if (reply.default && usable.includes(reply.default)) {
          this._deployment = reply.default;
        } else {
          this._deployment = usable[0] ?? reply.default ?? names[0] ?? null;
        }
      }
    } catch (error) {
      if (isUnavailable(error)) {
        this._serverError = (error as Error).message;
      } else {
        this._deploymentsError = `Deployments: ${(error as Error).message}`;
      }
    }
    this._changed.emit();
  }

  /** Ask for the graph and the plan of the current content. */
  async refreshGraphAndPlan(): Promise<void> {
    if (this._isDisposed || !this.panel.context.isReady) {
      return;
    }
    const seq = ++this._analysisSeq;
    const body = {
      path: this.path,
      content: this.panel.context.model.toJSON() as nbformat.INotebookContent,
      deployment: this._deployment ?? undefined,
      granularity: this._granularity
    };
    const [graph, plan] = await Promise.allSettled([
      this.api.graph(body),
      this.api.plan(body)
    ]);
    if (this._isDisposed || seq !== this._analysisSeq) {
      return;
    }
    const errors: string[] = [];
    if (graph.status === 'fulfilled') {
      this._graph = graph.value;
    } else {
      errors.push((graph.reason as Error).message);
    }
    if (plan.status === 'fulfilled') {
      this._plan = plan.value;
      this._stale = new Set(plan.value.stale_cells ?? []);
    } else {
      const message = (plan.reason as Error).message;
      if (!errors.includes(message)) {
        errors.push(message);
      }
    }
    const unavailable = [graph, plan].find(
      r => r.status === 'rejected' && isUnavailable(r.reason)
    );
    if (unavailable) {
      this._serverError = (unavailable as PromiseRejectedResult).reason.message;
      this._analysisError = null;
    } else {
      if (this._deployments) {
        this._serverError = null;
      }
      this._analysisError = errors.length > 0 ? errors.join('; ') : null;
    }
    this._changed.emit();
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
      this._runs = runs;
      if (this._run) {
        const fresh = runs.find(r => r.id === this._run!.id);
        if (fresh) {
          const status = this._mostAdvanced(this._run.status, fresh.status);
          this._run = { ...fresh, status };
        }
      }
      // a reopened notebook starts with the steps of its latest run, until the user picks
      const latest = runs[0]?.granularity ?? 'auto';
      if (follow && runs.length > 0 && !this._granularityChosen) {
        this._granularityChosen = true;
        if (latest !== this._granularity) {
          this._granularity = latest;
          void this.refreshGraphAndPlan();
        }
      }
      if (follow && !this._run && runs.length > 0) {
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
    if (this._ended.has(event.run)) {
      return;
    }
    if (!this._run || this._run.id !== event.run) {
      this._adopt({
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
      });
      // Fill in mode, deployment, steps_total, files.
      void this.refreshRuns();
    }
    if (event.kind === 'run') {
      this._onRunEvent(event);
    } else {
      this._progress.apply(event);
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
    window.clearTimeout(this._debounce);
    window.clearInterval(this._ticker);
    Signal.clearData(this);
  }

  // ---- private -----------------------------------------------------------

  private _viewState(): ICellViewState {
    return {
      graph: this._graph,
      plan: this._plan,
      progress: this._progress,
      previous: this._previous,
      notShown: this._notShown,
      stale: this._stale,
      runActive: this.isRunActive,
      runDeployment: this._run?.deployment || null
    };
  }

  private _onRunEvent(event: IRunEvent): void {
    const run = this._run as IRun;
    const status = (event.status ?? run.status) as IRun['status'];
    this._run = {
      ...run,
      status: this._mostAdvanced(run.status, status),
      error: event.message ?? run.error
    };
    if (Array.isArray(event.steps) && event.steps.length > 0) {
      this._run.steps_total = event.steps.length;
    }
    if (isFinal(this._run.status)) {
      const finished = now();
      this._run.finished = this._run.finished ?? finished;
      this._run.duration =
        this._run.duration ?? Math.max(0, finished - this._run.started);
      this._finish(this._run);
    } else {
      this._upsertRun(this._run);
    }
  }

  /** Follow a new run: forget the previous run's live state. */
  private _adopt(run: IRun): void {
    if (this._run && this._run.id === run.id) {
      const status = this._mostAdvanced(this._run.status, run.status);
      this._run = { ...this._run, ...run, status };
      return;
    }
    // What this run leaves stays on the cells the next run does not touch.
    const model = this.panel.context.model;
    for (const cell of model ? model.cells : []) {
      const part = this._progress.cellPart(cell.id, this.stepsOf(cell.id));
      if (part && !this._notShown.has(cell.id)) {
        this._previous.set(cell.id, { ...part, where: part.where });
      }
    }
    for (const [name, state] of this._progress.steps) {
      this._previousSteps.set(name, state);
    }
    this._run = { ...run };
    this._notShown = new Set();
    this._progress = new RunProgress(() => this._graph);
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
    if (this._isDisposed || !this._run || this._run.id !== run.id) {
      return;
    }
    this._progress.load(detail);
    if (isFinal(detail.status)) {
      // a page opened after the run: badges only where the cells show it
      this._notShown = cellsNotShowing(this.panel.context.model, detail.cells ?? {});
    }
    const { steps: _s, cells: _c, ...plain } = detail;
    void _s;
    void _c;
    this._run = {
      ...this._run,
      ...plain,
      status: this._mostAdvanced(this._run.status, plain.status)
    };
    if (isFinal(this._run.status)) {
      this._ended.add(this._run.id);
    }
    this._updateTicker();
    this._changed.emit();
  }

  /** The run reached a final status. */
  private _finish(run: IRun): void {
    if (this._ended.has(run.id)) {
      return;
    }
    this._ended.add(run.id);
    this._progress.stop(run.status === 'cancelled' ? 'cancelled' : 'failed');
    if (run.status === 'done') {
      // The cells that ran are no longer stale (the plan refresh confirms).
      for (const cell of this._progress.ranCells()) {
        this._stale.delete(cell);
      }
    }
    this._upsertRun(run);
    this._updateTicker();
    this._runEnded.emit(run);
    void this.refreshGraphAndPlan();
    void this.refreshRuns();
  }

  private _upsertRun(run: IRun): void {
    const index = this._runs.findIndex(r => r.id === run.id);
    if (index >= 0) {
      const merged = { ...this._runs[index], ...run };
      merged.status = this._mostAdvanced(this._runs[index].status, run.status);
      this._runs = [
        ...this._runs.slice(0, index),
        merged,
        ...this._runs.slice(index + 1)
      ];
    } else {
      this._runs = [run, ...this._runs];
    }
  }

  /** Statuses only move forward: a late answer never undoes a final status. */
  private _mostAdvanced(a: IRun['status'], b: IRun['status']): IRun['status'] {
    const rank = (s: string): number =>
      isFinal(s) ? 2 : s === 'running' ? 1 : 0;
    return rank(b) >= rank(a) ? b : a;
  }

  private _updateTicker(): void {
    const live = this._progress.live || this.isRunActive;
    if (live && !this._ticker) {
      this._ticker = window.setInterval(() => this._changed.emit(), TICK_MS);
    } else if (!live && this._ticker) {
      window.clearInterval(this._ticker);
      this._ticker = 0;
    }
  }

  private _onPathChanged(): void {
    this._deployments = null;
    this._runs = [];
    this._run = null;
    this._progress = new RunProgress(() => this._graph);
    this._previous = new Map();
    this._previousSteps = new Map();
    void this.refreshAll();
  }

  private _onContentChanged(): void {
    window.clearTimeout(this._debounce);
    this._debounce = window.setTimeout(() => {
      const fingerprint = this._computeFingerprint();
      if (fingerprint !== this._fingerprint) {
        this._fingerprint = fingerprint;
        void this.refreshGraphAndPlan();
      }
    }, REFRESH_DEBOUNCE_MS);
  }

  /** What the analysis depends on: cells' kinds, ids, sources, metadata (not outputs). */
  private _computeFingerprint(): string {
    const model = this.panel.context.model;
    const parts: string[] = [JSON.stringify(model.metadata)];
    for (const cell of model.cells) {
      parts.push(
        cell.type,
        cell.id,
        cell.sharedModel.getSource(),
        JSON.stringify(cell.metadata)
      );
    }
    return parts.join('\u0000');
  }

  private _isDisposed = false;
  private _changed = new Signal<this, void>(this);
  private _runEvent = new Signal<this, IRunEvent>(this);
  private _runEnded = new Signal<this, IRun>(this);
  private _deployments: IDeploymentsResponse | null = null;
  private _deployment: string | null = null;
  private _granularity: Granularity = 'auto';
  private _graph: IGraph | null = null;
  private _plan: IPlan | null = null;
  private _stale = new Set<string>();
  private _runs: IRun[] = [];
  /** The user picked the granularity, or it was taken from the latest run. */
  private _granularityChosen = false;
  private _run: IRun | null = null;
  private _ended = new Set<string>();
  private _requests = new Map<string, IRunRequestMemo>();
  private _progress = new RunProgress(() => this._graph);
  private _previous = new Map<string, ICellRunPart>();
  private _notShown = new Set<string>();
  private _previousSteps = new Map<string, IStepRunState>();
  private _starting = false;
  private _serverError: string | null = null;
  private _analysisError: string | null = null;
  private _actionError: string | null = null;
  private _deploymentsError: string | null = null;
  private _analysisSeq = 0;
  private _debounce = 0;
  private _ticker = 0;
  private _fingerprint = '';
}
