// kafkajs 2.2.4 arms its request queue's throttle check with `throttledUntil - Date.now()`, a
// negative delay while nothing throttles (kafkajs issue 1751, unfixed). Node has always run such
// a timer after 1 ms; since Node 23 it also prints a TimeoutNegativeWarning, on every process
// start, into every log. Only that warning type is dropped; every other one is emitted as before.
// (NODE_OPTIONS=--disable-warning would do the same but replace a user's own NODE_OPTIONS.)

let installed = false;

export function dropNegativeTimeoutWarning(): void {
  if (installed) return;
  installed = true;
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: unknown, ...rest: unknown[]) => {
    const options = rest[0];
    const type =
      typeof options === 'string' ? options : (options as { type?: string } | undefined)?.type;
    if (type !== 'TimeoutNegativeWarning') emit(warning, ...rest);
  }) as typeof process.emitWarning;
}
