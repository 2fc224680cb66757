import { describe, expect, it } from 'vitest';
import { hasRepeatedCredential } from '../../api/auth/credential.js';
import { clientErrorCode } from '../../api/edge/http-server.js';
import { checkRequestTarget } from '../../api/edge/request-target.js';
import { proxyTarget, scalarUrlTarget } from '../../api/playground/proxy-target.js';
import { hostLineCount, isValidHost } from '../../src/http/host-header.js';

describe('checkRequestTarget', () => {
  it('passes origin-form as is', () => {
    expect(checkRequestTarget('/a/b?c=1', 'h')).toEqual({ ok: true, url: '/a/b?c=1' });
    expect(checkRequestTarget('//evil/x', 'h')).toEqual({ ok: true, url: '//evil/x' });
  });
  it('serves absolute-form as its path only when the authority is the Host sent', () => {
    expect(checkRequestTarget('http://Api.example:8080/x?y', 'api.example:8080')).toEqual({
      ok: true,
      url: '/x?y',
    });
    expect(checkRequestTarget('http://h', 'h')).toEqual({ ok: true, url: '/' });
    expect(checkRequestTarget('http://h?q=1', 'h')).toEqual({ ok: true, url: '/?q=1' });
  });
  it('refuses another authority, userinfo, a missing Host and other forms', () => {
    const refused = [
      ['http://xxxxhttps:@127.0.0.1:9/docs/proxy/a/../..', 'localhost'],
      ['http://other/x', 'h'],
      ['https://h@h/x', 'h@h'],
      ['http://h/x', undefined],
      ['*', 'h'],
      ['ftp://h/x', 'h'],
      ['h:80', 'h'],
      ['', 'h'],
    ] as const;
    for (const [target, host] of refused) {
      expect(checkRequestTarget(target, host).ok, target).toBe(false);
    }
  });
});

describe('proxyTarget', () => {
  const base = { routePrefix: '/docs/proxy/application/v1', basePath: '/application/v1' };
  const upstreamOrigin = 'http://127.0.0.1:8080';
  const target = (requestUrl: string) => proxyTarget({ ...base, upstreamOrigin, requestUrl });

  it('maps a proxy path to the same path under the upstream API base, query kept', () => {
    const t = target('/docs/proxy/application/v1/getInstallationDevices?installationId=5');
    expect(t.ok && t.url.href).toBe(
      'http://127.0.0.1:8080/application/v1/getInstallationDevices?installationId=5',
    );
  });
  it('refuses every spelling that leaves the API base or the upstream', () => {
    for (const path of [
      '/../../healthz',
      '/%2e%2e/%2e%2e/readyz',
      '/%2E%2e/%2e%2E/metrics',
      '/.%2e/.%2e/x',
      '/..\\..\\healthz',
      '/a/../../../x',
      '/..',
      '/../v1x/getInstallations',
    ]) {
      expect(target(`/docs/proxy/application/v1${path}`), path).toEqual({
        ok: false,
        reason: 'outside-base',
      });
    }
  });
  it('never takes the authority from the request', () => {
    for (const requestUrl of [
      'http://xxxxhttps:@127.0.0.1:9/docs/proxy/application/v1/../../..',
      'https://evil.example/docs/proxy/application/v1/x',
    ]) {
      expect(target(requestUrl).ok, requestUrl).toBe(false);
    }
    // A path that looks like an authority stays a path on the upstream.
    const t = target('/docs/proxy/application/v1///evil.example/x');
    expect(t.ok && t.url.origin).toBe(upstreamOrigin);
  });
});

describe('hasRepeatedCredential', () => {
  it('spots a second Authorization or Api-Key in any letter case', () => {
    expect(hasRepeatedCredential(['Host', 'h', 'Authorization', 'Bearer a'])).toBe(false);
    expect(hasRepeatedCredential(['Api-Key', 'a', 'Authorization', 'Bearer a'])).toBe(false);
    expect(hasRepeatedCredential(['Authorization', 'a', 'authorization', 'b'])).toBe(true);
    expect(hasRepeatedCredential(['api-key', 'a', 'x', 'y', 'API-KEY', 'a'])).toBe(true);
    // The spellings taken without lower-casing, and others of the same length.
    expect(hasRepeatedCredential(['Api-Key', 'a', 'api-key', 'b'])).toBe(true);
    expect(hasRepeatedCredential(['Authorization', 'a', 'AUTHORIZATION', 'b'])).toBe(true);
    expect(hasRepeatedCredential(['api-kez', 'a', 'api-key', 'b', 'Authorizatio_', 'c'])).toBe(
      false,
    );
  });
});

describe('clientErrorCode', () => {
  it('maps Node client errors to catalogued codes', () => {
    expect(clientErrorCode('ERR_HTTP_REQUEST_TIMEOUT')).toBe('REQUEST_TIMEOUT');
    expect(clientErrorCode('HPE_HEADER_OVERFLOW')).toBe('HEADERS_TOO_LARGE');
    expect(clientErrorCode('HPE_INVALID_METHOD')).toBe('BAD_REQUEST');
    expect(clientErrorCode(undefined)).toBe('BAD_REQUEST');
  });
});

