/**
 * nb2cwl where Jupyter users look for a way to run: the Run menu, the cells'
 * context menu, the notebook toolbar and a keyboard shortcut; and a command
 * that shows the side panel (Notebook 7 has no tab for it).
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { IMainMenu } from '@jupyterlab/mainmenu';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { CommandToolbarButton } from '@jupyterlab/ui-components';
import type { Widget } from '@lumino/widgets';

import { CommandIDs } from './commands';
import { nb2cwlIcon } from './icon';

/** Run all the steps: Alt+Shift+R in a notebook (no JupyterLab binding uses it). */
export const RUN_ALL_KEYS = ['Alt Shift R'];

export function placeCommands(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  mainMenu: IMainMenu | null,
  panel: Widget
): void {
  app.commands.addCommand(CommandIDs.showPanel, {
    label: 'nb2cwl',
    caption: 'Show the nb2cwl panel: run the notebook as a workflow',
    icon: nb2cwlIcon,
    execute: () => {
      app.shell.activateById(panel.id);
    }
  });
  if (mainMenu) {
    mainMenu.runMenu.addGroup(
      [
        { command: CommandIDs.runAll },
        { command: CommandIDs.runChanged },
        { command: CommandIDs.runSelected },
        { command: CommandIDs.cancel }
      ],
      1000
    );
    mainMenu.viewMenu.addGroup(
      [{ command: CommandIDs.showPanel }, { command: CommandIDs.showGraph }],
      1000
    );
  }
  const cells = '.jp-Notebook .jp-Cell';
  app.contextMenu.addItem({ type: 'separator', selector: cells, rank: 1000 });
  app.contextMenu.addItem({
    command: CommandIDs.runSelected,
    selector: cells,
    rank: 1001
  });
  app.contextMenu.addItem({
    command: CommandIDs.runAll,
    selector: cells,
    rank: 1002
  });
  app.commands.addKeyBinding({
    command: CommandIDs.runAll,
    keys: RUN_ALL_KEYS,
    selector: '.jp-Notebook'
  });
  tracker.widgetAdded.connect((_, notebook: NotebookPanel) => {
    notebook.toolbar.insertItem(
      10,
      'nb2cwl',
      new CommandToolbarButton({
        commands: app.commands,
        id: CommandIDs.showPanel,
        label: 'nb2cwl'
      })
    );
  });
}
