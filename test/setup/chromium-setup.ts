import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CHROMIUM_PATH } from '../support-api/chromium.js';

// Browser tests drive Debian's Chromium. Like redis-server for the native stack, it is installed
// from Debian's packages when missing and we are root (infra/ensure-package.sh); otherwise the
// run stops here with the one command to run.
export default function setup(): void {
  if (process.env.CHROMIUM_PATH) {
    if (!existsSync(CHROMIUM_PATH)) {
      throw new Error(
        `CHROMIUM_PATH=${CHROMIUM_PATH} does not exist: point it at a Chromium binary.`,
      );
    }
    return;
  }
  const script = fileURLToPath(new URL('../../infra/ensure-package.sh', import.meta.url));
  const ensured = spawnSync('bash', [script, CHROMIUM_PATH, 'chromium'], { stdio: 'inherit' });
  if (ensured.status !== 0) {
    throw new Error(
      `Chromium not found at ${CHROMIUM_PATH}: install it with \`sudo apt-get install -y chromium\` ` +
        '(or set CHROMIUM_PATH to a Chromium binary).',
    );
  }
}
