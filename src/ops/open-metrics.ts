import { type OpenMetricsContentType, Registry } from 'prom-client';

// /metrics in two formats (the API's and the consumers'): the Prometheus text format (0.0.4) by
// default, and OpenMetrics 1.0, with the exemplars of the duration histograms (the trace and
// span id of sampled requests and batches), to a scraper whose Accept asks for it (Prometheus
// does, first). Both are written by
// prom-client from the same metrics: the OpenMetrics registry is built per scrape of views of
// the text registry's metrics, because prom-client renames a counter it writes as OpenMetrics
// (`x_total` becomes family `x`, samples `x_total`) on the object itself, which would then read
// `x` in the text format. The views are renamed instead; the text format never changes.

export const TEXT_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;
export const OPENMETRICS_CONTENT_TYPE = Registry.OPENMETRICS_CONTENT_TYPE;

/**
 * Whether an Accept header asks for OpenMetrics over the text format: its
 * `application/openmetrics-text` (any version) has a q above 0 and no lower than that of
 * `text/plain`, `text/*` or `*∕*`. Absent, or naming only others: the text format.
 */
export function prefersOpenMetrics(accept: string | undefined): boolean {
  const ranges = accept?.toLowerCase();
  if (ranges === undefined || !ranges.includes('application/openmetrics-text')) return false;
  let open = 0;
  let text = 0;
  for (const range of ranges.split(',')) {
    const [type = '', ...params] = range.split(';');
    let q = 1;
    for (const param of params) {
      const [key, value] = param.split('=');
      if (key?.trim() === 'q') q = Number(value?.trim());
    }
    if (!(q >= 0 && q <= 1)) continue;
    const mediaType = type.trim();
    if (mediaType === 'application/openmetrics-text') open = Math.max(open, q);
    else if (mediaType === 'text/plain' || mediaType === 'text/*' || mediaType === '*/*')
      text = Math.max(text, q);
  }
  return open > 0 && open >= text;
}

/** The members of a metric a prom-client Registry reads (get or getForPromString). */
export interface RegistryMetric {
  name: string;
  readonly help: string;
  readonly type: string;
  readonly aggregator: string;
  getForPromString?(): Promise<unknown>;
  get?(): Promise<unknown>;
}

/**
 * The registry's metrics written as OpenMetrics; `exemplars` replaces a metric of the same name
 * by its version that carries exemplars (api/ops/labelled-histogram.ts `openMetric`); a
 * prom-client Histogram with `enableExemplars` carries its own.
 */
export async function openMetricsText(
  registry: Registry,
  exemplars: ReadonlyMap<string, RegistryMetric> = new Map(),
): Promise<string> {
  const open = new Registry<OpenMetricsContentType>();
  open.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  for (const metric of registry.getMetricsAsArray() as unknown as RegistryMetric[])
    open.registerMetric(
      viewOf(exemplars.get(metric.name) ?? metric) as unknown as Parameters<
        Registry<OpenMetricsContentType>['registerMetric']
      >[0],
    );
  // prom-client writes NaN as `Nan` (as in its text format, where Prometheus reads it in any
  // case); OpenMetrics spells it `NaN`. Only a sample's value, the last word of its line.
  return (await open.metrics()).replace(NAN_VALUE, '$1 NaN');
}

const NAN_VALUE = /^([^#].*) Nan$/gm;

/** A view prom-client may rename (a counter's `_total`) without touching the metric. */
function viewOf(metric: RegistryMetric) {
  const view = {
    name: metric.name,
    help: metric.help,
    type: metric.type,
    aggregator: metric.aggregator,
    get: undefined as (() => Promise<unknown>) | undefined,
    getForPromString: undefined as (() => Promise<unknown>) | undefined,
  };
  const renamed = (read: () => Promise<unknown>) => async () => ({
    ...((await read.call(metric)) as object),
    name: view.name,
  });
  if (typeof metric.getForPromString === 'function')
    view.getForPromString = renamed(metric.getForPromString);
  else if (typeof metric.get === 'function') view.get = renamed(metric.get);
  return view;
}
