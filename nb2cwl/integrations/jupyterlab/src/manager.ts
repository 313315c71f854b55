/**
 * One nb2cwl session per open notebook panel (with its badges and output
 * sync), and the routing of run events to them by notebook path.
 */
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Event } from '@jupyterlab/services';
import type { IDisposable } from '@lumino/disposable';
import { type ISignal, Signal } from '@lumino/signaling';

import type { Nb2cwlApi } from './api';
import { CellBadges } from './badges';
import { type IRunEvent, RunEvents } from './events';
import { OutputSync } from './outputs';
import { NotebookSession } from './session';

interface IAttached {
  session: NotebookSession;
  badges: CellBadges;
  outputs: OutputSync;
}

/**
 * Creates and disposes of the notebooks' sessions; forwards run events.
 */
export class SessionManager implements IDisposable {
  constructor(
    readonly api: Nb2cwlApi,
    private readonly _tracker: INotebookTracker,
    events: Event.IManager | undefined
  ) {
    if (events) {
      this._events = new RunEvents(events);
      this._events.received.connect(this._onEvent, this);
    } else {
      console.warn('nb2cwl: no event manager; runs will not update live');
    }
    _tracker.widgetAdded.connect((_, panel) => this._attach(panel), this);
    _tracker.forEach(panel => this._attach(panel));
    _tracker.currentChanged.connect(
      () => this._currentChanged.emit(this.current),
      this
    );
  }

  /** The session of the tracker's current notebook. */
  get current(): NotebookSession | null {
    const panel = this._tracker.currentWidget;
    return panel ? this.sessionFor(panel) : null;
  }

  /** Emitted when the current notebook changes. */
  get currentChanged(): ISignal<this, NotebookSession | null> {
    return this._currentChanged;
  }

  /** Emitted for each run event (any notebook). */
  get eventReceived(): ISignal<this, IRunEvent> {
    return this._eventReceived;
  }

  sessionFor(panel: NotebookPanel): NotebookSession | null {
    return this._attached.get(panel)?.session ?? this._attach(panel);
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._events?.dispose();
    for (const attached of this._attached.values()) {
      attached.badges.dispose();
      attached.outputs.dispose();
      attached.session.dispose();
    }
    this._attached.clear();
    Signal.clearData(this);
  }

  private _attach(panel: NotebookPanel): NotebookSession | null {
    if (this._isDisposed || panel.isDisposed) {
      return null;
    }
    const existing = this._attached.get(panel);
    if (existing) {
      return existing.session;
    }
    const session = new NotebookSession(panel, this.api);
    const attached: IAttached = {
      session,
      badges: new CellBadges(session),
      outputs: new OutputSync(session)
    };
    this._attached.set(panel, attached);
    panel.disposed.connect(() => {
      this._attached.delete(panel);
      attached.badges.dispose();
      attached.outputs.dispose();
      session.dispose();
      if (this._tracker.currentWidget === null) {
        this._currentChanged.emit(null);
      }
    });
    return session;
  }

  private _onEvent(_: RunEvents, event: IRunEvent): void {
    for (const { session } of this._attached.values()) {
      if (session.path === event.path) {
        session.handleEvent(event);
      }
    }
    this._eventReceived.emit(event);
  }

  private _isDisposed = false;
  private _events: RunEvents | null = null;
  private _attached = new Map<NotebookPanel, IAttached>();
  private _currentChanged = new Signal<this, NotebookSession | null>(this);
  private _eventReceived = new Signal<this, IRunEvent>(this);
}
