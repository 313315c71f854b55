/**
 * The states of a run, its steps and its cells as the front end keeps them,
 * and how statuses compare: a final status, a cell's badge status, and the
 * more advanced of two run statuses (a late answer never undoes an end).
 */
import { FINAL_RUN_STATUSES, type IRun } from './api';

/** The statuses a cell badge shows. */
export type CellStatus =
  | 'idle'
  | 'stale'
  | 'queued'
  | 'running'
  | 'done'
  | 'cached'
  | 'failed'
  | 'cancelled'
  | 'skipped';

/** Every status a badge can show, in the order a run goes through them. */
export const CELL_STATUSES: ReadonlyArray<string> = [
  'idle',
  'stale',
  'queued',
  'running',
  'done',
  'cached',
  'failed',
  'cancelled',
  'skipped'
];

/** A step's live state in the followed run. */
export interface IStepRunState {
  status: string;
  where?: string;
  startedAt?: number;
  elapsed?: number;
  shards?: number;
  /** The shard most recently reported (1-based). */
  shard?: number;
  shardsDone: Set<number>;
  shardsRunning: Set<number>;
  /** cells, split, map, gather, training, assemble (from the events or the graph). */
  role?: string;
  message?: string;
}

/** A cell's own state, from `cell` and `output` events. */
export interface ICellRunState {
  status: CellStatus;
  startedAt?: number;
  elapsed?: number;
  executionCount?: number | null;
}

/** A cell's state in one run. */
export interface ICellRunPart {
  status: CellStatus;
  elapsed: number | null;
  where: string | null;
}

export const now = (): number => Date.now() / 1000;

export function isFinal(status: string | undefined | null): boolean {
  return !!status && FINAL_RUN_STATUSES.includes(status);
}

export function toCellStatus(status: string | undefined): CellStatus {
  return status && CELL_STATUSES.includes(status)
    ? (status as CellStatus)
    : 'idle';
}

/** Statuses only move forward: a late answer never undoes a final status. */
export function mostAdvanced(
  a: IRun['status'],
  b: IRun['status']
): IRun['status'] {
  const rank = (s: string): number => (isFinal(s) ? 2 : s === 'running' ? 1 : 0);
  return rank(b) >= rank(a) ? b : a;
}
