//go:build linux

package proc

import "sync"

// SetReaper sets whether tasks are counted for orphan cleanup (as when
// skein is a subreaper) and whether they start through the keeper, and
// returns what restores the settings. For benchmarks.
func SetReaper(enabled, keeper bool) (restore func()) {
	old, oldNo := reaper.enabled, reaper.noKeeper
	reaper.enabled, reaper.noKeeper = enabled, !keeper
	return func() { reaper.enabled, reaper.noKeeper = old, oldNo }
}

// KeeperRunning reports whether a keeper runs, once any WarmKeeper start
// under way has ended.
func KeeperRunning() bool {
	keeperProc.warming.Wait()
	keeperProc.mu.Lock()
	defer keeperProc.mu.Unlock()
	return keeperProc.conn != nil
}

// ForgetInherited makes the next task or keeper start mark skein's
// inherited descriptors close-on-exec again (as a new skein's first
// would), so that a test can inherit one first.
func ForgetInherited() { inherited = sync.Once{} }

// KeeperPid is the running keeper's pid, 0 when none runs.
func KeeperPid() int {
	keeperProc.mu.Lock()
	defer keeperProc.mu.Unlock()
	if keeperProc.conn == nil {
		return 0
	}
	return keeperProc.proc.Pid
}
