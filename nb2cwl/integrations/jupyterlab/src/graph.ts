/**
 * The graph view: the notebook's steps as a DAG (the server's SVG), coloured
 * live during a run; clicking a step selects its first cell in the notebook.
 */
import { MainAreaWidget } from '@jupyterlab/apputils';
import type { IDisposable } from '@lumino/disposable';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { shardText } from './format';
import { nb2cwlIcon } from './icon';
import { CELL_STATUSES } from './run_states';
import type { NotebookSession } from './session';

export const GRAPH_ID = 'nb2cwl-graph';

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * Parse the server's SVG, keeping drawing only: no scripts, no foreign
 * content, no event handler attributes, no javascript: links.
 */
export function parseSvg(source: string): SVGSVGElement | null {
  const doc = new DOMParser().parseFromString(source, 'image/svg+xml');
  const root = doc.documentElement;
  if (
    !root ||
    root.nodeName.toLowerCase() !== 'svg' ||
    doc.querySelector('parsererror')
  ) {
    return null;
  }
  for (const bad of Array.from(
    root.querySelectorAll('script, foreignObject, iframe, object, embed')
  )) {
    bad.remove();
  }
  for (const element of [root, ...Array.from(root.querySelectorAll('*'))]) {
    for (const attr of Array.from(element.attributes)) {
      const name = attr.name.toLowerCase();
      const value = attr.value.trim().toLowerCase();
      if (name.startsWith('on')) {
        element.removeAttribute(attr.name);
      } else if (
        (name === 'href' || name.endsWith(':href')) &&
        value.startsWith('javascript:')
      ) {
        element.removeAttribute(attr.name);
      }
    }
  }
  return document.importNode(root, true) as unknown as SVGSVGElement;
}

/** The statuses a step's box can show (a badge's, but stale: that is a cell's). */
const STATUSES = CELL_STATUSES.filter(status => status !== 'stale');

/** What the colours of the boxes mean (the same colours as the boxes'). */
function statusLegend(): HTMLElement {
  const legend = document.createElement('div');
  legend.className = 'nb2cwl-graph-legend';
  legend.dataset.testid = 'nb2cwl-graph-legend';
  for (const status of STATUSES) {
    const item = document.createElement('span');
    item.className = 'nb2cwl-graph-legend-item';
    item.dataset.status = status;
    item.textContent = status;
    legend.appendChild(item);
  }
  return legend;
}

/**
 * The content of the graph view, bound to one notebook's session at a time.
 */
export class GraphContent extends Widget {
  constructor() {
    super();
    this.addClass('nb2cwl-graph-content');
    this._message = document.createElement('div');
    this._message.className = 'nb2cwl-graph-message';
    this._message.dataset.testid = 'nb2cwl-graph-message';
    this._canvas = document.createElement('div');
    this._canvas.className = 'nb2cwl-graph-canvas';
    this.node.append(this._message, this._canvas, statusLegend());
    this._canvas.addEventListener('click', this._onClick);
  }

  get session(): NotebookSession | null {
    return this._session;
  }

  set session(session: NotebookSession | null) {
    if (session === this._session) {
      return;
    }
    if (this._session) {
      this._session.changed.disconnect(this._update, this);
    }
    this._session = session;
    this._svgSource = null;
    if (session) {
      session.changed.connect(this._update, this);
      if (!session.graph) {
        void session.refreshGraphAndPlan();
      }
    }
    this._update();
  }

  dispose(): void {
    this._canvas.removeEventListener('click', this._onClick);
    Signal.clearData(this);
    super.dispose();
  }

  private _update(): void {
    const session = this._session;
    if (!session) {
      this._message.textContent = 'No notebook.';
      this._canvas.textContent = '';
      this._svgSource = null;
      return;
    }
    const graph = session.graph;
    const problems = [session.serverError, session.analysisError].filter(
      Boolean
    );
    this._message.textContent = problems.length
      ? problems.join('; ')
      : graph
        ? `${session.path}: ${graph.steps.length} step${graph.steps.length === 1 ? '' : 's'}`
        : 'Computing the graph…';
    this._message.dataset.state = problems.length ? 'error' : 'ok';
    if (graph && graph.svg !== this._svgSource) {
      this._svgSource = graph.svg;
      this._canvas.textContent = '';
      const svg = parseSvg(graph.svg);
      if (svg) {
        svg.classList.add('nb2cwl-graph-svg');
        this._canvas.appendChild(svg);
      } else {
        this._canvas.textContent = 'The server sent no drawable graph.';
      }
    }
    this._colour();
  }

