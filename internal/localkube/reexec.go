package localkube

import (
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// envReexec asks a copy of this binary to become another program with
// SIGKILL as its parent-death signal. envtest starts etcd and the apiserver
// itself, with no way to set that signal, so it starts a small script that
// runs this binary with envReexec set instead; the copy sets the signal and
// execs the real program before doing anything else. (setpriv --pdeathsig
// cannot do it: its capability handling clears the signal again at exec.)
const envReexec = "LOCALKUBE_EXEC_WITH_PDEATHSIG"

func init() {
	target := os.Getenv(envReexec)
	if target == "" {
		return
	}
	// The signal belongs to the thread that asks for it, and that thread
	// must be the one that execs.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "localkube: setting parent-death signal:", err)
		os.Exit(127)
	}
	if os.Getppid() == 1 {
		os.Exit(127) // the parent is already gone
	}
	os.Unsetenv(envReexec)
	err := syscall.Exec(target, append([]string{target}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "localkube: exec %s: %v\n", target, err)
	os.Exit(127)
}
