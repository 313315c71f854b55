/**
 * A badge on each code cell: its step, where it runs, its status, elapsed
 * time, shard progress and warnings; stale cells are marked.
 */
import type { Cell } from '@jupyterlab/cells';
import type { IDisposable } from '@lumino/disposable';
import { Signal } from '@lumino/signaling';

import { formatSeconds, shardText } from './format';
import type { ICellView, NotebookSession } from './session';

/** The class of a code cell carrying a badge (makes room for it). */
const BADGED_CLASS = 'nb2cwl-badged';
const BADGE_CLASS = 'nb2cwl-badge';

/** The one-line text of a badge: `cell_3 · local (host1) · running · 1.2 s`. */
export function badgeText(view: ICellView): string {
  const parts: string[] = [];
  parts.push(view.step ?? '(no step)');
  const where = view.where ?? view.deployment;
  if (where) {
    parts.push(where);
  }
  parts.push(view.status);
  const elapsed = formatSeconds(view.elapsed);
  if (elapsed && view.status !== 'stale' && view.status !== 'idle') {
    parts.push(elapsed);
  }
  const shards = shardText(view);
  if (shards) {
    parts.push(shards);
  }
  return parts.join(' · ');
}

/**
 * Keeps a badge on every code cell of one notebook panel.
 */
export class CellBadges implements IDisposable {
  constructor(private readonly _session: NotebookSession) {
    _session.changed.connect(this._schedule, this);
    const notebook = _session.panel.content;
    notebook.modelChanged.connect(this._onModelChanged, this);
    notebook.modelContentChanged.connect(this._schedule, this);
    this._onModelChanged();
    this._schedule();
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    if (this._frame) {
      cancelAnimationFrame(this._frame);
    }
    Signal.clearData(this);
    for (const cell of this._session.panel.content.widgets) {
      cell.node.querySelector(`:scope > .${BADGE_CLASS}`)?.remove();
      cell.removeClass(BADGED_CLASS);
    }
  }

  /** Render now (also called by the scheduler). */
  render(): void {
    this._frame = 0;
    if (this._isDisposed) {
      return;
    }
    const notebook = this._session.panel.content;
    for (const cell of notebook.widgets) {
      this._renderCell(cell);
    }
  }

  private _onModelChanged(): void {
    const model = this._session.panel.content.model;
    if (model && model !== this._model) {
      this._model = model;
      model.cells.changed.connect(this._schedule, this);
    }
    this._schedule();
  }

  private _schedule(): void {
    if (this._isDisposed || this._frame) {
      return;
    }
    this._frame = requestAnimationFrame(() => this.render());
  }

  private _renderCell(cell: Cell): void {
    const existing = cell.node.querySelector(
      `:scope > .${BADGE_CLASS}`
    ) as HTMLElement | null;
    if (cell.model.type !== 'code') {
      if (existing) {
        existing.remove();
        cell.removeClass(BADGED_CLASS);
      }
      return;
    }
    const view = this._session.cellView(cell.model.id);
    // Nothing to say yet (no graph, no run): no badge, no room taken.
    const empty = view.step === null && view.status === 'idle';
    if (empty) {
      if (existing) {
        existing.remove();
        cell.removeClass(BADGED_CLASS);
      }
      return;
    }
    let badge = existing;
    if (!badge) {
      badge = document.createElement('div');
      badge.className = BADGE_CLASS;
      badge.dataset.testid = 'nb2cwl-badge';
      // Last child: Lumino inserts the cell's own widgets before it.
      cell.node.appendChild(badge);
      cell.addClass(BADGED_CLASS);
    } else if (badge !== cell.node.lastElementChild) {
      cell.node.appendChild(badge);
    }
    const text = badgeText(view);
    const warnings = view.warnings.join('\n');
    const signature = [
      view.cellId,
      view.status,
      view.step,
      view.stale,
      text,
      warnings,
      view.reason
    ].join('\u0001');
    if (badge.dataset.signature === signature) {
      return;
    }
    badge.dataset.signature = signature;
    badge.dataset.cellId = view.cellId;
    badge.dataset.status = view.status;
    badge.dataset.step = view.step ?? '';
    badge.dataset.stale = view.stale ? 'true' : 'false';
    const tooltip = [
      `nb2cwl step ${view.step ?? '(none)'}: ${view.status}`,
      view.stale && view.status === 'stale'
        ? 'stale: an edit since the last run affects this cell'
        : '',
      view.reason ?? ''
    ].filter(Boolean);
    badge.title = tooltip.join('\n');
    badge.textContent = '';
    const label = document.createElement('span');
    label.className = 'nb2cwl-badge-text';
    label.textContent = text;
    badge.appendChild(label);
    if (view.warnings.length > 0) {
      const warning = document.createElement('span');
      warning.className = 'nb2cwl-warning';
      warning.dataset.testid = 'nb2cwl-warning';
      warning.title = warnings;
      warning.setAttribute('aria-label', `warnings: ${warnings}`);
      warning.textContent =
        view.warnings.length > 1 ? `\u26a0 ${view.warnings.length}` : '\u26a0';
      badge.appendChild(warning);
    }
  }

  private _isDisposed = false;
  private _frame = 0;
  private _model: unknown = null;
}
