/**
 * How times, shard progress and errors are shown.
 */

/** Seconds, the way badges and the runs list show them. */
export function formatSeconds(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) {
    return '';
  }
  if (seconds < 60) {
    return `${seconds.toFixed(1)} s`;
  }
  const total = Math.round(seconds);
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const secs = total % 60;
  return hours > 0
    ? `${hours} h ${minutes} min`
    : `${minutes} min ${secs.toString().padStart(2, '0')} s`;
}

/** The shard progress of a map step's cell, e.g. `shard 2/4`. */
export function shardText(view: {
  status: string;
  shard: number | null;
  shards: number | null;
  shardsDone: number | null;
}): string {
  if (!view.shards) {
    return '';
  }
  if (['done', 'cached'].includes(view.status)) {
    return `shard ${view.shards}/${view.shards}`;
  }
  if (view.shard) {
    return `shard ${view.shard}/${view.shards}`;
  }
  if (view.shardsDone) {
    return `shard ${view.shardsDone}/${view.shards}`;
  }
  return `${view.shards} shards`;
}

/** A run's start time, `2026-11-25 20:30:00` (local time). */
export function formatStart(epoch: number): string {
  if (!epoch) {
    return '';
  }
  const date = new Date(epoch * 1000);
  const pad = (n: number): string => n.toString().padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/**
 * A one-line summary of an error: its first line, with the exception line
 * (`ZeroDivisionError: division by zero`) when it comes later.
 */
export function oneLine(message: string | null | undefined): string {
  const lines = (message ?? '')
    .split('\n')
    .map(line => line.trim())
    .filter(Boolean);
  if (lines.length <= 1) {
    return lines[0] ?? '';
  }
  const head = lines[0];
  const error = lines.find(line =>
    /^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b/.test(line)
  );
  return error && !head.includes(error)
    ? `${head.replace(/:$/, '')}: ${error}`
    : head;
}
