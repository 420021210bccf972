package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/graphir/codes"
)

// docs/codes.md has an entry, a heading "### `code`", for exactly the
// codes of the table, in the table's order, and each entry says the kind
// and severity the table gives the code.
func TestDocsCodes(t *testing.T) {
	doc, err := os.ReadFile("../../docs/codes.md")
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, in := range codes.All() {
		want = append(want, string(in.Code))
	}
	entry := regexp.MustCompile("\n### `([a-z_]+)`\n+\\*([^*]+)\\*")
	for _, m := range entry.FindAllStringSubmatch(string(doc), -1) {
		got = append(got, m[1])
		in, ok := codes.Lookup(codes.Code(m[1]))
		if !ok {
			continue
		}
		var kind string
		switch {
		case in.Kind == codes.Diagnostic:
			kind = in.Severity.String()
		case in.Kind == codes.Runtime:
			kind = "runtime"
		}
		if kind != "" && !strings.Contains(m[2], kind) {
			t.Errorf("docs/codes.md: %s is *%s*, the table says %s", m[1], m[2], kind)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/codes.md's entries (+) are not the table's codes (-):\n%s", diff)
	}
}

// The docs index lists every page in docs/, and every page it links to
// exists.
func TestDocsIndex(t *testing.T) {
	index, err := os.ReadFile("../../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		name := filepath.Base(p)
		if name != "README.md" && !strings.Contains(string(index), "("+name+")") {
			t.Errorf("docs/README.md does not link to %s", name)
		}
	}
	for _, m := range regexp.MustCompile(`\]\(([a-z-]+\.md)\)`).FindAllStringSubmatch(string(index), -1) {
		if _, err := os.Stat(filepath.Join("../../docs", m[1])); err != nil {
			t.Errorf("docs/README.md links to %s, which does not exist", m[1])
		}
	}
}

// flagDocs says where each command's flags are documented: the section of
// docs/cli.md headed "## skein NAME" (its subsections included), else the
// section named here, else the page named here.
var flagDocs = map[string]string{
	"runs": "## The run store", "show": "## The run store", "logs": "## The run store",
	"gc": "## The run store", "resume": "## The run store", "approve": "## The run store", "cancel": "## The run store",
	"compose": "compose.md", "serve": "serve.md",
}

// TestDocsFlags keeps docs/cli.md and the commands in step: every command
// has a row in the table of commands, and every flag of a command (and its
// one-letter form) is named where the command is documented.
func TestDocsFlags(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	cli := string(b)
	section := func(head string) string {
		i := strings.Index(cli, "\n"+head+"\n")
		if i < 0 {
			return ""
		}
		s := cli[i+len(head)+2:]
		if j := strings.Index(s, "\n## "); j >= 0 {
			s = s[:j]
		}
		return s
	}
	head := "| command | does | exit status |\n"
	i := strings.Index(cli, head)
	if i < 0 {
		t.Fatal("docs/cli.md has no table of commands")
	}
	table := cli[i:]
	table = table[:strings.Index(table, "\n\n")]
	for name, c := range commands {
		// A row names it as `skein NAME ...`, or among others as `NAME`.
		if !strings.Contains(table, "`skein "+name+"`") && !strings.Contains(table, "`skein "+name+" ") && !strings.Contains(table, " `"+name+"`") {
			t.Errorf("docs/cli.md: the table of commands has no row for skein %s", name)
		}
		if c.flags == nil {
			continue
		}
		where := "## skein " + name
		if w, ok := flagDocs[name]; ok {
			where = w
		}
		var text string
		if strings.HasSuffix(where, ".md") {
			p, err := os.ReadFile("../../docs/" + where)
			if err != nil {
				t.Fatal(err)
			}
			text = string(p)
		} else if text = section(where); text == "" {
			t.Errorf("docs/cli.md has no section %q for skein %s", where, name)
			continue
		}
		fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
		c.flags(fs)
		fs.VisitAll(func(f *pflag.Flag) {
			if !regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `\b`).MatchString(text) {
				t.Errorf("skein %s --%s is not documented in %s (%s)", name, f.Name, where, f.Usage)
			}
			if f.Shorthand != "" && !regexp.MustCompile("[`\\[ ]-"+f.Shorthand+"[,` \\]|]").MatchString(text) {
				t.Errorf("skein %s -%s (--%s) is not documented in %s", name, f.Shorthand, f.Name, where)
			}
		})
	}
}
