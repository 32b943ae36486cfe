// pipeFrames lives with the streaming use cases (src/usecases/streams/ws-pipe.ts); re-exported here.
export * from "../usecases/streams/ws-pipe.js";
