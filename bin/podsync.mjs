#!/usr/bin/env node
// The podsync CLI (TypeScript source run through tsx, no build step).
import { register } from "tsx/esm/api";
register();
await import("../src/cli.ts");
