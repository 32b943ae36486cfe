// `npm start`'s preload (`node --import ./bin/fresh-dist.mjs dist/node.js`): node loads the main module only after
// this has run, so dist/ is brought up to date in the same process, without a second node start (a prestart
// script) on every start.
import { buildIfStale } from "./build.mjs";

if (!buildIfStale()) process.exit(1);
