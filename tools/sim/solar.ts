// A daylight curve good enough for a demo: solar elevation from position and UTC time (no
// equation of time, no refraction), turned into a clear-sky fraction of PV peak power.

const DEG = Math.PI / 180;
const DAY_MS = 86_400_000;

/** Sine of the sun's elevation above the horizon; negative at night. */
export function solarElevationSine(latitude: number, longitude: number, nowMs: number): number {
  const date = new Date(nowMs);
  const startOfYear = Date.UTC(date.getUTCFullYear(), 0, 1);
  const dayOfYear = Math.floor((nowMs - startOfYear) / DAY_MS) + 1;
  const utcHours = (nowMs % DAY_MS) / 3_600_000;
  const solarHours = utcHours + longitude / 15;
  const hourAngle = (solarHours - 12) * 15 * DEG;
  const declination = 23.44 * DEG * Math.sin((2 * Math.PI * (284 + dayOfYear)) / 365);
  const lat = latitude * DEG;
  return (
    Math.sin(lat) * Math.sin(declination) +
    Math.cos(lat) * Math.cos(declination) * Math.cos(hourAngle)
  );
}

/** Fraction 0..1 of peak PV power under a clear sky. */
export function clearSkyFraction(latitude: number, longitude: number, nowMs: number): number {
  const sine = solarElevationSine(latitude, longitude, nowMs);
  return sine <= 0 ? 0 : Math.min(1, sine ** 1.2);
}

/** Local solar hour 0..24, for load profiles that follow the day. */
export function solarHour(longitude: number, nowMs: number): number {
  const hours = (nowMs % DAY_MS) / 3_600_000 + longitude / 15;
  return ((hours % 24) + 24) % 24;
}
