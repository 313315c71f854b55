/**
 * The REST client of nb2cwl's Jupyter Server extension (`<baseUrl>nb2cwl/api/`).
 *
 * Types mirror the contract of the server extension; every request goes through
 * `ServerConnection.makeRequest`, which adds the token / XSRF header.
 */
import { URLExt } from '@jupyterlab/coreutils';
import type * as nbformat from '@jupyterlab/nbformat';
import { ServerConnection } from '@jupyterlab/services';

/** The server extension's URL prefix, below the server's base URL. */
export const API_PREFIX = 'nb2cwl/api';

export interface IDeployment {
  name: string;
  kind: string;
  available: boolean;
  reason: string | null;
  source: 'profile' | 'file' | 'notebook' | string;
}

export interface IDeploymentsResponse {
  default: string | null;
  deployments: IDeployment[];
}

export type StepRole =
  'cells' | 'split' | 'map' | 'gather' | 'training' | string;

export interface IGraphStep {
  name: string;
  cells: string[];
  indices: number[];
  /** The cells as Jupyter numbers them after a Run All: `In [1] to [3]`. */
  shown?: string;
  deployment: string;
  role: StepRole;
  reason?: string;
  /** Each reason apart (`reason` joins them with "; "). */
  reasons?: string[];
  shards?: number;
}

export interface IGraphEdge {
  source: string;
  target: string;
  label: string;
  values?: string[];
  files?: string[];
  state?: string[];
}

export interface IGraphCell {
  step: string;
  index: number;
  warnings: string[];
}

export interface IGraphInput {
  name: string;
  type: string;
  default?: unknown;
}

export interface IGraph {
  svg: string;
  steps: IGraphStep[];
  edges: IGraphEdge[];
  cells: { [cellId: string]: IGraphCell };
  inputs: IGraphInput[];
}

export interface IPlanStep {
  name: string;
  cells: string[];
  rerun: boolean;
  reason: string;
}

export interface IPlan {
  last_run: string | null;
  stale_cells: string[];
  rerun_count: number;
  steps: IPlanStep[];
}

export type RunMode = 'all' | 'changed' | 'selected';

export type RunStatus =
  'queued' | 'running' | 'done' | 'failed' | 'cancelled' | 'lost';

/** The statuses after which a run never changes again. */
export const FINAL_RUN_STATUSES: ReadonlyArray<string> = [
  'done',
  'failed',
  'cancelled',
  'lost'
];

export type RunFileKind = 'cwl' | 'crate' | 'notebook' | 'logs';

export const RUN_FILE_KINDS: ReadonlyArray<RunFileKind> = [
  'cwl',
  'crate',
  'notebook',
  'logs'
];

/** Where step boundaries go (`nb2cwl run --granularity`). */
export type Granularity = 'auto' | 'cell';

export interface IRun {
  id: string;
  path: string;
  deployment: string;
  granularity?: Granularity;
  mode: RunMode;
  status: RunStatus;
  started: number;
  finished: number | null;
  duration: number | null;
  steps_total: number;
  error: string | null;
  files: Partial<Record<RunFileKind, boolean>>;
  /** The cells a "selected" run was asked for (server extra). */
  cells_selected?: string[];
  /** How many steps finished so far (server extra). */
  steps_done?: number;
}

export interface IStepState {
  status: string;
  where?: string;
  elapsed?: number;
  shard?: number;
  shards?: number;
  [key: string]: unknown;
}

export interface ICellState {
  status: string;
  step?: string;
  execution_count?: number | null;
}

/** `GET runs/RUN_ID`: the run and its state so far. */
export interface IRunDetail extends IRun {
  steps?: { [step: string]: IStepState };
  cells?: { [cellId: string]: ICellState };
}

export interface IRunRequest {
  path: string;
  content?: nbformat.INotebookContent;
  deployment?: string;
  granularity?: Granularity;
  mode: RunMode;
  cells?: string[];
}

export interface IContentRequest {
  path: string;
  content?: nbformat.INotebookContent;
  deployment?: string;
  granularity?: Granularity;
}

