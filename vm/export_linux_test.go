//go:build linux

package vm

// SetReaper sets whether tasks are counted for orphan cleanup (as when
// skein is a subreaper) and whether they start through the keeper, and
// returns what restores the settings. For benchmarks.
func SetReaper(enabled, keeper bool) (restore func()) {
	old, oldNo := reaper.enabled, reaper.noKeeper
	reaper.enabled, reaper.noKeeper = enabled, !keeper
	return func() { reaper.enabled, reaper.noKeeper = old, oldNo }
}

// StopKeeper ends the keeper, if one runs, and waits until it has exited;
// it reports whether one ran.
func StopKeeper() bool {
	keeper.mu.Lock()
	conn, gone := keeper.conn, keeper.gone
	keeper.mu.Unlock()
	if conn == nil {
		return false
	}
	conn.c.CloseWrite()
	<-gone
	return true
}
