/**
 * Streams a run's outputs into the open notebook's cells (matched by cell id),
 * then sets every cell's outputs from the run's executed copy, the final truth.
 *
 * Only the notebook model in the browser changes: the file is never saved.
 */
import type { ICodeCellModel } from '@jupyterlab/cells';
import type * as nbformat from '@jupyterlab/nbformat';
import type { IDisposable } from '@lumino/disposable';
import { Signal } from '@lumino/signaling';

import type { IRun } from './api';
import type { IRunEvent } from './events';
import type { NotebookSession } from './session';

/** The sync that writes into each notebook model. */
const OWNERS = new WeakMap<object, OutputSync>();

/**
 * Keeps one notebook's cell outputs in step with the runs of its session.
 */
export class OutputSync implements IDisposable {
  constructor(private readonly _session: NotebookSession) {
    _session.runEvent.connect(this._onEvent, this);
    _session.runEnded.connect(this._onRunEnded, this);
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    const model = this._session.panel.context.model;
    if (model && OWNERS.get(model) === this) {
      OWNERS.delete(model);
    }
    Signal.clearData(this);
  }

  /**
   * Whether this sync writes the outputs: two views of one notebook share
   * its model, and only one of them must write.
   */
  private _owns(): boolean {
    const model = this._session.panel.context.model;
    if (!model) {
      return false;
    }
    const owner = OWNERS.get(model);
    if (!owner || owner.isDisposed) {
      OWNERS.set(model, this);
      return true;
    }
    return owner === this;
  }

  /** The code cell model of that id in the open notebook, if any. */
  private _cell(id: string | undefined): ICodeCellModel | null {
    if (!id) {
      return null;
    }
    const model = this._session.panel.context.model;
    if (!model) {
      return null;
    }
    for (const cell of model.cells) {
      if (cell.id === id) {
        return cell.type === 'code' ? (cell as ICodeCellModel) : null;
      }
    }
    return null;
  }

  private _onEvent(_: NotebookSession, event: IRunEvent): void {
    if (!this._owns()) {
      return;
    }
    if (event.run !== this._runId) {
      this._runId = event.run;
      this._cleared = new Set();
    }
    if (event.kind === 'cell') {
      const cell = this._cell(event.cell);
      if (!cell) {
        return;
      }
      if (event.status === 'running') {
        this._clear(cell);
        // JupyterLab's [*] prompt, as while a kernel runs the cell
        cell.executionState = 'running';
        this._running.add(cell);
      } else {
        this._idle(cell);
        if (
          (event.status === 'done' ||
            event.status === 'failed' ||
            event.status === 'cached') &&
          typeof event.execution_count === 'number'
        ) {
          cell.executionCount = event.execution_count;
        }
      }
    } else if (event.kind === 'output') {
      const cell = this._cell(event.cell);
      if (!cell) {
        return;
      }
      if (!this._cleared.has(cell.id)) {
        // A reused cell's outputs come without `cell running`.
        this._clear(cell);
      }
      if (event.reset && Array.isArray(event.outputs)) {
        // The outputs so far were replaced (clear_output, display update).
        cell.outputs.fromJSON(event.outputs);
      } else if (event.output) {
        cell.outputs.add(event.output as nbformat.IOutput);
      }
    }
  }

  private _idle(cell: ICodeCellModel): void {
    if (this._running.delete(cell)) {
      cell.executionState = 'idle';
    }
  }

  private _clear(cell: ICodeCellModel): void {
    this._cleared.add(cell.id);
    // The run is the user's own execution: trust its outputs as a kernel's.
    cell.trusted = true;
    cell.outputs.clear();
    cell.executionCount = null;
  }

  /** At `run done|failed`: the executed copy is the final truth. */
  private async _onRunEnded(
    session: NotebookSession,
    run: IRun
  ): Promise<void> {
    for (const cell of [...this._running]) {
      this._idle(cell); // however the run ended, no cell runs any more
    }
    if ((run.status !== 'done' && run.status !== 'failed') || !this._owns()) {
      return;
    }
    let executed: nbformat.INotebookContent;
    try {
      // Ask for the executed copy only when the run has one (no 404 in the console).
      const detail = await session.api.run(run.id);
      if (!detail.files?.notebook) {
        return;
      }
      executed = await session.api.executedNotebook(run.id);
    } catch (error) {
      console.warn(`nb2cwl: no executed notebook for run ${run.id}:`, error);
      return;
    }
    if (this._isDisposed || !executed || !Array.isArray(executed.cells)) {
      return;
    }
    const mode = session.requestOf(run.id)?.mode ?? run.mode;
    // A "selected" run leaves the outputs of the cells it did not run alone.
    const ran = mode === 'selected' ? session.participatingCells() : null;
    for (const source of executed.cells) {
      const id = source.id as string | undefined;
      if (source.cell_type !== 'code' || !id) {
        continue;
      }
      if (ran && ran.size > 0 && !ran.has(id)) {
        continue;
      }
      const cell = this._cell(id);
      if (!cell) {
        continue;
      }
      const code = source as nbformat.ICodeCell;
      cell.trusted = true;
      cell.outputs.fromJSON(code.outputs ?? []);
      cell.executionCount = code.execution_count ?? null;
    }
  }

  private _isDisposed = false;
  private _runId: string | null = null;
  private _cleared = new Set<string>();
  private _running = new Set<ICodeCellModel>();
}
