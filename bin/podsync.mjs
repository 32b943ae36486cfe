#!/usr/bin/env node
// The podsync CLI: the compiled dist/cli/main.js, rebuilt first if src/ changed since the last build.
import { buildIfStale } from "./build.mjs";
if (buildIfStale()) await import("../dist/cli/main.js");
else process.exitCode = 1;
