// A strict reader of the OpenMetrics 1.0 text format, for tests: it throws on what the
// specification forbids that a writer could get wrong here (a sample outside its family or
// with a suffix its type does not have, a family split or repeated, a missing `# EOF`, an
// exemplar where none may be, over 128 characters of exemplar labels, or outside its bucket,
// buckets not cumulative or not ending at +Inf = _count), and returns the families read.

export interface OmExemplar {
  readonly labels: Record<string, string>;
  readonly value: number;
  readonly timestamp: number | undefined;
}

export interface OmSample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
  readonly exemplar: OmExemplar | undefined;
}

export interface OmFamily {
  readonly name: string;
  type: string;
  help: string | undefined;
  readonly samples: OmSample[];
}

const SUFFIXES: Record<string, readonly string[]> = {
  counter: ['_total', '_created'],
  gauge: [''],
  histogram: ['_bucket', '_count', '_sum', '_created'],
  gaugehistogram: ['_bucket', '_gcount', '_gsum'],
  summary: ['', '_count', '_sum', '_created'],
  info: ['_info'],
  stateset: [''],
  unknown: [''],
};
const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

function number(text: string, line: string): number {
  if (text === '+Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  if (text === 'NaN') return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text))
    throw new Error(`bad number in: ${line}`);
  return Number(text);
}

/** `{a="x",b="y"}` from `at` (its `{`); the labels and the index after `}`. */
function labelsAt(line: string, at: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = at + 1;
  if (line[i] === '}') return { labels, end: i + 1 };
  for (;;) {
    const eq = line.indexOf('=', i);
    const name = line.slice(i, eq);
    if (!NAME.test(name) || line[eq + 1] !== '"') throw new Error(`bad label in: ${line}`);
    let value = '';
    i = eq + 2;
    while (line[i] !== '"') {
      if (i >= line.length) throw new Error(`unterminated label in: ${line}`);
      if (line[i] === '\\') {
        const next = line[i + 1];
        value += next === 'n' ? '\n' : next;
        i += 2;
      } else value += line[i++];
    }
    if (name in labels) throw new Error(`repeated label ${name} in: ${line}`);
    labels[name] = value;
    i++;
    if (line[i] === '}') return { labels, end: i + 1 };
    if (line[i] !== ',') throw new Error(`bad label separator in: ${line}`);
    i++;
  }
}

function sampleOf(line: string): OmSample & { exemplarText: string | undefined } {
  const brace = line.indexOf('{');
  const space = line.indexOf(' ');
  const nameEnd = brace >= 0 && brace < space ? brace : space;
  const name = line.slice(0, nameEnd);
  if (!NAME.test(name)) throw new Error(`bad metric name in: ${line}`);
  let labels: Record<string, string> = {};
  let restStart = nameEnd;
  if (nameEnd === brace) {
    const read = labelsAt(line, brace);
    labels = read.labels;
    restStart = read.end;
  }
  const rest = line.slice(restStart);
  if (!rest.startsWith(' ')) throw new Error(`no value in: ${line}`);
  const hash = rest.indexOf(' # ');
  const [valueText = '', timestamp, ...extra] = (
    hash >= 0 ? rest.slice(1, hash) : rest.slice(1)
  ).split(' ');
  if (extra.length > 0) throw new Error(`trailing text in: ${line}`);
  if (timestamp !== undefined) number(timestamp, line);
  let exemplar: OmExemplar | undefined;
  let exemplarText: string | undefined;
  if (hash >= 0) {
    const at = restStart + hash + 3;
    if (line[at] !== '{') throw new Error(`bad exemplar in: ${line}`);
    const read = labelsAt(line, at);
    exemplarText = line.slice(at + 1, read.end - 1);
    const [value = '', ts, ...more] = line.slice(read.end + 1).split(' ');
    if (line[read.end] !== ' ' || more.length > 0) throw new Error(`bad exemplar in: ${line}`);
    exemplar = {
      labels: read.labels,
      value: number(value, line),
      timestamp: ts === undefined ? undefined : number(ts, line),
    };
  }
  return { name, labels, value: number(valueText, line), exemplar, exemplarText };
}

export function parseOpenMetrics(text: string): OmFamily[] {
  if (!text.endsWith('# EOF\n')) throw new Error('no # EOF at the end');
  const lines = text.slice(0, -'# EOF\n'.length).split('\n');
  if (lines.at(-1) === '') lines.pop();
  const families: OmFamily[] = [];
  const seen = new Set<string>();
  let current: OmFamily | undefined;
  const family = (name: string) => {
    if (current?.name === name) return current;
    if (seen.has(name)) throw new Error(`family ${name} split or repeated`);
    seen.add(name);
    current = { name, type: 'unknown', help: undefined, samples: [] };
    families.push(current);
    return current;
  };
  for (const line of lines) {
    if (line === '') throw new Error('blank line');
    if (line.startsWith('#')) {
      const match = /^# (HELP|TYPE|UNIT) ([^ ]+)(?: (.*))?$/.exec(line);
      if (!match) throw new Error(`bad comment: ${line}`);
      const [, kind, name = '', rest = ''] = match;
      if (!NAME.test(name)) throw new Error(`bad family name: ${line}`);
      const f = family(name);
      if (f.samples.length > 0) throw new Error(`metadata after samples: ${line}`);
      if (kind === 'TYPE') {
        if (!(rest in SUFFIXES)) throw new Error(`bad type: ${line}`);
        f.type = rest;
      } else if (kind === 'HELP') f.help = rest;
      continue;
    }
    const sample = sampleOf(line);
    const f = current;
    const suffix = f && sample.name.startsWith(f.name) ? sample.name.slice(f.name.length) : null;
    if (!f || suffix === null || !SUFFIXES[f.type]?.includes(suffix))
      throw new Error(`sample outside its family: ${line}`);
    if (sample.exemplar) {
      const allowed =
        (f.type === 'counter' && suffix === '_total') ||
        ((f.type === 'histogram' || f.type === 'gaugehistogram') && suffix === '_bucket');
      if (!allowed) throw new Error(`exemplar not allowed here: ${line}`);
      const chars = Object.entries(sample.exemplar.labels).reduce(
        (n, [k, v]) => n + k.length + v.length,
        0,
      );
      if (chars > 128) throw new Error(`exemplar labels over 128 characters: ${line}`);
    }
    f.samples.push({
      name: sample.name,
      labels: sample.labels,
      value: sample.value,
      exemplar: sample.exemplar,
    });
  }
  for (const f of families) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

/** Per label set: buckets cumulative with rising bounds, +Inf = _count, exemplars in their bucket. */
function checkHistogram(f: OmFamily): void {
  const bySeries = new Map<string, OmSample[]>();
  for (const s of f.samples) {
    const { le: _le, ...rest } = s.labels;
    const key = JSON.stringify(rest);
    bySeries.set(key, [...(bySeries.get(key) ?? []), s]);
  }
  for (const [key, samples] of bySeries) {
    let previousBound = Number.NEGATIVE_INFINITY;
    let previousCount = 0;
    let last: number | undefined;
    for (const s of samples.filter((x) => x.name === `${f.name}_bucket`)) {
      const bound = number(s.labels.le ?? '', `${f.name} ${key}`);
      if (bound <= previousBound || s.value < previousCount)
        throw new Error(`${f.name} ${key}: buckets not rising and cumulative`);
      if (s.exemplar && !(s.exemplar.value <= bound && s.exemplar.value > previousBound))
        throw new Error(
          `${f.name} ${key}: exemplar ${s.exemplar.value} outside bucket le=${bound}`,
        );
      previousBound = bound;
      previousCount = s.value;
      last = s.value;
    }
    const count = samples.find((x) => x.name === `${f.name}_count`)?.value;
    if (previousBound !== Number.POSITIVE_INFINITY || last !== count)
      throw new Error(`${f.name} ${key}: no +Inf bucket equal to _count`);
  }
}