describe('isValidHost', () => {
  it('accepts a name, an address or an IPv6 literal, each with an optional port', () => {
    for (const host of ['localhost', 'a.example', '127.0.0.1:8080', '[::1]', '[::1]:80', 'x_y-z']) {
      expect(isValidHost(host), host).toBe(true);
    }
  });
  it('refuses what a URL cannot be built from (the playground answered 500)', () => {
    for (const host of ['', ' ', '[', '[::1', 'a b', '%', '%41', '\\', 'a/b', 'x@y', 'a:b:c']) {
      expect(isValidHost(host), JSON.stringify(host)).toBe(false);
    }
    expect(isValidHost('[zz]')).toBe(false);
    expect(isValidHost('999.1.1.1')).toBe(false);
    expect(isValidHost('h:123456')).toBe(false);
  });
  it('counts Host lines in any case', () => {
    expect(hostLineCount(['Host', 'a', 'X', 'y'])).toBe(1);
    expect(hostLineCount(['Host', 'a', 'hOsT', 'b'])).toBe(2);
  });
});

describe('proxyTarget and encoded separators', () => {
  const options = {
    routePrefix: '/docs/proxy/application/v1',
    basePath: '/application/v1',
    upstreamOrigin: 'http://127.0.0.1:8080',
  };
  it('refuses %2e, %2f, %5c and %25 in the forwarded path, any case', () => {
    for (const rest of [
      '..%2f..%2fhealthz',
      '%2e%2e%2fx',
      '..%5C..%5creadyz',
      '%252e%252e/',
      'a%2F',
    ]) {
      expect(
        proxyTarget({ ...options, requestUrl: `${options.routePrefix}/${rest}` }),
        rest,
      ).toEqual({
        ok: false,
        reason: 'outside-base',
      });
    }
    // The query is the upstream's to read: a percent sign there is forwarded.
    const ok = proxyTarget({
      ...options,
      requestUrl: `${options.routePrefix}/getInstallationDevices?installationId=%25`,
    });
    expect(ok.ok).toBe(true);
  });
});

describe('scalarUrlTarget (the form Scalar sends for an absolute server URL)', () => {
  const options = {
    prefix: '/docs/proxy',
    basePath: '/application/v1',
    upstreamOrigin: 'http://127.0.0.1:8080',
  };
  const target = (scalarUrl: string) =>
    scalarUrlTarget({
      ...options,
      requestUrl: `/docs/proxy?${new URLSearchParams([['scalar_url', scalarUrl]])}`,
    });

  it('maps the target to the same path under the upstream API base, query kept, fragment not', () => {
    const t = target(
      'http://127.0.0.1:8080/application/v1/getInstallationDevices?installationId=5#x',
    );
    expect(t.ok && t.url.href).toBe(
      'http://127.0.0.1:8080/application/v1/getInstallationDevices?installationId=5',
    );
    // Spaces encoded as `+`, as URLSearchParams (and so Scalar) writes them.
    const raw = scalarUrlTarget({
      ...options,
      requestUrl:
        '/docs/proxy?scalar_url=http%3A%2F%2F127.0.0.1%3A8080%2Fapplication%2Fv1%2FgetInstallations',
    });
    expect(raw.ok && raw.url.pathname).toBe('/application/v1/getInstallations');
  });
  it('refuses another origin, or the same one spelled otherwise', () => {
    for (const url of [
      'http://127.0.0.1:9/application/v1/getInstallations',
      'https://127.0.0.1:8080/application/v1/getInstallations',
      'http://localhost:8080/application/v1/getInstallations',
      'http://evil.example/application/v1/getInstallations',
      'http://user:pw@127.0.0.1:8080/application/v1/getInstallations',
      'http://127.0.0.1:8080@evil.example/application/v1/getInstallations',
      'http://127.0.0.1:8080.evil.example/application/v1/getInstallations',
      'HTTP://127.0.0.1:8080/application/v1/getInstallations',
      '//127.0.0.1:8080/application/v1/getInstallations',
      '/application/v1/getInstallations',
    ]) {
      expect(target(url), url).toEqual({ ok: false, reason: 'outside-base' });
    }
  });
  it('refuses every spelling that leaves the API base, encoded separators too', () => {
    for (const rest of [
      '../../metrics',
      '..\\..\\healthz',
      'a/../../../readyz',
      '..',
      '..%2f..%2fhealthz',
      '%2e%2e/%2e%2e/readyz',
      '..%5Creadyz',
      '%252e%252e/',
      'a%2F',
    ]) {
      expect(target(`http://127.0.0.1:8080/application/v1/${rest}`), rest).toEqual({
        ok: false,
        reason: 'outside-base',
      });
    }
    for (const url of [
      'http://127.0.0.1:8080/application/v1',
      'http://127.0.0.1:8080/application/v1x/getInstallations',
      'http://127.0.0.1:8080/application/v2/getInstallations',
      'http://127.0.0.1:8080/metrics',
    ]) {
      expect(target(url), url).toEqual({ ok: false, reason: 'outside-base' });
    }
  });
  it('takes exactly one scalar_url and nothing else', () => {
    const good = encodeURIComponent('http://127.0.0.1:8080/application/v1/getInstallations');
    for (const query of [
      '',
      `other=${good}`,
      `scalar_url=${good}&scalar_url=${good}`,
      `scalar_url=${good}&x=1`,
    ]) {
      expect(scalarUrlTarget({ ...options, requestUrl: `/docs/proxy?${query}` }), query).toEqual({
        ok: false,
        reason: 'bad-target',
      });
    }
    expect(scalarUrlTarget({ ...options, requestUrl: '/docs/proxy' }).ok).toBe(false);
    expect(scalarUrlTarget({ ...options, requestUrl: `/docs/proxyx?scalar_url=${good}` }).ok).toBe(
      false,
    );
  });
});
