/**
 * The runs of one notebook the page knows: the server's list, merged with what
 * this page saw since (a run it started, a run's newer status), and how each
 * run started from this page was asked for, to run it again the same way.
 */
import type { Granularity, IRun, RunMode } from './api';
import { mostAdvanced } from './run_states';

/** How a run was asked for, to run it again. */
export interface IRunRequestMemo {
  mode: RunMode;
  deployment: string | null;
  granularity?: Granularity;
  cells?: string[];
}

/** What running a run again asks for: its mode, deployment, granularity and cells. */
export interface IRunAgain {
  mode: RunMode;
  deployment?: string | null;
  granularity: Granularity;
  cells?: string[];
}

export class KnownRuns {
  /** Newest first. */
  get list(): ReadonlyArray<IRun> {
    return this._runs;
  }

  /** The server's list (it has every run, and their latest status). */
  replace(runs: IRun[]): void {
    this._runs = runs;
  }

  /** A run's newer state: merged into the list (a status never goes back), or added first. */
  upsert(run: IRun): void {
    const index = this._runs.findIndex(r => r.id === run.id);
    if (index >= 0) {
      const merged = { ...this._runs[index], ...run };
      merged.status = mostAdvanced(this._runs[index].status, run.status);
      this._runs = [
        ...this._runs.slice(0, index),
        merged,
        ...this._runs.slice(index + 1)
      ];
    } else {
      this._runs = [run, ...this._runs];
    }
  }

  remember(runId: string, memo: IRunRequestMemo): void {
    this._requests.set(runId, memo);
  }

  /** How a run was asked for from this page, if it was. */
  requestOf(runId: string): IRunRequestMemo | undefined {
    return this._requests.get(runId);
  }

  /** Running `run` again: as it was asked for here, else as the server recorded it;
   * a run of selected cells with no record of them takes `selection`. */
  again(run: IRun, selection: string[]): IRunAgain {
    const memo = this._requests.get(run.id);
    const mode = memo?.mode ?? run.mode ?? 'all';
    return {
      mode,
      deployment: memo?.deployment ?? run.deployment,
      granularity: memo?.granularity ?? run.granularity ?? 'auto',
      cells:
        mode === 'selected'
          ? (memo?.cells ??
            (run.cells_selected?.length ? run.cells_selected : selection))
          : undefined
    };
  }

  /** The notebook moved: its runs are another path's. */
  forget(): void {
    this._runs = [];
  }

  private _runs: IRun[] = [];
  private _requests = new Map<string, IRunRequestMemo>();
}
