// streamFrom lives with the streaming use cases (src/usecases/streams/stream.ts); re-exported here.
export * from "../usecases/streams/stream.js";
