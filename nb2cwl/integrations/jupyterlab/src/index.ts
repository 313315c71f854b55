/**
 * nb2cwl's JupyterLab 4 / Notebook 7 extension: one plugin.
 */
import {
  ILabShell,
  ILayoutRestorer,
  type JupyterFrontEnd,
  type JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IMainMenu } from '@jupyterlab/mainmenu';
import { INotebookTracker, type NotebookPanel } from '@jupyterlab/notebook';

import { Nb2cwlApi } from './api';
import { CommandIDs, registerCommands, selectedCellIds } from './commands';
import { GraphView } from './graph';
import { SessionManager } from './manager';
import { placeCommands } from './menus';
import type { NotebookSession } from './session';
import { Nb2cwlSidebar } from './sidebar';

export { CommandIDs } from './commands';

/** Select (and scroll to) the first cell of a step in its notebook. */
async function revealStep(
  app: JupyterFrontEnd,
  session: NotebookSession,
  step: string
): Promise<void> {
  const panel = session.panel;
  if (panel.isDisposed) {
    return;
  }
  const cells = new Set(session.graphStep(step)?.cells ?? []);
  const notebook = panel.content;
  const index = notebook.widgets.findIndex(cell => cells.has(cell.model.id));
  app.shell.activateById(panel.id);
  if (index < 0) {
    return;
  }
  notebook.deselectAll();
  notebook.activeCellIndex = index;
  notebook.mode = 'command';
  const cell = notebook.widgets[index];
  await notebook.scrollToCell(cell, 'center');
  cell.node.focus();
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'nb2cwl-jupyterlab:plugin',
  description:
    'Run a notebook as a StreamFlow workflow with nb2cwl: side panel, cell badges, live outputs, step graph.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette, ILayoutRestorer, ILabShell, IMainMenu],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    labShell: ILabShell | null,
    mainMenu: IMainMenu | null
  ) => {
    const api = new Nb2cwlApi(app.serviceManager.serverSettings);
    const manager = new SessionManager(api, tracker, app.serviceManager.events);

    const sidebar = new Nb2cwlSidebar(app.commands, api);
    sidebar.selection = () => {
      const panel = tracker.currentWidget;
      return panel ? selectedCellIds(panel) : [];
    };
    sidebar.session = manager.current;
    manager.currentChanged.connect((_, session) => {
      sidebar.session = session;
      app.commands.notifyCommandChanged();
    });
    app.shell.add(sidebar, 'left', { rank: 1000 });
    restorer?.add(sidebar, sidebar.id);

    let graph: GraphView | null = null;
    const showGraph = (session: NotebookSession): void => {
      if (!graph || graph.isDisposed) {
        graph = new GraphView();
        graph.content.stepClicked.connect((_, { session, step }) => {
          void revealStep(app, session, step);
        });
      }
      graph.bind(session);
      if (!graph.isAttached) {
        if (labShell) {
          app.shell.add(graph, 'main', {
            mode: 'split-right',
            ref: session.panel.id
          });
        } else {
          // Notebook 7's notebook page keeps one main widget: use its right side panel.
          app.shell.add(graph, 'right', { rank: 1000 });
        }
      }
      app.shell.activateById(graph.id);
    };
    // Forget the graph's notebook when it closes.
    tracker.widgetAdded.connect((_, panel: NotebookPanel) => {
      panel.disposed.connect(() => {
        if (
          graph &&
          !graph.isDisposed &&
          graph.content.session?.panel === panel
        ) {
          graph.content.session = null;
        }
      });
    });

    registerCommands({
      commands: app.commands,
      manager,
      currentPanel: () => tracker.currentWidget,
      showGraph,
      palette
    });

    placeCommands(app, tracker, mainMenu, sidebar);

    // Keep the commands' enabled state (buttons, palette) in step with runs.
    manager.eventReceived.connect((_, event) => {
      if (event.kind === 'run') {
        app.commands.notifyCommandChanged();
      }
    });

    console.debug(
      `nb2cwl-jupyterlab: activated (${Object.values(CommandIDs).join(', ')})`
    );
  }
};

export default plugin;
