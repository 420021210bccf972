// chain1k on XState: a machine of 1,000 states s0 -> s1 -> ... -> s999 -> done,
// linked by eventless transitions (`always`), each incrementing a counter.
// One op = createActor(machine).start() running the whole chain to the final
// state; the machine is created once, outside timing.
import { createMachine, createActor, assign } from "xstate";
import { measure, check } from "../lib/measure.mjs";

const N = 1_000;
const states = { done: { type: "final" } };
for (let i = 0; i < N; i++) {
  states[`s${i}`] = {
    always: { target: i + 1 < N ? `s${i + 1}` : "done", actions: assign({ count: ({ context }) => context.count + 1, last: i }) },
  };
}
const machine = createMachine({ context: { count: 0, last: -1 }, initial: "s0", states });

await measure({
  workload: "chain1k", engine: "xstate",
  measures: `createActor(machine).start() of a ${N}-state machine chained by eventless transitions, each incrementing a counter`,
  op: () => createActor(machine).start().getSnapshot(),
  verify: (s) => check(s.status === "done" && s.context.count === N && s.context.last === N - 1,
    `status=${s.status} count=${s.context.count} last=${s.context.last}, want done/${N}/${N - 1}`),
});
