// loop10k on LangGraph.js: StateGraph with two nodes, draft -> critique, and a
// conditional edge from critique back to draft while drafts < N, else END.
// One op = one invoke() of the compiled graph (compiled once, outside timing).
import { StateGraph, Annotation, START, END } from "@langchain/langgraph";
import { measure, check } from "../lib/measure.mjs";

const N = 10_000;
const State = Annotation.Root({
  drafts: Annotation(),    // last-value channels
  critiques: Annotation(),
});
const app = new StateGraph(State)
  .addNode("draft", (s) => ({ drafts: s.drafts + 1 }))
  .addNode("critique", (s) => ({ critiques: s.critiques + 1 }))
  .addEdge(START, "draft")
  .addEdge("draft", "critique")
  .addConditionalEdges("critique", (s) => (s.drafts < N ? "draft" : END), ["draft", END])
  .compile();

await measure({
  workload: "loop10k", engine: "langgraph",
  measures: `invoke() of a compiled 2-node StateGraph whose conditional edge loops critique -> draft ${N} times (2*${N} supersteps, recursionLimit ${2 * N + 10}, no checkpointer)`,
  op: () => app.invoke({ drafts: 0, critiques: 0 }, { recursionLimit: 2 * N + 10 }),
  verify: (s) => check(s.drafts === N && s.critiques === N, `drafts=${s.drafts} critiques=${s.critiques}, want ${N}`),
});
