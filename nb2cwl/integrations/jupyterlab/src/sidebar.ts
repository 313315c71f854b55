/**
 * The nb2cwl side panel: the current notebook, a deployment picker, where
 * step boundaries go, the run buttons, the run status line, the steps and why,
 * and the notebook's runs.
 */
import type { CommandRegistry } from '@lumino/commands';
import { Widget } from '@lumino/widgets';

import type { Granularity, Nb2cwlApi } from './api';
import { CommandIDs } from './commands';
import { el, setText } from './dom';
import { nb2cwlIcon } from './icon';
import { RunList } from './run_list';
import type { NotebookSession } from './session';
import { statusLine } from './status_line';

export const SIDEBAR_ID = 'nb2cwl-sidebar';


/** The choices of the Steps picker: value, label, tooltip. */
const GRANULARITY_CHOICES: ReadonlyArray<[Granularity, string, string]> = [
  [
    'auto',
    'auto',
    'A step boundary only where it pays (independent heavy work side by side, loops ' +
      'scattered) or is needed; the reasons are under "Steps"'
  ],
  [
    'cell',
    'one per cell',
    'One step per code cell (nb2cwl run --granularity cell): each cell on its own, ' +
      'for debugging'
  ]
];


/** A labelled select (`nb2cwl-NAME`) that calls `changed` with its value. */
function picker(
  label: string,
  name: string,
  changed: (value: string) => void
): [HTMLLabelElement, HTMLSelectElement] {
  const row = el('label', { className: `nb2cwl-row nb2cwl-${name}-row` });
  const select = el('select', {
    className: `nb2cwl-${name} jp-mod-styled`,
    testid: `nb2cwl-${name}`
  });
  select.addEventListener('change', () => changed(select.value));
  row.append(el('span', { text: label }), select);
  return [row, select];
}



/**
 * The side panel; it shows the session of the current notebook.
 */
export class Nb2cwlSidebar extends Widget {
  constructor(
    private readonly _commands: CommandRegistry,
    private readonly _api: Nb2cwlApi
  ) {
    super();
    this.id = SIDEBAR_ID;
    this.addClass('nb2cwl-sidebar');
    this.node.dataset.testid = 'nb2cwl-sidebar';
    this.title.icon = nb2cwlIcon;
    this.title.caption = 'nb2cwl: run this notebook as a workflow';
    this.title.label = '';

    const header = el('div', { className: 'nb2cwl-sidebar-header' });
    header.append(
      el('h2', { className: 'nb2cwl-sidebar-title', text: 'nb2cwl' }),
      (this._notebook = el('div', {
        className: 'nb2cwl-notebook',
        testid: 'nb2cwl-notebook'
      }))
    );

    const [pickerRow, deployment] = picker('Deployment', 'deployment', value => {
      if (this._session) {
        this._session.deployment = value || null;
      }
    });
    this._deployment = deployment;

    // Where step boundaries go: `nb2cwl run --granularity`.
    const [granularityRow, granularity] = picker('Steps', 'granularity', value => {
      if (this._session) {
        this._session.granularity = value as Granularity;
      }
    });
    for (const [value, text, title] of GRANULARITY_CHOICES) {
      const option = el('option', { text, title });
      option.value = value;
      granularity.append(option);
    }
    this._granularity = granularity;

    const buttons = el('div', { className: 'nb2cwl-buttons' });
    this._runAll = this._button(
      'nb2cwl-run-all',
      'Run all',
      CommandIDs.runAll,
      'Run every step again on the chosen deployment'
    );
    this._runChanged = this._button(
      'nb2cwl-run-changed',
      'Run changed',
      CommandIDs.runChanged,
      'Run the steps an edit affects; reuse the others'
    );
    this._runSelected = this._button(
      'nb2cwl-run-selected',
      'Run selected',
      CommandIDs.runSelected,
      'Run the selected cells and the cells they need'
    );
    this._cancel = this._button(
      'nb2cwl-cancel',
      'Cancel',
      CommandIDs.cancel,
      'Stop the active run and every process it started'
    );
    this._showGraph = this._button(
      'nb2cwl-show-graph',
      'Graph',
      CommandIDs.showGraph,
      'Show the steps as a graph'
    );
    this._runAll.classList.add('jp-mod-accept');
    this._cancel.classList.add('jp-mod-warn');
    buttons.append(
      this._runAll,
      this._runChanged,
      this._runSelected,
      this._cancel,
      this._showGraph
    );

    this._status = el('div', {
      className: 'nb2cwl-status',
      testid: 'nb2cwl-status'
    });
    this._status.setAttribute('role', 'status');
    this._status.setAttribute('aria-live', 'polite');
    this._statusText = el('span', { className: 'nb2cwl-status-text' });
    this._retry = el('button', {
      className: 'jp-Button nb2cwl-button nb2cwl-retry',
      testid: 'nb2cwl-retry',
      text: 'Retry',
      title: 'Ask the server extension again'
    });
    this._retry.type = 'button';
    this._retry.addEventListener('click', () => {
      void this._session?.refreshAll();
    });
    this._status.append(this._statusText, this._retry);

    this._inputs = el('div', {
      className: 'nb2cwl-inputs',
      testid: 'nb2cwl-inputs'
    });

    // Why the cells are grouped as they are: each step, its cells, its reasons.
    this._steps = el('details', {
      className: 'nb2cwl-steps',
      testid: 'nb2cwl-steps'
    });

    const runsHeader = el('h3', {
      className: 'nb2cwl-runs-title',
      text: 'Runs'
    });
    this._runList = new RunList(
      this._api,
      () => this._session,
      () => this._selection?.() ?? []
    );

    this.node.append(
      header,
      pickerRow,
      granularityRow,
      buttons,
      this._status,
      this._inputs,
      this._steps,
      runsHeader,
      this._runList.node
    );
    this._commands.commandChanged.connect(this._scheduleRender, this);
    this.render();
  }

