// Package codes is the one table of the codes Skein reports: the checker's
// diagnostics, the codes that end a run or mark a failed step, and the
// usage codes of the command line. docs/codes.md describes each (a test
// holds the page to the table). It imports nothing, so that every package
// (the graph, the checker, the VM, the model client) can name a code by
// its constant.
package codes

// Code names a kind of problem, as it prints in brackets after a
// diagnostic and in a run's "code" members: "unreachable_step".
type Code string

// The codes, one constant each, in the order of docs/codes.md.
const (
	ParseError               Code = "parse_error"
	LoadError                Code = "load_error"
	DuplicateStep            Code = "duplicate_step"
	InvalidName              Code = "invalid_name"
	ReservedName             Code = "reserved_name"
	UnknownName              Code = "unknown_name"
	UnknownInput             Code = "unknown_input"
	UnknownOutput            Code = "unknown_output"
	ConditionType            Code = "condition_type"
	ExprSyntax               Code = "expr_syntax"
	UnreachableStep          Code = "unreachable_step"
	ExitUnreachable          Code = "exit_unreachable"
	DeadEnd                  Code = "dead_end"
	LoopUnbounded            Code = "loop_unbounded"
	EmitUnbounded            Code = "emit_unbounded"
	JoinInCycle              Code = "join_in_cycle"
	JoinFirstEscape          Code = "join_first_escape"
	EdgeCrossesScope         Code = "edge_crosses_scope"
	BodyRead                 Code = "body_read"
	RouterEdge               Code = "router_edge"
	RouteUnknown             Code = "route_unknown"
	UntilInvalid             Code = "until_invalid"
	UntilError               Code = "until_error"
	Exhausted                Code = "exhausted"
	OverType                 Code = "over_type"
	SubflowNotFound          Code = "subflow_not_found"
	SubflowCycle             Code = "subflow_cycle"
	SubflowDepth             Code = "subflow_depth"
	InputMissing             Code = "input_missing"
	InputType                Code = "input_type"
	ShellInterpolation       Code = "shell_interpolation"
	InterpreterInterpolation Code = "interpreter_interpolation"
	ArgvOneString            Code = "argv_one_string"
	SecretLeak               Code = "secret_leak"
	SecretUnseen             Code = "secret_unseen"
	ModelUnknown             Code = "model_unknown"
	RoutesMissing            Code = "routes_missing"
	SchemaInvalid            Code = "schema_invalid"
	ModelParamIgnored        Code = "model_param_ignored"
	PriceInvalid             Code = "price_invalid"
	MaxTurns                 Code = "max_turns"
	ModelError               Code = "model_error"
	ModelTruncated           Code = "model_truncated"
	ModelFiltered            Code = "model_filtered"
	BudgetExceeded           Code = "budget_exceeded"
	ReplayMiss               Code = "replay_miss"
	UnknownParam             Code = "unknown_param"
	UnknownTool              Code = "unknown_tool"
	ToolNamedLikeStep        Code = "tool_named_like_step"
	ExitHandlerEdge          Code = "exit_handler_edge"
	MaybeUnmet               Code = "maybe_unmet"
	UnusedResult             Code = "unused_result"
	RouterNoDefault          Code = "router_no_default"
	JoinSingle               Code = "join_single"
	FnTimeoutIgnored         Code = "fn_timeout_ignored"
	EnvelopeExceedsBudget    Code = "envelope_exceeds_budget"
	StepFailed               Code = "step_failed"
	OutputTooLarge           Code = "output_too_large"
	Timeout                  Code = "timeout"
	FlowTimeout              Code = "flow_timeout"
	Cancelled                Code = "cancelled"
	Aborted                  Code = "aborted"
	NoRoute                  Code = "no_route"
	MaxVisitsExceeded        Code = "max_visits_exceeded"
	MapTooManyItems          Code = "map_too_many_items"
	ExprError                Code = "expr_error"
	DependencyUnmet          Code = "dependency_unmet"
	Rejected                 Code = "rejected"
	ResumeDiverged           Code = "resume_diverged"
	ModelConfig              Code = "model_config"
	BadInput                 Code = "bad_input"
	StoreError               Code = "store_error"
	NotAllowed               Code = "not_allowed"
)

// Kind says where a code is reported.
type Kind int

const (
	// Diagnostic: found by skein check (or the loader) before a run.
	Diagnostic Kind = iota
	// Runtime: ends a run or marks a failed step.
	Runtime
	// Usage: about what was given on the command line (or to compose).
	Usage
)

func (k Kind) String() string {
	switch k {
	case Diagnostic:
		return "diagnostic"
	case Runtime:
		return "runtime"
	}
	return "usage"
}

// Severity is whether a diagnostic refuses the run (an error) or not (a
// warning).
type Severity int

