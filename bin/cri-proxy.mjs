#!/usr/bin/env node
// The node-local CRI proxy (TypeScript source run through tsx, no build step).
import { register } from "tsx/esm/api";
register();
await import("../src/proxy/main.ts");
