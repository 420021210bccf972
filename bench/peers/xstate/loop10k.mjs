// loop10k on XState: a machine with two states, draft and critique. draft's
// eventless transition (`always`) goes to critique, counting a draft; critique
// goes back to draft while the guard drafts < N holds, else to the final state.
// One op = createActor(machine).start() running all 10,000 iterations to the
// final state (one start() call drains every eventless transition); the machine
// is created once, outside timing.
import { createMachine, createActor, assign } from "xstate";
import { measure, check } from "../lib/measure.mjs";

const N = 10_000;
const machine = createMachine({
  context: { drafts: 0, critiques: 0 },
  initial: "draft",
  states: {
    draft: { always: { target: "critique", actions: assign({ drafts: ({ context }) => context.drafts + 1 }) } },
    critique: {
      always: [
        { guard: ({ context }) => context.drafts < N, target: "draft", actions: assign({ critiques: ({ context }) => context.critiques + 1 }) },
        { target: "done", actions: assign({ critiques: ({ context }) => context.critiques + 1 }) },
      ],
    },
    done: { type: "final" },
  },
});

await measure({
  workload: "loop10k", engine: "xstate",
  measures: `createActor(machine).start() of a 2-state machine whose guarded eventless transitions loop critique -> draft ${N} times to a final state`,
  op: () => createActor(machine).start().getSnapshot(),
  verify: (s) => check(s.status === "done" && s.context.drafts === N && s.context.critiques === N,
    `status=${s.status} drafts=${s.context.drafts} critiques=${s.context.critiques}, want done/${N}/${N}`),
});
