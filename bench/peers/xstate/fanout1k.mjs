// fanout1k on XState: a static fan-out + AND-join as a parallel state with
// 1,000 regions. Each region is entered straight into its final state, whose
// entry action does the branch's work (appends its result to context); the
// parallel state's onDone (taken only when every region is final) goes to
// "join", whose entry records how many results it sees.
// One op = createActor(machine).start() from source to the final state; the
// machine is created once, outside timing. Regions run one after another on
// the JS thread (XState has no parallel execution of actions).
// (Giving each region a work -> done eventless transition instead takes tens
// of seconds at this size; see ../../README.md.)
import { createMachine, createActor, assign } from "xstate";
import { measure, check } from "../lib/measure.mjs";

const N = 1_000;
const regions = {};
for (let i = 0; i < N; i++) {
  regions[`b${i}`] = {
    initial: "done",
    states: { done: { type: "final", entry: assign({ results: ({ context }) => [...context.results, i] }) } },
  };
}
const machine = createMachine({
  context: { results: [], joined: -1 },
  initial: "source",
  states: {
    source: { always: "fan" },
    fan: { type: "parallel", states: regions, onDone: "join" },
    join: { entry: assign({ joined: ({ context }) => context.results.length }), always: "end" },
    end: { type: "final" },
  },
});

await measure({
  workload: "fanout1k", engine: "xstate",
  measures: `createActor(machine).start(): source -> parallel state of ${N} regions (each region's final-state entry action appends its result) -> onDone -> join`,
  op: () => createActor(machine).start().getSnapshot(),
  verify: (s) => {
    check(s.status === "done" && s.context.joined === N, `status=${s.status} join saw ${s.context.joined} results, want done/${N}`);
    check(new Set(s.context.results).size === N, `distinct results ${new Set(s.context.results).size}, want ${N}`);
  },
});