  /** The session shown (the current notebook's), or null. */
  get session(): NotebookSession | null {
    return this._session;
  }

  set session(session: NotebookSession | null) {
    if (session === this._session) {
      return;
    }
    this._session?.changed.disconnect(this._scheduleRender, this);
    this._session = session;
    session?.changed.connect(this._scheduleRender, this);
    this._deploymentsKey = '';
    this._runList.reset();
    this.render();
  }

  dispose(): void {
    if (this._frame) {
      cancelAnimationFrame(this._frame);
    }
    this._commands.commandChanged.disconnect(this._scheduleRender, this);
    this._session?.changed.disconnect(this._scheduleRender, this);
    super.dispose();
  }

  render(): void {
    this._frame = 0;
    const session = this._session;
    setText(this._notebook, session ? session.path : 'No notebook');
    this._notebook.title = session ? session.path : '';
    this._renderDeployments();
    this._granularity.value = session?.granularity ?? 'auto';
    this._granularity.disabled = !session;
    this._renderButtons();
    this._renderStatus();
    this._renderInputs();
    this._renderSteps();
    this._runList.render();
  }

  private _scheduleRender(): void {
    if (!this._frame && !this.isDisposed) {
      this._frame = requestAnimationFrame(() => this.render());
    }
  }

  private _button(
    testid: string,
    label: string,
    command: string,
    title: string
  ): HTMLButtonElement {
    const button = el('button', {
      className: 'jp-Button nb2cwl-button',
      testid,
      text: label,
      title
    });
    button.type = 'button';
    button.addEventListener('click', () => {
      if (!button.disabled) {
        void this._commands.execute(command).catch(error => {
          console.warn(`nb2cwl: ${command} failed:`, error);
        });
      }
    });
    return button;
  }

  private _renderDeployments(): void {
    const reply = this._session?.deployments ?? null;
    const key = JSON.stringify([
      reply,
      this._session?.deployment,
      !!this._session?.serverError,
      !!this._session?.deploymentsError
    ]);
    if (key === this._deploymentsKey) {
      return;
    }
    this._deploymentsKey = key;
    const select = this._deployment;
    select.textContent = '';
    if (!reply) {
      select.disabled = true;
      const text = !this._session
        ? '—'
        : this._session.serverError
          ? '(unavailable)'
          : this._session.deploymentsError
            ? '(none)'
            : '(loading…)';
      select.append(el('option', { text }));
      return;
    }
    select.disabled = false;
    select.title = this._session?.deploymentsError ?? '';
    select.classList.toggle(
      'nb2cwl-mod-warn',
      !!this._session?.deploymentsError
    );
    for (const deployment of reply.deployments) {
      const option = el('option', {
        text: deployment.available
          ? `${deployment.name} (${deployment.kind})`
          : `${deployment.name} (${deployment.kind}, unavailable)`
      });
      option.value = deployment.name;
      option.disabled = !deployment.available;
      option.dataset.source = deployment.source;
      option.title = deployment.available
        ? `${deployment.kind} deployment, from the ${deployment.source}`
        : (deployment.reason ?? 'unavailable');
      select.append(option);
    }
    select.value = this._session?.deployment ?? '';
  }

