import { Counter, type Registry } from 'prom-client';

// Requests refused with 429, by application: who spends its budget faster than allowed. Counted
// on the refusal path only; a series per application refused at least once by this process.

export function createQuotaRefusals(registry: Registry): (application: number) => void {
  const refusals = new Counter({
    name: 'api_quota_refusals_total',
    help: "Requests answered 429 because the application's request budget for the window was spent, by application id",
    labelNames: ['application'],
    registers: [registry],
  });
  return (application) => refusals.inc({ application: String(application) });
}
