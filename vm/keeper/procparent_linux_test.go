//go:build linux

package keeper

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// parentOf reads a process's parent even when its command name holds
// spaces and parentheses (as "x) 1 (y" would mislead a parse from the
// first ')'), and procParents finds it.
func TestParentOfOddCommandName(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	link := filepath.Join(t.TempDir(), "x) 1 (y")
	if err := os.Symlink(sleep, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	pid := cmd.Process.Pid
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err != nil || string(b) != "x) 1 (y\n" {
		t.Skipf("comm %q, %v", b, err)
	}
	if pp, ok := parentOf(pid); !ok || pp != os.Getpid() {
		t.Errorf("parentOf(%d) = %d, %v; want %d", pid, pp, ok, os.Getpid())
	}
	if pp, ok := procParents()[pid]; !ok || pp != os.Getpid() {
		t.Errorf("procParents()[%d] = %d, %v; want %d", pid, pp, ok, os.Getpid())
	}
}
