// build10k on XState: createMachine() of a 10,000-state machine chained by
// events (s_i --NEXT--> s_i+1, the last to a final state). createMachine
// builds the whole StateNode tree and resolves every transition target.
// One op = building the config object + createMachine(). Nothing is run.
import { createMachine } from "xstate";
import { measure, check } from "../lib/measure.mjs";

const N = 10_000;

function build() {
  const states = { done: { type: "final" } };
  for (let i = 0; i < N; i++) states[`s${i}`] = { on: { NEXT: i + 1 < N ? `s${i + 1}` : "done" } };
  return createMachine({ initial: "s0", states });
}

await measure({
  workload: "build10k", engine: "xstate",
  measures: `config object for ${N} states + createMachine() (StateNode tree, transitions resolved)`,
  op: build,
  verify: (m) => {
    const names = Object.keys(m.root.states).filter((k) => k !== "done");
    check(names.length === N, `machine has ${names.length} states, want ${N}`);
    check(m.root.states.s0.transitions.get("NEXT")[0].target[0] === m.root.states.s1, "s0 --NEXT--> s1 not resolved");
  },
});
