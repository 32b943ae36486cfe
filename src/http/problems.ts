// The one problem catalogue lives with the use cases (src/usecases/problems.ts), below both fronts; re-exported
// here for the routes.
export * from "../usecases/problems.js";
