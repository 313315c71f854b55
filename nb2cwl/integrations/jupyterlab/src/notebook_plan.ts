/**
 * What the server makes of one open notebook's content, refreshed as it is
 * edited: the deployments it can run on (and the one chosen), where step
 * boundaries go, its step graph, and its plan (the stale cells).
 */
import type * as nbformat from '@jupyterlab/nbformat';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { type ISignal, Signal } from '@lumino/signaling';

import {
  type Granularity,
  isUnavailable,
  type IDeploymentsResponse,
  type IGraph,
  type IPlan,
  type Nb2cwlApi
} from './api';

/** Delay between an edit and the graph + plan refresh, in ms. */
export const REFRESH_DEBOUNCE_MS = 800;

/**
 * Tells whether the server answered: a message when the server extension
 * could not be reached, null when it answered.
 */
export type ServerReport = (unavailable: string | null) => void;

/**
 * The deployments, graph and plan of one notebook panel's current content.
 */
export class NotebookPlan {
  constructor(
    private readonly _panel: NotebookPanel,
    private readonly _api: Nb2cwlApi,
    private readonly _server: ServerReport
  ) {}

  /** Emitted whenever the deployments, the choices, the graph or the plan change. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

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

  /** The cells whose outputs are out of date (from the plan, less those a run redid). */
  get stale(): ReadonlySet<string> {
    return this._stale;
  }

  /** Why the graph or the plan cannot be computed (e.g. a syntax error). */
  get analysisError(): string | null {
    return this._analysisError;
  }

  /** Why the deployments could not be listed (the server answered). */
  get deploymentsError(): string | null {
    return this._deploymentsError;
  }

  /**
   * A reopened notebook starts with the steps of its latest run, until the
   * user picks: take `latest` unless a granularity was chosen already.
   */
  adoptGranularity(latest: Granularity): void {
    if (this._granularityChosen) {
      return;
    }
    this._granularityChosen = true;
    if (latest !== this._granularity) {
      this._granularity = latest;
      void this.refreshGraphAndPlan();
    }
  }

  /** The cells a finished run ran are no longer stale (the plan refresh confirms). */
  ran(cells: Iterable<string>): void {
    for (const cell of cells) {
      this._stale.delete(cell);
    }
  }

  /** Start refreshing the graph and plan as the content is edited (once it is ready). */
  watchContent(): void {
    this._fingerprint = this._computeFingerprint();
    this._panel.context.model.contentChanged.connect(this._onContentChanged, this);
  }

  /** Another file: its deployments are asked for again. */
  forget(): void {
    this._deployments = null;
  }

  async refreshDeployments(): Promise<void> {
    const path = this._panel.context.path;
    try {
      let reply: IDeploymentsResponse;
      try {
        reply = await this._api.deployments(path);
        this._deploymentsError = null;
      } catch (error) {
        if (isUnavailable(error)) {
          throw error;
        }
        // The file on disk does not compile (e.g. a syntax error): without
        // the notebook's own deployments, the others still list.
        reply = await this._api.deployments();
        this._deploymentsError = `Deployments the notebook defines are missing: ${(error as Error).message}`;
      }
      if (this._isDisposed || path !== this._panel.context.path) {
        return;
      }
      this._deployments = reply;
      this._server(null);
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
        this._server((error as Error).message);
      } else {
        this._deploymentsError = `Deployments: ${(error as Error).message}`;
      }
    }
    this._changed.emit();
  }

  /** Ask for the graph and the plan of the current content. */
  async refreshGraphAndPlan(): Promise<void> {
    if (this._isDisposed || !this._panel.context.isReady) {
      return;
    }
    const seq = ++this._analysisSeq;
    const body = {
      path: this._panel.context.path,
      content: this._panel.context.model.toJSON() as nbformat.INotebookContent,
      deployment: this._deployment ?? undefined,
      granularity: this._granularity
    };
    const [graph, plan] = await Promise.allSettled([
      this._api.graph(body),
      this._api.plan(body)
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
      this._server((unavailable as PromiseRejectedResult).reason.message);
      this._analysisError = null;
    } else {
      if (this._deployments) {
        this._server(null);
      }
      this._analysisError = errors.length > 0 ? errors.join('; ') : null;
    }
    this._changed.emit();
  }

  dispose(): void {
    this._isDisposed = true;
    window.clearTimeout(this._debounce);
    Signal.clearData(this);
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
    const model = this._panel.context.model;
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
  private _deployments: IDeploymentsResponse | null = null;
  private _deployment: string | null = null;
  private _granularity: Granularity = 'auto';
  /** The user picked the granularity, or it was taken from the latest run. */
  private _granularityChosen = false;
  private _graph: IGraph | null = null;
  private _plan: IPlan | null = null;
  private _stale = new Set<string>();
  private _deploymentsError: string | null = null;
  private _analysisError: string | null = null;
  private _analysisSeq = 0;
  private _debounce = 0;
  private _fingerprint = '';
}
