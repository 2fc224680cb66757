import { readFileSync } from 'node:fs';

// Top self-time functions of a V8 .cpuprofile (node --cpu-prof), and self time per package.

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface ProfileSummary {
  readonly totalMs: number;
  readonly top: Array<{ name: string; ms: number; share: number }>;
  readonly byPackage: Array<{ name: string; ms: number; share: number }>;
}

function packageOf(url: string): string {
  if (url === '') return '(native/idle/gc)';
  if (url.startsWith('node:')) return 'node core';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : (rest[0] ?? '?');
  }
  const m = /\/main\/(.+)$/.exec(url);
  return m ? `project ${m[1]?.split('/').slice(0, -1).join('/') || '.'}` : url;
}

export function summarizeProfile(file: string, limit = 20): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  let totalMs = 0;
  let idleMs = 0;
  for (const [id, ms] of self) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idleMs += ms;
      continue;
    }
    totalMs += ms;
    const file = url.replace(/^.*\/(node_modules\/|main\/)/, '');
    const name =
      `${functionName || '(anonymous)'} ${file ? `${file}:${lineNumber + 1}` : ''}`.trim();
    byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
    const pkg = packageOf(url);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + ms);
  }
  const rank = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, ms]) => ({ name, ms, share: ms / totalMs }));
  void idleMs;
  return { totalMs, top: rank(byFunction), byPackage: rank(byPackage) };
}

export function profileMarkdown(title: string, s: ProfileSummary): string {
  const lines = [
    `### ${title} (busy ${(s.totalMs / 1000).toFixed(1)} s sampled)`,
    '',
    '| self % | self ms | function |',
    '|---|---|---|',
  ];
  for (const t of s.top)
    lines.push(`| ${(t.share * 100).toFixed(1)} | ${t.ms.toFixed(0)} | \`${t.name}\` |`);
  lines.push('', '| self % | package |', '|---|---|');
  for (const p of s.byPackage) lines.push(`| ${(p.share * 100).toFixed(1)} | ${p.name} |`);
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: summarize-profile.ts <file.cpuprofile>');
  console.log(profileMarkdown(file, summarizeProfile(file)));
}
