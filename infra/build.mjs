// `npm run build`: compiles the service to dist/ (tsconfig.build.json), then copies the files the
// compiled code reads from disk next to it. The Lua scripts are loaded relative to their module
// (`new URL('./lua/', import.meta.url)`), so dist/ mirrors the source tree and each .lua lands
// beside the .js that loads it; no path in the code changes between tsx and compiled runs.
// Plain JavaScript on purpose: it runs before anything is compiled, with node alone.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, extname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist');
const SOURCE_DIRS = ['src', 'api', 'consumers', 'tools', 'infra'];
const ASSET_EXTENSIONS = new Set(['.lua']);

// A clean tree: tsc never deletes the output of a source file that was removed or renamed.
rmSync(out, { recursive: true, force: true });

const tsc = spawnSync(
  process.execPath,
  [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')],
  { stdio: 'inherit' },
);
if (tsc.status !== 0) process.exit(tsc.status ?? 1);

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else yield path;
  }
}

let copied = 0;
for (const dir of SOURCE_DIRS) {
  for (const file of files(join(root, dir))) {
    if (!ASSET_EXTENSIONS.has(extname(file))) continue;
    const target = join(out, relative(root, file));
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(file, target);
    copied += 1;
  }
}
process.stdout.write(`built dist/ (${copied} runtime assets copied)\n`);
