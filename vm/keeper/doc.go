// Package keeper is the task keeper. On Linux, skein starts its tasks
// through one helper process, skein itself re-executed with [Env] set,
// so that a skein killed by SIGKILL still leaves nothing behind. The
// keeper is a child
// subreaper: each task is its child, and whatever a task starts, even in a
// session of its own (setsid, a daemon), stays among its descendants. It
// holds one end of a socket whose other end only skein has; when skein
// dies, however it dies, the kernel closes that end, and the keeper kills
// every descendant it has, reaps them and exits. While skein lives, the
// keeper does what skein did as a subreaper: once no task runs, it kills
// and reaps the orphans that reparented to it.
//
// skein asks for a task with a request frame carrying the task's stdin,
// stdout and stderr as passed descriptors; the keeper starts it in a
// process group of its own (with a parent-death signal, should the keeper
// itself die) and answers with its pid, then with its wait status. skein
// signals the task's group directly, as it does without a keeper.
//
// The keeper is one process per skein, started with the first task (or
// before it, proc.WarmKeeper): a re-executed skein costs some milliseconds,
// once, not per task. It becomes the keeper in this package's init, and
// this package imports nothing slow to initialize (not net: its end of
// the socket is read with plain system calls), so it does not wait for
// the rest of skein's packages to be initialized, most of a start.
//
// Package vm/proc (keeper_linux.go) is skein's side.
package keeper