/** An error answered by the server extension (or the failure to reach it). */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    /** The server extension cannot be reached or is not installed. */
    readonly unavailable = false
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Whether an error says that the server extension is not there (not a bad request). */
export function isUnavailable(error: unknown): boolean {
  return error instanceof ApiError && error.unavailable;
}

/**
 * The client of the nb2cwl server extension.
 */
export class Nb2cwlApi {
  constructor(readonly serverSettings: ServerConnection.ISettings) {}

  /** The absolute URL of an endpoint, e.g. `url('runs', id)`. */
  url(...parts: string[]): string {
    return URLExt.join(
      this.serverSettings.baseUrl,
      API_PREFIX,
      ...parts.map(encodeURIComponent)
    );
  }

  /**
   * The URL of a run's file, usable as a plain `<a href download>`: a browser
   * navigation sends the cookie but no `Authorization` header, so the token
   * travels in the query when the settings use one.
   */
  fileUrl(runId: string, kind: RunFileKind): string {
    const url = this.url('runs', runId, 'files', kind);
    const token = this.serverSettings.token;
    return token ? `${url}?token=${encodeURIComponent(token)}` : url;
  }

  /**
   * The deployments: the profiles and the deployments file's, and with a
   * notebook path also those the notebook defines (the server compiles the
   * file on disk for them).
   */
  deployments(path?: string): Promise<IDeploymentsResponse> {
    const query = path ? `?path=${encodeURIComponent(path)}` : '';
    return this._request<IDeploymentsResponse>(
      `${this.url('deployments')}${query}`,
      { method: 'GET' }
    );
  }

  graph(body: IContentRequest): Promise<IGraph> {
    return this._request<IGraph>(this.url('graph'), {
      method: 'POST',
      body: JSON.stringify(body)
    });
  }

  plan(body: IContentRequest): Promise<IPlan> {
    return this._request<IPlan>(this.url('plan'), {
      method: 'POST',
      body: JSON.stringify(body)
    });
  }

  startRun(body: IRunRequest): Promise<IRun> {
    return this._request<IRun>(this.url('runs'), {
      method: 'POST',
      body: JSON.stringify(body)
    });
  }

  async runs(path?: string): Promise<IRun[]> {
    const query = path === undefined ? '' : `?path=${encodeURIComponent(path)}`;
    const reply = await this._request<{ runs: IRun[] }>(
      `${this.url('runs')}${query}`,
      { method: 'GET' }
    );
    return reply.runs ?? [];
  }

  run(runId: string): Promise<IRunDetail> {
    return this._request<IRunDetail>(this.url('runs', runId), {
      method: 'GET'
    });
  }

  cancel(runId: string): Promise<IRun> {
    return this._request<IRun>(this.url('runs', runId, 'cancel'), {
      method: 'POST',
      body: '{}'
    });
  }

  /** The run's executed notebook (`files/notebook`). */
  executedNotebook(runId: string): Promise<nbformat.INotebookContent> {
    return this._request<nbformat.INotebookContent>(
      this.url('runs', runId, 'files', 'notebook'),
      { method: 'GET' }
    );
  }

  private async _request<T>(url: string, init: RequestInit): Promise<T> {
    if (init.body !== undefined) {
      init.headers = { 'Content-Type': 'application/json' };
    }
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(
        url,
        init,
        this.serverSettings
      );
    } catch (error) {
      throw new ApiError(
        `cannot reach the server: ${(error as Error).message ?? error}`,
        null,
        true
      );
    }
    const text = await response.text();
    let data: any = null;
    if (text.length > 0) {
      try {
        data = JSON.parse(text);
      } catch {
        data = null;
      }
    }
    if (!response.ok) {
      let message: string;
      let unavailable = false;
      if (data && typeof data.message === 'string' && data.message) {
        message = data.message;
      } else if (response.status === 404) {
        unavailable = true;
        message = `HTTP 404 for ${new URL(url, window.location.href).pathname} (is the server extension nb2cwl.integrations.server enabled?)`;
      } else {
        message = `HTTP ${response.status} ${response.statusText}`.trim();
      }
      throw new ApiError(message, response.status, unavailable);
    }
    if (data === null && text.length > 0) {
      throw new ApiError(`invalid JSON answer from ${url}`, response.status);
    }
    return data as T;
  }
}
