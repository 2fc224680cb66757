import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// What the generator tests run besides the project's own devDependencies: tools installed once
// per machine under .local/generators/ (kept across runs, rebuilt when their pinned version
// changes), and Maven artifacts from Maven Central through the machine's mvn.

export const ROOT = join(import.meta.dirname, '../../..');
const CACHE = join(ROOT, '.local/generators');

/** Runs a command; on failure the error carries its output. */
export function run(
  cmd: string,
  args: readonly string[],
  cwd: string,
  timeoutMs = 240_000,
): string {
  try {
    return execFileSync(cmd, args, {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: timeoutMs,
      env: { ...process.env, PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}` },
    });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${cmd} ${args.join(' ')} failed: ${err.message}\n${err.stdout ?? ''}\n${err.stderr ?? ''}`,
    );
  }
}

/**
 * npm packages in a directory of their own, for a tool that cannot live in the project's tree:
 * `name` is the directory, `packages` the exact specs (a new spec makes a new directory).
 */
export function npmTool(name: string, packages: readonly string[]): string {
  const dir = join(CACHE, `${name}-${packages.join('+').replaceAll(/[^\w.+-]/g, '_')}`);
  if (existsSync(join(dir, 'node_modules/.done'))) return dir;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "private": true }\n');
  run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--no-save', ...packages],
    dir,
    480_000,
  );
  writeFileSync(join(dir, 'node_modules/.done'), '');
  return dir;
}

/** Makes sure a program is there (infra/ensure-package.sh: Debian's package when missing). */
export function ensureCommand(command: string, debianPackage: string): void {
  run('bash', [join(ROOT, 'infra/ensure-package.sh'), command, debianPackage], ROOT, 480_000);
}

/** Jars of Maven artifacts (`group:artifact:version`) and what they depend on, as a classpath. */
export function mavenClasspath(name: string, artifacts: readonly string[]): string {
  const dir = join(CACHE, `maven-${name}`);
  const lib = join(dir, 'lib');
  if (!existsSync(join(lib, '.done'))) {
    mkdirSync(dir, { recursive: true });
    const deps = artifacts
      .map((a) => a.split(':'))
      .map(
        ([g, a, v]) =>
          `<dependency><groupId>${g}</groupId><artifactId>${a}</artifactId><version>${v}</version></dependency>`,
      )
      .join('');
    writeFileSync(
      join(dir, 'pom.xml'),
      `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion><groupId>t</groupId><artifactId>${name}</artifactId><version>1</version><dependencies>${deps}</dependencies></project>\n`,
    );
    run(
      'mvn',
      ['-q', '-B', 'dependency:copy-dependencies', `-DoutputDirectory=${lib}`],
      dir,
      480_000,
    );
    writeFileSync(join(lib, '.done'), '');
  }
  return readdirSync(lib)
    .filter((f) => f.endsWith('.jar'))
    .map((f) => join(lib, f))
    .join(':');
}

/** Every file under `dir` whose name ends with `ext`. */
export function filesUnder(dir: string, ext: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith(ext))
    .map((f) => join(dir, f));
}
