/**
 * The nb2cwl commands; they act on the current notebook.
 *
 * The run commands take optional `{deployment: string, granularity: 'auto' |
 * 'cell'}` arguments (else the side panel's choices) and resolve to the new
 * run's id. They send the
 * notebook's current content, unsaved edits included, and never save it.
 */
import type { ICommandPalette } from '@jupyterlab/apputils';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { CommandRegistry } from '@lumino/commands';
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import type { Granularity, RunMode } from './api';
import { nb2cwlIcon } from './icon';
import type { SessionManager } from './manager';
import type { NotebookSession } from './session';

export namespace CommandIDs {
  export const runAll = 'nb2cwl:run-all';
  export const runChanged = 'nb2cwl:run-changed';
  export const runSelected = 'nb2cwl:run-selected';
  export const cancel = 'nb2cwl:cancel';
  export const showGraph = 'nb2cwl:show-graph';
  export const showPanel = 'nb2cwl:show-panel';
}

const RUN_ARGS_SCHEMA = {
  type: 'object' as const,
  properties: {
    deployment: {
      type: 'string',
      description: "The deployment to run on (default: the side panel's choice)"
    },
    granularity: {
      type: 'string',
      enum: ['auto', 'cell'],
      description:
        "Where step boundaries go: 'auto' (where they pay) or 'cell' (one step per cell; default: the side panel's choice)"
    }
  }
};

/** The ids of the notebook's selected (or active) code cells, in order. */
export function selectedCellIds(panel: NotebookPanel): string[] {
  const notebook = panel.content;
  return notebook.widgets
    .filter(
      cell => cell.model.type === 'code' && notebook.isSelectedOrActive(cell)
    )
    .map(cell => cell.model.id);
}

export interface ICommandsOptions {
  commands: CommandRegistry;
  manager: SessionManager;
  currentPanel: () => NotebookPanel | null;
  showGraph: (session: NotebookSession) => void;
  palette?: ICommandPalette | null;
}

/**
 * Register the commands (and put them in the palette when there is one).
 */
export function registerCommands(options: ICommandsOptions): void {
  const { commands, manager, currentPanel, showGraph, palette } = options;

  const current = (): NotebookSession => {
    const session = manager.current;
    if (!session) {
      throw new Error('nb2cwl: no current notebook');
    }
    return session;
  };
  const canRun = (): boolean => {
    const session = manager.current;
    return (
      !!session &&
      !session.isStarting &&
      !session.isRunActive &&
      !session.serverError
    );
  };
  const run =
    (mode: RunMode) =>
    (args: ReadonlyPartialJSONObject): Promise<string> => {
      const session = current();
      const deployment =
        typeof args.deployment === 'string' && args.deployment
          ? args.deployment
          : undefined;
      let cells: string[] | undefined;
      if (mode === 'selected') {
        const given = args.cells;
        if (Array.isArray(given)) {
          cells = given.map(String);
        } else {
          const panel = currentPanel();
          cells = panel ? selectedCellIds(panel) : [];
        }
      }
      const granularity =
        args.granularity === 'auto' || args.granularity === 'cell'
          ? (args.granularity as Granularity)
          : undefined;
      return session.startRun(mode, { deployment, granularity, cells });
    };

  commands.addCommand(CommandIDs.runAll, {
    label: 'Run All Steps (nb2cwl)',
    caption:
      'Run every step of the notebook as a workflow (unsaved edits included)',
    icon: nb2cwlIcon,
    describedBy: { args: RUN_ARGS_SCHEMA },
    isEnabled: canRun,
    execute: run('all')
  });
  commands.addCommand(CommandIDs.runChanged, {
    label: () => {
      const count = manager.current?.plan?.rerun_count;
      return count === undefined || count === null
        ? 'Run Changed Steps (nb2cwl)'
        : `Run Changed Steps (${count}) (nb2cwl)`;
    },
    caption: 'Run the steps an edit affects; reuse the others',
    icon: nb2cwlIcon,
    describedBy: { args: RUN_ARGS_SCHEMA },
    isEnabled: canRun,
    execute: run('changed')
  });
  commands.addCommand(CommandIDs.runSelected, {
    label: 'Run Selected Cells as Steps (nb2cwl)',
    caption: 'Run the selected cells and the cells they need',
    icon: nb2cwlIcon,
    describedBy: {
      args: {
        type: 'object' as const,
        properties: {
          ...RUN_ARGS_SCHEMA.properties,
          cells: {
            type: 'array',
            items: { type: 'string' },
            description: 'Cell ids (default: the selected cells)'
          }
        }
      }
    },
    isEnabled: canRun,
    execute: run('selected')
  });
  commands.addCommand(CommandIDs.cancel, {
    label: 'Cancel the Run (nb2cwl)',
    caption: "Stop the current notebook's run and every process it started",
    isEnabled: () => !!manager.current?.isRunActive,
    execute: () => current().cancel()
  });
  commands.addCommand(CommandIDs.showGraph, {
    label: 'Show the Step Graph (nb2cwl)',
    caption: "Show the current notebook's steps as a graph",
    icon: nb2cwlIcon,
    isEnabled: () => !!manager.current,
    execute: () => {
      showGraph(current());
    }
  });

  if (palette) {
    const category = 'nb2cwl';
    for (const command of [
      CommandIDs.runAll,
      CommandIDs.runChanged,
      CommandIDs.runSelected,
      CommandIDs.cancel,
      CommandIDs.showGraph
    ]) {
      palette.addItem({ command, category });
    }
  }
}