  private _renderButtons(): void {
    const session = this._session;
    const commands = this._commands;
    const enable = (button: HTMLButtonElement, id: string): void => {
      const enabled = commands.hasCommand(id) && commands.isEnabled(id);
      if (button.disabled === enabled) {
        button.disabled = !enabled;
      }
    };
    enable(this._runAll, CommandIDs.runAll);
    enable(this._runChanged, CommandIDs.runChanged);
    enable(this._runSelected, CommandIDs.runSelected);
    enable(this._cancel, CommandIDs.cancel);
    enable(this._showGraph, CommandIDs.showGraph);
    const count = session?.plan?.rerun_count;
    setText(
      this._runChanged,
      count === undefined || count === null
        ? 'Run changed'
        : `Run changed (${count})`
    );
    this._runChanged.dataset.count =
      count === undefined || count === null ? '' : String(count);
  }

  private _renderStatus(): void {
    const { text, state, title } = statusLine(this._session);
    setText(this._statusText, text);
    this._status.title = title ?? text;
    this._retry.hidden = !this._session?.serverError;
    if (this._status.dataset.state !== state) {
      this._status.dataset.state = state;
    }
  }

  private _renderInputs(): void {
    const inputs = this._session?.graph?.inputs ?? [];
    const text = inputs.length
      ? `Parameters: ${inputs.map(i => `${i.name} (${i.type}${i.default !== undefined ? ` = ${JSON.stringify(i.default)}` : ''})`).join(', ')}`
      : '';
    setText(this._inputs, text);
    this._inputs.hidden = !text;
  }

  /** The steps and why each is a step: the reasons `nb2cwl explain` gives. */
  private _renderSteps(): void {
    const steps = this._session?.graph?.steps ?? [];
    const key = JSON.stringify(
      steps.map(s => [s.name, s.shown, s.deployment, s.reasons ?? s.reason])
    );
    if (key === this._stepsKey) {
      return;
    }
    this._stepsKey = key;
    const open = this._steps.open;
    this._steps.textContent = '';
    this._steps.hidden = steps.length === 0;
    const count = `${steps.length} step${steps.length === 1 ? '' : 's'}`;
    this._steps.append(el('summary', { text: `Steps: ${count}, and why` }));
    const list = el('ul', { className: 'nb2cwl-steps-list' });
    for (const step of steps) {
      const item = el('li', { className: 'nb2cwl-step-item' });
      item.dataset.step = step.name;
      const cells = step.shown ? ` · ${step.shown}` : '';
      item.append(
        el('div', {
          className: 'nb2cwl-step-name',
          text: `${step.name}${cells} · ${step.deployment}`
        })
      );
      for (const reason of step.reasons ?? [step.reason ?? ''].filter(Boolean)) {
        item.append(el('div', { className: 'nb2cwl-step-reason', text: reason }));
      }
      list.append(item);
    }
    this._steps.append(list);
    this._steps.open = open;
  }


  /** Where "run again" of a "selected" run started elsewhere finds the selected cells. */
  set selection(provider: (() => string[]) | null) {
    this._selection = provider;
  }

  private _session: NotebookSession | null = null;
  private _frame = 0;
  private _deploymentsKey = '';
  private _selection: (() => string[]) | null = null;
  private _notebook: HTMLElement;
  private _deployment: HTMLSelectElement;
  private _granularity: HTMLSelectElement;
  private _runAll: HTMLButtonElement;
  private _runChanged: HTMLButtonElement;
  private _runSelected: HTMLButtonElement;
  private _cancel: HTMLButtonElement;
  private _showGraph: HTMLButtonElement;
  private _status: HTMLElement;
  private _statusText: HTMLElement;
  private _retry: HTMLButtonElement;
  private _inputs: HTMLElement;
  private _steps: HTMLDetailsElement;
  private _stepsKey = '';
  private _runList: RunList;
}
