// loopdict10k on XState: loop10k with each step's result a small object, as
// Skein's fn steps return small dicts: draft's action assigns draft = {n},
// its visit count, and critique's assigns critique = {ok: draft.n >= N}; the
// guard back to draft reads critique.ok. One op = createActor(machine).start()
// running all 10,000 iterations to the final state; the machine is created
// once, outside timing.
import { createMachine, createActor, assign } from "xstate";
import { measure, check } from "../lib/measure.mjs";

const N = 10_000;
const machine = createMachine({
  context: { draft: { n: 0 }, critique: { ok: false } },
  initial: "draft",
  states: {
    draft: { always: { target: "critique", actions: assign({ draft: ({ context }) => ({ n: context.draft.n + 1 }) }) } },
    critique: {
      entry: assign({ critique: ({ context }) => ({ ok: context.draft.n >= N }) }),
      always: [
        { guard: ({ context }) => !context.critique.ok, target: "draft" },
        { target: "done" },
      ],
    },
    done: { type: "final" },
  },
});

await measure({
  workload: "loopdict10k", engine: "xstate",
  measures: `createActor(machine).start() of a 2-state machine whose steps assign small objects ({n}, {ok}) and whose guarded eventless transitions loop critique -> draft ${N} times to a final state`,
  op: () => createActor(machine).start().getSnapshot(),
  verify: (s) => check(s.status === "done" && s.context.draft.n === N && s.context.critique.ok === true,
    `status=${s.status} draft.n=${s.context.draft.n} critique.ok=${s.context.critique.ok}, want done/${N}/true`),
});
