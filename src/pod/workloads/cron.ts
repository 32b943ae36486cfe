// CronJob schedules as the CronJob controller reads them (robfig/cron v3's ParseStandard: five fields
// minute hour day-of-month month day-of-week, with `*`, `?`, lists, ranges, steps, month and weekday names, and the
// descriptors @yearly @annually @monthly @weekly @daily @midnight @hourly), evaluated in spec.timeZone (an IANA
// name) or UTC. Day-of-month and day-of-week combine as robfig does: when both are restricted either may match,
// otherwise both must. `@every` and `TZ=`/`CRON_TZ=` prefixes are refused, as the API server refuses them.

export interface Schedule {
  minute: Set<number>;
  hour: Set<number>;
  dom: Set<number>;
  month: Set<number>;
  dow: Set<number>;
  domStar: boolean;
  dowStar: boolean;
  timeZone: string | undefined;
}

const DESCRIPTORS: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};
const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

function field(
  expr: string,
  min: number,
  max: number,
  names: string[] | undefined,
  nameBase: number,
  what: string,
): Set<number> | string {
  const out = new Set<number>();
  const num = (s: string): number | undefined => {
    const n = names?.indexOf(s.toLowerCase());
    if (n !== undefined && n >= 0) return n + nameBase;
    return /^[0-9]+$/.test(s) ? Number(s) : undefined;
  };
  for (const part of expr.split(",")) {
    const [range, stepText, extra] = part.split("/");
    if (extra !== undefined || range === undefined || range === "")
      return `${what}: "${part}" is not a value, range or step`;
    let lo: number | undefined;
    let hi: number | undefined;
    if (range === "*" || range === "?") [lo, hi] = [min, max];
    else {
      const [a, b, c] = range.split("-");
      if (c !== undefined) return `${what}: "${range}" is not a range`;
      lo = num(a!);
      hi = b === undefined ? (stepText !== undefined ? max : lo) : num(b);
    }
    if (lo === undefined || hi === undefined) return `${what}: "${part}" is not a number${names ? " or a name" : ""}`;
    if (lo < min || hi > max || lo > hi) return `${what}: "${part}" is outside ${min}-${max}`;
    const step = stepText === undefined ? 1 : /^[0-9]+$/.test(stepText) ? Number(stepText) : NaN;
    if (!(step >= 1)) return `${what}: step "${stepText}" must be a positive number`;
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return out;
}

/** The parsed schedule, or why it does not parse (the reason names the field). */
export function parseSchedule(text: string, timeZone?: string): Schedule | string {
  const t = text.trim();
  if (/^(CRON_)?TZ=/.test(t))
    return "a time zone in the schedule (TZ= or CRON_TZ=) is not supported: use spec.timeZone";
  if (timeZone !== undefined) {
    if (timeZone === "Local" || timeZone === "")
      return `unknown time zone "${timeZone}": give an IANA name such as "Europe/Berlin"`;
    try {
      new Intl.DateTimeFormat("en-US", { timeZone });
    } catch {
      return `unknown time zone "${timeZone}": give an IANA name such as "Europe/Berlin"`;
    }
  }
  const spec = t.startsWith("@") ? DESCRIPTORS[t.toLowerCase()] : t;
  if (spec === undefined)
    return `unknown descriptor "${t}" (use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)`;
  const parts = spec.split(/\s+/);
  if (parts.length !== 5)
    return `expected exactly 5 fields (minute hour day-of-month month day-of-week), found ${parts.length}`;
  const minute = field(parts[0]!, 0, 59, undefined, 0, "minute");
  const hour = field(parts[1]!, 0, 23, undefined, 0, "hour");
  const dom = field(parts[2]!, 1, 31, undefined, 0, "day of month");
  const month = field(parts[3]!, 1, 12, MONTHS, 1, "month");
  const dow = field(parts[4]!, 0, 7, DAYS, 0, "day of week");
  for (const f of [minute, hour, dom, month, dow]) if (typeof f === "string") return f;
  const dows = dow as Set<number>;
  if (dows.has(7)) dows.add(0); // 7 is Sunday too
  const star = (s: string) => s === "*" || s === "?" || s.startsWith("*/") || s.startsWith("?/");
  return {
    minute: minute as Set<number>,
    hour: hour as Set<number>,
    dom: dom as Set<number>,
    month: month as Set<number>,
    dow: dows,
    domStar: star(parts[2]!),
    dowStar: star(parts[4]!),
    timeZone,
  };
}

interface Wall {
  month: number;
  day: number;
  dow: number;
  hour: number;
  minute: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
const WEEKDAY: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };

function wall(ms: number, tz: string | undefined): Wall {
  const d = new Date(ms);
  if (tz === undefined || tz === "UTC")
    return {
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
      dow: d.getUTCDay(),
      hour: d.getUTCHours(),
      minute: d.getUTCMinutes(),
    };
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: tz,
      hourCycle: "h23",
      month: "numeric",
      day: "numeric",
      weekday: "short",
      hour: "numeric",
      minute: "numeric",
    });
    formatters.set(tz, f);
  }
  const p: Record<string, string> = {};
  for (const x of f.formatToParts(d)) p[x.type] = x.value;
  return {
    month: Number(p["month"]),
    day: Number(p["day"]),
    dow: WEEKDAY[p["weekday"]!] ?? 0,
    hour: Number(p["hour"]),
    minute: Number(p["minute"]),
  };
}

const MIN = 60_000;

/** robfig's Schedule.Next: the first scheduled time strictly after `after` (ms), or undefined if none within
 * five years (an impossible date such as 30 February). */
export function nextAfter(s: Schedule, after: number): number | undefined {
  let t = Math.floor(after / MIN) * MIN + MIN;
  const limit = after + 5 * 366 * 24 * 60 * MIN;
  while (t <= limit) {
    const w = wall(t, s.timeZone);
    const dayOk = s.domStar || s.dowStar ? s.dom.has(w.day) && s.dow.has(w.dow) : s.dom.has(w.day) || s.dow.has(w.dow);
    if (!s.month.has(w.month) || !dayOk) t += (24 * 60 - (w.hour * 60 + w.minute)) * MIN;
    else if (!s.hour.has(w.hour)) t += (60 - w.minute) * MIN;
    else if (!s.minute.has(w.minute)) t += MIN;
    else return t;
  }
  return undefined;
}
