/**
 * The side panel's list of the notebook's runs: status, deployment, mode, start
 * and duration, the error, the run's files to download, and "Run again".
 */
import {
  FINAL_RUN_STATUSES,
  type IRun,
  type Nb2cwlApi,
  RUN_FILE_KINDS,
  type RunFileKind
} from './api';
import { el, setText } from './dom';
import { formatSeconds, formatStart, oneLine } from './format';
import type { NotebookSession } from './session';

const FILE_LABELS: Record<RunFileKind, string> = {
  cwl: 'CWL',
  crate: 'RO-Crate',
  notebook: 'Notebook',
  logs: 'Logs'
};

const FILE_TITLES: Record<RunFileKind, string> = {
  cwl: 'The packed CWL workflow of this run',
  crate: 'The Workflow RO-Crate bundle of this run (zip)',
  notebook: 'The executed copy of the notebook',
  logs: "The run's log"
};

/** How long a run took, or has taken so far; null when not known. */
export function runDuration(run: IRun): number | null {
  if (run.duration !== null && run.duration !== undefined) {
    return run.duration;
  }
  if (!FINAL_RUN_STATUSES.includes(run.status) && run.started) {
    return Math.max(0, Date.now() / 1000 - run.started);
  }
  if (run.finished && run.started) {
    return Math.max(0, run.finished - run.started);
  }
  return null;
}

/** The runs of the session shown, newest first. */
export class RunList {
  readonly node = el('ul', { className: 'nb2cwl-runs', testid: 'nb2cwl-runs' });

  /**
   * @param _api the server extension (the files' download URLs)
   * @param _session the session shown
   * @param _selection the cells "Run again" of a "selected" run takes when
   *   its own are not known
   */
  constructor(
    private readonly _api: Nb2cwlApi,
    private readonly _session: () => NotebookSession | null,
    private readonly _selection: () => string[]
  ) {}

  /** Draw every run again at the next render (another session is shown). */
  reset(): void {
    this._key = '';
  }

  /** Redraw the runs that changed, "Run again"'s state, live durations. */
  render(): void {
    const session = this._session();
    const runs = session?.runs ?? [];
    const key = JSON.stringify(
      runs.map(r => [
        r.id,
        r.status,
        r.duration,
        r.error,
        r.files,
        r.deployment,
        r.mode,
        r.started
      ])
    );
    if (key !== this._key) {
      this._key = key;
      this.node.textContent = '';
      if (runs.length === 0) {
        this.node.append(
          el('li', {
            className: 'nb2cwl-runs-empty',
            text: session ? 'No runs yet.' : ''
          })
        );
      }
      for (const run of runs) {
        this.node.append(this._item(run));
      }
    }
    // One run at a time: no "run again" while one runs.
    const busy = !session || session.isRunActive || session.isStarting;
    this.node
      .querySelectorAll<HTMLButtonElement>('[data-testid=nb2cwl-run-again]')
      .forEach(button => {
        if (button.disabled !== busy) {
          button.disabled = busy;
        }
      });
    // Live durations.
    for (const run of runs) {
      if (!FINAL_RUN_STATUSES.includes(run.status)) {
        const item = this.node.querySelector(
          `li[data-run-id="${CSS.escape(run.id)}"] .nb2cwl-run-duration`
        ) as HTMLElement | null;
        if (item) {
          setText(item, formatSeconds(runDuration(run)));
        }
      }
    }
  }

  private _item(run: IRun): HTMLLIElement {
    const item = el('li', {
      className: 'nb2cwl-run-item',
      testid: 'nb2cwl-run-item'
    });
    item.dataset.runId = run.id;
    item.dataset.status = run.status;

    const head = el('div', { className: 'nb2cwl-run-head' });
    head.append(
      el('span', {
        className: 'nb2cwl-run-status',
        testid: 'nb2cwl-run-status',
        text: run.status
      }),
      el('span', {
        className: 'nb2cwl-run-deployment',
        testid: 'nb2cwl-run-deployment',
        text: run.deployment,
        title: 'deployment'
      }),
      el('span', {
        className: 'nb2cwl-run-mode',
        text: run.mode,
        title: 'mode'
      })
    );
    const time = el('div', { className: 'nb2cwl-run-time' });
    time.append(
      el('span', {
        className: 'nb2cwl-run-start',
        testid: 'nb2cwl-run-start',
        text: formatStart(run.started),
        title: `run ${run.id}`
      }),
      el('span', {
        className: 'nb2cwl-run-duration',
        testid: 'nb2cwl-run-duration',
        text: formatSeconds(runDuration(run))
      })
    );
    item.append(head, time);
    if (run.error) {
      item.append(
        el('div', {
          className: 'nb2cwl-run-error',
          testid: 'nb2cwl-run-error',
          text: oneLine(run.error),
          title: run.error
        })
      );
    }
    const links = el('div', { className: 'nb2cwl-run-links' });
    for (const kind of RUN_FILE_KINDS) {
      const link = el('a', {
        className: 'nb2cwl-download',
        testid: `nb2cwl-download-${kind}`,
        text: FILE_LABELS[kind],
        title: FILE_TITLES[kind]
      });
      if (run.files?.[kind]) {
        link.href = this._api.fileUrl(run.id, kind);
        link.setAttribute('download', '');
      } else {
        link.setAttribute('aria-disabled', 'true');
        link.classList.add('nb2cwl-mod-disabled');
        link.title = `${FILE_TITLES[kind]}: not available`;
      }
      links.append(link);
    }
    const again = el('button', {
      className: 'jp-Button nb2cwl-run-again',
      testid: 'nb2cwl-run-again',
      text: 'Run again',
      title: `Run again (${run.mode}, on ${run.deployment}) with the notebook's current content`
    });
    again.type = 'button';
    again.addEventListener('click', () => {
      const session = this._session();
      if (session) {
        void session
          .runAgain(run, this._selection())
          .catch(error => console.warn('nb2cwl: run again failed:', error));
      }
    });
    links.append(again);
    item.append(links);
    return item;
  }

  private _key = '';
}
