import type { Registry } from 'prom-client';
import type { RegistryMetric } from '../../src/ops/open-metrics.js';

// A histogram whose label sets are fixed once per series: the caller keeps the series and each
// observation is a bucket search and three additions. prom-client's labelled observe validates
// and hashes the label set on every call (~1 µs, with the counter beside it ~1.6 µs per answered
// request, a tenth of a cached read's CPU). Registered in a prom-client Registry, which writes
// it in the exposition format exactly as its own Histogram: the values below have that shape
// (bucket counts cumulative, then +Inf, _sum and _count per series, series in first-use order).
// A sampled request's observation also keeps its span's ids as its bucket's exemplar, written
// only by `openMetric`, the same histogram for an OpenMetrics registry (src/ops/open-metrics.ts): the
// text format stays as prom-client writes it. An observation without a span does no more.

/** The span an observation was made in, kept as its bucket's exemplar. */
export interface ExemplarSpan {
  readonly traceId: string;
  readonly spanId: string;
}

export interface HistogramSeries {
  observe(value: number): void;
  /** observe, keeping the span's ids as the latest exemplar of the value's bucket. */
  observeSampled(value: number, span: ExemplarSpan): void;
  /** Observations so far (the request count of its label set). */
  readonly count: number;
}

interface Series extends HistogramSeries {
  readonly labels: Readonly<Record<string, string>>;
  readonly buckets: Float64Array;
  sum: number;
  count: number;
  /** Written by the Registry: false until observed, and again after a reset. */
  listed: boolean;
  /** Per bucket (+Inf last), its latest exemplar; null until a sampled observation. */
  exemplars: Array<Exemplar | undefined> | null;
}

/** As prom-client's Exemplar: the Registry writes `# {labelSet} value timestamp`. */
interface Exemplar {
  readonly labelSet: { readonly trace_id: string; readonly span_id: string };
  readonly value: number;
  /** Seconds since the epoch, as OpenMetrics writes timestamps. */
  readonly timestamp: number;
}

interface ExportedValue {
  labels: Record<string, string | number>;
  sharedLabels: Readonly<Record<string, string>>;
  value: number;
  metricName: string;
  /** As prom-client's without exemplars: null on buckets, undefined on _sum and _count. */
  exemplar: Exemplar | null | undefined;
}

export interface LabelledHistogram {
  /** The series of `labels`, created on first use; keep it and observe through it. */
  series(labels: Readonly<Record<string, string>>): HistogramSeries;
  /** The same histogram with its exemplars, for an OpenMetrics registry only. */
  readonly openMetric: RegistryMetric;
}

export function createLabelledHistogram(config: {
  name: string;
  help: string;
  buckets: readonly number[];
  registry: Registry;
}): LabelledHistogram {
  const { name, help } = config;
  const bounds = [...config.buckets].sort((a, b) => a - b);
  // Insertion order is the order the series are written in, as prom-client's own map keeps it.
  const all = new Map<string, Series>();

  /** With `exemplars`, each bucket carries its latest one (OpenMetrics); else null, as ever. */
  function values(exemplars: boolean): ExportedValue[] {
    const out: ExportedValue[] = [];
    const exported = (
      labels: ExportedValue['labels'],
      s: Series,
      v: number,
      suffix: string,
      exemplar: Exemplar | null | undefined,
    ) =>
      out.push({
        labels,
        sharedLabels: s.labels,
        value: v,
        metricName: `${name}${suffix}`,
        exemplar,
      });
    for (const s of all.values()) {
      if (!s.listed) continue;
      const kept = exemplars ? s.exemplars : null;
      let cumulative = 0;
      for (let i = 0; i < bounds.length; i++) {
        cumulative += s.buckets[i] as number;
        exported({ le: bounds[i] as number }, s, cumulative, '_bucket', kept?.[i] ?? null);
      }
      exported({ le: '+Inf' }, s, s.count, '_bucket', kept?.[bounds.length] ?? null);
      exported({}, s, s.sum, '_sum', undefined);
      exported({}, s, s.count, '_count', undefined);
    }
    return out;
  }

  const metric = {
    name,
    help,
    type: 'histogram' as const,
    aggregator: 'sum' as const,
    async getForPromString() {
      return {
        name,
        help,
        type: metric.type,
        values: values(false),
        aggregator: metric.aggregator,
      };
    },
    /** As prom-client's Histogram.get: each value's labels with its series' labels. */
    async get() {
      const data = await metric.getForPromString();
      const splayed = data.values.map(({ labels, sharedLabels, ...rest }) => ({
        ...rest,
        labels: { ...labels, ...sharedLabels },
      }));
      return { ...data, values: splayed };
    },
    /** As prom-client's: every series zeroed and left out until observed again. */
    reset() {
      for (const s of all.values()) {
        s.buckets.fill(0);
        s.sum = 0;
        s.count = 0;
        s.listed = false;
        s.exemplars = null;
      }
    },
  };
  const openMetric: RegistryMetric = {
    name,
    help,
    type: metric.type,
    aggregator: metric.aggregator,
    async getForPromString() {
      return { name, help, type: metric.type, values: values(true), aggregator: metric.aggregator };
    },
  };
  // The Registry reads only these members (name, type, get or getForPromString, reset).
  config.registry.registerMetric(metric as unknown as Parameters<Registry['registerMetric']>[0]);

  /** The bucket `v` counts in: the first bound at or above it, else +Inf (bounds.length). */
  function bucketOf(v: number): number {
    for (let i = 0; i < bounds.length; i++) if (v <= (bounds[i] as number)) return i;
    return bounds.length;
  }

  return {
    openMetric,
    series(labels) {
      const id = JSON.stringify(labels);
      const known = all.get(id);
      if (known !== undefined) return known;
      const s: Series = {
        labels: { ...labels },
        buckets: new Float64Array(bounds.length),
        sum: 0,
        count: 0,
        listed: false,
        exemplars: null,
        observe(v) {
          if (!Number.isFinite(v)) return;
          // Above the last bound a value counts only in +Inf (the count), as in prom-client.
          for (let i = 0; i < bounds.length; i++) {
            if (v <= (bounds[i] as number)) {
              s.buckets[i] = (s.buckets[i] as number) + 1;
              break;
            }
          }
          s.sum += v;
          s.count++;
          s.listed = true;
        },
        observeSampled(v, span) {
          if (!Number.isFinite(v)) return;
          s.observe(v);
          s.exemplars ??= new Array(bounds.length + 1);
          s.exemplars[bucketOf(v)] = {
            labelSet: { trace_id: span.traceId, span_id: span.spanId },
            value: v,
            timestamp: Date.now() / 1000,
          };
        },
      };
      all.set(id, s);
      return s;
    },
  };
}
