import type { components } from './generated/openapi.js';

// Friendly names for the shapes of the served OpenAPI document (generated/openapi.ts, made by
// openapi-typescript from docs/openapi.json; never edited by hand).

type Schemas = components['schemas'];

export type Installation = Schemas['Installation'];
export type Inverter = Schemas['Inverter'];
export type Battery = Schemas['Battery'];
export type EnergyMeter = Schemas['EnergyMeter'];
export type EvCharger = Schemas['EvCharger'];
export type Relay = Schemas['Relay'];
export type Boiler = Schemas['Boiler'];
export type EnergyFlowData = Schemas['EnergyFlowData'];
export type InstallationsResponse = Schemas['InstallationsResponse'];
export type InstallationDevicesResponse = Schemas['InstallationDevicesResponse'];
export type EnergyFlowResponse = Schemas['EnergyFlowResponse'];
export type BulkEnergyFlowResponse = Schemas['BulkEnergyFlowResponse'];
export type InstallationFlow = BulkEnergyFlowResponse['flows'][number];

/** Every `error` code any operation of the document may answer (`{"valid":false,"error":…}`). */
export type ErrorCode = {
  [K in keyof Schemas]: K extends `${string}Error${number}`
    ? Schemas[K] extends { error: infer E }
      ? E
      : never
    : never;
}[keyof Schemas];

/** What the last answer's `RateLimit` / `RateLimit-Policy` headers said (quotas on only). */
export interface RateLimitState {
  /** Budget per window, requests (`q`); a 304 costs a tenth of one. */
  readonly limit: number;
  /** Window, seconds (`w`). */
  readonly windowSeconds: number;
  /** Requests left in the window (`r`). */
  readonly remaining: number;
  /** When the window resets, ms since the epoch (from `t`). */
  readonly resetAtMs: number;
}

/** One answer of a read, with what a poller needs beside the body. */
export interface ApiResult<T> {
  /** The parsed body. On a 304 the cached body of the previous 200: treat it as read-only. */
  readonly body: T;
  /** 200, or 304 when the cached body was still current (a 304 costs a tenth of a request). */
  readonly status: 200 | 304;
  /** True when the server answered 304 and `body` came from the client's cache. */
  readonly notModified: boolean;
  readonly etag: string | null;
  /**
   * Data age: the latest `lastSeenDate` the body contains (`Last-Modified`), or null when it
   * holds none (no device online, getInstallations). Compare with now to tell stale from live.
   */
  readonly lastModified: Date | null;
  /** The quota as the answer told it, or null when quotas are off. */
  readonly rateLimit: RateLimitState | null;
}

/** Options every call takes. */
export interface CallOptions {
  /** Cancels the call, its waits and retries included. */
  readonly signal?: AbortSignal;
  /** Deadline of the whole call, retries and waits included, ms (overrides the client's). */
  readonly timeoutMs?: number;
}
