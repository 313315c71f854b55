/**
 * Which cells of a reopened notebook show a finished run's results.
 *
 * A run never writes the notebook: its outputs reach the cells of the page
 * that follows it, and stay there only if the user saves. A page opened
 * later follows the same run; a cell that does not show that run's results
 * (no execution count, or another one) gets no badge from it, since a badge
 * says what happened to the cell as the notebook shows it.
 */
import type { ICodeCellModel } from '@jupyterlab/cells';
import type { INotebookModel } from '@jupyterlab/notebook';

import type { ICellState } from './api';

/** The statuses that claim a result the cell should show. */
const WITH_RESULTS = ['done', 'cached', 'failed'];

/** The ids of the cells whose shown execution count is not the run's. */
export function cellsNotShowing(
  model: INotebookModel | null,
  ran: { [cellId: string]: ICellState }
): Set<string> {
  const shown = new Map<string, number | null>();
  for (const cell of model ? model.cells : []) {
    if (cell.type === 'code') {
      shown.set(cell.id, (cell as ICodeCellModel).executionCount ?? null);
    }
  }
  const hidden = new Set<string>();
  for (const [id, state] of Object.entries(ran)) {
    if (!shown.has(id) || !WITH_RESULTS.includes(String(state.status))) {
      continue;
    }
    const count = shown.get(id) ?? null;
    const own =
      typeof state.execution_count === 'number' ? state.execution_count : null;
    if (count === null || (own !== null && own !== count)) {
      hidden.add(id);
    }
  }
  return hidden;
}
