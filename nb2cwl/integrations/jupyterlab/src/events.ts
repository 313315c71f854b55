/**
 * Live run events: the nb2cwl events of Jupyter Server's event bus.
 */
import type { Event } from '@jupyterlab/services';
import type * as nbformat from '@jupyterlab/nbformat';
import type { IDisposable } from '@lumino/disposable';
import { type ISignal, Signal } from '@lumino/signaling';

/** The schema id of nb2cwl's run events. */
export const RUN_EVENT_SCHEMA = 'https://events.nb2cwl.org/run/v1';

export type RunEventKind = 'run' | 'step' | 'cell' | 'output';

/** One run event (the capsule's `__...__` fields are kept as received). */
export interface IRunEvent {
  run: string;
  path: string;
  kind: RunEventKind;
  status?: string;
  step?: string;
  cells?: string[];
  where?: string;
  shard?: number;
  shards?: number;
  elapsed?: number;
  cell?: string;
  index?: number;
  execution_count?: number | null;
  output?: nbformat.IOutput;
  /** With `reset`: the cell's outputs are now `outputs` (a clear_output, a display update). */
  reset?: boolean;
  outputs?: nbformat.IOutput[];
  /** `step`: cells, split, map, gather, training, assemble (server extra). */
  role?: string;
  /** `run running`: the workflow's steps, in order. */
  steps?: string[];
  message?: string;
  __timestamp__?: string;
  [key: string]: unknown;
}

/** Whether an event bus emission is one of nb2cwl's run events. */
export function isRunEvent(emission: { [key: string]: unknown }): boolean {
  const schema = emission['__schema__'] ?? emission['schema_id'];
  return (
    schema === RUN_EVENT_SCHEMA &&
    typeof emission['run'] === 'string' &&
    typeof emission['path'] === 'string' &&
    typeof emission['kind'] === 'string'
  );
}

/**
 * Filters the server's event stream down to nb2cwl's run events.
 */
export class RunEvents implements IDisposable {
  constructor(private readonly _manager: Event.IManager) {
    _manager.stream.connect(this._onEmission, this);
  }

  /** Emitted for each nb2cwl run event, in the order the server sent them. */
  get received(): ISignal<this, IRunEvent> {
    return this._received;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._manager.stream.disconnect(this._onEmission, this);
    Signal.clearData(this);
  }

  private _onEmission(_: unknown, emission: Event.Emission): void {
    const data = emission as unknown as { [key: string]: unknown };
    if (isRunEvent(data)) {
      this._received.emit(data as unknown as IRunEvent);
    }
  }

  private _isDisposed = false;
  private _received = new Signal<this, IRunEvent>(this);
}
