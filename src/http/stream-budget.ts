// The node's stream budget lives with the streaming use cases (src/usecases/streams/budget.ts); re-exported here.
export * from "../usecases/streams/budget.js";
