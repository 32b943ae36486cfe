// Package util/ — small helpers with no podsync knowledge.
// Imports nothing of podsync's.
//
// One-at-a-time sections (the node-wide admission step, a PUT's apply, the file store's writes): an async
// mutex without a queue object; each call runs after the previous one settled, whatever its outcome.
export type Serial = <T>(fn: () => Promise<T>) => Promise<T>;

export function serialQueue(): Serial {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}
