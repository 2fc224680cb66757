import { appendFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Figures a test measures on its way (latencies, the codec table) go to a file, not the test
// output, so that output shows failures only: .local/test-figures/<name>.log, one stamped entry
// per run appended.
const DIR = fileURLToPath(new URL('../../.local/test-figures/', import.meta.url));

export function recordFigures(name: string, text: string): void {
  mkdirSync(DIR, { recursive: true });
  appendFileSync(`${DIR}${name}.log`, `${new Date().toISOString()}\n${text}\n\n`);
}
