#!/usr/bin/env node
// The node-local CRI proxy: the compiled dist/proxy/main.js, rebuilt first if src/ changed since the last build.
import { buildIfStale } from "./build.mjs";
if (buildIfStale()) await import("../dist/proxy/main.js");
else process.exitCode = 1;