  /** Set each node's `data-status` and shard text from the run's step states. */
  private _colour(): void {
    const session = this._session;
    if (!session) {
      return;
    }
    // the steps, and what shows a step's status (the executed notebook: the last step's)
    const nodes = this._canvas.querySelectorAll<SVGGElement>(
      'g.nb2cwl-shows-status'
    );
    for (const node of Array.from(nodes)) {
      const name = node.getAttribute('data-step') ?? '';
      const state = session.stepState(name);
      const graphStep = session.graphStep(name);
      const status = state?.status ?? 'idle';
      if (node.getAttribute('data-status') !== status) {
        node.setAttribute('data-status', status);
      }
      const shards = state?.shards ?? graphStep?.shards ?? null;
      const text = shards
        ? shardText({
            status,
            shard: state?.shard ?? null,
            shards,
            shardsDone: state ? state.shardsDone.size : null
          })
        : '';
      const elapsed = state ? session.stepElapsed(state) : null;
      const tooltip = [
        `${name}: ${status}`,
        state?.where ?? graphStep?.deployment ?? '',
        elapsed !== null ? `${elapsed.toFixed(1)} s` : '',
        shards ? `${shards} shards` : '',
        graphStep?.reason ?? '',
        state?.message ?? ''
      ]
        .filter(Boolean)
        .join('\n');
      this._setProgress(node, text, tooltip);
    }
  }

  private _setProgress(node: SVGGElement, text: string, tooltip: string): void {
    let title = node.querySelector(':scope > title.nb2cwl-status-title');
    if (!title) {
      title = document.createElementNS(SVG_NS, 'title');
      title.classList.add('nb2cwl-status-title');
      node.appendChild(title);
    }
    if (title.textContent !== tooltip) {
      title.textContent = tooltip;
    }
    let label = node.querySelector(
      ':scope > text.nb2cwl-shard-progress'
    ) as SVGTextElement | null;
    if (!text) {
      label?.remove();
      return;
    }
    if (!label) {
      label = document.createElementNS(SVG_NS, 'text') as SVGTextElement;
      label.classList.add('nb2cwl-shard-progress');
      label.setAttribute('data-testid', 'nb2cwl-shard-progress');
      label.setAttribute('text-anchor', 'end');
      node.appendChild(label);
    }
    if (!label.hasAttribute('x')) {
      // Above the node's shape, right-aligned (once it is laid out).
      const shape = node.querySelector(
        'rect, ellipse, polygon, circle, path'
      ) as SVGGraphicsElement | null;
      try {
        const box = (shape ?? node).getBBox();
        if (box.width > 0) {
          label.setAttribute('x', String(box.x + box.width));
          label.setAttribute('y', String(box.y - 3));
        }
      } catch {
        // not rendered yet
      }
    }
    if (label.textContent !== text) {
      label.textContent = text;
    }
  }

  private _onClick = (event: MouseEvent): void => {
    const target = event.target as Element | null;
    const node = target?.closest('g.nb2cwl-node');
    const name = node?.getAttribute('data-step');
    if (!name || !this._session) {
      return;
    }
    this._stepClicked.emit({ session: this._session, step: name });
  };

  /** Emitted when a step node is clicked. */
  get stepClicked(): Signal<this, { session: NotebookSession; step: string }> {
    return this._stepClicked;
  }

  private _session: NotebookSession | null = null;
  private _svgSource: string | null = null;
  private _message: HTMLElement;
  private _canvas: HTMLElement;
  private _stepClicked = new Signal<
    this,
    { session: NotebookSession; step: string }
  >(this);
}

/** The graph view's main-area widget. */
export class GraphView
  extends MainAreaWidget<GraphContent>
  implements IDisposable
{
  constructor() {
    super({ content: new GraphContent() });
    this.id = GRAPH_ID;
    this.node.dataset.testid = GRAPH_ID;
    this.addClass('nb2cwl-graph');
    this.title.icon = nb2cwlIcon;
    this.title.closable = true;
    this.title.label = 'nb2cwl graph';
  }

  /** Show that notebook's graph. */
  bind(session: NotebookSession): void {
    this.content.session = session;
    const name = session.path.split('/').pop() ?? session.path;
    this.title.label = `Graph: ${name}`;
    this.title.caption = `nb2cwl steps of ${session.path}`;
  }
}
