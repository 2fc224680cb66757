import { startTracing } from '../src/tracing/start-tracing.js';
import { keepRequestGarbageYoung } from './heap-tuning.js';

// Entry point of the API process: `node --import tsx api/main.ts`. Tracing first (off unless the
// OTEL_* variables configure an exporter, docs/operations.md "Tracing"): when on, its ioredis
// hook must be in place before ioredis loads, so the process is imported after it.
keepRequestGarbageYoung();
const tracing = await startTracing(process.env, 'read-model-api');
const { runApiProcess } = await import('./api-process.js');
await runApiProcess(tracing);
