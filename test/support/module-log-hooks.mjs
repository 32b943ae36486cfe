// module-log.mjs's load hook: each ES module's URL, appended as it loads.
import { appendFileSync } from "node:fs";

export async function load(url, context, next) {
  const file = process.env["PODSYNC_MODULE_LOG"];
  if (file && !url.startsWith("node:")) appendFileSync(file, `${url}\n`);
  return next(url, context);
}
