// bench/worker-alarm.ts only: the Worker as deployed, with each node object's alarm pass timed inside workerd
// (one JSON line per pass on the runtime's stdout, which the bench reads).
import worker, { NodeDesiredState as Base, PodSerializer, ReplayGuard } from "../src/worker.js";

export class NodeDesiredState extends Base {
  override async alarm(): Promise<void> {
    const t0 = Date.now(); // in workerd the clock moves with I/O, which a pass is made of
    await super.alarm();
    console.log(JSON.stringify({ benchAlarmPassMs: Date.now() - t0, at: Date.now() }));
  }
}
export { PodSerializer, ReplayGuard };
export default worker;
