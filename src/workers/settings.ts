// The Worker's settings: every setting Node has in common (src/settings/common.ts) plus the node map, the
// proxy tokens and the Secrets sealing key; parsed once per isolate per configuration.
import { z } from "zod";
import { ProblemError } from "../usecases/problems.js";
import { checkCommon, commonSettings, formatIssues, RELIST_INTERVAL_DEFAULT_MS } from "../settings/common.js";
import { NodeOverrides } from "../settings/node-info.js";
import type { DONamespace } from "./durable-object.js";

export interface Env extends Partial<Record<`PODSYNC_${string}`, string>> {
  PODSYNC_NODES: string;
  PODSYNC_ISSUERS: string;
  REPLAY: DONamespace;
  POD_LOCK: DONamespace;
  DESIRED: DONamespace;
}

// Each node may carry its own admission values (labels, taints, cpu, memoryBytes, maxPods, arch), over the shared
// PODSYNC_NODE_* settings: a Worker fronts several nodes, which are not all alike.
const NodeMap = z.record(
  z.string().min(1),
  z.strictObject({ url: z.url(), aliases: z.array(z.string()).default([]), ...NodeOverrides.shape }),
);
export const WorkerSettings = z
  .object({
    ...commonSettings,
    PODSYNC_NODES: z.string().transform((s, ctx) => {
      try {
        return NodeMap.parse(JSON.parse(s));
      } catch (e) {
        ctx.addIssue({
          code: "custom",
          message: `must be JSON {"node": {"url": "https://…"}}: ${(e as Error).message}`,
        });
        return z.NEVER;
      }
    }),
    PODSYNC_ISSUERS: commonSettings.PODSYNC_ISSUERS.unwrap().pipe(
      z.array(z.string()).min(1, "required: the trusted issuers"),
    ),
    PODSYNC_PROXY_TOKEN: z.string().optional(),
    PODSYNC_PROXY_TOKENS: z.string().optional(),
    PODSYNC_SECRETS_KEY: z
      .string()
      .transform((v, ctx) => {
        try {
          const b = Uint8Array.from(atob(v.trim().replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
          if (b.byteLength === 32) return b;
        } catch {
          /* reported below */
        }
        ctx.addIssue({ code: "custom", message: "must be 32 random bytes, base64 (openssl rand -base64 32)" });
        return z.NEVER;
      })
      .optional(),
  })
  .superRefine((s, ctx) => {
    if (!s.PODSYNC_JWKS === !s.PODSYNC_JWKS_URL)
      ctx.addIssue({
        code: "custom",
        path: ["PODSYNC_JWKS"],
        message: "set exactly one of PODSYNC_JWKS and PODSYNC_JWKS_URL",
      });
    checkCommon(s, ctx, Boolean(s.PODSYNC_JWKS));
  });

export type WorkerConfig = z.output<typeof WorkerSettings>;

/** The settings, parsed once per isolate for each configuration (the Worker's routes and the node objects). */
let settingsCache: { key: string; s: WorkerConfig } | undefined;
export function settingsOf(env: Env): WorkerConfig {
  const key = JSON.stringify(Object.entries(env).filter(([k, v]) => k.startsWith("PODSYNC_") && typeof v === "string"));
  if (settingsCache?.key === key) return settingsCache.s;
  const parsed = WorkerSettings.safeParse(env);
  if (!parsed.success) throw new ProblemError("misconfigured", `invalid settings:\n${formatIssues(parsed.error)}`);
  settingsCache = { key, s: parsed.data };
  return parsed.data;
}

export const relistInterval = (s: WorkerConfig) => s.PODSYNC_RELIST_INTERVAL_MS ?? RELIST_INTERVAL_DEFAULT_MS.workers;