const (
	Error Severity = iota
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Info is a code's row in the table.
type Info struct {
	Code Code
	Kind Kind
	// Severity is a diagnostic's default; every other kind is an Error.
	Severity Severity
	// Summary says in one line what the code means.
	Summary string
}

var table = []Info{
	{ParseError, Diagnostic, Error, "the file is not valid Starlark, or names something undefined"},
	{LoadError, Diagnostic, Error, "running the file failed: a builtin's wrong argument, fail(), a load() missing or outside the flow root, a budget run out"},
	{DuplicateStep, Diagnostic, Error, "two steps have the same name (names are unique in the whole flow, bodies included)"},
	{InvalidName, Diagnostic, Error, "a step name that is not [a-z_][a-z0-9_]*."},
	{ReservedName, Diagnostic, Error, "a step name an expression could not refer to: an expression root, a predeclared name, a Starlark builtin or keyword"},
	{UnknownName, Diagnostic, Error, "an expression, a template or a function's r.NAME names no step, input root, builtin or module"},
	{UnknownInput, Diagnostic, Error, "inputs.x, a child flow step's input, a flow= tool's parameter, a trigger()'s input or a concurrency_key that the flow does not declare as an input"},
	{UnknownOutput, Diagnostic, Error, "a field of a task's output other than stdout, stderr, exit_code, error and code"},
	{ConditionType, Diagnostic, Error, "a condition (when, a router's cases, retry_when) that surely gives something other than True or False"},
	{ExprSyntax, Diagnostic, Error, "an expression or a {{ }} hole does not parse, or a {{ is not closed"},
	{UnreachableStep, Diagnostic, Error, "no path from START leads to the step"},
	{ExitUnreachable, Diagnostic, Error, "eND cannot be reached from START: the flow could never succeed"},
	{DeadEnd, Diagnostic, Error, "from the step neither END nor ABORT can be reached, so its result influences nothing"},
	{LoopUnbounded, Diagnostic, Error, "a cycle in which no step has a visit bound"},
	{EmitUnbounded, Diagnostic, Error, "a flow(emit=) without max_depth: the work items its runs queue could expand without end"},
	{JoinInCycle, Diagnostic, Error, "an AND-join inside a cycle with a forward in-edge from outside it: it could never fire twice"},
	{JoinFirstEscape, Diagnostic, Error, "a join = \"first\" step raced by a branch that also leads somewhere else, which cancelling it would cut"},
	{EdgeCrossesScope, Diagnostic, Error, "an edge into or out of a loop or map body"},
	{BodyRead, Diagnostic, Error, "an expression or a function outside a loop or map body reads a step inside that body"},
	{RouterEdge, Diagnostic, Error, "an edge() from a router: its out-edges are exactly its routes, cases and default"},
	{RouteUnknown, Diagnostic, Error, "a route, case or default that names something that is not a step (or a step in another scope)"},
	{UntilInvalid, Diagnostic, Error, "a loop's until is missing, not a function of one parameter, or names no function of the flow"},
	{UntilError, Runtime, Error, "a loop's until raised an error or returned something other than True, False or (stop, reason)"},
	{Exhausted, Runtime, Error, "a loop with exhausted = \"fail\" reached max_iterations without its until saying stop"},
	{OverType, Diagnostic, Error, "a map's over= gives something that is surely not a list"},
	{SubflowNotFound, Diagnostic, Error, "a literal flow=\"child.star\" names a file that does not exist or lies outside the flow root"},
	{SubflowCycle, Diagnostic, Error, "a flow reaches itself through flow= (checked for literal paths; a hard stop at run time)"},
	{SubflowDepth, Diagnostic, Error, "child flows nest deeper than 8 (checked for literal paths; a hard stop at run time)"},
	{InputMissing, Diagnostic, Error, "a child flow named by a literal flow= has a required input the step's inputs= does not pass, or a trigger() starts the flow without one"},
	{InputType, Diagnostic, Error, "a value known before the run does not have the type an input declares, or is not among its choices"},
	{ShellInterpolation, Diagnostic, Error, "a {{ }} template inside shell=: its value would be parsed by the shell"},
	{InterpreterInterpolation, Diagnostic, Warning, "a template inside the code an interpreter started with run= runs (sh -c, python -c, ...): its value becomes code"},
	{ArgvOneString, Diagnostic, Warning, "run= starts with one item holding a known program and its arguments (run = [\"npm test\"]): run= never splits, so it would look for a program called \"npm test\""},
	{SecretLeak, Diagnostic, Error, "a secret reaches a place other than a process's env= or stdin=, a tool's env=, a model's key or a child's secret input, and the use does not say reveal(...)"},
	{SecretUnseen, Diagnostic, Warning, "a value that may carry a secret, through something the checker cannot see into (a process, a tool, a function passing r on), reaches a place a secret may not go"},
	{ModelUnknown, Diagnostic, Error, "a step, LLM router or judge() names model = \"x\" and the flow declares models with model(), none called x"},
	{RoutesMissing, Diagnostic, Error, "a router(llm=...) without routes=, or with labels empty or equal once normalized"},
	{SchemaInvalid, Diagnostic, Error, "a schema= that is not a JSON Schema object of the supported subset"},
	{ModelParamIgnored, Diagnostic, Warning, "a model() declares a parameter its provider or model cannot take (temperature for a reasoning model or the Messages API, reasoning_effort for a chat model), so it is not sent"},
	{PriceInvalid, Diagnostic, Error, "a model(price=) with a key other than input, output and cached_input, or a number that is negative or not finite"},
	{MaxTurns, Runtime, Error, "an agent step's model still called tools, or its answer did not match schema=, at its last allowed call"},
	{ModelError, Runtime, Error, "a model call failed (transport, timeout, HTTP error, a reply not matching schema=) after its retries"},
	{ModelTruncated, Runtime, Error, "a model's reply stopped at the token limit and the step does not accept partial text"},
	{ModelFiltered, Runtime, Error, "the provider's content filter stopped a model's reply, or the model refused"},
	{BudgetExceeded, Runtime, Error, "a model call would start after the run tree spent the tokens flow(max_tokens=) or --max-tokens allows"},
	{ReplayMiss, Runtime, Error, "with --cassette --replay-only, a model request the cassette has no recorded answer for"},
	{UnknownParam, Diagnostic, Error, "a tool's template reads args.x and the tool declares no parameter x in params="},
	{UnknownTool, Diagnostic, Error, "an agent step's tools= or flow(tools=) names a tool no tool() declares (request_tool, the built-in, is always known)"},
	{ToolNamedLikeStep, Diagnostic, Error, "a tool with approve= has the name of an agent step that may call it (its approvals and its calls would be recorded under one name)"},
	{ExitHandlerEdge, Diagnostic, Error, "an edge, route or body that includes the exit handler flow(on_exit=) names"},
	{MaybeUnmet, Diagnostic, Warning, "an expression reads a step that does not complete on every path before it"},
	{UnusedResult, Diagnostic, Warning, "a fn step whose result nothing reads and that does not lead to END"},
	{RouterNoDefault, Diagnostic, Warning, "a router without default: a label or case matching nothing fails the run with no_route"},
	{JoinSingle, Diagnostic, Warning, "join= on a step with fewer than two forward in-edges: there is nothing to join"},
	{FnTimeoutIgnored, Diagnostic, Warning, "with --engine temporal, a fn step's timeout=, which a run on Temporal cannot enforce"},
	{EnvelopeExceedsBudget, Diagnostic, Warning, "the most a run may spend (its envelope) is more than the flow's own max_tokens or max_cost, or unbounded; an error with skein check --strict"},
	{StepFailed, Runtime, Error, "a step failed (a task exited non-zero, a fn step raised, a child flow failed) and no edge took the failure"},
	{OutputTooLarge, Runtime, Error, "a fn step returned a value whose text, as JSON with its escapes, would be over the 64 MiB one value may take"},
	{Timeout, Runtime, Error, "an attempt of a step, or a loop or map as a whole, ran past its timeout"},
	{FlowTimeout, Runtime, Error, "the whole run went past flow(timeout=) or --timeout"},
	{Cancelled, Runtime, Error, "the run was cancelled (Ctrl-C, SIGTERM, a watch --run restart)"},
	{Aborted, Runtime, Error, "a live token reached ABORT"},
	{NoRoute, Runtime, Error, "no live token reached END, or a router found no route and has no default"},
	{MaxVisitsExceeded, Runtime, Error, "a step was entered more often than its max_visits (or the flow's default)"},
	{MapTooManyItems, Runtime, Error, "a map's over= gave more items than its max_items"},
	{ExprError, Runtime, Error, "an expression, condition or template hole raised an error, or a condition gave neither True nor False"},
	{DependencyUnmet, Runtime, Error, "an expression or function read a step that has not completed on the path taken"},
	{Rejected, Runtime, Error, "a person rejected an approve= step"},
	{ResumeDiverged, Runtime, Error, "resuming a run, the flow asked for an effect the record cannot answer at that point"},
	{ModelConfig, Usage, Error, "the flow has model steps and no usable model configuration (no model id or no API key)"},
	{BadInput, Usage, Error, "an input given to the run does not fit the flow: undeclared, missing, of the wrong type or not among choices"},
	{StoreError, Runtime, Error, "the run store could not be written: the run fails rather than run unrecorded"},
	{NotAllowed, Usage, Error, "a draft skein compose got from a model breaks the safety floor (--allow-shell, --allow-run)"},
}

// All returns the table: every code, in the order of docs/codes.md.
func All() []Info { return append([]Info(nil), table...) }

// Lookup returns the row of code c, and whether c is in the table.
//
// It searches the table rather than an index: an index made when the
// package is initialized would make this package's init run in the task
// keeper too, before the keeper starts (cmd/skein's
// TestKeeperStartsBeforeHeavyInits wants none of skein's inits there),
// and the table is short.
func Lookup(c Code) (Info, bool) {
	for _, in := range table {
		if in.Code == c {
			return in, true
		}
	}
	return Info{}, false
}

// SeverityOf returns the default severity of code c: a warning's, or
// Error for every other code (one not in the table included).
func SeverityOf(c Code) Severity {
	in, _ := Lookup(c)
	return in.Severity
}
