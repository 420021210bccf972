// chain1k on LangGraph.js: a StateGraph of 1,000 nodes n0 -> n1 -> ... -> n999,
// each incrementing a counter and recording that it ran.
// One op = one invoke() of the compiled graph (compiled once, outside timing).
import { StateGraph, Annotation, START, END } from "@langchain/langgraph";
import { measure, check } from "../lib/measure.mjs";

const N = 1_000;
const State = Annotation.Root({
  count: Annotation(), // last value
  last: Annotation(),  // name of the last node that ran
});
const g = new StateGraph(State);
for (let i = 0; i < N; i++) g.addNode(`n${i}`, (s) => ({ count: s.count + 1, last: i }));
g.addEdge(START, "n0");
for (let i = 1; i < N; i++) g.addEdge(`n${i - 1}`, `n${i}`);
g.addEdge(`n${N - 1}`, END);
const app = g.compile();

await measure({
  workload: "chain1k", engine: "langgraph",
  measures: `invoke() of a compiled StateGraph chain of ${N} nodes, each incrementing a counter (${N} supersteps, recursionLimit ${N + 10}, no checkpointer)`,
  op: () => app.invoke({ count: 0, last: -1 }, { recursionLimit: N + 10 }),
  verify: (s) => check(s.count === N && s.last === N - 1, `count=${s.count} last=${s.last}, want ${N} and ${N - 1}`),
});
