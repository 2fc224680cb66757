import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

// Debian's Chromium, headless, isolated profile, no background network traffic.
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launchChromium(): Promise<{
  browser: BrowserContext;
  close(): Promise<void>;
}> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium not found at ${CHROMIUM_PATH}: the browser project's setup installs it as root; ` +
        'otherwise run `sudo apt-get install -y chromium` or point CHROMIUM_PATH at a Chromium binary.',
    );
  }
  const profile = mkdtempSync(join(tmpdir(), 'api-browser-'));
  // A temporary --user-data-dir: playwright takes it as the persistent context's directory.
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
