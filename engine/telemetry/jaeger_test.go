//go:build otel

package telemetry_test

// A run exported to a real Jaeger (make test-otel: test/otel/run.sh
// builds it and sets JAEGER), read back through Jaeger's query API, and,
// with SKEIN_SCREENSHOTS set, its trace page photographed in Chromium.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/vm"
)

// jaegerTrace is a trace as Jaeger's query API returns it.
type jaegerTrace struct {
	TraceID string `json:"traceID"`
	Spans   []struct {
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		References    []struct {
			RefType string `json:"refType"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
	} `json:"spans"`
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestJaeger(t *testing.T) {
	bin := os.Getenv("JAEGER")
	if bin == "" {
		t.Skip("JAEGER names no jaeger binary (make test-otel builds one)")
	}
	// Jaeger's all-in-one configuration, on ports of its own.
	otlp, ui, grpc := freePort(t), freePort(t), freePort(t)
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	conf := fmt.Sprintf(jaegerConfig, otlp, ui, grpc)
	if assets := os.Getenv("JAEGER_UI"); assets != "" {
		// Jaeger's Go module has no UI (it serves a placeholder): a
		// jaeger-ui built apart.
		conf = strings.Replace(conf, "    storage:\n      traces: memstore\n", "    storage:\n      traces: memstore\n    ui:\n      assets_path: "+assets+"\n", 1)
	}
	os.WriteFile(cfg, []byte(conf), 0o644)
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true") // no traces of its own
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	query := fmt.Sprintf("http://127.0.0.1:%d", ui)
	waitFor(t, query+"/api/services")

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", fmt.Sprintf("http://127.0.0.1:%d", otlp))
	t.Setenv("OTEL_SERVICE_NAME", "skein")
	p, err := telemetry.FromEnv(context.Background())
	if err != nil || p == nil {
		t.Fatalf("FromEnv: %v", err)
	}
	g := load(t, "traced.star", tracedFlow, "child.star", childFlow)
	res := run(t, p, g, &runs.Spec{Ask: approve{}})
	if res.Status != vm.Succeeded {
		t.Fatalf("run %s: %v", res.Status, res.Error)
	}

	var tr jaegerTrace
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got struct{ Data []jaegerTrace }
		resp, err := http.Get(query + "/api/traces?service=skein&limit=1")
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
		}
		if len(got.Data) == 1 && len(got.Data[0].Spans) >= 20 {
			tr = got.Data[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger has no trace of the run: %v %+v", err, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	names := map[string]string{}
	for _, s := range tr.Spans {
		names[s.SpanID] = s.OperationName
	}
	parents := map[string]bool{}
	for _, s := range tr.Spans {
		for _, r := range s.References {
			if r.RefType == "CHILD_OF" {
				parents[names[r.SpanID]+" > "+s.OperationName] = true
			}
		}
	}
	for _, want := range []string{"run traced > shell flaky", "run traced > loop polish", "loop polish > polish#2", "polish#2 > fn tick",
		"per_file[1] > task one", "subflow child > run child", "run child > fn inner", "llm summary > chat stub",
		"agent fix > execute_tool where", "run traced > approval gate"} {
		if !parents[want] {
			t.Errorf("Jaeger's trace has no %s", want)
		}
	}

	dir := os.Getenv("SKEIN_SCREENSHOTS")
	if dir == "" {
		return
	}
	chrome := os.Getenv("CHROME")
	if chrome == "" {
		chrome = "/usr/bin/chromium"
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 1100), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-background-networking", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	ctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()
	err = chromedp.Do(ctx, chromedp.Navigate(query+"/trace/"+tr.TraceID),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`document.body.innerText.includes("execute_tool where")`)(ctx, t)
			return err
		}),
		chromedp.Sleep(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "jaeger-trace.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, url string) {
	t.Helper()
	for i := 0; ; i++ {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if i > 300 {
			t.Fatalf("%s never answered: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jaegerConfig is Jaeger v2's all-in-one configuration (in-memory
// storage, OTLP over HTTP, the query service and UI) on the ports given.
const jaegerConfig = `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%[2]d
    grpc:
      endpoint: 127.0.0.1:%[3]d
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%[1]d
processors:
  batch:
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`
