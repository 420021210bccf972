// build10k on LangGraph.js: construct a StateGraph, add 10,000 nodes chained
// START -> n0 -> ... -> n9999 -> END, and compile() it (compile validates the
// graph and builds the Pregel channels and node triggers). Nothing is run.
// One op = the whole construction + compile.
import { StateGraph, Annotation, START, END } from "@langchain/langgraph";
import { measure, check } from "../lib/measure.mjs";

const N = 10_000;
const State = Annotation.Root({ count: Annotation() });

function build() {
  const g = new StateGraph(State);
  for (let i = 0; i < N; i++) g.addNode(`n${i}`, (s) => ({ count: s.count + 1 }));
  g.addEdge(START, "n0");
  for (let i = 1; i < N; i++) g.addEdge(`n${i - 1}`, `n${i}`);
  g.addEdge(`n${N - 1}`, END);
  return g.compile();
}

await measure({
  workload: "build10k", engine: "langgraph",
  measures: `new StateGraph + ${N} addNode + ${N + 1} addEdge (a chain) + compile()`,
  op: build,
  verify: (app) => {
    const names = Object.keys(app.nodes).filter((k) => k !== START);
    check(names.length === N && "n0" in app.nodes && `n${N - 1}` in app.nodes, `compiled graph has ${names.length} nodes, want ${N}`);
  },
});
