package check_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skeinlang/skein/check"
	codetable "github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/lang"
)

// genSecretFlow turns fuzz bytes into a flow with a secret input whose
// steps pass secrets, revealed or not, and each other's outputs, through
// every place a value can go: argv, env, stdin, prompts, fn bodies,
// conditions, maps and loops.
func genSecretFlow(data []byte) string {
	next := func(n int) int {
		if len(data) == 0 {
			return 0
		}
		b := int(data[0])
		data = data[1:]
		return b % n
	}
	n := 1 + next(6)
	name := func(i int) string { return fmt.Sprintf("s%d", i) }
	value := func() string {
		switch next(6) {
		case 0:
			return `"{{ inputs.token }}"`
		case 1:
			return `"{{ reveal(inputs.token) }}"`
		case 2:
			return `secret("T")`
		case 3:
			return `reveal(secret("T"))`
		case 4:
			return fmt.Sprintf(`"{{ %s }}"`, name(next(n)))
		}
		return `"plain"`
	}
	var b strings.Builder
	b.WriteString(`flow(inputs = {"token": input(secret = True)})` + "\n")
	for i := 0; i < n; i++ {
		var arg string
		switch next(7) {
		case 0:
			arg = fmt.Sprintf(`run = ["echo", %s]`, value())
		case 1:
			arg = fmt.Sprintf(`run = ["true"], env = {"A": %s}, stdin = %s`, value(), value())
		case 2:
			arg = fmt.Sprintf(`llm = %s`, value())
		case 3:
			arg = fmt.Sprintf(`fn = lambda r: r.%s`, name(next(n)))
		case 4:
			arg = `fn = lambda r: reveal(r.inputs.token)`
		case 5:
			arg = `fn = lambda r: r.inputs.token`
		default:
			arg = fmt.Sprintf(`shell = "true", env = {"A": %s}`, value())
		}
		fmt.Fprintf(&b, "%s = step(%q, %s)\n", name(i), name(i), arg)
	}
	var order []string
	for i := 0; i < n; i++ {
		order = append(order, name(i))
	}
	switch next(3) {
	case 1:
		fmt.Fprintf(&b, "m = map(\"m\", over = \"reveal(inputs.token).split(',')\", body = [%s])\n", order[len(order)-1])
		order[len(order)-1] = "m"
	case 2:
		fmt.Fprintf(&b, "lp = loop(\"lp\", body = [%s], until = lambda it: it.inputs.token == \"x\", max_iterations = 2)\n", order[len(order)-1])
		order[len(order)-1] = "lp"
	}
	fmt.Fprintf(&b, "chain(START, %s, END)\n", strings.Join(order, ", "))
	if next(2) == 0 {
		fmt.Fprintf(&b, "edge(%s, END, when = \"%s.stdout != inputs.token\")\n", order[0], order[0])
	}
	return b.String()
}

// FuzzSecrets: the secrets analysis never panics, and every finding has a
// position in the flow.
func FuzzSecrets(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{5, 0, 0, 1, 2, 3, 1, 4, 2, 3, 0, 5, 1, 1})
	f.Add([]byte{3, 3, 0, 5, 1, 3, 2, 0, 2, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		src := genSecretFlow(data)
		g, err := lang.LoadSource("flow.star", []byte(src), lang.Options{})
		if err != nil {
			t.Fatalf("generated flow does not load: %v\n%s", err, src)
		}
		for _, d := range check.Graph(g) {
			if (d.Code == codetable.SecretLeak || d.Code == codetable.SecretUnseen) && (d.Pos.File != "flow.star" || d.Pos.Line < 1) {
				t.Errorf("%s at %v\n%s", d.Code, d.Pos, src)
			}
		}
	})
}
